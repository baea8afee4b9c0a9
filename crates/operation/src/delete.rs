//! `delete`: removes one regular file at the caller's revision — lock, decide in the
//! component, and the publisher's checked unlink.

use schemars::JsonSchema;
use serde::Serialize;

use super::{Scope, Seen, internal, lock, partly_seen, refusal};
use crate::DeleteArgs;
use satyrn_code::Failure;
use satyrn_engine as engine;
use satyrn_publish as publish;

/// The result of a `delete`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(transform = super::schema::portable)]
pub struct DeleteResult {
    /// The deleted path.
    pub path: String,
}

/// Deletes one file under the worktree lock.
///
/// # Errors
///
/// The first refusal, as a [`Failure`] with its code (`PARTLY_SEEN` when a delete that
/// passed every gate is of a revision seen only in part).
pub fn delete(scope: Scope<'_>, args: &DeleteArgs) -> Result<DeleteResult, Failure> {
    let _lock = lock(scope)?;
    let mut mutator = scope.mutator()?;
    let request = engine::DeleteRequest {
        path: args.path.clone(),
        writable_paths: scope.contract.writable_paths.clone(),
        private_paths: scope.contract.private_paths.clone(),
        expected_sha256: args.expected_sha256.clone(),
    };
    let plan = mutator
        .call(|m| m.delete_file(&request))
        .map_err(internal)?
        .map_err(refusal)?;
    if plan.path != args.path || Some(plan.base_sha256.as_str()) != args.expected_sha256.as_deref()
    {
        return Err(internal(format!(
            "the component planned to delete `{}` at {} for a request about `{}`",
            plan.path, plan.base_sha256, args.path
        )));
    }
    if args.seen == Seen::Part {
        return Err(partly_seen(&args.path, "delete"));
    }
    let base = satyrn_mutator_core::revision::Revision::parse(&plan.base_sha256)
        .map_err(|e| internal(format!("the component returned a malformed revision: {e}")))?;
    publish::delete(scope.root.dir(), &plan.path, &base)?;
    Ok(DeleteResult { path: plan.path })
}
