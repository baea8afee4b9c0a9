//! The operation layer: every operation an agent can perform, once, for every front end.
//!
//! `satyrn-host protocol` (one request per process) and long-lived front ends (an MCP
//! server, a session that keeps the contract frozen) call the same functions: the decision
//! runs in the component, the publish step in the host, and each refusal has one code and one
//! message wherever it is shown. A front end only decides where the [`Scope`] comes from
//! (a contract path read per request, or bytes frozen at start) and how results are
//! rendered.
//!
//! One file per operation: [`replace`], [`read`], [`edit`], [`list`], [`search`],
//! [`write`], [`delete`], each with its typed result; every operation's arguments are one
//! serde model (`operation/args.rs`) that every front end deserializes.

use satyrn_code::{Code, Failure};
use satyrn_contract::Contract;
use satyrn_contract::repo::RepoRoot;
use satyrn_engine as engine;
use satyrn_os::lock::WorktreeLock;

mod agent_paths;
mod apply_patch;
mod args;
mod change_set;
mod delete;
pub mod echo;
mod edit;
mod list;
mod read;
mod replace;
pub mod schema;
mod search;
mod seen_in_part;
pub mod strict;
mod write;

pub use agent_paths::AgentPaths;
pub use apply_patch::{apply_patch, patch_paths};
pub use args::{
    ChangeEntry, ChangeKind, ChangeSetArgs, DeleteArgs, EditArgs, EditEntry, EditKind, ListArgs,
    PatchArgs, ReadArgs, ReplaceArgs, RequestShape, SearchArgs, Seen, WriteArgs,
};
pub use change_set::{
    ChangeSetRejection, ChangeSetResult, ChangedFile, FileStatus, HunkProblem, OpProblem,
    change_set,
};
pub use delete::{DeleteResult, delete};
pub use edit::{
    EditDetails, EditRefusal, EditRejection, EditResult, Hunk, LineRange, NearMiss, Problem,
    SelectorMatch, StaleDetails, edit, problem_spelling,
};
pub use list::{ListResult, ListedEntry, kind_name, list};
pub use read::{ReadResult, read};
pub use replace::{ReplaceResult, replace};
pub use search::{FoundFile, FoundLine, SearchResult, SkippedFile, search};
pub use write::{WriteResult, write};

/// What an operation acts within: the opened worktree root, the contract whose
/// `writable_paths` decide what may change, and the loaded engine (loaded once per process
/// or session) with the component instances lent to each call.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// The worktree root, opened once (every later step uses this descriptor).
    pub root: &'a RepoRoot,
    /// The contract (already validated).
    pub contract: &'a Contract,
    /// The engine and the deserialized component.
    pub loaded: &'a engine::Loaded,
    /// The instances over `root`, made from `loaded`: each call borrows one and gives it
    /// back ([`engine::Instances`] says when one is kept and when discarded).
    pub instances: &'a engine::Instances,
}

impl<'a> Scope<'a> {
    /// A component instance over the worktree for one operation.
    ///
    /// # Errors
    ///
    /// `INTERNAL_ERROR` when no instance can be made.
    fn mutator(&self) -> Result<engine::Lent<'_>, Failure> {
        self.instances.lend().map_err(internal)
    }

    /// What a recovery of this worktree may change: the contract's writable, not private,
    /// paths.
    fn boundary(&self) -> satyrn_publish::Boundary<'a> {
        satyrn_publish::Boundary {
            writable_paths: &self.contract.writable_paths,
            private_paths: &self.contract.private_paths,
        }
    }
}

/// Takes the worktree lock for a writing operation.
///
/// # Errors
///
/// `MUTATION_FAILED` when the lock cannot be taken.
fn lock<'a>(scope: Scope<'a>) -> Result<WorktreeLock<'a>, Failure> {
    let lock = WorktreeLock::acquire(scope.root.dir()).map_err(|e| {
        Failure::new(
            Code::MutationFailed,
            format!("cannot lock the worktree: {e}"),
        )
    })?;
    // Whoever takes the lock next settles what a killed change set left.
    satyrn_publish::recover(scope.root.dir(), scope.boundary());
    Ok(lock)
}

