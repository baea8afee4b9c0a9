//! Batched selector edits: several `replace` and `insert_after` edits resolved against one
//! immutable base and applied all together, or refused with every problem named.
//!
//! The gates before the content is looked at are those of [`crate::replace::decide`], in
//! the same order (path shape, `.git`, declared path, revision present, no-follow read,
//! revision equal, UTF-8), with [`MAX_EDIT_FILE_BYTES`] as the size limit. Then
//! [`apply`] decides the batch:
//!
//! - A UTF-8 byte-order mark is set aside: selectors match the text after it, and it is
//!   always kept.
//! - Selectors and new text are normalized to the file's line endings (LF or CRLF; see
//!   [`LineStyle::normalize`]). In a file with mixed or bare-CR endings an edit whose text
//!   contains a line break is refused ([`ProblemCode::LineEndingsUnsupported`]); other
//!   edits proceed verbatim. A file without any line break takes the text verbatim.
//! - Every byte outside the edited spans is kept exactly (so is the final-newline shape,
//!   unless an edit's own span includes the final line break).
//! - Occurrences are counted as exact bytes, overlapping ones included (`aa` occurs twice
//!   in `aaa`). `occurrence` is 1-indexed and required when a selector matches more than
//!   once.
//! - Each edit is checked on its own first (one problem at most per edit: empty
//!   selector, unsupported line endings, no-op, missing, ambiguous, occurrence out of
//!   range); then each resolved edit against every earlier resolved one (overlapping
//!   replacements, two insertions at one point, an insertion on a replacement's boundary
//!   or interior). Problems are listed in edit order; if there are none and the result is
//!   the base itself, the batch is a no-op.

use alloc::boxed::Box;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use memchr::memmem;

use crate::gates::{Plan, Refusal, RefusalCode, policy_gates};
use crate::lines::{LineIndex, LineStyle, has_line_break, quote};

mod near_miss;
mod preview;

use crate::revision::Revision;
use crate::worktree::Worktree;
use near_miss::{describe, near_miss};
use preview::{changed_ranges, preview};

/// The largest file, in bytes, that `edit` (and `read`) accepts: 16 MiB.
pub const MAX_EDIT_FILE_BYTES: u64 = crate::gates::MAX_TEXT_FILE_BYTES;
/// The most edits one batch may hold.
pub const MAX_EDITS: usize = 1000;
/// The most matches listed for an ambiguous or out-of-range selector.
pub const MAX_LISTED_MATCHES: usize = 8;
/// The most problems listed in one refusal (the rest are counted).
pub const MAX_PROBLEMS: usize = 100;
/// The most bytes of preview text in one success.
pub const MAX_PREVIEW_BYTES: usize = 8 * 1024;
/// Lines of context around each changed region in the preview.
pub const PREVIEW_CONTEXT: usize = 2;
/// Longest quoted line, in bytes, in previews and diagnostics.
pub const MAX_QUOTE_BYTES: usize = 200;
/// Longest exact file text quoted by a whitespace near miss (4 KiB): enough to copy a
/// multi-line selector back, small enough to keep every response bounded.
pub const MAX_NEAR_MISS_TEXT_BYTES: usize = 4 * 1024;
/// Lines longer than this are not searched for a whitespace-only near miss.
pub(super) const MAX_NEAR_MISS_LINE: usize = 64 * 1024;
/// Problem messages repeated in the top-level message.
const MESSAGE_PROBLEMS: usize = 10;
/// Missing selectors per batch that get a near-miss search (each may scan the whole file
/// several times); later ones are reported without one.
pub const MAX_NEAR_MISSES: usize = 16;
/// Occurrences of one selector are counted up to this many (then `match_count` is this
/// number and the message says "at least"), unless a later `occurrence` is asked for.
pub const MAX_COUNTED_MATCHES: usize = 10_000;

/// One edit of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EditOp<'a> {
    /// Replace one occurrence of `old_text` with `new_text`.
    Replace {
        /// The selector; non-empty.
        old_text: &'a str,
        /// The replacement, literal.
        new_text: &'a str,
        /// Which occurrence, 1-indexed; required when `old_text` occurs more than once.
        occurrence: Option<u32>,
    },
    /// Insert `new_text` right after one occurrence of `anchor_text`.
    InsertAfter {
        /// The selector; non-empty.
        anchor_text: &'a str,
        /// The inserted text, literal; non-empty.
        new_text: &'a str,
        /// Which occurrence, 1-indexed; required when `anchor_text` occurs more than once.
        occurrence: Option<u32>,
    },
}

