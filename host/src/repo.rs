//! The repository a request is about: an existing directory that is a git worktree root.

use std::fmt;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};

use crate::code::{Code, Failure};

/// An opened worktree root.
#[derive(Debug)]
pub struct RepoRoot {
    path: PathBuf,
    dir: OwnedFd,
}

/// Why the repository is unavailable (`REPO_UNAVAILABLE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoError(pub String);

impl fmt::Display for RepoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RepoError {}

impl From<RepoError> for Failure {
    fn from(e: RepoError) -> Self {
        Failure::new(Code::RepoUnavailable, e.0)
    }
}

impl RepoRoot {
    /// Opens `path` as a worktree root: an existing directory with a `.git` entry (a
    /// directory for a main worktree, a file for a linked one). The path may be spelled
    /// through symlinks; the opened directory is what every later step uses.
    ///
    /// This is the cheap check used on every protocol request; it spawns no git process.
    ///
    /// # Errors
    ///
    /// [`RepoError`] when the path does not exist, is not a directory, or has no `.git`.
    pub fn open(path: &Path) -> Result<Self, RepoError> {
        let dir = rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| {
            RepoError(format!(
                "repository {} is not an accessible directory: {}",
                path.display(),
                std::io::Error::from(e)
            ))
        })?;
        match rustix::fs::statat(&dir, ".git", rustix::fs::AtFlags::SYMLINK_NOFOLLOW) {
            Ok(_) => Ok(Self {
                path: path.to_path_buf(),
                dir,
            }),
            Err(_) => Err(RepoError(format!(
                "{} is not the root of a git worktree (it has no .git)",
                path.display()
            ))),
        }
    }

    /// The path as given.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open directory.
    #[must_use]
    pub fn dir(&self) -> &OwnedFd {
        &self.dir
    }
}
