//! `apply_patch`: a patch in the envelope OpenAI's models are trained to write, parsed
//! strictly and decided in the component as a change set, published all together or not at
//! all (the publish of `change_set`).

use super::change_set::{ChangeSetResult, change_set_refusal, publish_changes};
use super::{EditRefusal, PatchArgs, Scope, internal, lock};
use crate::code::{Code, Failure};
use crate::engine;

/// Every path `patch` names (each operation's, each `*** Move to:`), as agents write them
/// relative to `root` (`""`: as written); nothing when it does not parse (the component
/// then names why).
#[must_use]
pub fn patch_paths(patch: &str, root: &str) -> Vec<String> {
    let Ok(parsed) = satyrn_mutator_core::patch::parse(patch) else {
        return Vec::new();
    };
    let mut paths = Vec::new();
    for op in &parsed.ops {
        let (path, dest) = match op {
            satyrn_mutator_core::patch::Op::Add { path, .. }
            | satyrn_mutator_core::patch::Op::Delete { path, .. } => (path, None),
            satyrn_mutator_core::patch::Op::Update { path, move_to, .. } => {
                (path, move_to.as_ref())
            }
        };
        for p in std::iter::once(path).chain(dest) {
            let p = satyrn_mutator_core::path::as_agents_write(p, root).to_owned();
            if !paths.contains(&p) {
                paths.push(p);
            }
        }
    }
    paths
}

/// Decides and publishes a patch under the worktree lock. `agent_root` (the worktree's
/// absolute path, from an agent-facing front end) takes the patch's paths as agents write
/// them; `None` (the protocol) takes them strictly.
///
/// # Errors
///
/// `PATCH_INVALID` for a patch that does not parse (the line and what was expected); every
/// refused operation otherwise, as for `change_set`.
pub fn apply_patch(
    scope: Scope<'_>,
    args: &PatchArgs,
    agent_root: Option<&str>,
) -> Result<ChangeSetResult, EditRefusal> {
    let plain = |f: Failure| (f, None);
    if args.patch.len() > crate::protocol::MAX_REQUEST_BYTES {
        return Err(plain(Failure::new(
            Code::InvalidRequest,
            "patch: larger than a request may be",
        )));
    }
    let _lock = lock(scope.root).map_err(plain)?;
    let mut mutator = scope.mutator().map_err(plain)?;
    let request = engine::PatchRequest {
        patch: args.patch.clone(),
        expected_sha256: args
            .expected_sha256
            .iter()
            .map(|(p, s)| (p.clone(), s.clone()))
            .collect(),
        writable_paths: scope.contract.writable_paths.clone(),
        private_paths: scope.contract.private_paths.clone(),
        agent_root: agent_root.map(str::to_owned),
    };
    let changes = mutator
        .call(|m| m.apply_patch(&request))
        .map_err(internal)
        .map_err(plain)?
        .map_err(change_set_refusal)?;
    let named = patch_paths(&args.patch, agent_root.unwrap_or(""));
    let asked: Vec<&str> = named.iter().map(String::as_str).collect();
    publish_changes(scope, &changes, &asked, &|_| false).map_err(plain)
}
