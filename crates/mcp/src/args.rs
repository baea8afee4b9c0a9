//! The tools' own arguments: every operation's come from the operation layer's one request
//! model ([`satyrn_operation`]); only `boundary`, which is the MCP server's alone, has its
//! own (none).

use schemars::JsonSchema;
use serde::Deserialize;

pub use satyrn_operation::schema::portable;

/// `boundary`'s arguments: none.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = portable)]
pub struct NoArgs {}
