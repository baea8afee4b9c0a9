//! The arguments of every operation: one request model, deserialized strictly
//! (`deny_unknown_fields`) by every front end — the protocol from its request object, the
//! MCP server from a tool call — with the JSON schema the MCP server publishes.
//!
//! [`RequestShape::shape`] is the check a front end may make before it opens the contract
//! and the repository (the protocol does: a malformed request is `INVALID_REQUEST` whatever
//! else is wrong). It calls the core's own functions, and the component makes the same
//! checks again as its first gate, so a front end that skips it loses nothing.

use schemars::JsonSchema;
use serde::Deserialize;

use super::schema::portable;
use satyrn_engine as engine;
use satyrn_mutator_core::edit::MAX_EDITS;
use satyrn_mutator_core::gates::request_shape;

/// The shape of a request's arguments, judged without the contract or the repository.
pub trait RequestShape {
    /// # Errors
    ///
    /// Why the arguments are malformed, naming the field (`path: …`, `edits[2]: …`).
    fn shape(&self) -> Result<(), String>;

    /// The fields a session front end sets that are not in the model's schema (the protocol
    /// accepts them; an MCP client never sees them): none by default.
    #[must_use]
    fn session_fields() -> &'static [&'static str]
    where
        Self: Sized,
    {
        &[]
    }
}

/// `read`'s arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = portable)]
pub struct ReadArgs {
    /// Path of the file, relative to the repository root.
    pub path: String,
    /// The first line to show, 1-indexed (default 1).
    #[serde(default)]
    #[schemars(with = "u32")]
    pub offset: Option<u32>,
    /// The most lines to show (default and maximum 2000; a page also stops at 50 KiB).
    #[serde(default)]
    #[schemars(with = "u32")]
    pub limit: Option<u32>,
}

impl RequestShape for ReadArgs {
    fn shape(&self) -> Result<(), String> {
        request_shape(&self.path, None)?;
        positive("offset", self.offset)?;
        positive("limit", self.limit)
    }
}

/// `replace`'s arguments (the protocol's one-anchor edit).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = portable)]
pub struct ReplaceArgs {
    /// Path of the file, relative to the repository root.
    pub path: String,
    /// The revision (SHA-256) the caller saw; `null` is `REVISION_UNAVAILABLE` for a
    /// declared path.
    #[serde(default)]
    #[schemars(with = "String")]
    pub expected_sha256: Option<String>,
    /// The anchor: exact text that must occur exactly once (not empty).
    pub old_text: String,
    /// The replacement.
    pub new_text: String,
}

impl RequestShape for ReplaceArgs {
    fn shape(&self) -> Result<(), String> {
        request_shape(&self.path, self.expected_sha256.as_deref())?;
        if self.old_text.is_empty() {
            return Err("`old_text` must not be empty".to_string());
        }
        Ok(())
    }
}

// The variants carry no doc comments on purpose: the schema is then a plain string `enum`,
// which every client accepts.
/// The kind of one edit: `replace` (`old_text` by `new_text`) or `insert_after` (`new_text`
/// right after `anchor_text`).
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum EditKind {
    Replace,
    InsertAfter,
}

/// One edit of a batch: `{op: "replace", old_text, new_text}` or `{op: "insert_after",
/// anchor_text, new_text}`, each with an optional `occurrence`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = portable)]
pub struct EditEntry {
    /// `replace` or `insert_after`.
    pub op: EditKind,
    /// For `replace`: exact text of the file to replace (whitespace included).
    #[serde(default)]
    #[schemars(with = "String")]
    pub old_text: Option<String>,
    /// For `insert_after`: exact text of the file after which `new_text` is inserted.
    #[serde(default)]
    #[schemars(with = "String")]
    pub anchor_text: Option<String>,
    /// The replacement, or the inserted text.
    pub new_text: String,
    /// Which occurrence of the selected text, 1 = the first; needed when it occurs more
    /// than once.
    #[serde(default)]
    #[schemars(with = "u32")]
    pub occurrence: Option<u32>,
}

