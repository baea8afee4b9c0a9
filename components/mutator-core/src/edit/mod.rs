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
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use alloc::{format, vec};

use crate::gates::{Plan, Refusal, RefusalCode, policy_gates};
use crate::lines::LineIndex;
use crate::lines::LineStyle;
use crate::revision::Revision;
use crate::worktree::Worktree;

mod conflict;
mod near_miss;
mod preview;
mod resolve;
mod types;

use conflict::{conflict, conflict_problem};
use preview::{changed_ranges, preview};
use resolve::{Resolved, resolve};
pub use types::{
    Applied, EditError, EditOp, EditPlan, EditRequest, Hunk, LineRange, NearMiss, Problem,
    ProblemCode, Rejection, SelectorMatch,
};

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

fn refuse(code: RefusalCode, message: String) -> EditError {
    EditError::Refused(Refusal { code, message })
}

pub(super) fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The shape of a batch: between 1 and [`MAX_EDITS`] edits, every occurrence from 1.
///
/// # Errors
///
/// The message of an `InvalidRequest`, naming the field.
pub fn check_batch(edits: &[EditOp<'_>]) -> Result<(), String> {
    if edits.is_empty() {
        return Err("edits: at least one edit is required".to_string());
    }
    if edits.len() > MAX_EDITS {
        return Err(format!(
            "edits: at most {MAX_EDITS} edits per batch, got {}",
            edits.len()
        ));
    }
    if edits.iter().any(|e| e.occurrence() == Some(0)) {
        return Err("occurrence: occurrences are numbered from 1".to_string());
    }
    Ok(())
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
    check_batch(request.edits).map_err(EditError::InvalidRequest)?;
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
        return Err(rejection(vec![Problem {
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
