//! The file-system capability of the operations that walk the worktree (`list`, `search`)
//! or create in it (`write`): directory handles opened one segment at a time, never
//! through a symlink.

use alloc::string::String;
use alloc::vec::Vec;

use crate::worktree::NotEditable;

/// What a directory entry is, as its own `lstat` says: a symlink is a symlink, never
/// what it points to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// A symbolic link (never followed).
    Symlink,
    /// A FIFO, socket, device or unknown type.
    Other,
}

impl EntryKind {
    /// The protocol's spelling: `file`, `directory`, `symlink`, `other`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::File => "file",
            Self::Directory => "directory",
            Self::Symlink => "symlink",
            Self::Other => "other",
        }
    }
}

/// One entry of a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// The entry's name (one segment; valid UTF-8: other names are left out and counted).
    pub name: String,
    /// Its kind, not following a symlink.
    pub kind: EntryKind,
}

/// A directory's entries, in no particular order, and how many names were left out
/// because they are not UTF-8 (a path the protocol cannot name).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entries {
    /// The entries with UTF-8 names.
    pub entries: Vec<DirEntry>,
    /// Names that are not UTF-8.
    pub unnamed: u32,
}

/// Directory-handle access to the worktree.
///
/// Implementations open every directory relative to its parent's handle, with no
/// symlink-follow flag, and refuse (never follow) a symlink at any position. The wasm
/// component implements this over its single read-only WASI preopen.
pub trait Tree {
    /// An open directory.
    type Dir;

    /// The worktree root.
    ///
    /// # Errors
    ///
    /// When the root cannot be opened.
    fn root(&self) -> Result<Self::Dir, NotEditable>;

    /// Opens the directory `name` inside `dir`; `shown` is the path to name in messages.
    ///
    /// # Errors
    ///
    /// When `name` is missing, a symlink or not a directory.
    fn open_dir(&self, dir: &Self::Dir, name: &str, shown: &str) -> Result<Self::Dir, NotEditable>;

    /// The entries of `dir` (without `.` and `..`): names and kinds, as the directory itself
    /// gives them (no inspection of each entry).
    ///
    /// # Errors
    ///
    /// When the directory cannot be read.
    fn entries(&self, dir: &Self::Dir, shown: &str) -> Result<Entries, NotEditable>;

    /// What `name` inside `dir` is, without following a symlink: `None` when it does not exist.
    ///
    /// # Errors
    ///
    /// When it cannot be inspected.
    fn stat(
        &self,
        dir: &Self::Dir,
        name: &str,
        shown: &str,
    ) -> Result<Option<(EntryKind, u64)>, NotEditable>;

    /// The content of the single-link regular file `name` inside `dir`, of at most
    /// `max_len` bytes, opened without following a symlink.
    ///
    /// # Errors
    ///
    /// As [`crate::worktree::Worktree::read_regular`].
    fn read_file(
        &self,
        dir: &Self::Dir,
        name: &str,
        shown: &str,
        max_len: u64,
    ) -> Result<Vec<u8>, NotEditable>;
}

/// Opens the directory at `segments` from the root (the root itself when empty).
///
/// # Errors
///
/// The first segment that is missing, a symlink or not a directory.
pub fn open_path<T: Tree + ?Sized>(tree: &T, segments: &[&str]) -> Result<T::Dir, NotEditable> {
    let mut dir = tree.root()?;
    for (depth, segment) in segments.iter().enumerate() {
        let shown = segments[..=depth].join("/");
        dir = tree.open_dir(&dir, segment, &shown)?;
    }
    Ok(dir)
}
