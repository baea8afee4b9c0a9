//! The arguments of the toolbox operations (`list`, `search`, `write`, `delete`): one
//! request model, deserialized strictly (`deny_unknown_fields`) by every front end — the
//! protocol from its request object, the MCP server from a tool call — with the JSON
//! schema the MCP server publishes.

use schemars::JsonSchema;
use serde::Deserialize;

use super::schema::portable;

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
}
