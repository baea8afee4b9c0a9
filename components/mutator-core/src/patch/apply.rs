//! One Update's hunks applied to a file's text, exactly (see [`super`]).

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::Hunk;
use crate::lines::{LineStyle, quote};

/// The most matching lines listed for an ambiguous hunk or anchor.
const MAX_LISTED: usize = 8;
/// Longest quoted line in a message.
const MAX_QUOTE: usize = 200;
const BOM: &str = "\u{feff}";

/// Why one hunk does not apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HunkProblem {
    /// The hunk's index in its Update, from 1.
    pub hunk: usize,
    /// The hunk's line in the patch.
    pub line: usize,
    /// What is wrong.
    pub code: HunkProblemCode,
    /// A sentence saying what was found and how to recover.
    pub message: String,
}

/// The kinds of hunks that do not apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HunkProblemCode {
    /// The file's line endings are mixed or contain a bare CR.
    LineEndingsUnsupported,
    /// The anchor occurs in no line where the hunk may apply.
    AnchorMissing,
    /// The anchor occurs in more than one line there.
    AnchorAmbiguous,
    /// The context and `-` lines occur nowhere there.
    ContextMissing,
    /// They occur more than once there.
    ContextAmbiguous,
    /// A hunk of only `+` lines without an anchor or `*** End of File`.
    NoPosition,
}

impl HunkProblemCode {
    /// The protocol's spelling, e.g. `HUNK_CONTEXT_MISSING`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::LineEndingsUnsupported => "LINE_ENDINGS_UNSUPPORTED",
            Self::AnchorMissing => "HUNK_ANCHOR_MISSING",
            Self::AnchorAmbiguous => "HUNK_ANCHOR_AMBIGUOUS",
            Self::ContextMissing => "HUNK_CONTEXT_MISSING",
            Self::ContextAmbiguous => "HUNK_CONTEXT_AMBIGUOUS",
            Self::NoPosition => "HUNK_NO_POSITION",
        }
    }
}

/// A file's text as lines: its byte-order mark, line ending and final-newline shape kept
/// aside.
struct Lines<'a> {
    bom: bool,
    eol: &'static str,
    lines: Vec<&'a str>,
    final_newline: bool,
}

