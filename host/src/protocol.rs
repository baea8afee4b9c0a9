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

use serde::Serialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::Value;
use std::path::{Path, PathBuf};

use crate::code::{Code, Failure};
use crate::contract::{self, Contract};
use crate::engine::{self, Loaded};
use crate::lock::WorktreeLock;
use crate::publish;
use crate::repo::RepoRoot;

/// The protocol version this build speaks.
pub const VERSION: u64 = 1;

/// The largest request accepted on stdin: 64 MiB.
pub const MAX_REQUEST_BYTES: usize = 64 * 1024 * 1024;

/// The result of a successful `replace`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplaceResult {
    /// The edited path.
    pub path: String,
    /// The file's revision after the edit.
    pub sha256: String,
}

/// The result of a successful `read`: one page of the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReadResult {
    /// The read path.
    pub path: String,
    /// The revision of the whole file.
    pub sha256: String,
    /// Whether the contract declares the path writable.
    pub writable: bool,
    /// Whether the file starts with a UTF-8 byte-order mark (not part of `text`).
    pub bom: bool,
    /// The first line of the page, 1-indexed.
    pub offset: u32,
    /// How many lines the page holds.
    pub lines: u32,
    /// How many lines the file has.
    pub total_lines: u32,
    /// The page's lines exactly as in the file.
    pub text: String,
    /// The `offset` of the next page, or `null` at the end.
    pub next_offset: Option<u32>,
    /// What was shown and how to continue, or `null` at the end.
    pub notice: Option<String>,
}

/// A line range, 1-indexed and inclusive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineRange {
    /// First line.
    pub start_line: u32,
    /// Last line.
    pub end_line: u32,
}

/// One region of an edit's preview.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hunk {
    /// First line shown.
    pub start_line: u32,
    /// Last line shown.
    pub end_line: u32,
    /// The lines, each ended by `\n`.
    pub text: String,
}

/// The result of a successful `edit`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EditResult {
    /// The edited path.
    pub path: String,
    /// The file's revision after the edit.
    pub sha256: String,
    /// The changed line ranges of the new content.
    pub changed: Vec<LineRange>,
    /// The changed regions with two lines of context, at most 8192 bytes of text.
    pub preview: Vec<Hunk>,
    /// Preview lines left out by the cap.
    pub preview_omitted_lines: u32,
}

/// One occurrence of a selector.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SelectorMatch {
    /// Its occurrence number, 1-indexed.
    pub occurrence: u32,
    /// The line it starts on.
    pub line: u32,
    /// That line's text.
    pub text: String,
}

/// The nearest near miss of a missing selector.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NearMiss {
    /// The selector with different whitespace.
    Whitespace {
        /// Where it starts.
        line: u32,
        /// The file's exact text.
        text: String,
    },
    /// The closest candidate diverges at a selector line.
    Diverges {
        /// The selector line (1-indexed) that does not match.
        selector_line: u32,
        /// Its text.
        selector_text: String,
        /// The file line compared with it.
        line: u32,
        /// Its text.
        text: String,
    },
    /// Only a prefix of the selector occurs.
    Prefix {
        /// Where it first occurs.
        line: u32,
        /// The prefix.
        prefix: String,
        /// Its length in characters.
        matched_chars: u32,
        /// The selector's length in characters.
        selector_chars: u32,
        /// The file line where it occurs.
        text: String,
    },
}

/// One problem of a refused batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The edit's 0-based index, or `null` for `NO_OP_BATCH`.
    pub index: Option<u32>,
    /// The problem's code.
    pub code: &'static str,
    /// Why.
    pub message: String,
    /// How often the selector occurs (ambiguous and out-of-range selectors), else 0.
    pub match_count: u32,
    /// The first 8 occurrences (ambiguous and out-of-range selectors).
    pub matches: Vec<SelectorMatch>,
    /// For a missing selector, or `null`.
    pub near_miss: Option<NearMiss>,
    /// For a conflict, the earlier edit's index, or `null`.
    pub conflicts_with: Option<u32>,
}

/// The details of a failure, in `result`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EditRejection {
    /// Every problem of the batch, in edit order (at most 100).
    pub problems: Vec<Problem>,
    /// Problems found beyond those listed.
    pub problems_omitted: u32,
}

/// The details of a stale revision found by the component.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StaleDetails {
    /// The revision the file holds now.
    pub current_sha256: String,
}

/// What a response's `result` holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Payload {
    /// A `replace` success.
    Replace(ReplaceResult),
    /// A `read` success.
    Read(ReadResult),
    /// An `edit` success.
    Edit(EditResult),
    /// An `edit` refused for its batch.
    Rejected(EditRejection),
    /// An `edit` refused for a stale revision.
    Stale(StaleDetails),
}

