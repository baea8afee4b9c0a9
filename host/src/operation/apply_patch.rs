//! `apply_patch`: a patch in the envelope OpenAI's models are trained to write, parsed
//! strictly and decided in the component as a change set, published all together or not at
//! all (the publish of `change_set`).

use super::change_set::{ChangeSetResult, change_set_refusal, publish_changes};
use super::{EditRefusal, PatchArgs, Scope, Seen, internal, lock};
use crate::code::{Code, Failure};
use crate::engine;

/// The paths a patch names, as agents write them relative to a root: every one (each
/// operation's, each `*** Move to:`, in order, once) and those it deletes.
#[derive(Default)]
struct Named {
    paths: Vec<String>,
    deleted: Vec<String>,
}

/// Parses `patch` once for the paths it names relative to `root` (`""`: as written);
/// nothing when it does not parse (the component then names why).
fn named(patch: &str, root: &str) -> Named {
    use satyrn_mutator_core::patch::Op;
    let Ok(parsed) = satyrn_mutator_core::patch::parse(patch) else {
        return Named::default();
    };
    let canonical = |p: &str| satyrn_mutator_core::path::as_agents_write(p, root).to_owned();
    let mut named = Named::default();
    for op in &parsed.ops {
        let (path, dest) = match op {
            Op::Add { path, .. } => (path, None),
            Op::Delete { path, .. } => {
                named.deleted.push(canonical(path));
                (path, None)
            }
            Op::Update { path, move_to, .. } => (path, move_to.as_ref()),
        };
        for p in std::iter::once(path).chain(dest) {
            let p = canonical(p);
            if !named.paths.contains(&p) {
                named.paths.push(p);
            }
        }
    }
    named
}

/// Every path `patch` names (each operation's, each `*** Move to:`), as agents write them
/// relative to `root` (`""`: as written); nothing when it does not parse (the component
/// then names why).
#[must_use]
pub fn patch_paths(patch: &str, root: &str) -> Vec<String> {
    named(patch, root).paths
}

/// Decides and publishes a patch under the worktree lock. With `args.agent_root` (set by
/// [`super::AgentPaths`]: an agent-facing front end) the patch's paths are taken as agents
/// write them; without it (the protocol's default), strictly.
///
/// # Errors
///
/// `PATCH_INVALID` for a patch that does not parse (the line and what was expected);
/// `PARTLY_SEEN` for a `*** Delete File:` of a file whose revision the agent saw only in
/// part (`args.seen`); every refused operation otherwise, as for `change_set`.
pub fn apply_patch(scope: Scope<'_>, args: &PatchArgs) -> Result<ChangeSetResult, EditRefusal> {
    let plain = |f: Failure| (f, None);
    if args.patch.len() > crate::protocol::MAX_REQUEST_BYTES {
        return Err(plain(Failure::new(
            Code::InvalidRequest,
            "patch: larger than a request may be",
        )));
    }
    let _lock = lock(scope).map_err(plain)?;
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
        agent_root: args.agent_root.clone(),
    };
    let changes = mutator
        .call(|m| m.apply_patch(&request))
        .map_err(internal)
        .map_err(plain)?
        .map_err(change_set_refusal)?;
    let named = named(&args.patch, args.agent_root.as_deref().unwrap_or(""));
    let asked: Vec<&str> = named.paths.iter().map(String::as_str).collect();
    let partly = |path: &str| {
        args.seen.get(path) == Some(&Seen::Part) && named.deleted.iter().any(|d| d == path)
    };
    publish_changes(scope, &changes, &asked, &partly).map_err(plain)
}
