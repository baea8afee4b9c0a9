//! The result of `boundary`, the one tool that is the MCP server's alone (every other tool's
//! result is the operation layer's own, see [`satyrn_operation`]).

use schemars::JsonSchema;
use serde::Serialize;

/// `boundary`'s result: what this session may do.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(transform = super::args::portable)]
pub struct BoundaryOutput {
    /// The contract's id.
    pub contract_id: String,
    /// The task.
    pub task: String,
    /// The fnmatch patterns of the files that may be edited (`*` matches across `/`).
    pub writable_paths: Vec<String>,
    /// The fnmatch patterns of the paths that are never read, listed, searched or changed.
    pub private_paths: Vec<String>,
    /// The repository's current `HEAD` commit, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub head: Option<String>,
    /// The repository's root.
    pub repository: String,
}
