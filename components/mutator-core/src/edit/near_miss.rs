//! Where to look when a selector is missing: a whitespace-only difference, the line where
//! the closest multi-line candidate diverges, or the longest present prefix.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use memchr::memmem;

use super::{MAX_NEAR_MISS_LINE, MAX_NEAR_MISS_TEXT_BYTES, MAX_QUOTE_BYTES, NearMiss, count};
use crate::lines::{LineIndex, quote};

pub(super) fn describe(n: &NearMiss) -> String {
    match n {
        NearMiss::Whitespace { line, text } => format!(
            "the file has it with different whitespace at line {line}: `{}`",
            quote(text, MAX_QUOTE_BYTES)
        ),
        NearMiss::Diverges {
            selector_line,
            selector_text,
            line,
            text,
        } => format!(
            "the closest candidate matches up to selector line {selector_line}, which is `{}` but the file's line {line} is `{}`",
            quote(selector_text, MAX_QUOTE_BYTES),
            quote(text, MAX_QUOTE_BYTES)
        ),
        NearMiss::Prefix {
            line,
            prefix,
            matched_chars,
            selector_chars,
            text,
        } => format!(
            "only its first {matched_chars} of {selector_chars} characters occur (`{}`, first at line {line}: `{}`)",
            quote(prefix, MAX_QUOTE_BYTES),
            quote(text, MAX_QUOTE_BYTES)
        ),
    }
}

fn not_ws(c: &char) -> bool {
    !c.is_whitespace()
}

fn compact(s: &str) -> String {
    s.chars().filter(not_ws).collect()
}

/// The nearest near miss of a selector that does not occur: a whitespace-only
/// difference, else (for a multi-line selector) the line where the closest candidate
/// diverges, else the longest prefix present.
pub(super) fn near_miss(body: &str, lines: &LineIndex, selector: &str) -> Option<NearMiss> {
    let sel_lines: Vec<&str> = selector
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    whitespace_miss(body, lines, &sel_lines)
        .or_else(|| divergence(body, lines, &sel_lines))
        .or_else(|| prefix_miss(body, lines, selector))
}

fn whitespace_miss(body: &str, lines: &LineIndex, sel_lines: &[&str]) -> Option<NearMiss> {
    let compacted: Vec<String> = sel_lines.iter().map(|l| compact(l)).collect();
    if compacted.iter().all(String::is_empty) {
        return None;
    }
    let total = lines.total();
    let k = sel_lines.len();
    if let [only] = compacted.as_slice() {
        let mut squeezed = String::new();
        let mut origin: Vec<usize> = Vec::new();
        for line in 1..=total {
            let text = lines.text(body, line);
            if text.len() > MAX_NEAR_MISS_LINE {
                continue;
            }
            squeezed.clear();
            origin.clear();
            for (at, c) in text.char_indices().filter(|(_, c)| not_ws(c)) {
                squeezed.push(c);
                origin.extend(core::iter::repeat_n(at, c.len_utf8()));
            }
            if let Some(s) = squeezed.find(only.as_str()) {
                let start = origin.get(s).copied().unwrap_or(0);
                let last = origin.get(s + only.len() - 1).copied().unwrap_or(start);
                let end = text
                    .get(last..)
                    .and_then(|t| t.chars().next())
                    .map_or(text.len(), |c| last + c.len_utf8());
                return Some(NearMiss::Whitespace {
                    line: count(line),
                    text: quote(
                        text.get(start..end).unwrap_or_default(),
                        MAX_NEAR_MISS_TEXT_BYTES,
                    ),
                });
            }
        }
        return None;
    }
    let (first, rest) = compacted.split_first()?;
    let (last, middle) = rest.split_last()?;
    for start in 1..=total.saturating_sub(k - 1) {
        let line = |n: usize| lines.text(body, start + n);
        if !ends_with_compact(line(0), first) {
            continue;
        }
        if !middle
            .iter()
            .enumerate()
            .all(|(n, m)| line(n + 1).chars().filter(not_ws).eq(m.chars()))
        {
            continue;
        }
        if !starts_with_compact(line(k - 1), last) {
            continue;
        }
        let (from, _) = lines.span(start);
        let (_, to) = lines.span(start + k - 1);
        let text = body.get(from..to).unwrap_or_default();
        let text = text.strip_suffix('\n').unwrap_or(text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        return Some(NearMiss::Whitespace {
            line: count(start),
            text: quote(text, MAX_NEAR_MISS_TEXT_BYTES),
        });
    }
    None
}

fn ends_with_compact(line: &str, compacted: &str) -> bool {
    let mut file = line.chars().rev().filter(not_ws);
    compacted.chars().rev().all(|c| file.next() == Some(c))
}

fn starts_with_compact(line: &str, compacted: &str) -> bool {
    let mut file = line.chars().filter(not_ws);
    compacted.chars().all(|c| file.next() == Some(c))
}

fn divergence(body: &str, lines: &LineIndex, sel_lines: &[&str]) -> Option<NearMiss> {
    let k = sel_lines.len();
    if k < 2 {
        return None;
    }
    let total = lines.total();
    // (matched lines, start line); the most lines matched wins, the earliest on a tie.
    let mut best: Option<(usize, usize)> = None;
    for start in 1..=total {
        let mut matched = 0;
        let mut substantive = false;
        while matched < k {
            let Some(sel) = sel_lines.get(matched) else {
                break;
            };
            let file = lines.text(body, start + matched);
            let ok = if start + matched > total {
                false
            } else if matched == 0 {
                file.ends_with(sel)
            } else if matched == k - 1 {
                file.starts_with(sel)
            } else {
                file == *sel
            };
            if !ok {
                break;
            }
            substantive |= !sel.trim().is_empty();
            matched += 1;
        }
        if substantive && matched < k && best.is_none_or(|(m, _)| matched > m) {
            best = Some((matched, start));
        }
    }
    let (matched, start) = best?;
    let line = start + matched;
    Some(NearMiss::Diverges {
        selector_line: count(matched + 1),
        selector_text: quote(
            sel_lines.get(matched).copied().unwrap_or_default(),
            MAX_QUOTE_BYTES,
        ),
        line: count(line),
        text: quote(lines.text(body, line), MAX_QUOTE_BYTES),
    })
}

fn prefix_miss(body: &str, lines: &LineIndex, selector: &str) -> Option<NearMiss> {
    let bounds: Vec<usize> = selector
        .char_indices()
        .map(|(at, c)| at + c.len_utf8())
        .collect();
    // The number of characters of the longest prefix present (presence is monotone).
    let (mut lo, mut hi) = (0usize, bounds.len());
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        let end = bounds.get(mid - 1).copied().unwrap_or(0);
        let present = selector
            .get(..end)
            .is_some_and(|p| memmem::find(body.as_bytes(), p.as_bytes()).is_some());
        if present {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    if lo == 0 {
        return None;
    }
    let end = bounds.get(lo - 1).copied().unwrap_or(0);
    let prefix = selector.get(..end).unwrap_or_default();
    let at = memmem::find(body.as_bytes(), prefix.as_bytes())?;
    let line = lines.line_of(at);
    Some(NearMiss::Prefix {
        line: count(line),
        prefix: quote(prefix, MAX_QUOTE_BYTES),
        matched_chars: count(lo),
        selector_chars: count(bounds.len()),
        text: quote(lines.text(body, line), MAX_QUOTE_BYTES),
    })
}
