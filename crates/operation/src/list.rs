//! `list`: one page of the entries under a directory, decided (and walked) in the
//! component through its read-only preopen. No lock: nothing is published.

use schemars::JsonSchema;
use serde::Serialize;

use super::{Scope, internal, read_failure};
use crate::ListArgs;
use satyrn_code::Failure;
use satyrn_engine as engine;

/// One entry of a list page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(transform = super::schema::portable)]
pub struct ListedEntry {
    /// Worktree-relative path.
    pub path: String,
    /// `file`, `directory`, `symlink` (never followed) or `other`.
    pub kind: &'static str,
    /// Size in bytes (0 for a directory).
    pub size: u64,
    /// Whether the contract declares it writable.
    pub writable: bool,
}

/// The result of a `list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(transform = super::schema::portable)]
pub struct ListResult {
    /// The entries, depth first, names sorted by bytes.
    pub entries: Vec<ListedEntry>,
    /// Pass as `cursor` for the next page; absent when complete.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub next_cursor: Option<String>,
    /// Private entries left out (never named).
    pub hidden: u32,
    /// Entries left out: non-UTF-8 names, unreadable directories.
    pub unreadable: u32,
    /// When more follows: why, and how to continue.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub notice: Option<String>,
}

/// The protocol's spelling of an entry kind.
#[must_use]
pub fn kind_name(kind: engine::EntryKind) -> &'static str {
    match kind {
        engine::EntryKind::File => "file",
        engine::EntryKind::Directory => "directory",
        engine::EntryKind::Symlink => "symlink",
        engine::EntryKind::Other => "other",
    }
}

/// Lists one page.
///
/// # Errors
///
/// The refusal, as a [`Failure`] with its code.
pub fn list(scope: Scope<'_>, args: &ListArgs) -> Result<ListResult, Failure> {
    let mut mutator = scope.mutator()?;
    let request = engine::ListRequest {
        path: args.path.clone(),
        pattern: args.pattern.clone(),
        recursive: args.recursive,
        cursor: args.cursor.clone(),
        limit: args.limit,
        writable_paths: scope.contract.writable_paths.clone(),
        private_paths: scope.contract.private_paths.clone(),
    };
    let page = mutator
        .call(|m| m.list(&request))
        .map_err(internal)?
        .map_err(read_failure)?;
    Ok(ListResult {
        entries: page
            .entries
            .into_iter()
            .map(|e| ListedEntry {
                path: e.path,
                kind: kind_name(e.kind),
                size: e.size,
                writable: e.writable,
            })
            .collect(),
        next_cursor: page.next_cursor,
        hidden: page.hidden,
        unreadable: page.unreadable,
        notice: page.notice,
    })
}