/// `PARTLY_SEEN`: the whole of `path` is about to be replaced (`verb` "overwrite") or
/// removed ("delete") on a revision the agent saw only in part ([`Seen::Part`]). The one
/// message every front end shows.
fn partly_seen(path: &str, verb: &str) -> Failure {
    Failure::new(
        Code::PartlySeen,
        format!(
            "`{path}` was seen only in part (a page of it, or a search hit): to {verb} it whole, read all of it first (every page) or, where the tool takes one, pass expected_sha256 yourself; an edit needs no whole view"
        ),
    )
}

fn internal(e: impl std::fmt::Display) -> Failure {
    Failure::new(Code::InternalError, e.to_string())
}

/// Maps the component's refusal of a replacement (or of an edit's gates) to its code.
#[must_use]
pub fn refusal(e: engine::ReplaceError) -> Failure {
    match e {
        engine::ReplaceError::InvalidRequest(m) => Failure::new(Code::InvalidRequest, m),
        engine::ReplaceError::Refused(r) => Failure::new(r.code.into(), r.message),
    }
}

/// Maps the component's refusal of a read-side operation (`read`, `list`, `search`).
fn read_failure(e: engine::ReadError) -> Failure {
    match e {
        engine::ReadError::InvalidRequest(m) => Failure::new(Code::InvalidRequest, m),
        engine::ReadError::Refused(r) => Failure::new(r.code.into(), r.message),
    }
}

/// The plan's base revision, after confirming the plan is about what was asked: the same
/// path and the revision the caller saw. The writer never trusts the decision code for
/// either; a mismatch is a bug (`INTERNAL_ERROR`) and nothing is published. A result over
/// `max`, the largest file the operation itself takes (16 MiB for `edit` and `write`,
/// 256 MiB for `replace`), is `RESULT_TOO_LARGE`: published, it could not be changed the
/// same way again.
fn plan_base(
    plan: &engine::Plan,
    path: &str,
    expected: Option<&str>,
    max: u64,
) -> Result<satyrn_mutator_core::revision::Revision, Failure> {
    if plan.path != path || Some(plan.base_sha256.as_str()) != expected {
        return Err(internal(format!(
            "the component planned `{}` at {} for a request about `{path}` at {}",
            plan.path,
            plan.base_sha256,
            expected.unwrap_or("no revision")
        )));
    }
    if plan.new_content.len() as u64 > max {
        return Err(Failure::new(
            Code::ResultTooLarge,
            format!(
                "the change would make `{path}` {} bytes, over the {max} bytes this operation takes (it could not be changed the same way again); nothing was written",
                plan.new_content.len()
            ),
        ));
    }
    satyrn_mutator_core::revision::Revision::parse(&plan.base_sha256)
        .map_err(|e| internal(format!("the component returned a malformed revision: {e}")))
}

#[cfg(test)]
mod tests {
    use super::plan_base;
    use satyrn_code::Code;
    use satyrn_engine::Plan;

    fn plan(path: &str, base: &str) -> Plan {
        Plan {
            path: path.to_string(),
            base_sha256: base.to_string(),
            new_content: Vec::new(),
            next_sha256: "0".repeat(64),
        }
    }

    #[test]
    fn a_plan_about_another_path_or_revision_is_never_published() {
        let sha = "a".repeat(64);
        assert!(plan_base(&plan("a.txt", &sha), "a.txt", Some(&sha), u64::MAX).is_ok());
        for (p, asked, expected) in [
            (plan("b.txt", &sha), "a.txt", Some(sha.as_str())),
            (plan("../a.txt", &sha), "a.txt", Some(sha.as_str())),
            (plan("a.txt", &"b".repeat(64)), "a.txt", Some(sha.as_str())),
            (plan("a.txt", &sha), "a.txt", None),
        ] {
            let failure = plan_base(&p, asked, expected, u64::MAX).expect_err("refused");
            assert_eq!(failure.code, Code::InternalError);
        }
    }
}
