//! Where a change set's bases come from, and the gates each path passes before its base is
//! read.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::fnmatch::PatternSet;
use crate::gates::{MAX_TEXT_FILE_BYTES, Refusal, RefusalCode, declared_gates_in};
use crate::tree::{EntryKind, Tree};
use crate::worktree::NotEditable;

/// The files a change set is decided against.
pub trait Bases {
    /// The gates `path` must pass before any file-system access; called once per path,
    /// before [`Bases::read`].
    ///
    /// # Errors
    ///
    /// The refusal (`PATH_PRIVATE`, `PATH_UNDECLARED`).
    fn admit(&self, path: &str) -> Result<(), Refusal>;

    /// The bytes of `path` on disk; `Ok(None)` when nothing exists there. Called at most
    /// once per path.
    ///
    /// # Errors
    ///
    /// `MUTATION_FAILED` when something is there that cannot be changed (a directory, a
    /// symbolic link anywhere on the way, a hard link, a special file, a file over
    /// [`MAX_TEXT_FILE_BYTES`]) or cannot be read.
    fn read(&mut self, path: &str) -> Result<Option<Vec<u8>>, Refusal>;
}

/// Bases without gates, from a function: for tests and for planning a patch over files
/// held in memory. Every path is admitted.
impl<F: FnMut(&str) -> Result<Option<Vec<u8>>, Refusal>> Bases for F {
    fn admit(&self, _path: &str) -> Result<(), Refusal> {
        Ok(())
    }

    fn read(&mut self, path: &str) -> Result<Option<Vec<u8>>, Refusal> {
        self(path)
    }
}

/// The worktree's files under the contract's patterns: the gates of the single-file
/// writers, with the patterns translated once for the whole set.
pub struct WorktreeBases<'a, W: ?Sized> {
    worktree: &'a W,
    writable: PatternSet,
    private: PatternSet,
}

impl<'a, W: ?Sized> WorktreeBases<'a, W> {
    /// The bases in `worktree` (the component's read-only preopen) under the contract's
    /// `writable_paths` and `private_paths`.
    #[must_use]
    pub fn new(worktree: &'a W, writable_paths: &[String], private_paths: &[String]) -> Self {
        Self {
            worktree,
            writable: PatternSet::new(writable_paths),
            private: PatternSet::new(private_paths),
        }
    }
}

impl<W: ?Sized> core::fmt::Debug for WorktreeBases<'_, W> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("WorktreeBases")
            .field("writable", &self.writable)
            .field("private", &self.private)
            .finish_non_exhaustive()
    }
}

impl<W: Tree + ?Sized> Bases for WorktreeBases<'_, W> {
    fn admit(&self, path: &str) -> Result<(), Refusal> {
        let segments = crate::path::segments(path)
            .map_err(|e| Refusal::new(RefusalCode::PathUndeclared, format!("`{path}`: {e}")))?;
        declared_gates_in(path, &segments, &self.writable, &self.private)
    }

    fn read(&mut self, path: &str) -> Result<Option<Vec<u8>>, Refusal> {
        let segments = crate::path::segments(path)
            .map_err(|e| Refusal::new(RefusalCode::MutationFailed, format!("`{path}`: {e}")))?;
        read_if_there(self.worktree, &segments)
            .map_err(|e| Refusal::new(RefusalCode::MutationFailed, e.0))
    }
}

/// The file at `segments`, in one walk from the root: `None` when a segment is missing; an
/// error when a parent is a symbolic link or not a directory (never followed) or the leaf
/// is not a single-link regular file of at most [`MAX_TEXT_FILE_BYTES`].
fn read_if_there<T: Tree + ?Sized>(
    tree: &T,
    segments: &[&str],
) -> Result<Option<Vec<u8>>, NotEditable> {
    let Some((leaf, dirs)) = segments.split_last() else {
        return Err(NotEditable(String::from("the worktree root is not a file")));
    };
    let mut dir = tree.root()?;
    for (depth, segment) in dirs.iter().enumerate() {
        let shown = segments[..=depth].join("/");
        match tree.stat(&dir, segment, &shown)? {
            None => return Ok(None),
            Some((EntryKind::Directory, _)) => dir = tree.open_dir(&dir, segment, &shown)?,
            Some((EntryKind::Symlink, _)) => {
                return Err(NotEditable(format!(
                    "`{shown}` is a symbolic link; satyrn never follows symbolic links"
                )));
            }
            Some(_) => return Err(NotEditable(format!("`{shown}` is not a directory"))),
        }
    }
    let shown = segments.join("/");
    if tree.stat(&dir, leaf, &shown)?.is_none() {
        return Ok(None);
    }
    tree.read_file(&dir, leaf, &shown, MAX_TEXT_FILE_BYTES)
        .map(Some)
}
