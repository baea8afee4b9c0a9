//! Protocol requests: strict parsing of one JSON object (no unknown field, no duplicate key
//! at any depth) into a typed [`Request`]: the envelope (`version`, `operation`, `repo`,
//! `contract`) here, the operation's arguments by the one request model of
//! [`satyrn_operation`].

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{MAX_REQUEST_BYTES, Shape, VERSION};
use satyrn_mutator_core::path::MAX_PATH_BYTES;
use satyrn_operation::echo::{echo, echo_long, echo_quoted, field_path, json_error};
use satyrn_operation::strict::StrictObject;
use satyrn_operation::{self as operation, RequestShape};

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
    /// Every other operation: where, and the operation's own arguments.
    Operation(Operation),
}

/// A parsed operation request: where, and the operation's arguments (the one request
/// model of [`satyrn_operation`], shared with the MCP server).
#[derive(Debug, Clone)]
pub struct Operation {
    /// Absolute worktree root.
    pub repo: PathBuf,
    /// Absolute contract path.
    pub contract: PathBuf,
    /// The operation and its arguments.
    pub args: OperationArgs,
}

/// The arguments of one operation.
#[derive(Debug, Clone)]
pub enum OperationArgs {
    /// `replace`: one exact-text replacement.
    Replace(operation::ReplaceArgs),
    /// `read`: one page of a file.
    Read(operation::ReadArgs),
    /// `edit`: a batch of selector edits.
    Edit(operation::EditArgs),
    /// `list`.
    List(operation::ListArgs),
    /// `search`.
    Search(operation::SearchArgs),
    /// `write`.
    Write(operation::WriteArgs),
    /// `delete`.
    Delete(operation::DeleteArgs),
    /// `change_set`: file operations all together or not at all.
    ChangeSet(operation::ChangeSetArgs),
    /// `apply_patch`: a patch, all together or not at all.
    ApplyPatch(operation::PatchArgs),
}

/// The operations this build knows, in the order the unknown-operation message lists them.
const OPERATIONS: [&str; 10] = [
    "check",
    "replace",
    "read",
    "edit",
    "list",
    "search",
    "write",
    "delete",
    "change_set",
    "apply_patch",
];

/// Parses a request. On failure, returns the shape the error response takes and why.
pub(super) fn parse(input: &[u8]) -> Result<Request, (Shape, String)> {
    let fail = |m: String| (Shape::WithResult, m);
    if input.len() > MAX_REQUEST_BYTES {
        return Err(fail(format!(
            "the request is larger than {MAX_REQUEST_BYTES} bytes"
        )));
    }
    let object: StrictObject = serde_json::from_slice(input).map_err(|e| {
        fail(format!(
            "the request is not a valid JSON object: {}",
            json_error(&e)
        ))
    })?;
    let mut fields = object.0;
    let version = take(&mut fields, "version").map_err(fail)?;
    if version.as_u64() != Some(VERSION) {
        // Only a number is repeated, and cut like any text of the request.
        let asked = match &version {
            Value::Number(n) => echo(&n.to_string()),
            other => kind(other).to_string(),
        };
        return Err(fail(format!(
            "unsupported protocol version {asked}; this host speaks version {VERSION}"
        )));
    }
    let operation = take_string(&mut fields, "operation").map_err(fail)?;
    if !OPERATIONS.contains(&operation.as_str()) {
        return Err(fail(format!(
            "unknown operation `{}` (known: {})",
            echo(&operation),
            OPERATIONS.join(", ")
        )));
    }
    let shape = if operation == "check" {
        Shape::Check
    } else {
        Shape::WithResult
    };
    let fail = |m: String| (shape, m);
    let repo = take_absolute(&mut fields, "repo").map_err(fail)?;
    let contract = take_absolute(&mut fields, "contract").map_err(fail)?;
    let agent_paths = take_paths(&mut fields).map_err(fail)?;
    if shape == Shape::Check {
        if let Some((key, _)) = fields.first() {
            return Err(fail(format!(
                "unknown field `{}` in a check request",
                echo(key)
            )));
        }
        return Ok(Request::Check { repo, contract });
    }
    let root = repo.to_string_lossy();
    let root = agent_paths.then(|| match root.trim_end_matches('/') {
        "" => "/",
        trimmed => trimmed,
    });
    let args = operation_args(&operation, fields, root).map_err(fail)?;
    Ok(Request::Operation(Operation {
        repo,
        contract,
        args,
    }))
}

