//! `read`: one page of a file, decided in the component. No lock: a read never publishes,
//! and every publish is an atomic rename.

use schemars::JsonSchema;
use serde::Serialize;

use super::{ReadArgs, Scope, internal, read_failure};
use satyrn_code::Failure;
use satyrn_engine as engine;

/// The result of a successful `read`: one page of the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(transform = read_result_schema)]
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
    /// The `offset` of the next page; none (`null` in the protocol) at the end.
    #[schemars(with = "u32")]
    pub next_offset: Option<u32>,
    /// What was shown and how to continue; none (`null` in the protocol) at the end.
    #[schemars(with = "String")]
    pub notice: Option<String>,
}

fn read_result_schema(schema: &mut schemars::Schema) {
    super::schema::optional(schema, &["next_offset", "notice"]);
}

/// Reads one page.
///
/// # Errors
///
/// The refusal, as a [`Failure`] with its code.
pub fn read(scope: Scope<'_>, args: &ReadArgs) -> Result<ReadResult, Failure> {
    let mut mutator = scope.mutator()?;
    let request = engine::ReadRequest {
        path: args.path.clone(),
        writable_paths: scope.contract.writable_paths.clone(),
        private_paths: scope.contract.private_paths.clone(),
        offset: args.offset,
        limit: args.limit,
    };
    let page = mutator
        .call(|m| m.read(&request))
        .map_err(internal)?
        .map_err(read_failure)?;
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
