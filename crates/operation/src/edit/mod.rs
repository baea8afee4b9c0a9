//! `edit`: a batch of selector edits of one file — lock, decide the whole batch in the
//! component, publish once.

use super::{EditArgs, Scope, internal, lock, plan_base, refusal};
use satyrn_code::{Code, Failure};
use satyrn_engine as engine;
use satyrn_publish as publish;

mod result;

pub use result::{
    EditDetails, EditRejection, EditResult, Hunk, LineRange, NearMiss, Problem, SelectorMatch,
    StaleDetails,
};

/// A refused batch: the failure, and the typed details a front end shows with it (every
/// problem of the batch, or the current revision of a stale file).
pub type EditRefusal = (Failure, Option<Box<EditDetails>>);

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
pub fn edit(scope: Scope<'_>, args: &EditArgs) -> Result<EditResult, EditRefusal> {
    let plain = |f: Failure| (f, None);
    let edits = args
        .ops()
        .map_err(|m| plain(Failure::new(Code::InvalidRequest, m)))?;
    let _lock = lock(scope).map_err(plain)?;
    let mut mutator = scope.mutator().map_err(plain)?;
    let request = engine::EditRequest {
        path: args.path.clone(),
        writable_paths: scope.contract.writable_paths.clone(),
        private_paths: scope.contract.private_paths.clone(),
        expected_sha256: args.expected_sha256.clone(),
        edits,
    };
    let decision = mutator
        .call(|m| m.edit(&request))
        .map_err(internal)
        .map_err(plain)?;
    let decided = decision.map_err(edit_refusal)?;
    let plan = decided.plan;
    let base = plan_base(
        &plan,
        &args.path,
        args.expected_sha256.as_deref(),
        satyrn_mutator_core::gates::MAX_TEXT_FILE_BYTES,
    )
    .map_err(plain)?;
    publish::publish(scope.root.dir(), &plan.path, &base, &plan.new_content)
        .map_err(|e| plain(e.into()))?;
    Ok(EditResult {
        path: plan.path,
        sha256: plan.next_sha256,
        changed: decided.changed.into_iter().map(LineRange::from).collect(),
        preview: decided.preview.into_iter().map(Hunk::from).collect(),
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
            Some(Box::new(EditDetails::Stale(StaleDetails {
                current_sha256: s.current_sha256,
            }))),
        ),
        engine::EditError::Rejected(r) => {
            let problems: Vec<Problem> = r.problems.into_iter().map(Problem::from).collect();
            let code = problems.first().map_or(Code::InternalError, |p| p.code);
            (
                Failure::new(code, r.message),
                Some(Box::new(EditDetails::Rejected(EditRejection {
                    problems,
                    problems_omitted: r.omitted,
                }))),
            )
        }
    }
}
