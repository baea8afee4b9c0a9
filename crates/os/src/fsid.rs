//! File-system identity: containment decided by `(device, inode)` of canonical existing
//! paths, never by string prefix. Symlinked and case-folded spellings of one directory are
//! the same directory; `..hidden.yaml` is not a parent traversal.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A directory's or file's identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    /// Device number.
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
}

impl Identity {
    /// The identity of what `path` names, following symlinks.
    ///
    /// # Errors
    ///
    /// The `stat` error.
    pub fn of(path: &Path) -> std::io::Result<Self> {
        let meta = std::fs::metadata(path)?;
        Ok(Self {
            dev: meta.dev(),
            ino: meta.ino(),
        })
    }
}

impl Identity {
    /// The identity of what the open descriptor `fd` refers to (no path involved).
    ///
    /// # Errors
    ///
    /// The `fstat` error.
    pub fn of_fd(fd: &impl std::os::fd::AsFd) -> std::io::Result<Self> {
        let stat = rustix::fs::fstat(fd)?;
        Ok(Self {
            dev: stat.st_dev,
            ino: stat.st_ino,
        })
    }
}

/// The nearest existing ancestor of `path` (itself included), canonicalized.
///
/// # Errors
///
/// When no ancestor can be canonicalized (not even `/`).
pub fn canonical_existing(path: &Path) -> std::io::Result<PathBuf> {
    let mut last_error = None;
    for ancestor in path.ancestors() {
        if ancestor.as_os_str().is_empty() {
            continue;
        }
        match std::fs::canonicalize(ancestor) {
            Ok(canonical) => return Ok(canonical),
            Err(e) => last_error = Some(e),
        }
    }
    Err(last_error.unwrap_or_else(|| std::io::Error::other("no existing ancestor")))
}

/// Whether `path` (existing or not) lies inside (or is) the directory `root`: some
/// ancestor of its nearest existing, canonical ancestor has `root`'s identity.
///
/// # Errors
///
/// When `root` or every ancestor of `path` cannot be inspected.
pub fn is_within(path: &Path, root: &Path) -> std::io::Result<bool> {
    let root_id = Identity::of(root)?;
    let existing = canonical_existing(path)?;
    for ancestor in existing.ancestors() {
        if Identity::of(ancestor).is_ok_and(|id| id == root_id) {
            return Ok(true);
        }
    }
    Ok(false)
}
