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
//! ```
//!
//! (`offset`, `limit` and `occurrence` are optional.)
//!
//! Responses, one compact line, fields in this order:
//! `{"version":1,"ok":…,"code":…,"message":…,"result":…}`. `check` responses have no
//! `result`. A `replace` success has `"result":{"path":…,"sha256":<next revision>}`; `read`
//! and `edit` have richer results, and an `edit` refused for its batch (or a stale
//! revision) carries typed details in `result`; every other failure has `"result":null`.
//! See `docs/protocol.md`.

use std::path::Path;

use crate::code::{Code, Failure};
use crate::contract::{self, Contract};
use crate::engine::{self, Loaded};
use crate::lock::WorktreeLock;
use crate::publish;
use crate::repo::RepoRoot;

mod request;
mod response;

use request::parse;
pub use request::{Edit, Read, Replace, Request};
pub use response::{
    EditRejection, EditResult, Hunk, LineRange, NearMiss, Payload, Problem, ReadResult,
    ReplaceResult, Response, SelectorMatch, Shape, StaleDetails,
};

/// The protocol version this build speaks.
pub const VERSION: u64 = 1;

/// The largest request accepted on stdin: 64 MiB.
pub const MAX_REQUEST_BYTES: usize = 64 * 1024 * 1024;

/// Answers one raw request.
#[must_use]
pub fn handle(input: &[u8]) -> Response {
    let request = match parse(input) {
        Ok(r) => r,
        Err((shape, message)) => {
            return Response::failure(shape, Failure::new(Code::InvalidRequest, message));
        }
    };
    match request {
        Request::Check { repo, contract } => match check(&repo, &contract) {
            Ok(_) => Response {
                shape: Shape::Check,
                code: Code::Ok,
                message: String::new(),
                result: None,
            },
            Err(f) => Response::failure(Shape::Check, f),
        },
        Request::Replace(r) => match replace(&r) {
            Ok(result) => Response {
                shape: Shape::WithResult,
                code: Code::Ok,
                message: String::new(),
                result: Some(Payload::Replace(result)),
            },
            Err(f) => Response::failure(Shape::WithResult, f),
        },
        Request::Read(r) => match read(&r) {
            Ok(result) => Response {
                shape: Shape::WithResult,
                code: Code::Ok,
                message: String::new(),
                result: Some(Payload::Read(result)),
            },
            Err(f) => Response::failure(Shape::WithResult, f),
        },
        Request::Edit(e) => match edit(&e) {
            Ok(result) => Response {
                shape: Shape::WithResult,
                code: Code::Ok,
                message: String::new(),
                result: Some(Payload::Edit(result)),
            },
            Err((f, details)) => Response {
                shape: Shape::WithResult,
                code: f.code,
                message: f.message,
                result: details.map(|d| *d),
            },
        },
    }
}

/// The contract and repository check: the contract first, then the repository.
///
/// # Errors
///
/// The contract's or repository's refusal.
pub fn check(repo: &Path, contract_path: &Path) -> Result<(Contract, RepoRoot), Failure> {
    crate::cli::panic::trigger("check");
    let contract = contract::load(contract_path)?;
    let root = RepoRoot::open(repo)?;
    Ok((contract, root))
}

/// Performs one replacement: check, lock, decide in the component, publish.
///
/// # Errors
///
/// The first refusal, as a [`Failure`] with its code.
pub fn replace(request: &Replace) -> Result<ReplaceResult, Failure> {
    let (contract, root) = check(&request.repo, &request.contract)?;
    let loaded = Loaded::new().map_err(internal)?;
    let _lock = WorktreeLock::acquire(root.dir()).map_err(|e| {
        Failure::new(
            Code::MutationFailed,
            format!("cannot lock the worktree: {e}"),
        )
    })?;
    let mut mutator = loaded.instantiate(root.dir()).map_err(internal)?;
    let decision = mutator
        .replace(&engine::ReplaceRequest {
            path: request.path.clone(),
            writable_paths: contract.writable_paths.clone(),
            expected_sha256: request.expected_sha256.clone(),
            old_text: request.old_text.clone(),
            new_text: request.new_text.clone(),
        })
        .map_err(internal)?;
    let plan = decision.map_err(refusal)?;
    let base = plan_base(&plan, &request.path, request.expected_sha256.as_deref())?;
    publish::publish(root.dir(), &plan.path, &base, &plan.new_content)?;
    Ok(ReplaceResult {
        path: plan.path,
        sha256: plan.next_sha256,
    })
}

/// Reads one page of a file: check, decide in the component. No lock: reads do not
/// publish, and every publish is an atomic rename.
///
/// # Errors
///
/// The first refusal, as a [`Failure`] with its code.
pub fn read(request: &Read) -> Result<ReadResult, Failure> {
    let (contract, root) = check(&request.repo, &request.contract)?;
    let loaded = Loaded::new().map_err(internal)?;
    let mut mutator = loaded.instantiate(root.dir()).map_err(internal)?;
    let page = mutator
        .read(&engine::ReadRequest {
            path: request.path.clone(),
            writable_paths: contract.writable_paths.clone(),
            offset: request.offset,
            limit: request.limit,
        })
        .map_err(internal)?
        .map_err(|e| match e {
            engine::ReadError::InvalidRequest(m) => Failure::new(Code::InvalidRequest, m),
            engine::ReadError::Refused(r) => Failure::new(
                match r.code {
                    engine::ReadCode::Unavailable => Code::ReadUnavailable,
                    engine::ReadCode::NotText => Code::ReadNotText,
                    engine::ReadCode::TooLarge => Code::ReadTooLarge,
                    engine::ReadCode::OutOfRange => Code::ReadOutOfRange,
                },
                r.message,
            ),
        })?;
    Ok(ReadResult {
        path: page.path,
        sha256: page.sha256,
        writable: page.writable,
        bom: page.bom,
        offset: page.offset,
        lines: page.lines,
        total_lines: page.total_lines,
        text: page.text,
        next_offset: page.next_offset,
        notice: page.notice,
    })
}

