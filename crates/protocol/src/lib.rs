//! The one-shot JSON protocol, version 1: one request on stdin, one response on stdout.
//!
//! Requests (every field required, no other field allowed, no duplicate keys):
//!
//! ```json
//! {"version":1,"operation":"replace","repo":"/abs/worktree","contract":"/abs/contract.yaml",
//!  "path":"src/a.txt","expected_sha256":"<64 hex>"|null,"old_text":"…","new_text":"…"}
//! {"version":1,"operation":"check","repo":"/abs/worktree","contract":"/abs/contract.yaml"}
//! {"version":1,"operation":"read","repo":…,"contract":…,"path":"src/a.txt","offset":1,"limit":100}
//! {"version":1,"operation":"edit","repo":…,"contract":…,"path":"src/a.txt",
//!  "expected_sha256":"<64 hex>"|null,"edits":[{"op":"replace","old_text":"…","new_text":"…"},
//!  {"op":"insert_after","anchor_text":"…","new_text":"…","occurrence":2}]}
//! {"version":1,"operation":"list","repo":…,"contract":…,"path":"src","recursive":true}
//! {"version":1,"operation":"search","repo":…,"contract":…,"query":"fn main","glob":"*.rs"}
//! {"version":1,"operation":"write","repo":…,"contract":…,"path":"src/new.rs",
//!  "expected_sha256":null,"content":"…"}
//! {"version":1,"operation":"delete","repo":…,"contract":…,"path":"src/old.rs",
//!  "expected_sha256":"<64 hex>"}
//! ```
//!
//! (`offset`, `limit` and `occurrence` are optional, and so is every field of `list` and
//! `search` but `query`; so is the envelope's `paths`: `"strict"` by default, `"agent"` to
//! take every path as agents write them, `./a`, `dir/` or absolute inside `repo`
//! ([`satyrn_operation::AgentPaths`]); see `docs/protocol.md`.)
//!
//! Responses, one compact line, fields in this order:
//! `{"version":1,"ok":…,"code":…,"message":…,"result":…}`. `check` responses have no
//! `result`. A `replace` success has `"result":{"path":…,"sha256":<next revision>}`; `read`
//! and `edit` have richer results, and an `edit` refused for its batch (or a stale
//! revision) carries typed details in `result`; every other failure has `"result":null`.
//! See `docs/protocol.md`.

use std::path::Path;

use satyrn_code::{Code, Failure};
use satyrn_contract::repo::RepoRoot;
use satyrn_contract::{self as contract, Contract};
use satyrn_engine::{Build, Instances, Loaded};
use satyrn_operation::{self as operation, Scope};

mod request;
mod response;

pub use operation::problem_spelling;
use request::parse;
pub use request::{Operation, OperationArgs, Request};
pub use response::{Payload, Response, Shape};

/// The protocol version this build speaks.
pub const VERSION: u64 = 1;

/// The largest request accepted on stdin: 64 MiB.
pub use satyrn_code::MAX_REQUEST_BYTES;

/// Where a request is answered.
#[derive(Debug, Clone, Copy)]
pub enum Place<'a> {
    /// In the repository and under the contract the request names (`satyrn-host
    /// protocol`).
    Named,
    /// In one worktree under one frozen contract, whatever the request names: a confined
    /// run's broker. The request's `repo` must be that worktree (the same directory, by
    /// identity) or it is `REPO_UNAVAILABLE`; its `contract` is never opened.
    Pinned {
        /// The worktree root.
        root: &'a Path,
        /// The frozen contract.
        contract: &'a Contract,
    },
}

/// Answers one raw request.
#[must_use]
pub fn handle(input: &[u8]) -> Response {
    handle_in(input, Place::Named)
}

/// Answers one raw request in `place`.
#[must_use]
pub fn handle_in(input: &[u8], place: Place<'_>) -> Response {
    let request = match parse(input) {
        Ok(r) => r,
        Err((shape, message)) => {
            return Response::failure(shape, Failure::new(Code::InvalidRequest, message));
        }
    };
    match request {
        Request::Check { repo, contract } => match check_in(&repo, &contract, place) {
            Ok(_) => Response {
                shape: Shape::Check,
                code: Code::Ok,
                message: String::new(),
                result: None,
            },
            Err(f) => Response::failure(Shape::Check, f),
        },
        Request::Operation(o) => {
            let done = scoped(
                (&o.repo, &o.contract, place),
                build_for(&o.args),
                |f| (f, None),
                |scope| run(scope, &o.args),
            );
            match done {
                Ok(result) => Response {
                    shape: Shape::WithResult,
                    code: Code::Ok,
                    message: String::new(),
                    result: Some(result),
                },
                Err((f, details)) => Response {
                    shape: Shape::WithResult,
                    code: f.code,
                    message: f.message,
                    result: details.map(|d| Payload::EditRefused(*d)),
                },
            }
        }
    }
}