impl EditEntry {
    /// The selector of this entry's kind; an entry carrying the other kind's selector, or
    /// none, is malformed.
    fn selector(&self) -> Result<&str, String> {
        let (op, wanted, wanted_name, other, other_name) = match self.op {
            EditKind::Replace => (
                "replace",
                &self.old_text,
                "old_text",
                &self.anchor_text,
                "anchor_text",
            ),
            EditKind::InsertAfter => (
                "insert_after",
                &self.anchor_text,
                "anchor_text",
                &self.old_text,
                "old_text",
            ),
        };
        if other.is_some() {
            return Err(format!("unknown field `{other_name}` in a {op} edit"));
        }
        wanted
            .as_deref()
            .ok_or_else(|| format!("missing field `{wanted_name}`"))
    }

    /// The edit as the component takes it.
    ///
    /// # Errors
    ///
    /// The entry's malformation ([`EditArgs::shape`] names its index).
    pub fn to_op(&self) -> Result<engine::EditOp, String> {
        let selector = self.selector()?.to_string();
        positive("occurrence", self.occurrence)?;
        let new_text = self.new_text.clone();
        let occurrence = self.occurrence;
        Ok(match self.op {
            EditKind::Replace => engine::EditOp::Replace(engine::ReplaceEdit {
                old_text: selector,
                new_text,
                occurrence,
            }),
            EditKind::InsertAfter => engine::EditOp::InsertAfter(engine::InsertAfterEdit {
                anchor_text: selector,
                new_text,
                occurrence,
            }),
        })
    }
}

/// `edit`'s arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = portable)]
pub struct EditArgs {
    /// Path of the file to edit, relative to the repository root.
    pub path: String,
    /// The edits, applied all together or not at all; each is resolved against the file as
    /// it was read.
    pub edits: Vec<EditEntry>,
    /// The revision (SHA-256) the edit is based on. A session front end (MCP) may leave it
    /// out: the revision of the session's last `read` (or `edit`) of the file is used.
    #[serde(default)]
    #[schemars(with = "String")]
    pub expected_sha256: Option<String>,
}

impl EditArgs {
    /// The edits as the component takes them: 1 to [`MAX_EDITS`] well-formed entries.
    ///
    /// # Errors
    ///
    /// Why the list or an entry is malformed, naming the entry (`edits[3]: …`).
    pub fn ops(&self) -> Result<Vec<engine::EditOp>, String> {
        self.count()?;
        self.edits
            .iter()
            .enumerate()
            .map(|(i, e)| e.to_op().map_err(|m| format!("edits[{i}]: {m}")))
            .collect()
    }

    fn count(&self) -> Result<(), String> {
        if self.edits.is_empty() {
            return Err("`edits` must hold at least one edit".to_string());
        }
        if self.edits.len() > MAX_EDITS {
            return Err(format!(
                "`edits` holds {} edits; at most {MAX_EDITS} are allowed",
                self.edits.len()
            ));
        }
        Ok(())
    }
}

impl RequestShape for EditArgs {
    fn shape(&self) -> Result<(), String> {
        request_shape(&self.path, self.expected_sha256.as_deref())?;
        self.count()?;
        for (i, entry) in self.edits.iter().enumerate() {
            entry
                .selector()
                .and_then(|_| positive("occurrence", entry.occurrence))
                .map_err(|m| format!("edits[{i}]: {m}"))?;
        }
        Ok(())
    }
}

/// `Some(0)` is malformed: lines and occurrences are numbered from 1.
fn positive(key: &str, value: Option<u32>) -> Result<(), String> {
    if value == Some(0) {
        return Err(format!("`{key}` must be a positive integer, not 0"));
    }
    Ok(())
}