impl<'a> EditOp<'a> {
    fn selector(&self) -> &'a str {
        match *self {
            Self::Replace { old_text, .. } => old_text,
            Self::InsertAfter { anchor_text, .. } => anchor_text,
        }
    }

    fn new_text(&self) -> &'a str {
        match *self {
            Self::Replace { new_text, .. } | Self::InsertAfter { new_text, .. } => new_text,
        }
    }

    fn occurrence(&self) -> Option<u32> {
        match *self {
            Self::Replace { occurrence, .. } | Self::InsertAfter { occurrence, .. } => occurrence,
        }
    }

    fn field(&self) -> &'static str {
        match self {
            Self::Replace { .. } => "old_text",
            Self::InsertAfter { .. } => "anchor_text",
        }
    }
}

/// One batch, as received.
#[derive(Debug, Clone, Copy)]
pub struct EditRequest<'a> {
    /// Worktree-relative path (see [`crate::path::segments`]).
    pub path: &'a str,
    /// The contract's `writable_paths` patterns.
    pub writable_paths: &'a [String],
    /// The contract's `private_paths` patterns (private wins over writable).
    pub private_paths: &'a [String],
    /// The revision the caller saw, or `None` when it never read the file.
    pub expected_sha256: Option<&'a str>,
    /// The edits; between 1 and [`MAX_EDITS`].
    pub edits: &'a [EditOp<'a>],
}

/// What is wrong with a batch; each problem names one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ProblemCode {
    /// The selector is empty.
    SelectorEmpty,
    /// The file's line endings are mixed or contain a bare CR, and the edit's text
    /// contains a line break that would have to be normalized.
    LineEndingsUnsupported,
    /// The edit changes nothing (`new_text` equals `old_text`, or an empty insertion).
    NoOpEdit,
    /// The selector occurs nowhere.
    AnchorMissing,
    /// The selector occurs more than once and no `occurrence` was given.
    AnchorAmbiguous,
    /// `occurrence` is not between 1 and the number of occurrences.
    OccurrenceOutOfRange,
    /// Two replacements overlap.
    EditsOverlap,
    /// Two insertions at one point.
    InsertionsCollide,
    /// An insertion on the boundary or inside of a replacement.
    InsertionInReplacement,
    /// The batch as a whole leaves the file unchanged.
    NoOpBatch,
}

impl ProblemCode {
    /// The protocol's spelling, e.g. `OCCURRENCE_OUT_OF_RANGE`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SelectorEmpty => "SELECTOR_EMPTY",
            Self::LineEndingsUnsupported => "LINE_ENDINGS_UNSUPPORTED",
            Self::NoOpEdit => "NO_OP_EDIT",
            Self::AnchorMissing => "ANCHOR_MISSING",
            Self::AnchorAmbiguous => "ANCHOR_AMBIGUOUS",
            Self::OccurrenceOutOfRange => "OCCURRENCE_OUT_OF_RANGE",
            Self::EditsOverlap => "EDITS_OVERLAP",
            Self::InsertionsCollide => "INSERTIONS_COLLIDE",
            Self::InsertionInReplacement => "INSERTION_IN_REPLACEMENT",
            Self::NoOpBatch => "NO_OP_BATCH",
        }
    }
}

/// One occurrence of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectorMatch {
    /// Its `occurrence` number, 1-indexed.
    pub occurrence: u32,
    /// The line it starts on, 1-indexed.
    pub line: u32,
    /// That line's text (cut at [`MAX_QUOTE_BYTES`]).
    pub text: String,
}

/// The nearest thing to a missing selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NearMiss {
    /// The file has the selector with different whitespace.
    Whitespace {
        /// The line where it starts.
        line: u32,
        /// The file's exact text (whole lines for a multi-line selector).
        text: String,
    },
    /// The closest candidate matches the selector's first lines and then diverges.
    Diverges {
        /// The selector line (1-indexed) that does not match.
        selector_line: u32,
        /// That selector line.
        selector_text: String,
        /// The file line (1-indexed) it was compared with.
        line: u32,
        /// That file line.
        text: String,
    },
    /// Only a prefix of the selector occurs.
    Prefix {
        /// Where the prefix first occurs.
        line: u32,
        /// The prefix.
        prefix: String,
        /// Its length in characters.
        matched_chars: u32,
        /// The selector's length in characters.
        selector_chars: u32,
        /// The file line where it occurs.
        text: String,
    },
}

