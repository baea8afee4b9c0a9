//! `edit`: a batch of selector edits of one file — lock, decide the whole batch in the
//! component, publish once.

use super::{Scope, internal, lock, plan_base, refusal};
use crate::code::{Code, Failure};
use crate::engine;
use crate::protocol::{
    EditRejection, EditResult, Hunk, LineRange, NearMiss, Payload, Problem, SelectorMatch,
    StaleDetails,
};
use crate::publish;

/// One batch, as asked.
#[derive(Debug, Clone, Copy)]
pub struct EditArgs<'a> {
    /// Worktree-relative path.
    pub path: &'a str,
    /// The revision the caller saw; `None` is `REVISION_UNAVAILABLE` for a declared path.
    pub expected_sha256: Option<&'a str>,
    /// The edits, in order (1 to 1000, checked by the caller's request model).
    pub edits: &'a [engine::EditOp],
}

/// A refused batch: the failure, and the typed details a front end shows with it (every
/// problem of the batch, or the current revision of a stale file).
pub type EditRefusal = (Failure, Option<Box<Payload>>);

impl From<engine::ProblemCode> for Code {
    fn from(code: engine::ProblemCode) -> Self {
        use engine::ProblemCode as P;
        match code {
            P::SelectorEmpty => Code::SelectorEmpty,
            P::LineEndingsUnsupported => Code::LineEndingsUnsupported,
            P::NoOpEdit => Code::NoOpEdit,
            P::AnchorMissing => Code::AnchorMissing,
            P::AnchorAmbiguous => Code::AnchorAmbiguous,
            P::OccurrenceOutOfRange => Code::OccurrenceOutOfRange,
            P::EditsOverlap => Code::EditsOverlap,
            P::InsertionsCollide => Code::InsertionsCollide,
            P::InsertionInReplacement => Code::InsertionInReplacement,
            P::NoOpBatch => Code::NoOpBatch,
        }
    }
}

/// The protocol spelling of a batch problem's code, e.g. `EDITS_OVERLAP`.
#[must_use]
pub fn problem_spelling(code: engine::ProblemCode) -> &'static str {
    Code::from(code).as_str()
}

/// Performs one batch under the worktree lock.
///
/// # Errors
///
/// The first refusal, with its typed details ([`EditRefusal`]).
pub fn edit(scope: Scope<'_>, args: EditArgs<'_>) -> Result<EditResult, EditRefusal> {
    let plain = |f: Failure| (f, None);
    let _lock = lock(scope.root).map_err(plain)?;
    let mut mutator = scope
        .loaded
        .instantiate(scope.root.dir())
        .map_err(internal)
        .map_err(plain)?;
    let decision = mutator
        .edit(&engine::EditRequest {
            path: args.path.to_string(),
            writable_paths: scope.contract.writable_paths.clone(),
            private_paths: scope.contract.private_paths.clone(),
            expected_sha256: args.expected_sha256.map(str::to_string),
            edits: args.edits.to_vec(),
        })
        .map_err(internal)
        .map_err(plain)?;
    let decided = decision.map_err(edit_refusal)?;
    let plan = decided.plan;
    let base = plan_base(&plan, args.path, args.expected_sha256).map_err(plain)?;
    publish::publish(scope.root.dir(), &plan.path, &base, &plan.new_content)
        .map_err(|e| plain(e.into()))?;
    Ok(EditResult {
        path: plan.path,
        sha256: plan.next_sha256,
        changed: decided
            .changed
            .into_iter()
            .map(|r| LineRange {
                start_line: r.start_line,
                end_line: r.end_line,
            })
            .collect(),
        preview: decided
            .preview
            .into_iter()
            .map(|h| Hunk {
                start_line: h.start_line,
                end_line: h.end_line,
                text: h.text,
            })
            .collect(),
        preview_omitted_lines: decided.preview_omitted_lines,
    })
}

/// Maps the component's refusal of a batch to its code and details.
fn edit_refusal(e: engine::EditError) -> EditRefusal {
    match e {
        engine::EditError::InvalidRequest(m) => (Failure::new(Code::InvalidRequest, m), None),
        engine::EditError::Refused(r) => (refusal(engine::ReplaceError::Refused(r)), None),
        engine::EditError::Stale(s) => (
            Failure::new(Code::RevisionStale, s.message),
            Some(Box::new(Payload::Stale(StaleDetails {
                current_sha256: s.current_sha256,
            }))),
        ),
        engine::EditError::Rejected(r) => {
            let problems: Vec<Problem> = r.problems.into_iter().map(Problem::from).collect();
            let code = problems.first().map_or(Code::InternalError, |p| p.code);
            (
                Failure::new(code, r.message),
                Some(Box::new(Payload::Rejected(EditRejection {
                    problems,
                    problems_omitted: r.omitted,
                }))),
            )
        }
    }
}

impl From<engine::Problem> for Problem {
    fn from(p: engine::Problem) -> Self {
        Problem {
            index: p.index,
            code: p.code.into(),
            message: p.message,
            match_count: p.match_count,
            matches: p
                .matches
                .into_iter()
                .map(|m| SelectorMatch {
                    occurrence: m.occurrence,
                    line: m.line,
                    text: m.text,
                })
                .collect(),
            near_miss: p.near_miss.map(NearMiss::from),
            conflicts_with: p.conflicts_with,
        }
    }
}

impl From<engine::NearMiss> for NearMiss {
    fn from(n: engine::NearMiss) -> Self {
        match n {
            engine::NearMiss::Whitespace(w) => NearMiss::Whitespace {
                line: w.line,
                text: w.text,
            },
            engine::NearMiss::Diverges(d) => NearMiss::Diverges {
                selector_line: d.selector_line,
                selector_text: d.selector_text,
                line: d.line,
                text: d.text,
            },
            engine::NearMiss::Prefix(x) => NearMiss::Prefix {
                line: x.line,
                prefix: x.prefix,
                matched_chars: x.matched_chars,
                selector_chars: x.selector_chars,
                text: x.text,
            },
        }
    }
}