/// One protocol response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// Which operation answered; decides whether a `result` field is present.
    pub shape: Shape,
    /// The outcome; `Ok` for success.
    pub code: Code,
    /// Empty on success, otherwise why.
    pub message: String,
    /// The operation's result on success; typed details on some failures.
    pub result: Option<Payload>,
}

/// Whether a response carries a `result` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Four fields: `version, ok, code, message`.
    Check,
    /// Five fields: `… , result` (`replace`, `read`, `edit`).
    WithResult,
}

impl Response {
    fn failure(shape: Shape, failure: Failure) -> Self {
        Self {
            shape,
            code: failure.code,
            message: failure.message,
            result: None,
        }
    }

    /// The compact JSON line (without the newline).
    #[must_use]
    pub fn to_json(&self) -> String {
        #[derive(Serialize)]
        struct Four<'a> {
            version: u64,
            ok: bool,
            code: &'a str,
            message: &'a str,
        }
        #[derive(Serialize)]
        struct Five<'a> {
            version: u64,
            ok: bool,
            code: &'a str,
            message: &'a str,
            result: &'a Option<Payload>,
        }
        let ok = self.code == Code::Ok;
        let rendered = match self.shape {
            Shape::Check => serde_json::to_string(&Four {
                version: VERSION,
                ok,
                code: self.code.as_str(),
                message: &self.message,
            }),
            Shape::WithResult => serde_json::to_string(&Five {
                version: VERSION,
                ok,
                code: self.code.as_str(),
                message: &self.message,
                result: &self.result,
            }),
        };
        rendered.unwrap_or_else(|_| {
            r#"{"version":1,"ok":false,"code":"INTERNAL_ERROR","message":"cannot render the response","result":null}"#
                .to_string()
        })
    }

    /// The exit status for this response.
    #[must_use]
    pub fn exit_status(&self) -> u8 {
        self.code.exit_status()
    }
}

/// A parsed `replace` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replace {
    /// Absolute worktree root.
    pub repo: PathBuf,
    /// Absolute contract path.
    pub contract: PathBuf,
    /// Worktree-relative path, shape-checked (and checked again by the component).
    pub path: String,
    /// The revision the caller saw, if any.
    pub expected_sha256: Option<String>,
    /// The anchor.
    pub old_text: String,
    /// The replacement.
    pub new_text: String,
}

/// A parsed request.
#[derive(Debug, Clone)]
pub enum Request {
    /// `check`: the contract and repository check.
    Check {
        /// Absolute worktree root.
        repo: PathBuf,
        /// Absolute contract path.
        contract: PathBuf,
    },
    /// `replace`: one exact-text replacement.
    Replace(Replace),
    /// `read`: one page of a file.
    Read(Read),
    /// `edit`: a batch of selector edits.
    Edit(Edit),
}

/// A parsed `read` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    /// Absolute worktree root.
    pub repo: PathBuf,
    /// Absolute contract path.
    pub contract: PathBuf,
    /// Worktree-relative path, shape-checked.
    pub path: String,
    /// The first line, 1-indexed.
    pub offset: Option<u32>,
    /// The most lines.
    pub limit: Option<u32>,
}

/// A parsed `edit` request.
#[derive(Debug, Clone)]
pub struct Edit {
    /// Absolute worktree root.
    pub repo: PathBuf,
    /// Absolute contract path.
    pub contract: PathBuf,
    /// Worktree-relative path, shape-checked.
    pub path: String,
    /// The revision the caller saw, if any.
    pub expected_sha256: Option<String>,
    /// The edits, in order.
    pub edits: Vec<engine::EditOp>,
}

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