/// An operation's arguments from the request's remaining fields.
/// With `root` (`"paths": "agent"`), every path is first taken as agents write them
/// ([`operation::AgentPaths`]).
fn operation_args(
    operation: &str,
    fields: Vec<(String, Value)>,
    root: Option<&str>,
) -> Result<OperationArgs, String> {
    Ok(match operation {
        "replace" => OperationArgs::Replace(args(operation, fields, true, root)?),
        "read" => OperationArgs::Read(args(operation, fields, false, root)?),
        "edit" => OperationArgs::Edit(args(operation, fields, true, root)?),
        "list" => OperationArgs::List(args(operation, fields, false, root)?),
        "search" => OperationArgs::Search(args(operation, fields, false, root)?),
        "write" => OperationArgs::Write(args(operation, fields, true, root)?),
        "change_set" => OperationArgs::ChangeSet(args(operation, fields, false, root)?),
        "apply_patch" => OperationArgs::ApplyPatch(args(operation, fields, true, root)?),
        _ => OperationArgs::Delete(args(operation, fields, true, root)?),
    })
}

/// The optional `paths` field: `"strict"` (the default: every path exactly as the rules
/// take it) or `"agent"` (paths as agents write them, made canonical first).
fn take_paths(fields: &mut Vec<(String, Value)>) -> Result<bool, String> {
    if !fields.iter().any(|(k, _)| k == "paths") {
        return Ok(false);
    }
    match take(fields, "paths")? {
        Value::String(s) if s == "strict" => Ok(false),
        Value::String(s) if s == "agent" => Ok(true),
        Value::String(s) => Err(format!(
            "`paths` must be \"strict\" or \"agent\", not `{}`",
            echo(&s)
        )),
        other => Err(format!(
            "`paths` must be \"strict\" or \"agent\", not {}",
            kind(&other)
        )),
    }
}

/// Deserializes one operation's arguments (the fields besides `version`, `operation`,
/// `repo` and `contract`) and checks their shape before the contract or repository is read:
///
/// - an unknown field is refused with its key cut to a short echo (the known fields are the
///   properties of the arguments' own schema, and its [`RequestShape::session_fields`]);
/// - a writing operation requires `expected_sha256` to be present (a string, or `null`:
///   create, or `REVISION_UNAVAILABLE`), so a caller states what it saw;
/// - a field of the wrong type is named (`edits[2].new_text: invalid type: …`);
/// - then [`RequestShape::shape`]: path shape, revision shape, counts.
fn args<T>(
    operation: &str,
    fields: Vec<(String, Value)>,
    requires_revision: bool,
    root: Option<&str>,
) -> Result<T, String>
where
    T: DeserializeOwned + JsonSchema + RequestShape + operation::AgentPaths,
{
    let schema = schemars::schema_for!(T);
    let known = schema
        .get("properties")
        .and_then(Value::as_object)
        .ok_or_else(|| format!("the {operation} request model has no properties"))?;
    if let Some((key, _)) = fields
        .iter()
        .find(|(k, _)| !known.contains_key(k) && !T::session_fields().contains(&k.as_str()))
    {
        return Err(format!(
            "unknown field `{}` in a {operation} request",
            echo(key)
        ));
    }
    if requires_revision && !fields.iter().any(|(k, _)| k == "expected_sha256") {
        return Err("missing field `expected_sha256`".to_string());
    }
    foreign_selectors(&fields)?;
    let object = Value::Object(fields.into_iter().collect());
    let mut args: T = serde_path_to_error::deserialize(object).map_err(|e| {
        let inner = e.inner().to_string();
        // An unknown field's own key ends the path, and the message names it already.
        let unknown = inner.starts_with("unknown field");
        let path = field_path(e.path(), unknown);
        let inner = echo_long(&echo_quoted(&inner));
        if path.is_empty() {
            inner
        } else {
            format!("`{path}`: {inner}")
        }
    })?;
    if let Some(root) = root {
        args.as_agents_write(root);
    }
    args.shape()?;
    Ok(args)
}