/// Runs one operation of the operation layer; only a refused `edit` carries details.
fn run(scope: Scope<'_>, args: &OperationArgs) -> Result<Payload, operation::EditRefusal> {
    let plain = |f: Failure| (f, None);
    match args {
        OperationArgs::Replace(a) => operation::replace(scope, a)
            .map(Payload::Replace)
            .map_err(plain),
        OperationArgs::Read(a) => operation::read(scope, a).map(Payload::Read).map_err(plain),
        OperationArgs::Edit(a) => operation::edit(scope, a).map(Payload::Edit),
        OperationArgs::List(a) => operation::list(scope, a).map(Payload::List).map_err(plain),
        OperationArgs::Search(a) => operation::search(scope, a)
            .map(Payload::Search)
            .map_err(plain),
        OperationArgs::Write(a) => operation::write(scope, a)
            .map(Payload::Write)
            .map_err(plain),
        OperationArgs::Delete(a) => operation::delete(scope, a)
            .map(Payload::Delete)
            .map_err(plain),
        OperationArgs::ChangeSet(a) => operation::change_set(scope, a).map(Payload::ChangeSet),
        OperationArgs::ApplyPatch(a) => operation::apply_patch(scope, a).map(Payload::ChangeSet),
    }
}

/// The contract and repository check: the contract first, then the repository. (The
/// operations themselves are in [`satyrn_operation`], shared with every front end.)
///
/// # Errors
///
/// The contract's or repository's refusal.
pub fn check(repo: &Path, contract_path: &Path) -> Result<(Contract, RepoRoot), Failure> {
    satyrn_os::fault::trigger("check");
    let contract = contract::load(contract_path)?;
    let root = RepoRoot::open(repo)?;
    Ok((contract, root))
}

/// [`check`] in `place`: a pinned place checks that `repo` is its worktree and answers
/// with its frozen contract.
fn check_in(
    repo: &Path,
    contract_path: &Path,
    place: Place<'_>,
) -> Result<(Contract, RepoRoot), Failure> {
    let Place::Pinned { root, contract } = place else {
        return check(repo, contract_path);
    };
    let named = RepoRoot::open(repo)?;
    let pinned = RepoRoot::open(root)?;
    let same = |r: &RepoRoot| {
        rustix::fs::fstat(r.dir())
            .map(|st| (st.st_dev, st.st_ino))
            .ok()
    };
    if same(&named).is_none() || same(&named) != same(&pinned) {
        return Err(Failure::new(
            Code::RepoUnavailable,
            format!(
                "this confined run's broker serves {} only, not {}",
                root.display(),
                repo.display()
            ),
        ));
    }
    Ok((contract.clone(), pinned))
}

/// The build of the component a one-shot request loads: the one without `search` unless
/// it searches, so that every other request copies less of the guest's data into its one
/// instance (docs/architecture.md, "Two builds of the component").
fn build_for(args: &OperationArgs) -> Build {
    match args {
        OperationArgs::Search(_) => Build::Full,
        OperationArgs::Replace(_)
        | OperationArgs::Read(_)
        | OperationArgs::Edit(_)
        | OperationArgs::List(_)
        | OperationArgs::Write(_)
        | OperationArgs::Delete(_)
        | OperationArgs::ChangeSet(_)
        | OperationArgs::ApplyPatch(_) => Build::WithoutSearch,
    }
}

/// Runs `op` within the scope of the contract and repository a request names, in `place`,
/// with the component of `build` (loaded afresh: a one-shot request has no earlier state).
/// `lift` turns a failure of the scope itself into the operation's error type.
fn scoped<T, E>(
    (repo, contract, place): (&Path, &Path, Place<'_>),
    build: Build,
    lift: impl Fn(Failure) -> E,
    op: impl FnOnce(Scope<'_>) -> Result<T, E>,
) -> Result<T, E> {
    let (contract, root) = check_in(repo, contract, place).map_err(&lift)?;
    let engine_failure =
        |e: satyrn_engine::EngineError| lift(Failure::new(Code::InternalError, e.to_string()));
    let loaded = Loaded::of(build).map_err(|e| lift(e.into()))?;
    let instances = Instances::new(&loaded, root.dir()).map_err(engine_failure)?;
    op(Scope {
        root: &root,
        contract: &contract,
        loaded: &loaded,
        instances: &instances,
    })
}
