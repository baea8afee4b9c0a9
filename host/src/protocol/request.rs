//! Protocol requests: strict parsing of one JSON object (every field required, no other
//! field, no duplicate key at any depth) into a typed [`Request`].

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::Value;
use std::path::PathBuf;

use super::{MAX_REQUEST_BYTES, Shape, VERSION};
use crate::engine;
use crate::operation;
use satyrn_mutator_core::path::MAX_PATH_BYTES;

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
    /// `list`, `search`, `write`, `delete`: the toolbox operations.
    Toolbox(Toolbox),
}

/// A parsed toolbox request: where, and the operation's own arguments (the one request
/// model of [`crate::operation`], shared with the MCP server).
#[derive(Debug, Clone)]
pub struct Toolbox {
    /// Absolute worktree root.
    pub repo: PathBuf,
    /// Absolute contract path.
    pub contract: PathBuf,
    /// The operation and its arguments.
    pub args: ToolboxArgs,
}

/// The arguments of one toolbox operation.
#[derive(Debug, Clone)]
pub enum ToolboxArgs {
    /// `list`.
    List(operation::ListArgs),
    /// `search`.
    Search(operation::SearchArgs),
    /// `write`.
    Write(operation::WriteArgs),
    /// `delete`.
    Delete(operation::DeleteArgs),
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
        return Err(fail(format!(
            "unsupported protocol version {version}; this host speaks version {VERSION}"
        )));
    }
    let operation = take_string(&mut fields, "operation").map_err(fail)?;
    let shape = match operation.as_str() {
        "check" => Shape::Check,
        "replace" | "read" | "edit" | "list" | "search" | "write" | "delete" => Shape::WithResult,
        other => {
            return Err(fail(format!(
                "unknown operation `{}` (known: check, replace, read, edit, list, search, write, delete)",
                echo(other)
            )));
        }
    };
    let fail = |m: String| (shape, m);
    let repo = take_absolute(&mut fields, "repo").map_err(fail)?;
    let contract = take_absolute(&mut fields, "contract").map_err(fail)?;
    let request = if shape == Shape::Check {
        Request::Check { repo, contract }
    } else if let Some(known) = toolbox_fields(&operation) {
        let args = toolbox_args(&operation, known, std::mem::take(&mut fields)).map_err(fail)?;
        Request::Toolbox(Toolbox {
            repo,
            contract,
            args,
        })
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
            "unknown field `{}` in a {operation} request",
            echo(key)
        )));
    }
    Ok(request)
}

/// The fields a toolbox operation takes besides `version`, `operation`, `repo` and
/// `contract`; `None` for the other operations. Kept beside [`toolbox_args`], which
/// deserializes exactly these (a test checks each struct accepts its list).
fn toolbox_fields(operation: &str) -> Option<&'static [&'static str]> {
    Some(match operation {
        "list" => &["path", "pattern", "recursive", "cursor", "limit"],
        "search" => &[
            "query",
            "path",
            "regex",
            "ignore_case",
            "glob",
            "context",
            "max_matches",
            "cursor",
        ],
        "write" => &["path", "content", "expected_sha256"],
        "delete" => &["path", "expected_sha256"],
        _ => return None,
    })
}

