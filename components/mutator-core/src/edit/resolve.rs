//! Selector resolution: where each edit's selector occurs, or the one problem that keeps
//! it from resolving (empty, unsupported line endings, no-op, missing with a near miss,
//! ambiguous, occurrence out of range).

use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use memchr::memmem;

use super::near_miss::{describe, near_miss};
use super::{
    EditOp, MAX_COUNTED_MATCHES, MAX_LISTED_MATCHES, MAX_QUOTE_BYTES, Problem, ProblemCode,
    SelectorMatch, count, problem,
};
use crate::lines::{LineIndex, LineStyle, has_line_break, quote};

/// What an edit changes in the base: a replaced span or an insertion point (byte offsets
/// into the text after the byte-order mark).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Span {
    /// Replace `[start, end)`.
    Replace(usize, usize),
    /// Insert at this offset.
    Insert(usize),
}

impl Span {
    pub(super) fn start(self) -> usize {
        match self {
            Self::Replace(s, _) | Self::Insert(s) => s,
        }
    }

    pub(super) fn end(self) -> usize {
        match self {
            Self::Replace(_, e) | Self::Insert(e) => e,
        }
    }
}

/// A resolved edit: its span and its new text in the file's line style.
pub(super) struct Resolved {
    pub(super) span: Span,
    pub(super) new_text: String,
}

pub(super) fn resolve(
    body: &str,
    style: LineStyle,
    lines: &LineIndex,
    i: usize,
    edit: &EditOp<'_>,
    near_misses: &mut usize,
) -> Result<Resolved, Box<Problem>> {
    let field = edit.field();
    let raw_selector = edit.selector();
    if raw_selector.is_empty() {
        return Err(Box::new(problem(
            i,
            ProblemCode::SelectorEmpty,
            format!("edits[{i}]: {field} is empty; quote the exact text to select"),
        )));
    }
    if matches!(style, LineStyle::Mixed | LineStyle::BareCr)
        && (has_line_break(raw_selector) || has_line_break(edit.new_text()))
    {
        let what = if style == LineStyle::Mixed {
            "mixes LF and CRLF line endings"
        } else {
            "has carriage returns not followed by LF"
        };
        return Err(Box::new(problem(
            i,
            ProblemCode::LineEndingsUnsupported,
            format!(
                "edits[{i}]: the file {what}, so text spanning lines cannot be normalized to its style; edit within single lines"
            ),
        )));
    }
    let selector = style.normalize(raw_selector);
    let new_text = style.normalize(edit.new_text());
    let no_op = match edit {
        EditOp::Replace { .. } => selector == new_text,
        EditOp::InsertAfter { .. } => new_text.is_empty(),
    };
    if no_op {
        let why = match edit {
            EditOp::Replace { .. } => "new_text equals old_text",
            EditOp::InsertAfter { .. } => "new_text is empty",
        };
        return Err(Box::new(problem(
            i,
            ProblemCode::NoOpEdit,
            format!("edits[{i}]: {why}, so the edit changes nothing"),
        )));
    }
    let wanted = edit
        .occurrence()
        .map(|k| usize::try_from(k).unwrap_or(usize::MAX));
    let found = find(body.as_bytes(), selector.as_bytes(), wanted);
    let at = match (found.count, wanted, found.target) {
        (0, _, _) => {
            let near_miss = if *near_misses > 0 {
                *near_misses -= 1;
                near_miss(body, lines, &selector)
            } else {
                None
            };
            let mut message = format!("edits[{i}]: {field} does not occur in the file");
            if let Some(n) = &near_miss {
                message.push_str("; ");
                message.push_str(&describe(n));
            }
            let mut p = problem(i, ProblemCode::AnchorMissing, message);
            p.near_miss = near_miss;
            return Err(Box::new(p));
        }
        (_, Some(_), Some(at)) | (1, None, Some(at)) => at,
        (n, wanted, _) => {
            let listed = list_matches(body, lines, &found.first);
            let places = listed
                .iter()
                .map(|m| format!("#{} line {}", m.occurrence, m.line))
                .collect::<Vec<_>>()
                .join(", ");
            let more = if n > listed.len() { ", …" } else { "" };
            let times = if n >= MAX_COUNTED_MATCHES && wanted.is_none() {
                format!("at least {n} times")
            } else {
                format!("{n} times")
            };
            let (code, message) = match wanted {
                Some(k) => (
                    ProblemCode::OccurrenceOutOfRange,
                    format!(
                        "edits[{i}]: occurrence {k} was asked for, but {field} occurs {times} ({places}{more}); use an occurrence from 1 to {n}"
                    ),
                ),
                None => (
                    ProblemCode::AnchorAmbiguous,
                    format!(
                        "edits[{i}]: {field} occurs {times} ({places}{more}); add `occurrence` (1 to {n}) or more context"
                    ),
                ),
            };
            let mut p = problem(i, code, message);
            p.match_count = count(n);
            p.matches = listed;
            return Err(Box::new(p));
        }
    };
    let span = match edit {
        EditOp::Replace { .. } => Span::Replace(at, at + selector.len()),
        EditOp::InsertAfter { .. } => Span::Insert(at + selector.len()),
    };
    Ok(Resolved { span, new_text })
}

struct Found {
    count: usize,
    first: Vec<usize>,
    target: Option<usize>,
}

/// Every occurrence of `needle`, overlapping ones included: the count, the first
/// [`MAX_LISTED_MATCHES`] offsets and the offset of occurrence `wanted` (1-indexed). The
/// count stops at [`MAX_COUNTED_MATCHES`] once occurrence `wanted` (or, without one, the
/// first) is found.
fn find(haystack: &[u8], needle: &[u8], wanted: Option<usize>) -> Found {
    let finder = memmem::Finder::new(needle);
    let mut found = Found {
        count: 0,
        first: Vec::new(),
        target: None,
    };
    let mut from = 0;
    while let Some(rest) = haystack.get(from..) {
        let Some(rel) = finder.find(rest) else { break };
        let at = from + rel;
        found.count += 1;
        if found.first.len() < MAX_LISTED_MATCHES {
            found.first.push(at);
        }
        if wanted == Some(found.count) || (wanted.is_none() && found.count == 1) {
            found.target = Some(at);
        }
        if found.count >= MAX_COUNTED_MATCHES && found.target.is_some() {
            break;
        }
        from = at + 1;
    }
    found
}

fn list_matches(body: &str, lines: &LineIndex, offsets: &[usize]) -> Vec<SelectorMatch> {
    offsets
        .iter()
        .enumerate()
        .map(|(n, &at)| {
            let line = lines.line_of(at);
            SelectorMatch {
                occurrence: count(n + 1),
                line: count(line),
                text: quote(lines.text(body, line), MAX_QUOTE_BYTES),
            }
        })
        .collect()
}