/// Performs one batch of edits: check, lock, decide in the component, publish once.
///
/// # Errors
///
/// The first refusal, with the typed details that go in `result` (the batch's problems,
/// or the current revision of a stale file).
pub fn edit(request: &Edit) -> Result<EditResult, (Failure, Option<Box<Payload>>)> {
    let plain = |f: Failure| (f, None);
    let (contract, root) = check(&request.repo, &request.contract).map_err(plain)?;
    let loaded = Loaded::new().map_err(internal).map_err(plain)?;
    let _lock = WorktreeLock::acquire(root.dir())
        .map_err(|e| {
            Failure::new(
                Code::MutationFailed,
                format!("cannot lock the worktree: {e}"),
            )
        })
        .map_err(plain)?;
    let mut mutator = loaded
        .instantiate(root.dir())
        .map_err(internal)
        .map_err(plain)?;
    let decision = mutator
        .edit(&engine::EditRequest {
            path: request.path.clone(),
            writable_paths: contract.writable_paths.clone(),
            expected_sha256: request.expected_sha256.clone(),
            edits: request.edits.clone(),
        })
        .map_err(internal)
        .map_err(plain)?;
    let decided = decision.map_err(edit_refusal)?;
    let plan = decided.plan;
    let base =
        plan_base(&plan, &request.path, request.expected_sha256.as_deref()).map_err(plain)?;
    publish::publish(root.dir(), &plan.path, &base, &plan.new_content)
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
fn edit_refusal(e: engine::EditError) -> (Failure, Option<Box<Payload>>) {
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
            let problems: Vec<Problem> = r.problems.into_iter().map(problem).collect();
            let code = problems
                .first()
                .map_or(Code::InternalError, |p| problem_code(p.code));
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

/// The protocol spelling of a batch problem's code, e.g. `EDITS_OVERLAP`.
#[must_use]
pub fn problem_spelling(code: engine::ProblemCode) -> &'static str {
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
    .as_str()
}

fn problem_code(spelling: &str) -> Code {
    [
        Code::SelectorEmpty,
        Code::LineEndingsUnsupported,
        Code::NoOpEdit,
        Code::AnchorMissing,
        Code::AnchorAmbiguous,
        Code::OccurrenceOutOfRange,
        Code::EditsOverlap,
        Code::InsertionsCollide,
        Code::InsertionInReplacement,
        Code::NoOpBatch,
    ]
    .into_iter()
    .find(|c| c.as_str() == spelling)
    .unwrap_or(Code::InternalError)
}

fn problem(p: engine::Problem) -> Problem {
    Problem {
        index: p.index,
        code: problem_spelling(p.code),
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
        near_miss: p.near_miss.map(|n| match n {
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
        }),
        conflicts_with: p.conflicts_with,
    }
}

/// The plan's base revision, after confirming the plan is about what was asked: the same
/// path and the revision the caller saw. The writer never trusts the decision code for
/// either; a mismatch is a bug (`INTERNAL_ERROR`) and nothing is published.
fn plan_base(
    plan: &engine::Plan,
    path: &str,
    expected: Option<&str>,
) -> Result<satyrn_mutator_core::revision::Revision, Failure> {
    if plan.path != path || Some(plan.base_sha256.as_str()) != expected {
        return Err(internal(format!(
            "the component planned `{}` at {} for a request about `{path}` at {}",
            plan.path,
            plan.base_sha256,
            expected.unwrap_or("no revision")
        )));
    }
    satyrn_mutator_core::revision::Revision::parse(&plan.base_sha256)
        .map_err(|e| internal(format!("the component returned a malformed revision: {e}")))
}

fn internal(e: impl std::fmt::Display) -> Failure {
    Failure::new(Code::InternalError, e.to_string())
}

/// Maps the component's refusal to its code.
#[must_use]
pub fn refusal(e: engine::ReplaceError) -> Failure {
    match e {
        engine::ReplaceError::InvalidRequest(m) => Failure::new(Code::InvalidRequest, m),
        engine::ReplaceError::Refused(r) => {
            let code = match r.code {
                engine::RefusalCode::PathUndeclared => Code::PathUndeclared,
                engine::RefusalCode::RevisionUnavailable => Code::RevisionUnavailable,
                engine::RefusalCode::RevisionStale => Code::RevisionStale,
                engine::RefusalCode::AnchorMissing => Code::AnchorMissing,
                engine::RefusalCode::AnchorAmbiguous => Code::AnchorAmbiguous,
                engine::RefusalCode::MutationFailed => Code::MutationFailed,
            };
            Failure::new(code, r.message)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::plan_base;
    use crate::code::Code;
    use crate::engine::Plan;

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
        assert!(plan_base(&plan("a.txt", &sha), "a.txt", Some(&sha)).is_ok());
        for (p, asked, expected) in [
            (plan("b.txt", &sha), "a.txt", Some(sha.as_str())),
            (plan("../a.txt", &sha), "a.txt", Some(sha.as_str())),
            (plan("a.txt", &"b".repeat(64)), "a.txt", Some(sha.as_str())),
            (plan("a.txt", &sha), "a.txt", None),
        ] {
            let failure = plan_base(&p, asked, expected).expect_err("refused");
            assert_eq!(failure.code, Code::InternalError);
        }
    }
}