/// A toolbox operation's arguments from the request's remaining fields: unknown fields are
/// refused with the key cut to a short echo; `write` and `delete` require
/// `expected_sha256` (a string, or `null`: create, or `REVISION_UNAVAILABLE`), as `replace`
/// and `edit` do; a path's shape is checked before the contract or repository is read.
fn toolbox_args(
    operation: &str,
    known: &[&str],
    fields: Vec<(String, Value)>,
) -> Result<ToolboxArgs, String> {
    if let Some((key, _)) = fields.iter().find(|(k, _)| !known.contains(&k.as_str())) {
        return Err(format!(
            "unknown field `{}` in a {operation} request",
            echo(key)
        ));
    }
    let needs_revision = matches!(operation, "write" | "delete");
    if let Some((_, value)) = fields.iter().find(|(k, _)| k == "expected_sha256") {
        match value {
            Value::Null => {}
            Value::String(s) if is_sha256(s) => {}
            Value::String(_) => {
                return Err(
                    "`expected_sha256` must be 64 lowercase hexadecimal digits or null".to_string(),
                );
            }
            _ => return Err("`expected_sha256` must be a string or null".to_string()),
        }
    } else if needs_revision {
        return Err("missing field `expected_sha256`".to_string());
    }
    if let Some((_, Value::String(path))) = fields.iter().find(|(k, _)| k == "path") {
        satyrn_mutator_core::path::segments(path).map_err(|e| format!("path: {e}"))?;
    }
    let object = Value::Object(fields.into_iter().collect());
    let invalid = |e: serde_json::Error| json_error(&e);
    Ok(match operation {
        "list" => ToolboxArgs::List(serde_json::from_value(object).map_err(invalid)?),
        "search" => ToolboxArgs::Search(serde_json::from_value(object).map_err(invalid)?),
        "write" => ToolboxArgs::Write(serde_json::from_value(object).map_err(invalid)?),
        _ => ToolboxArgs::Delete(serde_json::from_value(object).map_err(invalid)?),
    })
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
    let items = match take(fields, "edits")? {
        Value::Array(items) => items,
        other => return Err(format!("`edits` must be an array, not {}", kind(&other))),
    };
    parse_edit_list(items)
}

/// An `edits` array's items: 1 to [`satyrn_mutator_core::edit::MAX_EDITS`] strict edit
/// objects (shared by every front end that takes a batch).
///
/// # Errors
///
/// Why the list or an item is malformed, naming the item (`edits[3]: missing field ...`).
pub(crate) fn parse_edit_list(items: Vec<Value>) -> Result<Vec<engine::EditOp>, String> {
    use satyrn_mutator_core::edit::MAX_EDITS;
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
                "unknown op `{}` (known: replace, insert_after)",
                echo(other)
            ));
        }
    };
    if let Some((key, _)) = fields.first() {
        return Err(format!("unknown field `{}` in a {op} edit", echo(key)));
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

/// The most characters of the request's own text that a message repeats.
const MAX_ECHO_CHARS: usize = 64;

/// `s` for a message: cut to [`MAX_ECHO_CHARS`] characters, so that no input, however
/// long (or made of characters JSON escapes to six bytes), makes a long response.
fn echo(s: &str) -> String {
    match s.char_indices().nth(MAX_ECHO_CHARS) {
        None => s.to_string(),
        Some((cut, _)) => format!("{}… ({} bytes)", &s[..cut], s.len()),
    }
}

/// serde_json's explanation, whose quoted value (written with Rust's escapes, up to ten
/// bytes per input byte) is cut like [`echo`]; the position is kept.
fn json_error(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let position = format!(" at line {} column {}", e.line(), e.column());
    let what = full.strip_suffix(&position).unwrap_or(&full);
    format!(
        "{}{}",
        echo_long(what),
        if e.line() == 0 { "" } else { &position }
    )
}

/// Like [`echo`], but keeping both ends ([`MAX_ECHO_CHARS`] × 2 characters each), so
/// serde_json's own words around the value (`invalid type: …, expected …`) survive.
fn echo_long(s: &str) -> String {
    let keep = 2 * MAX_ECHO_CHARS;
    let count = s.chars().count();
    if count <= 2 * keep {
        return s.to_string();
    }
    let head: String = s.chars().take(keep).collect();
    let tail: String = s.chars().skip(count - keep).collect();
    format!("{head} … {tail}")
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
                        return Err(de::Error::custom(format!(
                            "duplicate field `{}`",
                            echo(&key)
                        )));
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
                        return Err(de::Error::custom(format!(
                            "duplicate field `{}`",
                            echo(&key)
                        )));
                    }
                    object.insert(key, value.0);
                }
                Ok(Strict(Value::Object(object)))
            }
        }
        deserializer.deserialize_any(AnyVisitor)
    }
}
