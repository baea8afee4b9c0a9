//! The one-shot JSON protocol, version 1: one request on stdin, one response on stdout.
//!
//! Requests (every field required, no other field allowed, no duplicate keys):
//!
//! ```json
//! {"version":1,"operation":"replace","repo":"/abs/worktree","contract":"/abs/contract.yaml",
//!  "path":"src/a.txt","expected_sha256":"<64 hex>"|null,"old_text":"…","new_text":"…"}
//! {"version":1,"operation":"check","repo":"/abs/worktree","contract":"/abs/contract.yaml"}
//! ```
//!
//! Responses, one compact line, fields in this order:
//! `{"version":1,"ok":…,"code":…,"message":…,"result":…}`. `check` responses have no
//! `result`. A `replace` success has `"result":{"path":…,"sha256":<next revision>}`; every
//! failure has `"result":null`. See `docs/protocol.md`.

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

/// One protocol response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// Which operation answered; decides whether a `result` field is present.
    pub shape: Shape,
    /// The outcome; `Ok` for success.
    pub code: Code,
    /// Empty on success, otherwise why.
    pub message: String,
    /// The replacement's result, on `replace` success.
    pub result: Option<ReplaceResult>,
}

/// Whether a response carries a `result` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Four fields: `version, ok, code, message`.
    Check,
    /// Five fields: `… , result`.
    Replace,
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
            result: &'a Option<ReplaceResult>,
        }
        let ok = self.code == Code::Ok;
        let rendered = match self.shape {
            Shape::Check => serde_json::to_string(&Four {
                version: VERSION,
                ok,
                code: self.code.as_str(),
                message: &self.message,
            }),
            Shape::Replace => serde_json::to_string(&Five {
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
#[derive(Debug, Clone, PartialEq, Eq)]
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
                shape: Shape::Replace,
                code: Code::Ok,
                message: String::new(),
                result: Some(result),
            },
            Err(f) => Response::failure(Shape::Replace, f),
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
    let base = satyrn_mutator_core::revision::Revision::parse(&plan.base_sha256)
        .map_err(|e| internal(format!("the component returned a malformed revision: {e}")))?;
    publish::publish(root.dir(), &plan.path, &base, &plan.new_content)?;
    Ok(ReplaceResult {
        path: plan.path,
        sha256: plan.next_sha256,
    })
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
    let fail = |m: String| (Shape::Replace, m);
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
        "replace" => Shape::Replace,
        other => {
            return Err(fail(format!(
                "unknown operation `{other}` (known: check, replace)"
            )));
        }
    };
    let fail = |m: String| (shape, m);
    let repo = take_absolute(&mut fields, "repo").map_err(fail)?;
    let contract = take_absolute(&mut fields, "contract").map_err(fail)?;
    let request = if shape == Shape::Check {
        Request::Check { repo, contract }
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
                while let Some((key, value)) = map.next_entry::<String, Value>()? {
                    if fields.iter().any(|(k, _)| *k == key) {
                        return Err(de::Error::custom(format!("duplicate field `{key}`")));
                    }
                    fields.push((key, value));
                }
                Ok(StrictObject(fields))
            }
        }
        deserializer.deserialize_map(ObjectVisitor)
    }
}
