//! The walk under a directory that `list` and `search` share: depth first, each
//! directory's entries sorted by name (bytes), so the order is the lexicographic order
//! of the paths' segment lists and a page can resume after any path (its cursor).
//!
//! `.git` (any case) is never entered or shown; private paths are never shown and never
//! entered (they are counted); symlinks are shown by the visitor's choice but never
//! entered; a subdirectory that cannot be opened is counted and left out.

use alloc::string::String;
use alloc::vec::Vec;
use core::cmp::Ordering;

use crate::fnmatch::PatternSet;
use crate::gates::is_private_in;
use crate::tree::{DirEntry, EntryKind, Tree};
use crate::worktree::NotEditable;

/// The most entries one call examines; past that, the page ends with a cursor.
pub const MAX_WALK_ENTRIES: u32 = 100_000;

/// What the visitor wants next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Visit {
    /// The entry was handled; go on.
    Continue,
    /// The entry was not handled: stop, and resume before it next time.
    Stop,
}

/// How a walk ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct WalkEnd {
    /// Where the next page resumes (after this path), when the walk did not finish.
    pub next_cursor: Option<String>,
    /// Whether it stopped because [`MAX_WALK_ENTRIES`] were examined.
    pub budget_spent: bool,
    /// The private entries of the directories read for this page (a private directory
    /// counts once, its contents not at all): the same whatever the cursor, so it never
    /// hints at a private name.
    pub hidden: u32,
    /// Entries with non-UTF-8 names or paths over `MAX_PATH_BYTES`, and subdirectories
    /// that could not be read.
    pub unreadable: u32,
    /// The subdirectories that could not be opened or read (no permission, the descriptor
    /// limit reached), in walk order: the first [`MAX_UNOPENED_NAMED`] (all of them are
    /// counted in `unreadable`).
    pub unopened: Vec<String>,
}

/// The most unopened subdirectories a walk names in [`WalkEnd::unopened`].
pub(crate) const MAX_UNOPENED_NAMED: usize = 100;

/// Orders two worktree paths as the walk visits them: by their segment lists.
pub(crate) fn cmp_paths(a: &str, b: &str) -> Ordering {
    a.split('/').cmp(b.split('/'))
}

/// Whether `ancestor` is `path` or one of its parent directories.
fn is_ancestor_or_self(ancestor: &str, path: &str) -> bool {
    path == ancestor
        || path
            .strip_prefix(ancestor)
            .is_some_and(|rest| rest.starts_with('/'))
}

struct Frame<D> {
    dir: D,
    prefix: String,
    /// Sorted in reverse, so the next entry is popped from the end.
    pending: Vec<DirEntry>,
}

fn frame<T: Tree + ?Sized>(
    tree: &T,
    dir: T::Dir,
    prefix: String,
    private: &PatternSet,
    end: &mut WalkEnd,
) -> Result<Frame<T::Dir>, NotEditable> {
    let entries = tree.entries(&dir, &prefix)?;
    end.unreadable = end.unreadable.saturating_add(entries.unnamed);
    // Every private entry of the directory counts, wherever the cursor stands: a count that
    // depended on the cursor would let chosen cursors spell out a private name.
    let private_here = entries
        .entries
        .iter()
        .filter(|e| !e.name.eq_ignore_ascii_case(".git"))
        .filter(|e| {
            let path = if prefix.is_empty() {
                e.name.clone()
            } else {
                alloc::format!("{prefix}/{}", e.name)
            };
            is_private_in(&path, private)
        })
        .count();
    end.hidden = end
        .hidden
        .saturating_add(u32::try_from(private_here).unwrap_or(u32::MAX));
    let mut pending = entries.entries;
    pending.sort_unstable_by(|a, b| b.name.as_bytes().cmp(a.name.as_bytes()));
    Ok(Frame {
        dir,
        prefix,
        pending,
    })
}

/// Walks the directory `start` (already opened, at worktree path `prefix`, `""` for the
/// root), calling `visit` with each entry's directory, the entry and its worktree path,
/// in order, after `cursor`. Enters directories when `recursive`. Entries come with their
/// names and kinds only: what a visitor shows of one it inspects itself.
///
/// # Errors
///
/// When `start` itself cannot be read.
pub(crate) fn walk<T: Tree + ?Sized>(
    tree: &T,
    start: T::Dir,
    prefix: &str,
    recursive: bool,
    cursor: Option<&str>,
    private: &PatternSet,
    mut visit: impl FnMut(&T::Dir, &DirEntry, &str) -> Visit,
) -> Result<WalkEnd, NotEditable> {
    let mut end = WalkEnd::default();
    let mut stack = alloc::vec![frame(tree, start, String::from(prefix), private, &mut end)?];
    let mut last: Option<String> = cursor.map(String::from);
    let mut examined = 0u32;
    while let Some(top) = stack.last_mut() {
        let Some(entry) = top.pending.pop() else {
            stack.pop();
            continue;
        };
        let path = if top.prefix.is_empty() {
            entry.name.clone()
        } else {
            let mut p = String::with_capacity(top.prefix.len() + 1 + entry.name.len());
            p.push_str(&top.prefix);
            p.push('/');
            p.push_str(&entry.name);
            p
        };
        if entry.name.eq_ignore_ascii_case(".git") {
            continue;
        }
        // A path no request could name again (as a cursor, a read, an edit) is left out.
        if path.len() > crate::path::MAX_PATH_BYTES {
            end.unreadable = end.unreadable.saturating_add(1);
            continue;
        }
        let after = cursor.is_none_or(|c| cmp_paths(&path, c) == Ordering::Greater);
        let on_the_way = cursor.is_some_and(|c| is_ancestor_or_self(&path, c));
        if !after && !on_the_way {
            continue;
        }
        // Checked on the way to the cursor too: a cursor inside a private directory
        // does not open it.
        if is_private_in(&path, private) {
            continue;
        }
        if examined == MAX_WALK_ENTRIES {
            end.next_cursor = last;
            end.budget_spent = true;
            return Ok(end);
        }
        examined += 1;
        if after && visit(&top.dir, &entry, &path) == Visit::Stop {
            end.next_cursor = last;
            return Ok(end);
        }
        let descend = recursive && entry.kind == EntryKind::Directory;
        let opened = descend.then(|| {
            tree.open_dir(&top.dir, &entry.name, &path)
                .and_then(|dir| frame(tree, dir, path.clone(), private, &mut end))
        });
        match opened {
            Some(Ok(f)) => stack.push(f),
            Some(Err(_)) => {
                end.unreadable = end.unreadable.saturating_add(1);
                if end.unopened.len() < MAX_UNOPENED_NAMED {
                    end.unopened.push(path.clone());
                }
            }
            None => {}
        }
        if after {
            // Only a path after the cursor moves it: an ancestor of the cursor was shown
            // on an earlier page.
            last = Some(path);
        }
    }
    Ok(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_order_as_the_walk_visits_them() {
        assert_eq!(cmp_paths("a", "a/b"), Ordering::Less);
        assert_eq!(cmp_paths("a/b", "a.txt"), Ordering::Less);
        assert_eq!(cmp_paths("a.txt", "a/b"), Ordering::Greater);
        assert_eq!(cmp_paths("b", "a/z/z"), Ordering::Greater);
        assert!(is_ancestor_or_self("a", "a/b"));
        assert!(is_ancestor_or_self("a/b", "a/b"));
        assert!(!is_ancestor_or_self("a", "ab/c"));
    }
}
