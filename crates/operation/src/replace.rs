//! `replace`: one exact-text replacement — lock, decide in the component, publish.

use serde::Serialize;

use super::{ReplaceArgs, Scope, internal, lock, plan_base, refusal};
use satyrn_code::Failure;
use satyrn_engine as engine;
use satyrn_publish as publish;

/// The result of a successful `replace`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplaceResult {
    /// The edited path.
    pub path: String,
    /// The file's revision after the edit.
    pub sha256: String,
}

/// Performs one replacement under the worktree lock.
///
/// # Errors
///
/// The first refusal, as a [`Failure`] with its code.
pub fn replace(scope: Scope<'_>, args: &ReplaceArgs) -> Result<ReplaceResult, Failure> {
    let _lock = lock(scope)?;
    let mut mutator = scope.mutator()?;
    let request = engine::ReplaceRequest {
        path: args.path.clone(),
        writable_paths: scope.contract.writable_paths.clone(),
        private_paths: scope.contract.private_paths.clone(),
        expected_sha256: args.expected_sha256.clone(),
        old_text: args.old_text.clone(),
        new_text: args.new_text.clone(),
    };
    let decision = mutator.call(|m| m.replace(&request)).map_err(internal)?;
    let plan = decision.map_err(refusal)?;
    let base = plan_base(
        &plan,
        &args.path,
        args.expected_sha256.as_deref(),
        satyrn_mutator_core::replace::MAX_FILE_BYTES,
    )?;
    publish::publish(scope.root.dir(), &plan.path, &base, &plan.new_content)?;
    Ok(ReplaceResult {
        path: plan.path,
        sha256: plan.next_sha256,
    })
}