/// Parses a request. On failure, returns the shape the error response takes and why.
fn parse(input: &[u8]) -> Result<Request, (Shape, String)> {
    let fail = |m: String| (Shape::WithResult, m);
    if input.len() > MAX_REQUEST_BYTES {
        return Err(fail(format!(
            "the request is larger than {MAX_REQUEST_BYTES} bytes"
        )));
    }
    let object: StrictObject = serde_json::from_slice(input)
        .map_err(|e| fail(format!("the request is not a valid JSON object: {e}")))?;
    let mut fields = object.0;
    let version = take(&mut fields, "version").map_err(fail)?;
    if version.as_u64() != Some(VERSION) {
        return Err(fail(format!(
            "unsupported protocol version {version}; this host speaks version {VERSION}"
        )));
    }
    let operation = take_string(&mut fields, "operation").map_err(fail)?;
    let shape = match operation.as_str() {
        "check" => Shape::Check,
        "replace" | "read" | "edit" => Shape::WithResult,
        other => {
            return Err(fail(format!(
                "unknown operation `{other}` (known: check, replace, read, edit)"
            )));
        }
    };
    let fail = |m: String| (shape, m);
    let repo = take_absolute(&mut fields, "repo").map_err(fail)?;
    let contract = take_absolute(&mut fields, "contract").map_err(fail)?;
    let request = if shape == Shape::Check {
        Request::Check { repo, contract }
    } else if operation == "read" {
        let path = take_path(&mut fields).map_err(fail)?;
        let offset = take_optional_count(&mut fields, "offset").map_err(fail)?;
        let limit = take_optional_count(&mut fields, "limit").map_err(fail)?;
        Request::Read(Read {
            repo,
            contract,
            path,
            offset,
            limit,
        })
    } else if operation == "edit" {
        let path = take_path(&mut fields).map_err(fail)?;
        let expected_sha256 = take_expected(&mut fields).map_err(fail)?;
        let edits = take_edits(&mut fields).map_err(fail)?;
        Request::Edit(Edit {
            repo,
            contract,
            path,
            expected_sha256,
            edits,
        })
    } else {
        let path = take_string(&mut fields, "path").map_err(fail)?;
        // The component decides the path's shape too (its first gate); checking it here,
        // with the same function, makes an unsafe path INVALID_REQUEST before the
        // contract or the repository is looked at, like every other malformed field.
        satyrn_mutator_core::path::segments(&path).map_err(|e| fail(format!("path: {e}")))?;
        let expected_sha256 = match take(&mut fields, "expected_sha256").map_err(fail)? {
            Value::Null => None,
            Value::String(s) if is_sha256(&s) => Some(s),
            Value::String(_) => {
                return Err(fail(
                    "`expected_sha256` must be 64 lowercase hexadecimal digits or null".to_string(),
                ));
            }
            _ => {
                return Err(fail(
                    "`expected_sha256` must be a string or null".to_string(),
                ));
            }
        };
        let old_text = take_string(&mut fields, "old_text").map_err(fail)?;
        if old_text.is_empty() {
            return Err(fail("`old_text` must not be empty".to_string()));
        }
        let new_text = take_string(&mut fields, "new_text").map_err(fail)?;
        Request::Replace(Replace {
            repo,
            contract,
            path,
            expected_sha256,
            old_text,
            new_text,
        })
    };
    if let Some((key, _)) = fields.first() {
        return Err(fail(format!(
            "unknown field `{key}` in a {operation} request"
        )));
    }
    Ok(request)
}

fn take_path(fields: &mut Vec<(String, Value)>) -> Result<String, String> {
    let path = take_string(fields, "path")?;
    satyrn_mutator_core::path::segments(&path).map_err(|e| format!("path: {e}"))?;
    Ok(path)
}

fn take_expected(fields: &mut Vec<(String, Value)>) -> Result<Option<String>, String> {
    match take(fields, "expected_sha256")? {
        Value::Null => Ok(None),
        Value::String(s) if is_sha256(&s) => Ok(Some(s)),
        Value::String(_) => {
            Err("`expected_sha256` must be 64 lowercase hexadecimal digits or null".to_string())
        }
        _ => Err("`expected_sha256` must be a string or null".to_string()),
    }
}

/// An optional positive integer that fits in 32 bits: absent or `null` is `None`.
fn take_optional_count(
    fields: &mut Vec<(String, Value)>,
    key: &str,
) -> Result<Option<u32>, String> {
    let Some(index) = fields.iter().position(|(k, _)| k == key) else {
        return Ok(None);
    };
    positive(key, &fields.remove(index).1)
}

fn positive(key: &str, value: &Value) -> Result<Option<u32>, String> {
    match value {
        Value::Null => Ok(None),
        Value::Number(n) => match n.as_u64().and_then(|n| u32::try_from(n).ok()) {
            Some(0) | None => Err(format!(
                "`{key}` must be a positive integer (at most {}), not {n}",
                u32::MAX
            )),
            Some(n) => Ok(Some(n)),
        },
        other => Err(format!(
            "`{key}` must be a positive integer or null, not {}",
            kind(other)
        )),
    }
}

/// The `edits` array: 1 to [`satyrn_mutator_core::edit::MAX_EDITS`] strict objects.
fn take_edits(fields: &mut Vec<(String, Value)>) -> Result<Vec<engine::EditOp>, String> {
    use satyrn_mutator_core::edit::MAX_EDITS;
    let items = match take(fields, "edits")? {
        Value::Array(items) => items,
        other => return Err(format!("`edits` must be an array, not {}", kind(&other))),
    };
    if items.is_empty() {
        return Err("`edits` must hold at least one edit".to_string());
    }
    if items.len() > MAX_EDITS {
        return Err(format!(
            "`edits` holds {} edits; at most {MAX_EDITS} are allowed",
            items.len()
        ));
    }
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| parse_edit(item).map_err(|m| format!("edits[{i}]: {m}")))
        .collect()
}

