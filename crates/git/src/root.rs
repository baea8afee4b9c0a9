//! The repository a command is pointed at: `--repo` normalized, resolved as a worktree root,
//! and whether that worktree is clean. Shared by `deliver` and `candidates`.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use satyrn_os::fsid::Identity;

use crate::{Git, GitError, split_z};

/// Why `--repo` is not a usable worktree root.
#[derive(Debug, thiserror::Error)]
pub enum RootError {
    /// It cannot be read (missing, no permission).
    #[error("repository {} is not accessible: {source}", path.display())]
    Inaccessible {
        /// The repository as given (normalized).
        path: PathBuf,
        /// The operating-system error.
        source: io::Error,
    },
    /// It is not a directory.
    #[error("repository {} is not a directory", path.display())]
    NotADirectory {
        /// The repository as given (normalized).
        path: PathBuf,
    },
    /// git finds no worktree around it.
    #[error("{} is not inside a git worktree: {stderr}", path.display())]
    NotInWorktree {
        /// The repository as given (normalized).
        path: PathBuf,
        /// git's stderr, trimmed.
        stderr: String,
    },
    /// It is inside a worktree but not its root.
    #[error("{} is not a worktree root; the root of its worktree is {}", path.display(), top.display())]
    NotRoot {
        /// The repository as given (normalized).
        path: PathBuf,
        /// The root of its worktree.
        top: PathBuf,
    },
    /// git itself could not be run.
    #[error("{0}")]
    Git(#[from] GitError),
}

impl RootError {
    /// `REPO_UNAVAILABLE`, or `GIT_FAILED` when git could not be run.
    #[must_use]
    pub fn code(&self) -> satyrn_code::Code {
        match self {
            Self::Git(_) => satyrn_code::Code::GitFailed,
            _ => satyrn_code::Code::RepoUnavailable,
        }
    }
}

/// `path` made absolute against the current directory and lexically normalized: `.`,
/// repeated and trailing separators dropped, `..` resolved lexically. Symlinks are kept as
/// spelled (nothing is canonicalized). An unreadable current directory counts as `/`.
#[must_use]
pub fn normalize(path: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(path)
    };
    let mut out = PathBuf::from("/");
    for c in joined.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// Resolves `path` (already [`normalize`]d) as a worktree root: a directory that git's
/// `rev-parse --show-toplevel` names as the top of its own worktree (same file identity,
/// whatever the spelling). Runs one git process; reads only.
///
/// # Errors
///
/// [`RootError`]: `REPO_UNAVAILABLE`, or `GIT_FAILED` when git cannot be run.
pub fn resolve(path: &Path) -> Result<Git, RootError> {
    let meta = std::fs::metadata(path).map_err(|source| RootError::Inaccessible {
        path: path.to_path_buf(),
        source,
    })?;
    if !meta.is_dir() {
        return Err(RootError::NotADirectory {
            path: path.to_path_buf(),
        });
    }
    let git = Git::at(path);
    let out = git.output(&["rev-parse", "--show-toplevel"])?;
    if !out.status.success() {
        return Err(RootError::NotInWorktree {
            path: path.to_path_buf(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    let top_bytes = out.stdout.strip_suffix(b"\n").unwrap_or(&out.stdout);
    let top = PathBuf::from(OsStr::from_bytes(top_bytes));
    let same = match (Identity::of(path), Identity::of(&top)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if !same {
        return Err(RootError::NotRoot {
            path: path.to_path_buf(),
            top,
        });
    }
    Ok(git)
}

/// `None` when the worktree of `repo` is clean (no tracked, staged or deleted change, no
/// untracked file; ignored files do not count), else up to five of its `status` entries.
/// Reads only (`GIT_OPTIONAL_LOCKS=0`: the index is not even refreshed).
///
/// # Errors
///
/// [`GitError`] when `git status` fails.
pub fn dirty_entries(repo: &Git) -> Result<Option<Vec<String>>, GitError> {
    let status = repo.run(&[
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--ignore-submodules=none",
    ])?;
    let entries = split_z(&status);
    if entries.is_empty() {
        return Ok(None);
    }
    Ok(Some(
        entries
            .iter()
            .filter(|e| e.len() > 3 && e[2] == b' ')
            .take(5)
            .map(|e| String::from_utf8_lossy(e).into_owned())
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_is_lexical_and_keeps_spelling() {
        assert_eq!(normalize(Path::new("/a/./b//c/")), PathBuf::from("/a/b/c"));
        assert_eq!(normalize(Path::new("/a/b/../c")), PathBuf::from("/a/c"));
        assert_eq!(normalize(Path::new("/../x")), PathBuf::from("/x"));
    }
}
