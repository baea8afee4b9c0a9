//! `search`: one page of the matching lines of the files under a directory, decided in
//! the component (it reads only through its read-only preopen). No lock.

use schemars::JsonSchema;
use serde::Serialize;

use super::{Scope, internal, read_failure};
use crate::SearchArgs;
use satyrn_code::Failure;
use satyrn_engine as engine;

/// One shown line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(transform = super::schema::portable)]
pub struct FoundLine {
    /// 1-indexed line number.
    pub line: u32,
    /// The line without its ending, cut at 300 bytes.
    pub text: String,
    /// Whether it matches (otherwise context).
    pub matched: bool,
}

/// A matched file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(transform = super::schema::portable)]
pub struct FoundFile {
    /// Worktree-relative path.
    pub path: String,
    /// The file's revision: an `edit` can name it directly.
    pub sha256: String,
    /// Whether the contract declares it writable.
    pub writable: bool,
    /// How many of its lines match.
    pub matches: u32,
    /// Matching and context lines, in order.
    pub lines: Vec<FoundLine>,
    /// Matching lines not shown (at most 20 per file are).
    pub omitted: u32,
}

/// A file that was not searched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(transform = super::schema::portable)]
pub struct SkippedFile {
    /// Worktree-relative path.
    pub path: String,
    /// `symlink`, `too_large`, `binary`, `not_text`, `unavailable` or
    /// `directory_unreadable`.
    pub reason: &'static str,
}

/// The result of a `search`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(transform = super::schema::portable)]
pub struct SearchResult {
    /// The matched files, in walk order.
    pub files: Vec<FoundFile>,
    /// Files searched on this page.
    pub files_searched: u32,
    /// Files not searched, with the reason (at most 100).
    pub skipped: Vec<SkippedFile>,
    /// Skipped files beyond those listed.
    pub skipped_omitted: u32,
    /// Private entries left out (never read, never named).
    pub hidden: u32,
    /// Pass as `cursor` for the next page; absent when complete.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub next_cursor: Option<String>,
    /// When the page is not the end, or lines were left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub notice: Option<String>,
}

fn reason_name(reason: engine::SkipReason) -> &'static str {
    match reason {
        engine::SkipReason::Symlink => "symlink",
        engine::SkipReason::TooLarge => "too_large",
        engine::SkipReason::Binary => "binary",
        engine::SkipReason::NotText => "not_text",
        engine::SkipReason::DirectoryUnreadable => "directory_unreadable",
        engine::SkipReason::Unavailable => "unavailable",
    }
}

/// Searches one page.
///
/// # Errors
///
/// The refusal, as a [`Failure`] with its code.
pub fn search(scope: Scope<'_>, args: &SearchArgs) -> Result<SearchResult, Failure> {
    let mut mutator = scope.mutator()?;
    let request = engine::SearchRequest {
        path: args.path.clone(),
        query: args.query.clone(),
        regex: args.regex,
        ignore_case: args.ignore_case,
        glob: args.glob.clone(),
        context: args.context,
        max_matches: args.max_matches,
        cursor: args.cursor.clone(),
        writable_paths: scope.contract.writable_paths.clone(),
        private_paths: scope.contract.private_paths.clone(),
    };
    let page = mutator
        .call(|m| m.search(&request))
        .map_err(internal)?
        .map_err(read_failure)?;
    Ok(SearchResult {
        files: page
            .files
            .into_iter()
            .map(|f| FoundFile {
                path: f.path,
                sha256: f.sha256,
                writable: f.writable,
                matches: f.matches,
                lines: f
                    .lines
                    .into_iter()
                    .map(|l| FoundLine {
                        line: l.line,
                        text: l.text,
                        matched: l.matched,
                    })
                    .collect(),
                omitted: f.omitted,
            })
            .collect(),
        files_searched: page.files_searched,
        skipped: page
            .skipped
            .into_iter()
            .map(|s| SkippedFile {
                path: s.path,
                reason: reason_name(s.reason),
            })
            .collect(),
        skipped_omitted: page.skipped_omitted,
        hidden: page.hidden,
        next_cursor: page.next_cursor,
        notice: page.notice,
    })
}
