//! `replace`: one exact-text replacement — lock, decide in the component, publish.

use super::{Scope, internal, lock, plan_base, refusal};
use crate::code::Failure;
use crate::engine;
use crate::protocol::ReplaceResult;
use crate::publish;

/// One replacement, as asked.
#[derive(Debug, Clone, Copy)]
pub struct ReplaceArgs<'a> {
    /// Worktree-relative path.
    pub path: &'a str,
    /// The revision the caller saw; `None` is `REVISION_UNAVAILABLE` for a declared path.
    pub expected_sha256: Option<&'a str>,
    /// The anchor: must occur exactly once.
    pub old_text: &'a str,
    /// The replacement.
    pub new_text: &'a str,
}

/// Performs one replacement under the worktree lock.
///
/// # Errors
///
/// The first refusal, as a [`Failure`] with its code.
pub fn replace(scope: Scope<'_>, args: ReplaceArgs<'_>) -> Result<ReplaceResult, Failure> {
    let _lock = lock(scope.root)?;
    let mut mutator = scope
        .loaded
        .instantiate(scope.root.dir())
        .map_err(internal)?;
    let decision = mutator
        .replace(&engine::ReplaceRequest {
            path: args.path.to_string(),
            writable_paths: scope.contract.writable_paths.clone(),
            private_paths: scope.contract.private_paths.clone(),
            expected_sha256: args.expected_sha256.map(str::to_string),
            old_text: args.old_text.to_string(),
            new_text: args.new_text.to_string(),
        })
        .map_err(internal)?;
    let plan = decision.map_err(refusal)?;
    let base = plan_base(&plan, args.path, args.expected_sha256)?;
    publish::publish(scope.root.dir(), &plan.path, &base, &plan.new_content)?;
    Ok(ReplaceResult {
        path: plan.path,
        sha256: plan.next_sha256,
    })
}