/// `list`'s arguments.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = portable)]
pub struct ListArgs {
    /// The directory to list, relative to the repository root (default: the root).
    #[serde(default)]
    #[schemars(with = "String")]
    pub path: Option<String>,
    /// Only entries whose path (relative to the root) matches this fnmatch pattern, e.g.
    /// `*.rs` or `src/*/mod.rs` (`*` also matches `/`).
    #[serde(default)]
    #[schemars(with = "String")]
    pub pattern: Option<String>,
    /// List everything beneath the directory, not only its own entries (default false).
    #[serde(default)]
    pub recursive: bool,
    /// Continue after this path: the `next_cursor` of the previous page.
    #[serde(default)]
    #[schemars(with = "String")]
    pub cursor: Option<String>,
    /// The most entries (default and maximum 1000).
    #[serde(default)]
    #[schemars(with = "u32")]
    pub limit: Option<u32>,
}

/// `search`'s arguments.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = portable)]
pub struct SearchArgs {
    /// The text to find: a literal, or a regular expression when `regex` is true (Rust
    /// regex syntax; `^` and `$` match at line boundaries). At most 1000 bytes.
    pub query: String,
    /// The directory (or one file) to search, relative to the repository root (default:
    /// the root).
    #[serde(default)]
    #[schemars(with = "String")]
    pub path: Option<String>,
    /// Treat `query` as a regular expression (default false: a literal).
    #[serde(default)]
    pub regex: bool,
    /// Match letters regardless of case (default false).
    #[serde(default)]
    pub ignore_case: bool,
    /// Only files whose path matches this fnmatch pattern, e.g. `*.py`.
    #[serde(default)]
    #[schemars(with = "String")]
    pub glob: Option<String>,
    /// Lines of context before and after each matching line (default 0, at most 10).
    #[serde(default)]
    #[schemars(with = "u32")]
    pub context: Option<u32>,
    /// The most matching lines per page (default 100, at most 500; a page ends after the
    /// file that reaches it).
    #[serde(default)]
    #[schemars(with = "u32")]
    pub max_matches: Option<u32>,
    /// Continue after this path: the `next_cursor` of the previous page.
    #[serde(default)]
    #[schemars(with = "String")]
    pub cursor: Option<String>,
}

/// `write`'s arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = portable)]
pub struct WriteArgs {
    /// Path of the file, relative to the repository root.
    pub path: String,
    /// The file's whole new content (at most 16 MiB).
    pub content: String,
    /// The revision (SHA-256) of the file being overwritten; absent or null creates a new
    /// file (refused when the path exists).
    #[serde(default)]
    #[schemars(with = "String")]
    pub expected_sha256: Option<String>,
    /// How much of the file at `expected_sha256` the agent saw ([`Seen`]; default whole).
    /// Set by a session front end (MCP, Pi) from its own record, never by the model: it is
    /// not in the tool's schema, and the front end overwrites it.
    #[serde(default)]
    #[schemars(skip)]
    pub seen: Seen,
}

/// `delete`'s arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = portable)]
pub struct DeleteArgs {
    /// Path of the file to delete, relative to the repository root.
    pub path: String,
    /// The revision (SHA-256) of the file as last read; required by the protocol.
    #[serde(default)]
    #[schemars(with = "String")]
    pub expected_sha256: Option<String>,
    /// How much of the file at `expected_sha256` the agent saw (as [`WriteArgs::seen`]).
    #[serde(default)]
    #[schemars(skip)]
    pub seen: Seen,
}

/// How much of a file's revision the agent saw before a `write` over it or a `delete` of it.
/// A session front end fills in `expected_sha256` from what the agent last read or searched;
/// when that was only part of the file (one page of several, a search hit), replacing or
/// removing the whole file would lose what the agent never saw, so it is refused
/// (`PARTLY_SEEN`). An anchored `edit` needs no whole view. A caller that passes the
/// revision itself says it knows the file: `whole`, the default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Seen {
    /// Every line of that revision (or the caller passed the revision itself).
    #[default]
    Whole,
    /// Only part of it.
    Part,
}

impl RequestShape for ListArgs {
    fn shape(&self) -> Result<(), String> {
        if let Some(path) = &self.path {
            request_shape(path, None)?;
        }
        Ok(())
    }
}

