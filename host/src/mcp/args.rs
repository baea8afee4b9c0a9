//! The tools' arguments, with JSON schemas that strict clients accept: an optional field is
//! left out of `required` and typed plainly (never a `["T","null"]` union).

use schemars::JsonSchema;
use serde::Deserialize;

pub use crate::operation::schema::portable;

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
    /// The entry as a protocol edit object, so the protocol's one validation (and its
    /// messages) decides its shape.
    #[must_use]
    pub fn to_protocol(&self) -> serde_json::Value {
        let mut object = serde_json::Map::new();
        let op = match self.op {
            EditKind::Replace => "replace",
            EditKind::InsertAfter => "insert_after",
        };
        object.insert("op".into(), op.into());
        if let Some(text) = &self.old_text {
            object.insert("old_text".into(), text.clone().into());
        }
        if let Some(text) = &self.anchor_text {
            object.insert("anchor_text".into(), text.clone().into());
        }
        object.insert("new_text".into(), self.new_text.clone().into());
        if let Some(n) = self.occurrence {
            object.insert("occurrence".into(), n.into());
        }
        serde_json::Value::Object(object)
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
    /// The revision (SHA-256) the edit is based on. Leave it out: the server uses the one
    /// this session's last `read` (or `edit`) of the file returned.
    #[serde(default)]
    #[schemars(with = "String")]
    pub expected_sha256: Option<String>,
}

/// `boundary`'s arguments: none.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = portable)]
pub struct NoArgs {}