fn parse_edit(item: Value) -> Result<engine::EditOp, String> {
    let Value::Object(map) = item else {
        return Err(format!("an edit must be an object, not {}", kind(&item)));
    };
    // Duplicate keys were refused at every depth when the request was read (`Strict`).
    let mut fields: Vec<(String, Value)> = map.into_iter().collect();
    let op = take_string(&mut fields, "op")?;
    let occurrence = take_optional_count(&mut fields, "occurrence")?;
    let edit = match op.as_str() {
        "replace" => engine::EditOp::Replace(engine::ReplaceEdit {
            old_text: take_string(&mut fields, "old_text")?,
            new_text: take_string(&mut fields, "new_text")?,
            occurrence,
        }),
        "insert_after" => engine::EditOp::InsertAfter(engine::InsertAfterEdit {
            anchor_text: take_string(&mut fields, "anchor_text")?,
            new_text: take_string(&mut fields, "new_text")?,
            occurrence,
        }),
        other => {
            return Err(format!(
                "unknown op `{other}` (known: replace, insert_after)"
            ));
        }
    };
    if let Some((key, _)) = fields.first() {
        return Err(format!("unknown field `{key}` in a {op} edit"));
    }
    Ok(edit)
}

fn take(fields: &mut Vec<(String, Value)>, key: &str) -> Result<Value, String> {
    let index = fields
        .iter()
        .position(|(k, _)| k == key)
        .ok_or_else(|| format!("missing field `{key}`"))?;
    Ok(fields.remove(index).1)
}

fn take_string(fields: &mut Vec<(String, Value)>, key: &str) -> Result<String, String> {
    match take(fields, key)? {
        Value::String(s) => Ok(s),
        other => Err(format!("`{key}` must be a string, not {}", kind(&other))),
    }
}

fn take_absolute(fields: &mut Vec<(String, Value)>, key: &str) -> Result<PathBuf, String> {
    let s = take_string(fields, key)?;
    if s.contains('\0') {
        return Err(format!("`{key}` contains a NUL character"));
    }
    let path = PathBuf::from(s);
    if !path.is_absolute() {
        return Err(format!("`{key}` must be an absolute path"));
    }
    Ok(path)
}

fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A JSON object read with duplicate keys refused (serde_json would keep the last).
struct StrictObject(Vec<(String, Value)>);

impl<'de> de::Deserialize<'de> for StrictObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor;
        impl<'de> Visitor<'de> for ObjectVisitor {
            type Value = StrictObject;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StrictObject, A::Error> {
                let mut fields: Vec<(String, Value)> = Vec::new();
                let mut seen = std::collections::HashSet::new();
                while let Some((key, value)) = map.next_entry::<String, Strict>()? {
                    if !seen.insert(key.clone()) {
                        return Err(de::Error::custom(format!("duplicate field `{key}`")));
                    }
                    fields.push((key, value.0));
                }
                Ok(StrictObject(fields))
            }
        }
        deserializer.deserialize_map(ObjectVisitor)
    }
}

/// Any JSON value, read with duplicate keys refused at every depth.
struct Strict(Value);

impl<'de> de::Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct AnyVisitor;
        impl<'de> Visitor<'de> for AnyVisitor {
            type Value = Strict;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Strict, E> {
                Ok(Strict(Value::Bool(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Strict, E> {
                Ok(Strict(Value::from(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Strict, E> {
                Ok(Strict(Value::from(v)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Strict, E> {
                Ok(Strict(Value::from(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Strict, E> {
                Ok(Strict(Value::String(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Strict, E> {
                Ok(Strict(Value::String(v)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Strict, E> {
                Ok(Strict(Value::Null))
            }
            fn visit_none<E: de::Error>(self) -> Result<Strict, E> {
                Ok(Strict(Value::Null))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Strict, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element::<Strict>()? {
                    items.push(item.0);
                }
                Ok(Strict(Value::Array(items)))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Strict, A::Error> {
                let mut object = serde_json::Map::new();
                while let Some((key, value)) = map.next_entry::<String, Strict>()? {
                    if object.contains_key(&key) {
                        return Err(de::Error::custom(format!("duplicate field `{key}`")));
                    }
                    object.insert(key, value.0);
                }
                Ok(Strict(Value::Object(object)))
            }
        }
        deserializer.deserialize_any(AnyVisitor)
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