impl RequestShape for SearchArgs {
    fn shape(&self) -> Result<(), String> {
        if let Some(path) = &self.path {
            request_shape(path, None)?;
        }
        Ok(())
    }
}

impl RequestShape for WriteArgs {
    fn shape(&self) -> Result<(), String> {
        request_shape(&self.path, self.expected_sha256.as_deref()).map(drop)
    }

    fn session_fields() -> &'static [&'static str] {
        &["seen"]
    }
}

impl RequestShape for DeleteArgs {
    fn shape(&self) -> Result<(), String> {
        request_shape(&self.path, self.expected_sha256.as_deref()).map(drop)
    }

    fn session_fields() -> &'static [&'static str] {
        &["seen"]
    }
}

// The variants carry no doc comments on purpose: the schema is then a plain string `enum`.
/// The kind of one operation of a change set.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum ChangeKind {
    Edit,
    Write,
    Delete,
    Move,
}

/// One operation of a change set: `{op: "edit", path, edits}`, `{op: "write", path,
/// content}`, `{op: "delete", path}` or `{op: "move", path, to}`, each with an optional
/// `expected_sha256` (and `to_expected_sha256` for a move onto an existing file).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = portable)]
pub struct ChangeEntry {
    /// `edit`, `write`, `delete` or `move`.
    pub op: ChangeKind,
    /// The file, relative to the repository root (a move's source).
    pub path: String,
    /// The revision (SHA-256) of `path` the caller saw.
    #[serde(default)]
    #[schemars(with = "String")]
    pub expected_sha256: Option<String>,
    /// For `edit`: the batch, as `edit` takes it.
    #[serde(default)]
    #[schemars(with = "Vec<EditEntry>")]
    pub edits: Option<Vec<EditEntry>>,
    /// For `write`: the whole new content.
    #[serde(default)]
    #[schemars(with = "String")]
    pub content: Option<String>,
    /// For `move`: the destination.
    #[serde(default)]
    #[schemars(with = "String")]
    pub to: Option<String>,
    /// For `move` onto an existing file: that file's revision.
    #[serde(default)]
    #[schemars(with = "String")]
    pub to_expected_sha256: Option<String>,
    /// Set by a session front end: how much of `path` the revision covers.
    #[serde(default)]
    #[schemars(skip)]
    pub seen: Seen,
}

impl ChangeEntry {
    /// The component's operation; a field of another kind, or a missing one, is malformed.
    fn to_op(&self) -> Result<engine::ChangeOp, String> {
        let fields: [(&str, bool, bool); 4] = [
            ("edits", self.edits.is_some(), self.op == ChangeKind::Edit),
            (
                "content",
                self.content.is_some(),
                self.op == ChangeKind::Write,
            ),
            ("to", self.to.is_some(), self.op == ChangeKind::Move),
            (
                "to_expected_sha256",
                self.to_expected_sha256.is_some(),
                self.op == ChangeKind::Move,
            ),
        ];
        for (name, given, belongs) in fields {
            if given && !belongs {
                return Err(format!(
                    "unknown field `{name}` in a {} operation",
                    self.kind()
                ));
            }
        }
        let missing = |name: &str| format!("missing field `{name}`");
        let path = self.path.clone();
        let expected_sha256 = self.expected_sha256.clone();
        Ok(match self.op {
            ChangeKind::Edit => {
                let edits = self.edits.as_ref().ok_or_else(|| missing("edits"))?;
                let edits = edits
                    .iter()
                    .enumerate()
                    .map(|(i, e)| e.to_op().map_err(|m| format!("edits[{i}]: {m}")))
                    .collect::<Result<Vec<_>, _>>()?;
                engine::ChangeOp::Edit(engine::ChangeEdit {
                    path,
                    expected_sha256,
                    edits,
                })
            }
            ChangeKind::Write => engine::ChangeOp::Write(engine::ChangeWrite {
                path,
                expected_sha256,
                content: self.content.clone().ok_or_else(|| missing("content"))?,
            }),
            ChangeKind::Delete => engine::ChangeOp::Delete(engine::ChangeDelete {
                path,
                expected_sha256,
            }),
            ChangeKind::Move => engine::ChangeOp::Move(engine::ChangeMove {
                path,
                expected_sha256,
                to: self.to.clone().ok_or_else(|| missing("to"))?,
                to_expected_sha256: self.to_expected_sha256.clone(),
            }),
        })
    }

