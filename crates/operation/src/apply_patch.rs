//! `apply_patch`: a patch in the envelope OpenAI's models are trained to write, parsed
//! strictly and decided in the component as a change set, published all together or not at
//! all (the publish of `change_set`).

use super::change_set::{ChangeSetResult, change_set_refusal, publish_changes};
use super::seen_in_part::Step;
use super::{EditRefusal, PatchArgs, Scope, Seen, internal, lock};
use satyrn_code::{Code, Failure};
use satyrn_engine as engine;

/// The paths a patch names, as agents write them relative to a root: every one (each
/// operation's, each `*** Move to:`, in order, once) and those it deletes.
#[derive(Default)]
struct Named {
    paths: Vec<String>,
    /// What each operation does to content, in order (canonical paths).
    steps: Vec<NamedStep>,
}

enum NamedStep {
    Keep(String),
    Replace(String),
    Remove(String),
    Move(String, String),
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
            Op::Add { path, .. } => {
                named.steps.push(NamedStep::Replace(canonical(path)));
                (path, None)
            }
            Op::Delete { path, .. } => {
                named.steps.push(NamedStep::Remove(canonical(path)));
                (path, None)
            }
            Op::Update { path, move_to, .. } => {
                named.steps.push(match move_to {
                    Some(to) => NamedStep::Move(canonical(path), canonical(to)),
                    None => NamedStep::Keep(canonical(path)),
                });
                (path, move_to.as_ref())
            }
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
/// `PARTLY_SEEN` when the patch deletes or replaces whole the content of a file whose
/// revision the agent saw only in part (`args.seen`), at its path or where a `*** Move to:`
/// took it; every refused operation otherwise, as for `change_set`.
pub fn apply_patch(scope: Scope<'_>, args: &PatchArgs) -> Result<ChangeSetResult, EditRefusal> {
    let plain = |f: Failure| (f, None);
    if args.patch.len() > satyrn_code::MAX_REQUEST_BYTES {
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
    let steps: Vec<Step<'_>> = named
        .steps
        .iter()
        .map(|s| match s {
            NamedStep::Keep(p) => Step::Keep(p),
            NamedStep::Replace(p) => Step::Replace(p),
            NamedStep::Remove(p) => Step::Remove(p),
            NamedStep::Move(p, to) => Step::Move(p, to),
        })
        .collect();
    let partly = |path: &str| args.seen.get(path) == Some(&Seen::Part);
    if let Some((path, verb)) = super::seen_in_part::replaced(&steps, &partly) {
        return Err(plain(super::partly_seen(&path, verb)));
    }
    publish_changes(scope, &changes, &asked).map_err(plain)
}
