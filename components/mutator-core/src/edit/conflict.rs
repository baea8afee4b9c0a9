//! The rules between two resolved edits of one batch: replacements may not overlap, two
//! insertions may not share a point, and an insertion may not fall on the boundary or
//! inside of a replacement.

use alloc::format;

use super::resolve::Span;
use super::{EditOp, Problem, ProblemCode, count, problem};
use crate::lines::LineIndex;

/// The conflict between an earlier span `a` and a later span `b`, if any.
pub(super) fn conflict(a: Span, b: Span) -> Option<ProblemCode> {
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

pub(super) fn conflict_problem(
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