/// An edit that carries the other kind's selector at all (even `null`: the request model
/// reads a `null` selector as absent) is refused, as every unknown field of an edit is.
/// This strictness is the protocol's own: the MCP server keeps reading `null` as absent,
/// because models often fill optional arguments with `null`.
fn foreign_selectors(fields: &[(String, Value)]) -> Result<(), String> {
    let Some((_, Value::Array(edits))) = fields.iter().find(|(k, _)| k == "edits") else {
        return Ok(());
    };
    for (i, edit) in edits.iter().enumerate() {
        let foreign = match edit.get("op").and_then(Value::as_str) {
            Some("replace") => "anchor_text",
            Some("insert_after") => "old_text",
            _ => continue,
        };
        if edit.get(foreign).is_some() {
            let op = edit.get("op").and_then(Value::as_str).unwrap_or_default();
            return Err(format!(
                "edits[{i}]: unknown field `{foreign}` in a {op} edit"
            ));
        }
    }
    Ok(())
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
    if s.len() > MAX_PATH_BYTES {
        return Err(format!(
            "`{key}` is {} bytes long; at most {MAX_PATH_BYTES} bytes are allowed",
            s.len()
        ));
    }
    let path = PathBuf::from(s);
    if !path.is_absolute() {
        return Err(format!("`{key}` must be an absolute path"));
    }
    Ok(path)
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

#[cfg(test)]
mod tests {
    use super::{OPERATIONS, OperationArgs, operation_args};
    use serde_json::{Value, json};

    /// Every field of every operation's request model is accepted, together, and lands in
    /// the right arguments; a field of another operation is refused.
    #[test]
    fn every_field_of_every_operation_is_accepted_and_others_refused() {
        let sha = "a".repeat(64);
        let sample = |operation: &str, key: &str| match key {
            "expected_sha256" if operation == "apply_patch" => json!({"src/a.rs": sha}),
            "ops" => json!([{"op": "delete", "path": "src/a.rs", "expected_sha256": sha}]),
            "patch" => json!("*** Begin Patch\n*** Delete File: src/a.rs\n*** End Patch\n"),
            "recursive" | "regex" | "ignore_case" => json!(true),
            "limit" | "context" | "max_matches" | "offset" => json!(3),
            "expected_sha256" => json!(sha),
            "edits" => {
                json!([{"op": "replace", "old_text": "a", "new_text": "b", "occurrence": 1}])
            }
            _ => json!("src/a.rs"),
        };
        let fields_of = |operation: &str| -> Vec<&'static str> {
            match operation {
                "replace" => vec!["path", "expected_sha256", "old_text", "new_text"],
                "read" => vec!["path", "offset", "limit"],
                "edit" => vec!["path", "expected_sha256", "edits"],
                "list" => vec!["path", "pattern", "recursive", "cursor", "limit"],
                "search" => vec![
                    "query",
                    "path",
                    "regex",
                    "ignore_case",
                    "glob",
                    "context",
                    "max_matches",
                    "cursor",
                ],
                "write" => vec!["path", "content", "expected_sha256"],
                "change_set" => vec!["ops"],
                "apply_patch" => vec!["patch", "expected_sha256"],
                _ => vec!["path", "expected_sha256"],
            }
        };
        for operation in &OPERATIONS[1..] {
            let fields: Vec<(String, Value)> = fields_of(operation)
                .iter()
                .map(|k| ((*k).to_string(), sample(operation, k)))
                .collect();
            let args = operation_args(operation, fields.clone(), None)
                .unwrap_or_else(|e| panic!("{operation}: {e}"));
            let matches = matches!(
                (*operation, args),
                ("replace", OperationArgs::Replace(_))
                    | ("read", OperationArgs::Read(_))
                    | ("edit", OperationArgs::Edit(_))
                    | ("list", OperationArgs::List(_))
                    | ("search", OperationArgs::Search(_))
                    | ("write", OperationArgs::Write(_))
                    | ("delete", OperationArgs::Delete(_))
                    | ("change_set", OperationArgs::ChangeSet(_))
                    | ("apply_patch", OperationArgs::ApplyPatch(_))
            );
            assert!(matches, "{operation}");
            let mut extra = fields;
            extra.push(("anchor_text".to_string(), json!("x")));
            let refused = operation_args(operation, extra, None).expect_err("an unknown field");
            assert_eq!(
                refused,
                format!("unknown field `anchor_text` in a {operation} request")
            );
        }
    }

    /// The other kind's selector is refused even when `null`; without it the same edit is
    /// accepted.
    #[test]
    fn an_edit_carrying_the_other_kinds_selector_is_refused_even_null() {
        for (op, own, foreign) in [
            ("replace", "old_text", "anchor_text"),
            ("insert_after", "anchor_text", "old_text"),
        ] {
            let fields = |edit: Value| {
                vec![
                    ("path".to_string(), json!("a.txt")),
                    ("expected_sha256".to_string(), Value::Null),
                    ("edits".to_string(), json!([edit])),
                ]
            };
            let plain = json!({"op": op, own: "a", "new_text": "b"});
            assert!(
                operation_args("edit", fields(plain.clone()), None).is_ok(),
                "{op}"
            );
            for value in [Value::Null, json!("a")] {
                let mut edit = plain.clone();
                edit[foreign] = value;
                let refused = operation_args("edit", fields(edit), None).expect_err("refused");
                assert_eq!(
                    refused,
                    format!("edits[0]: unknown field `{foreign}` in a {op} edit")
                );
            }
        }
    }

    #[test]
    fn a_field_of_the_wrong_type_is_named() {
        let fields = vec![
            ("path".to_string(), json!("a.txt")),
            ("expected_sha256".to_string(), Value::Null),
            (
                "edits".to_string(),
                json!([{"op": "replace", "old_text": "a", "new_text": 7}]),
            ),
        ];
        let message = operation_args("edit", fields, None).expect_err("refused");
        assert!(
            message.starts_with("`edits[0].new_text`: invalid type: integer `7`"),
            "{message}"
        );
    }
}