    fn kind(&self) -> &'static str {
        match self.op {
            ChangeKind::Edit => "edit",
            ChangeKind::Write => "write",
            ChangeKind::Delete => "delete",
            ChangeKind::Move => "move",
        }
    }
}

/// `change_set`'s arguments: file operations applied all together or not at all.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = portable)]
pub struct ChangeSetArgs {
    /// The operations, in order (1 to 1000); each sees what the earlier ones made.
    pub ops: Vec<ChangeEntry>,
}

impl ChangeSetArgs {
    /// The component's operations.
    ///
    /// # Errors
    ///
    /// Why an operation is malformed, naming it (`ops[2]: …`).
    pub fn ops(&self) -> Result<Vec<engine::ChangeOp>, String> {
        if self.ops.is_empty() {
            return Err("`ops` must hold at least one operation".to_string());
        }
        if self.ops.len() > satyrn_mutator_core::change_set::MAX_OPS {
            return Err(format!(
                "`ops` holds {} operations; at most {} are allowed",
                self.ops.len(),
                satyrn_mutator_core::change_set::MAX_OPS
            ));
        }
        self.ops
            .iter()
            .enumerate()
            .map(|(i, e)| e.to_op().map_err(|m| format!("ops[{i}]: {m}")))
            .collect()
    }
}

impl RequestShape for ChangeSetArgs {
    fn shape(&self) -> Result<(), String> {
        self.ops()?;
        for (i, entry) in self.ops.iter().enumerate() {
            request_shape(&entry.path, entry.expected_sha256.as_deref())
                .map_err(|m| format!("ops[{i}].{m}"))?;
            if let Some(to) = &entry.to {
                request_shape(to, entry.to_expected_sha256.as_deref())
                    .map_err(|m| format!("ops[{i}].to: {m}"))?;
            }
        }
        Ok(())
    }
}

/// `apply_patch`'s arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = portable)]
pub struct PatchArgs {
    /// The patch: `*** Begin Patch`, then `*** Add File: PATH` (lines `+…`), `*** Delete
    /// File: PATH`, or `*** Update File: PATH` (optionally `*** Move to: PATH`) with hunks
    /// (`@@ [exact line text]`, then ` context`, `-removed`, `+added` lines, optionally
    /// `*** End of File`), then `*** End Patch`.
    pub patch: String,
    /// The revision (SHA-256) of each existing file the patch changes, by path, where the
    /// caller has not read it in this session.
    #[serde(default)]
    pub expected_sha256: std::collections::BTreeMap<String, String>,
    /// Set by a session front end: how much of each file at its revision the agent saw
    /// ([`Seen`]; a path not named: whole). A `*** Delete File:` of a file seen in part is
    /// `PARTLY_SEEN`; an update's hunks are anchored and need no whole view.
    #[serde(default)]
    #[schemars(skip)]
    pub seen: std::collections::BTreeMap<String, Seen>,
    /// The worktree's absolute path as the agent sees it, when the patch's paths are taken
    /// as agents write them ([`super::AgentPaths`]); `None`: strictly.
    #[serde(skip)]
    pub agent_root: Option<String>,
}

impl RequestShape for PatchArgs {
    fn shape(&self) -> Result<(), String> {
        for (path, sha) in &self.expected_sha256 {
            request_shape(path, Some(sha)).map_err(|m| format!("expected_sha256[{path}]: {m}"))?;
        }
        Ok(())
    }

    fn session_fields() -> &'static [&'static str] {
        &["seen"]
    }
}