/// One problem of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The edit's index in the batch (0-indexed); `None` for [`ProblemCode::NoOpBatch`].
    pub index: Option<u32>,
    /// What is wrong.
    pub code: ProblemCode,
    /// A human-readable explanation.
    pub message: String,
    /// How often the selector occurs (0 when not counted).
    pub match_count: u32,
    /// The first [`MAX_LISTED_MATCHES`] occurrences, for ambiguous and out-of-range selectors.
    pub matches: Vec<SelectorMatch>,
    /// For a missing selector, its nearest near miss, if any.
    pub near_miss: Option<NearMiss>,
    /// For a conflict, the index of the earlier edit it conflicts with.
    pub conflicts_with: Option<u32>,
}

/// A line range, 1-indexed and inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineRange {
    /// First line.
    pub start_line: u32,
    /// Last line.
    pub end_line: u32,
}

/// One region of the preview.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// First line shown.
    pub start_line: u32,
    /// Last line shown.
    pub end_line: u32,
    /// The lines, each ended by `\n` (long lines cut at [`MAX_QUOTE_BYTES`]).
    pub text: String,
}

/// A decided batch, before hashing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The complete new content (BOM included).
    pub content: Vec<u8>,
    /// The changed line ranges of the new content, in order.
    pub changed: Vec<LineRange>,
    /// The preview, at most [`MAX_PREVIEW_BYTES`] of text.
    pub preview: Vec<Hunk>,
    /// Lines of the preview left out by the byte cap.
    pub preview_omitted_lines: u32,
}

/// A decided batch: what to publish and what to tell the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditPlan {
    /// What the host must publish.
    pub plan: Plan,
    /// See [`Applied::changed`].
    pub changed: Vec<LineRange>,
    /// See [`Applied::preview`].
    pub preview: Vec<Hunk>,
    /// See [`Applied::preview_omitted_lines`].
    pub preview_omitted_lines: u32,
}

/// A refused batch: every problem (up to [`MAX_PROBLEMS`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// A summary naming the problems.
    pub message: String,
    /// The problems, in edit order.
    pub problems: Vec<Problem>,
    /// Problems found beyond [`MAX_PROBLEMS`].
    pub omitted: u32,
}

/// Why no plan was produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditError {
    /// The request is malformed; not a policy decision.
    InvalidRequest(String),
    /// A gate refused (never [`RefusalCode::RevisionStale`]: see [`EditError::Stale`]).
    Refused(Refusal),
    /// The file's revision is not the expected one.
    Stale {
        /// Why, naming both revisions.
        message: String,
        /// The revision the file holds now.
        current: Revision,
    },
    /// The batch itself was refused.
    Rejected(Rejection),
}

fn refuse(code: RefusalCode, message: String) -> EditError {
    EditError::Refused(Refusal { code, message })
}