impl<'a> Lines<'a> {
    fn of(text: &'a str) -> Result<Self, LineStyle> {
        let (bom, body) = match text.strip_prefix(BOM) {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let eol = match LineStyle::of(body) {
            LineStyle::None | LineStyle::Lf => "\n",
            LineStyle::Crlf => "\r\n",
            other => return Err(other),
        };
        let mut lines: Vec<&str> = body.split(eol).collect();
        // An empty file, or a final newline, leaves an empty last piece.
        let final_newline = body.is_empty() || body.ends_with(eol);
        if lines.last() == Some(&"") {
            lines.pop();
        }
        Ok(Self {
            bom,
            eol,
            lines,
            final_newline,
        })
    }
}

/// The line numbers (from 1) of the first few of `found`, for a message.
fn listed(found: &[usize]) -> String {
    let shown: Vec<String> = found
        .iter()
        .take(MAX_LISTED)
        .map(|i| (i + 1).to_string())
        .collect();
    if found.len() > MAX_LISTED {
        format!("{} and {} more", shown.join(", "), found.len() - MAX_LISTED)
    } else {
        shown.join(", ")
    }
}

/// Applies `hunks` to `text`; returns the new text, or every hunk's problem (each hunk is
/// checked even after an earlier one failed, from where that one would have started).
///
/// # Errors
///
/// One [`HunkProblem`] per hunk that does not apply, in hunk order.
pub fn apply_update(text: &str, hunks: &[Hunk]) -> Result<String, Vec<HunkProblem>> {
    let file = match Lines::of(text) {
        Ok(file) => file,
        Err(_) => {
            return Err(hunks
                .iter()
                .enumerate()
                .take(1)
                .map(|(i, h)| HunkProblem {
                    hunk: i + 1,
                    line: h.line,
                    code: HunkProblemCode::LineEndingsUnsupported,
                    message: "the file mixes LF and CRLF line endings (or has a bare CR): a hunk's lines cannot be given its line endings; use `edit` with exact text instead".to_string(),
                })
                .collect());
        }
    };
    let lines = &file.lines;
    let mut problems = Vec::new();
    let mut replacements: Vec<(usize, usize, &[String])> = Vec::new();
    let mut cursor = 0;
    for (index, hunk) in hunks.iter().enumerate() {
        let problem = |code, message| HunkProblem {
            hunk: index + 1,
            line: hunk.line,
            code,
            message,
        };
        let mut start = cursor;
        if let Some(anchor) = &hunk.anchor {
            let found: Vec<usize> = (cursor..lines.len())
                .filter(|&i| lines[i].contains(anchor.as_str()))
                .collect();
            match found.as_slice() {
                [only] => start = only + 1,
                [] => {
                    problems.push(problem(
                        HunkProblemCode::AnchorMissing,
                        format!(
                            "the anchor `{}` occurs in no line{}",
                            quote(anchor, MAX_QUOTE),
                            after(cursor)
                        ),
                    ));
                    continue;
                }
                many => {
                    problems.push(problem(
                        HunkProblemCode::AnchorAmbiguous,
                        format!(
                            "the anchor `{}` occurs in {} lines{} (lines {}): give a longer one, unique there",
                            quote(anchor, MAX_QUOTE),
                            many.len(),
                            after(cursor),
                            listed(many)
                        ),
                    ));
                    continue;
                }
            }
        }
        if hunk.old.is_empty() {
            let at = if hunk.end_of_file {
                lines.len()
            } else if hunk.anchor.is_some() {
                start
            } else {
                problems.push(problem(
                    HunkProblemCode::NoPosition,
                    "a hunk of only `+` lines needs an `@@ ANCHOR` line (it goes right after it) or `*** End of File` (it goes at the end)".to_string(),
                ));
                continue;
            };
            replacements.push((at, 0, &hunk.new));
            cursor = at;
            continue;
        }
        let k = hunk.old.len();
        let found: Vec<usize> = (start..=lines.len().saturating_sub(k))
            .filter(|&p| p + k <= lines.len())
            .filter(|&p| !hunk.end_of_file || p + k == lines.len())
            .filter(|&p| lines[p..p + k].iter().zip(&hunk.old).all(|(a, b)| *a == b))
            .collect();
        match found.as_slice() {
            [only] => {
                replacements.push((*only, k, &hunk.new));
                cursor = only + k;
            }
            [] => problems.push(problem(
                HunkProblemCode::ContextMissing,
                format!(
                    "its {k} context and `-` line{} occur nowhere{}{}{}",
                    if k == 1 { "" } else { "s" },
                    after(start),
                    if hunk.end_of_file { " at the end of the file" } else { "" },
                    near_miss(&file, start, &hunk.old)
                ),
            )),
            many => problems.push(problem(
                HunkProblemCode::ContextAmbiguous,
                format!(
                    "its context and `-` lines occur {} times{} (at lines {}): add context lines, or an `@@ ANCHOR` line before them",
                    many.len(),
                    after(start),
                    listed(many)
                ),
            )),
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut out: Vec<&str> = Vec::with_capacity(lines.len());
    let mut next = 0;
    for (at, len, new) in replacements {
        out.extend_from_slice(&lines[next..at]);
        out.extend(new.iter().map(String::as_str));
        next = at + len;
    }
    out.extend_from_slice(&lines[next..]);
    let mut text = String::new();
    if file.bom {
        text.push_str(BOM);
    }
    text.push_str(&out.join(file.eol));
    if file.final_newline && !out.is_empty() {
        text.push_str(file.eol);
    }
    Ok(text)
}

/// ` after line N` when the search did not start at the top.
fn after(start: usize) -> String {
    if start == 0 {
        String::new()
    } else {
        format!(" after line {start}")
    }
}

/// Where the closest candidate for `old` differs from it, as a clause for the message:
/// the first of its lines that occurs (from `start`) with the lines around it compared.
fn near_miss(file: &Lines<'_>, start: usize, old: &[String]) -> String {
    let lines = &file.lines;
    let compact = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    // A whitespace-only difference: every line equal once whitespace is ignored.
    let squeezed: Vec<String> = old.iter().map(|l| compact(l)).collect();
    let k = old.len();
    for p in start..lines.len() {
        if p + k > lines.len() {
            break;
        }
        if lines[p..p + k]
            .iter()
            .zip(&squeezed)
            .all(|(a, b)| compact(a) == *b)
        {
            let (i, (have, want)) = lines[p..p + k]
                .iter()
                .zip(old)
                .enumerate()
                .find(|(_, (a, b))| **a != b.as_str())
                .unwrap_or((0, (&lines[p], &old[0])));
            return format!(
                "; the file has them with different whitespace at line {}: `{}` where the hunk has `{}`",
                p + i + 1,
                quote(have, MAX_QUOTE),
                quote(want, MAX_QUOTE)
            );
        }
    }
    // The candidate that matches the most leading lines, and where it diverges.
    let mut best: Option<(usize, usize)> = None;
    for p in start..lines.len() {
        let same = lines[p..]
            .iter()
            .zip(old)
            .take_while(|(a, b)| **a == b.as_str())
            .count();
        if same > 0 && best.is_none_or(|(_, n)| same > n) {
            best = Some((p, same));
        }
    }
    match best {
        Some((p, same)) if same < k => format!(
            "; the closest candidate, at line {}, matches its first {same} line{} but then the hunk has `{}` where the file's line {} is `{}`",
            p + 1,
            if same == 1 { "" } else { "s" },
            quote(&old[same], MAX_QUOTE),
            p + same + 1,
            lines.get(p + same).map_or_else(
                || "(the end of the file)".to_string(),
                |l| quote(l, MAX_QUOTE)
            )
        ),
        _ => String::new(),
    }
}
