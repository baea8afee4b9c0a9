//! The repository a request is about: an existing directory that is a git worktree root.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};

use satyrn_code::{Code, Failure};

/// An opened worktree root.
#[derive(Debug)]
pub struct RepoRoot {
    path: PathBuf,
    dir: OwnedFd,
}

/// Why the repository is unavailable (`REPO_UNAVAILABLE`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RepoError(pub String);

impl From<RepoError> for Failure {
    fn from(e: RepoError) -> Self {
        Failure::new(Code::RepoUnavailable, e.0)
    }
}

impl RepoRoot {
    /// Opens `path` as a worktree root: an existing directory with a `.git` entry that git
    /// would recognize — a directory holding `HEAD` and `objects` (or a `commondir` file) for
    /// a main worktree, or a regular file starting with `gitdir: ` for a linked one. An empty
    /// or unrelated `.git` is refused, so a subdirectory of another repository cannot pass
    /// for a root. The path may be spelled through symlinks; the opened directory is what
    /// every later step uses.
    ///
    /// This is the cheap check used on every protocol request; it spawns no git process.
    ///
    /// # Errors
    ///
    /// [`RepoError`] when the path does not exist, is not a directory, or has no `.git` of
    /// the shapes above.
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
        match git_entry(&dir) {
            Ok(()) => Ok(Self {
                path: path.to_path_buf(),
                dir,
            }),
            Err(why) => Err(RepoError(format!(
                "{} is not the root of a git worktree ({why})",
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

    /// Whether something (of any kind) is at the worktree-relative `path`, reached one
    /// segment at a time without following a symbolic link. A path of an unsafe shape, or
    /// one whose directories cannot be reached so, holds nothing (the operation refuses it
    /// by name anyway).
    #[must_use]
    pub fn holds(&self, path: &str) -> bool {
        use rustix::fs::AtFlags;
        let Ok(segments) = satyrn_mutator_core::path::segments(path) else {
            return false;
        };
        let Some((leaf, dirs)) = segments.split_last() else {
            return false;
        };
        let Ok(mut dir) = rustix::io::fcntl_dupfd_cloexec(&self.dir, 0) else {
            return false;
        };
        for segment in dirs {
            match rustix::fs::openat(
                &dir,
                *segment,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            ) {
                Ok(next) => dir = next,
                Err(_) => return false,
            }
        }
        rustix::fs::statat(&dir, *leaf, AtFlags::SYMLINK_NOFOLLOW).is_ok()
    }
}

/// Checks the `.git` entry of `root` without following a symlink at `.git` itself.
fn git_entry(root: &OwnedFd) -> Result<(), &'static str> {
    use rustix::fs::{AtFlags, FileType};
    let kind = |dir: &OwnedFd, name: &str| {
        rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
            .map(|st| FileType::from_raw_mode(st.st_mode))
            .ok()
    };
    match kind(root, ".git") {
        None => Err("it has no .git"),
        Some(FileType::Directory) => {
            let git = rustix::fs::openat(
                root,
                ".git",
                OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|_| "its .git cannot be opened")?;
            let has_head = matches!(
                kind(&git, "HEAD"),
                Some(FileType::RegularFile | FileType::Symlink)
            );
            let has_objects = matches!(kind(&git, "objects"), Some(FileType::Directory))
                || matches!(kind(&git, "commondir"), Some(FileType::RegularFile));
            if has_head && has_objects {
                Ok(())
            } else {
                Err("its .git directory is not a git directory: no HEAD or objects")
            }
        }
        Some(FileType::RegularFile) => {
            let file = rustix::fs::openat(
                root,
                ".git",
                OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|_| "its .git file cannot be read")?;
            let mut head = [0u8; 8];
            match rustix::io::read(&file, &mut head) {
                Ok(8) if &head == b"gitdir: " => Ok(()),
                _ => Err("its .git file does not start with `gitdir: `"),
            }
        }
        Some(_) => Err("its .git is neither a directory nor a file"),
    }
}