pub(super) fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Decides one batch: the gates of [`crate::replace::decide`] in the same order, then
/// [`apply`].
///
/// # Errors
///
/// The first failing gate, or every problem of the batch ([`EditError::Rejected`]).
pub fn decide<W: Worktree + ?Sized>(
    worktree: &W,
    request: &EditRequest<'_>,
) -> Result<EditPlan, EditError> {
    let path = request.path;
    let (segments, expected) = crate::gates::request_shape(path, request.expected_sha256)
        .map_err(EditError::InvalidRequest)?;
    if request.edits.is_empty() {
        return Err(EditError::InvalidRequest(
            "edits: at least one edit is required".to_string(),
        ));
    }
    if request.edits.len() > MAX_EDITS {
        return Err(EditError::InvalidRequest(format!(
            "edits: at most {MAX_EDITS} edits per batch, got {}",
            request.edits.len()
        )));
    }
    if request.edits.iter().any(|e| e.occurrence() == Some(0)) {
        return Err(EditError::InvalidRequest(
            "occurrence: occurrences are numbered from 1".to_string(),
        ));
    }
    let (expected, bytes) = policy_gates(
        worktree,
        path,
        &segments,
        (request.writable_paths, request.private_paths),
        expected,
        MAX_EDIT_FILE_BYTES,
    )
    .map_err(EditError::Refused)?;
    let base = Revision::of(&bytes);
    if base != expected {
        return Err(EditError::Stale {
            message: crate::gates::stale_message(path, &expected, &base),
            current: base,
        });
    }
    let Ok(text) = core::str::from_utf8(&bytes) else {
        return Err(refuse(
            RefusalCode::MutationFailed,
            format!("`{path}` is not valid UTF-8 text"),
        ));
    };
    let applied = apply(text, request.edits).map_err(|mut r| {
        r.message = format!("`{path}`: {}", r.message);
        EditError::Rejected(r)
    })?;
    let next = Revision::of(&applied.content);
    Ok(EditPlan {
        plan: Plan {
            path: path.to_string(),
            base,
            new_content: applied.content,
            next,
        },
        changed: applied.changed,
        preview: applied.preview,
        preview_omitted_lines: applied.preview_omitted_lines,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Span {
    /// Replace `[start, end)`.
    Replace(usize, usize),
    /// Insert at this offset.
    Insert(usize),
}

impl Span {
    fn start(self) -> usize {
        match self {
            Self::Replace(s, _) | Self::Insert(s) => s,
        }
    }

    fn end(self) -> usize {
        match self {
            Self::Replace(_, e) | Self::Insert(e) => e,
        }
    }
}

struct Resolved {
    span: Span,
    new_text: String,
}

/// Decides a batch on `text` (the whole file, BOM included) without touching any file.
///
/// # Errors
///
/// A [`Rejection`] naming every problem (see the module documentation).
pub fn apply(text: &str, edits: &[EditOp<'_>]) -> Result<Applied, Rejection> {
    let (bom, body) = match text.strip_prefix('\u{feff}') {
        Some(body) => ("\u{feff}", body),
        None => ("", text),
    };
    let style = LineStyle::of(body);
    let lines = LineIndex::new(body);
    let mut near_misses = MAX_NEAR_MISSES;
    let mut resolved: Vec<Result<Resolved, Box<Problem>>> = Vec::with_capacity(edits.len());
    for (i, edit) in edits.iter().enumerate() {
        resolved.push(resolve(body, style, &lines, i, edit, &mut near_misses));
    }
    let mut problems = Vec::new();
    for (j, r) in resolved.iter().enumerate() {
        match r {
            Err(p) => problems.push(Problem::clone(p)),
            Ok(b) => {
                for (i, earlier) in resolved.iter().enumerate().take(j) {
                    if let Ok(a) = earlier
                        && let Some(code) = conflict(a.span, b.span)
                    {
                        problems.push(conflict_problem(code, i, j, edits, a.span, &lines));
                    }
                }
            }
        }
    }
    if !problems.is_empty() {
        return Err(rejection(problems));
    }
    let mut order: Vec<&Resolved> = resolved.iter().filter_map(|r| r.as_ref().ok()).collect();
    order.sort_by_key(|r| r.span.start());
    let mut out = String::with_capacity(body.len());
    let mut inserted = Vec::with_capacity(order.len());
    let mut cursor = 0;
    for r in order {
        out.push_str(body.get(cursor..r.span.start()).unwrap_or_default());
        inserted.push((out.len(), out.len() + r.new_text.len()));
        out.push_str(&r.new_text);
        cursor = r.span.end();
    }
    out.push_str(body.get(cursor..).unwrap_or_default());
    if out == body {
        return Err(rejection(alloc::vec![Problem {
            index: None,
            code: ProblemCode::NoOpBatch,
            message: "the edits together leave the file unchanged".to_string(),
            match_count: 0,
            matches: Vec::new(),
            near_miss: None,
            conflicts_with: None,
        }]));
    }
    let out_lines = LineIndex::new(&out);
    let changed = changed_ranges(&inserted, &out_lines);
    let (preview, preview_omitted_lines) = preview(&out, &out_lines, &changed);
    let mut content = Vec::with_capacity(bom.len() + out.len());
    content.extend_from_slice(bom.as_bytes());
    content.extend_from_slice(out.as_bytes());
    Ok(Applied {
        content,
        changed,
        preview,
        preview_omitted_lines,
    })
}

fn rejection(mut problems: Vec<Problem>) -> Rejection {
    let total = problems.len();
    let omitted = count(total.saturating_sub(MAX_PROBLEMS));
    problems.truncate(MAX_PROBLEMS);
    let mut message = if total == 1 {
        "the batch was refused and nothing was applied: ".to_string()
    } else {
        format!("the batch was refused and nothing was applied ({total} problems): ")
    };
    for (n, p) in problems.iter().take(MESSAGE_PROBLEMS).enumerate() {
        if n > 0 {
            message.push_str("; ");
        }
        message.push_str(&p.message);
    }
    if total > MESSAGE_PROBLEMS {
        message.push_str(&format!(
            "; and {} more (see result.problems)",
            total - MESSAGE_PROBLEMS
        ));
    }
    Rejection {
        message,
        problems,
        omitted,
    }
}

fn problem(index: usize, code: ProblemCode, message: String) -> Problem {
    Problem {
        index: Some(count(index)),
        code,
        message,
        match_count: 0,
        matches: Vec::new(),
        near_miss: None,
        conflicts_with: None,
    }
}

fn resolve(
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

fn conflict(a: Span, b: Span) -> Option<ProblemCode> {
    match (a, b) {
        (Span::Replace(s1, e1), Span::Replace(s2, e2)) => {
            (s1 < e2 && s2 < e1).then_some(ProblemCode::EditsOverlap)
        }
        (Span::Insert(p), Span::Insert(q)) => (p == q).then_some(ProblemCode::InsertionsCollide),
        (Span::Insert(p), Span::Replace(s, e)) | (Span::Replace(s, e), Span::Insert(p)) => {
            (s <= p && p <= e).then_some(ProblemCode::InsertionInReplacement)
        }
    }
}

fn conflict_problem(
    code: ProblemCode,
    i: usize,
    j: usize,
    edits: &[EditOp<'_>],
    earlier: Span,
    lines: &LineIndex,
) -> Problem {
    let line = lines.line_of(earlier.start());
    let message = match code {
        ProblemCode::EditsOverlap => format!(
            "edits[{j}] replaces text that overlaps the text edits[{i}] replaces (line {line}); merge them into one replacement"
        ),
        ProblemCode::InsertionsCollide => format!(
            "edits[{j}] inserts at the same point as edits[{i}] (line {line}); their order would be ambiguous, so combine them into one insertion"
        ),
        _ => {
            let (insert, replace) = match edits.get(j) {
                Some(EditOp::InsertAfter { .. }) => (j, i),
                _ => (i, j),
            };
            format!(
                "edits[{insert}] inserts on the boundary or inside of the text edits[{replace}] replaces (edits[{i}] at line {line}); put the inserted text into the replacement instead"
            )
        }
    };
    let mut p = problem(j, code, message);
    p.conflicts_with = Some(count(i));
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rep<'a>(old: &'a str, new: &'a str, occurrence: Option<u32>) -> EditOp<'a> {
        EditOp::Replace {
            old_text: old,
            new_text: new,
            occurrence,
        }
    }

    fn codes(r: &Rejection) -> Vec<&'static str> {
        r.problems.iter().map(|p| p.code.as_str()).collect()
    }

    #[test]
    fn overlapping_occurrences_count() {
        let r = apply("aaa\n", &[rep("aa", "b", None)]).unwrap_err();
        assert_eq!(codes(&r), ["ANCHOR_AMBIGUOUS"]);
        assert_eq!(r.problems[0].match_count, 2);
        let ok = apply("aaa\n", &[rep("aa", "b", Some(2))]).unwrap();
        assert_eq!(ok.content, b"ab\n");
    }

    #[test]
    fn crlf_and_bom_are_kept() {
        let ok = apply("\u{feff}a\r\nb\r\nc", &[rep("a\nb", "x\ny\nz", None)]).unwrap();
        assert_eq!(ok.content, "\u{feff}x\r\ny\r\nz\r\nc".as_bytes());
        assert_eq!(
            ok.changed,
            [LineRange {
                start_line: 1,
                end_line: 3
            }]
        );
    }

    #[test]
    fn near_misses() {
        let r = apply("fn  main() {\n}\n", &[rep("fn main()", "x", None)]).unwrap_err();
        assert_eq!(
            r.problems[0].near_miss,
            Some(NearMiss::Whitespace {
                line: 1,
                text: "fn  main()".into()
            })
        );
        let r = apply("a\nb\nc\n", &[rep("a\nb\nd", "x", None)]).unwrap_err();
        assert!(matches!(
            r.problems[0].near_miss,
            Some(NearMiss::Diverges {
                selector_line: 3,
                line: 3,
                ..
            })
        ));
        let r = apply("hello world\n", &[rep("hello there", "x", None)]).unwrap_err();
        assert!(matches!(
            r.problems[0].near_miss,
            Some(NearMiss::Prefix {
                matched_chars: 6,
                ..
            })
        ));
    }

    #[test]
    fn every_problem_at_once() {
        let r = apply(
            "one two\none\n",
            &[
                rep("", "x", None),
                rep("one", "one", None),
                rep("one", "1", None),
                rep("zzz", "y", None),
                rep("two", "2", Some(1)),
                EditOp::InsertAfter {
                    anchor_text: "one t",
                    new_text: "!",
                    occurrence: None,
                },
                rep("ne tw", "?", None),
            ],
        )
        .unwrap_err();
        assert_eq!(
            codes(&r),
            [
                "SELECTOR_EMPTY",
                "NO_OP_EDIT",
                "ANCHOR_AMBIGUOUS",
                "ANCHOR_MISSING",
                "INSERTION_IN_REPLACEMENT",
                "EDITS_OVERLAP",
                "INSERTION_IN_REPLACEMENT",
            ]
        );
    }
}
