//! The list operation: the entries under a directory of the worktree, one page at a time.
//!
//! Entries come in the walk's order (`walk.rs`): depth first, names sorted by bytes,
//! a directory right before its contents. A page holds at most [`MAX_LIST_ENTRIES`]
//! entries; when more follow, it names the cursor to pass for the next page. Never inside
//! `.git`, never through a symlink (a symlink is listed as one, with its own size), never a
//! private path (they are counted in `hidden`, not named).

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::fnmatch::{Pattern, PatternSet};
use crate::gates::{is_private_in, private_message};
use crate::path::{self, is_git_admin};
use crate::read::{ReadCode, ReadError};
use crate::tree::{EntryKind, Tree, open_path};
pub use crate::walk::MAX_WALK_ENTRIES;
use crate::walk::{Visit, walk};

/// The most entries one page holds (and the default `limit`).
pub const MAX_LIST_ENTRIES: u32 = 1000;

/// One list, as received.
#[derive(Debug, Clone, Copy)]
pub struct ListRequest<'a> {
    /// The directory to list, worktree-relative; `None` is the worktree root.
    pub path: Option<&'a str>,
    /// Only entries whose worktree-relative path matches this `fnmatch` pattern (`*`
    /// matches `/` too); directories are still entered.
    pub pattern: Option<&'a str>,
    /// Whether to list everything beneath `path`, not only its own entries.
    pub recursive: bool,
    /// Resume after this path (a previous page's `next_cursor`).
    pub cursor: Option<&'a str>,
    /// The most entries; `None` (or more than [`MAX_LIST_ENTRIES`]) is the maximum.
    pub limit: Option<u32>,
    /// The contract's `writable_paths`, to report each entry's `writable`.
    pub writable_paths: &'a [String],
    /// The contract's `private_paths`: never listed.
    pub private_paths: &'a [String],
}

/// One entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListEntry {
    /// Worktree-relative path.
    pub path: String,
    /// What it is (a symlink is never followed).
    pub kind: EntryKind,
    /// Its size in bytes (0 for a directory).
    pub size: u64,
    /// Whether the contract declares it writable.
    pub writable: bool,
}

/// One page of a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListPage {
    /// The entries, in walk order.
    pub entries: Vec<ListEntry>,
    /// Pass as `cursor` to get the next page; `None` when the listing is complete.
    pub next_cursor: Option<String>,
    /// Private entries left out of this page's range.
    pub hidden: u32,
    /// Entries left out because their name is not UTF-8 or their directory unreadable.
    pub unreadable: u32,
    /// When the page is not the end: why, and how to continue.
    pub notice: Option<String>,
}

pub(crate) fn start_segments<'a>(
    field: &str,
    path: Option<&'a str>,
) -> Result<Vec<&'a str>, ReadError> {
    match path {
        None | Some("" | ".") => Ok(Vec::new()),
        Some(p) => {
            path::segments(p).map_err(|e| ReadError::InvalidRequest(format!("{field}: {e}")))
        }
    }
}

pub(crate) fn check_cursor(cursor: Option<&str>) -> Result<(), ReadError> {
    if let Some(c) = cursor {
        path::segments(c).map_err(|e| ReadError::InvalidRequest(format!("cursor: {e}")))?;
    }
    Ok(())
}

/// The refusals of a start directory shared by `list` and `search`: inside `.git`, private.
pub(crate) fn start_gates(
    shown: &str,
    segments: &[&str],
    private: &PatternSet,
) -> Result<(), ReadError> {
    if is_git_admin(segments) {
        return Err(ReadError::Refused {
            code: ReadCode::Unavailable,
            message: format!(
                "`{shown}` is inside git's administrative files (`.git`), which are never read"
            ),
        });
    }
    if !segments.is_empty() && is_private_in(shown, private) {
        return Err(ReadError::Refused {
            code: ReadCode::Private,
            message: private_message(shown),
        });
    }
    Ok(())
}

/// Lists one page.
///
/// # Errors
///
/// [`ReadError::InvalidRequest`] for a malformed path or cursor or a zero limit;
/// [`ReadError::Refused`]: [`ReadCode::Private`] for a private directory,
/// [`ReadCode::Unavailable`] for one inside `.git`, missing, reached through a symlink or
/// not a directory.
pub fn list<T: Tree + ?Sized>(tree: &T, request: &ListRequest<'_>) -> Result<ListPage, ReadError> {
    let segments = start_segments("path", request.path)?;
    check_cursor(request.cursor)?;
    if request.limit == Some(0) {
        return Err(ReadError::InvalidRequest(
            "limit: must be at least 1".to_string(),
        ));
    }
    let shown = segments.join("/");
    let private = PatternSet::new(request.private_paths);
    start_gates(&shown, &segments, &private)?;
    let start = open_path(tree, &segments).map_err(|e| ReadError::Refused {
        code: ReadCode::Unavailable,
        message: e.0,
    })?;
    let writable = PatternSet::new(request.writable_paths);
    let pattern = request.pattern.map(Pattern::new);
    let limit = request
        .limit
        .unwrap_or(MAX_LIST_ENTRIES)
        .min(MAX_LIST_ENTRIES);
    let wanted = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut entries = Vec::new();
    let end = walk(
        tree,
        start,
        &shown,
        request.recursive,
        request.cursor,
        &private,
        |dir, entry, path| {
            if pattern.as_ref().is_some_and(|p| !p.matches(path)) {
                return Visit::Continue;
            }
            if entries.len() == wanted {
                return Visit::Stop;
            }
            // Only the entries on the page are inspected for their size: a page of a huge
            // directory reads its names, not the metadata of all of them.
            let size = match entry.kind {
                EntryKind::Directory => 0,
                _ => tree
                    .stat(dir, &entry.name, path)
                    .ok()
                    .flatten()
                    .map_or(0, |(_, size)| size),
            };
            entries.push(ListEntry {
                path: path.to_string(),
                kind: entry.kind,
                size,
                // Only a regular file can be written through satyrn: a symlink, a FIFO or a
                // device under a writable pattern is refused by every writer.
                writable: entry.kind == EntryKind::File && writable.matches(path),
            });
            Visit::Continue
        },
    )
    .map_err(|e| ReadError::Refused {
        code: ReadCode::Unavailable,
        message: e.0,
    })?;
    let notice = end.next_cursor.as_ref().map(|c| {
        let why = if end.budget_spent {
            format!("{MAX_WALK_ENTRIES} entries were examined")
        } else {
            format!("the page holds {limit} entries")
        };
        format!(
            "[Listed {} entries; more follow ({why}). Call list again with cursor=\"{c}\" to continue.]",
            entries.len()
        )
    });
    Ok(ListPage {
        entries,
        next_cursor: end.next_cursor,
        hidden: end.hidden,
        unreadable: end.unreadable,
        notice,
    })
}
