//! The `search` export. Built with the `search` feature (the default), it is the core's
//! search; without it (the build for requests that never search, docs/architecture.md,
//! "Two builds of the component") the export refuses every request by name, and neither
//! the regular-expression engine nor its Unicode tables are in the component.

use crate::satyrn::mutator::types as wit;
#[cfg(feature = "search")]
use satyrn_mutator_core::search as search_core;

#[cfg(feature = "search")]
pub(crate) fn search(request: wit::SearchRequest) -> Result<wit::SearchPage, wit::ReadError> {
    let worktree = crate::preopen::Preopen::single().map_err(crate::unavailable)?;
    let page = search_core::search(
        &worktree,
        &search_core::SearchRequest {
            path: request.path.as_deref(),
            query: &request.query,
            regex: request.regex,
            ignore_case: request.ignore_case,
            glob: request.glob.as_deref(),
            context: request.context,
            max_matches: request.max_matches,
            cursor: request.cursor.as_deref(),
            writable_paths: &request.writable_paths,
            private_paths: &request.private_paths,
        },
    )?;
    Ok(wit::SearchPage {
        files: page
            .files
            .into_iter()
            .map(|f| wit::SearchFile {
                path: f.path,
                sha256: f.revision.to_hex(),
                writable: f.writable,
                matches: f.matches,
                lines: f
                    .lines
                    .into_iter()
                    .map(|l| wit::SearchLine {
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
            .map(|s| wit::SkippedFile {
                path: s.path,
                reason: s.reason.into(),
            })
            .collect(),
        skipped_omitted: page.skipped_omitted,
        hidden: page.hidden,
        next_cursor: page.next_cursor,
        notice: page.notice,
    })
}

/// Every search, in a build without the `search` feature.
#[cfg(not(feature = "search"))]
pub(crate) fn search(_request: wit::SearchRequest) -> Result<wit::SearchPage, wit::ReadError> {
    Err(wit::ReadError::InvalidRequest(alloc::string::String::from(
        NO_SEARCH,
    )))
}

/// Why a build without the `search` feature refuses a search.
#[cfg(not(feature = "search"))]
const NO_SEARCH: &str = "this build of the mutator component has no `search`: it is built without the `search` feature, for requests that do not search; search with the full component (satyrn_mutator.wasm)";

#[cfg(feature = "search")]
impl From<search_core::SkipReason> for wit::SkipReason {
    fn from(reason: search_core::SkipReason) -> Self {
        match reason {
            search_core::SkipReason::Symlink => Self::Symlink,
            search_core::SkipReason::TooLarge => Self::TooLarge,
            search_core::SkipReason::Binary => Self::Binary,
            search_core::SkipReason::NotText => Self::NotText,
            search_core::SkipReason::DirectoryUnreadable => Self::DirectoryUnreadable,
            search_core::SkipReason::Unavailable => Self::Unavailable,
        }
    }
}
