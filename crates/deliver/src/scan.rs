//! The worktree as the command left it, looked at before any git runs there: a FIFO, socket
//! or device where git opens a file would block (or feed) `deliver`'s own `git add`, and a
//! file too large would be hashed into the caller's object store for minutes.
//!
//! One walk of the worktree by directory listing only (the kernel's entry types, no `stat`
//! where the file system gives them; no symlink followed; `.git` and embedded repositories
//! skipped, as git skips them), bounded by the attempt's deadline:
//!
//! - a special file named `.gitignore`, `.gitattributes`, `.gitmodules` or `.mailmap`, or
//!   anything but a regular file or directory among the files of the attempt's own
//!   registration (`index`, `HEAD`, …), is [`Found::Special`] (`SPECIAL_FILE`); a special
//!   file anywhere else is harmless: git never opens one, and none can be part of a
//!   candidate;
//! - a regular file larger than [`FILE_MAX`] that git would stage — not ignored, and not a
//!   tracked file of the same size as in the base — is [`Found::TooLarge`]
//!   (`CANDIDATE_TOO_LARGE`). Only such large files are asked about (`git check-ignore`,
//!   `git ls-tree`), so an ordinary candidate costs no git at all here.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use satyrn_git::{self as git, Git, GitError};

/// The largest new or changed file a candidate may carry: 16 MiB, the largest content
/// satyrn's own tools write.
pub const FILE_MAX: u64 = 16 << 20;

/// The names git opens in the worktree while staging.
const READ_BY_GIT: [&str; 4] = [".gitignore", ".gitattributes", ".gitmodules", ".mailmap"];

/// How many entries are listed between two looks at the deadline.
const DEADLINE_EVERY: usize = 1024;

/// What the walk found that stops the candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// A special file where git would open it: its path (worktree-relative, or the
    /// registration's file) and kind.
    Special {
        /// Where, as said to the user.
        path: String,
        /// `a FIFO`, `a socket`, …
        kind: &'static str,
    },
    /// A file git would stage that is over [`FILE_MAX`].
    TooLarge {
        /// Its worktree-relative path.
        path: String,
        /// Its size in bytes.
        size: u64,
    },
}

/// Why the walk could not finish.
#[derive(Debug)]
pub enum ScanError {
    /// The deadline passed during the walk.
    TimedOut,
    /// git could not tell whether a large file is ignored or tracked.
    Git(GitError),
}

impl From<GitError> for ScanError {
    fn from(e: GitError) -> Self {
        match e {
            GitError::TimedOut { .. } => Self::TimedOut,
            other => Self::Git(other),
        }
    }
}

/// Walks `worktree` as described in the module; `wt` is git pinned to the worktree, with
/// the deadline, and `base` the base commit. The attempt's registration is checked
/// separately, first ([`special_in_registration`]).
///
/// # Errors
///
/// [`ScanError::TimedOut`] when `deadline` passes first; [`ScanError::Git`] when git cannot
/// classify a large file.
pub fn scan(
    wt: &Git,
    worktree: &Path,
    base: &str,
    deadline: Instant,
) -> Result<Option<Found>, ScanError> {
    let mut large = Vec::new();
    let mut pending: Vec<PathBuf> = vec![PathBuf::new()];
    let mut listed = 0usize;
    while let Some(rel) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(worktree.join(&rel)) else {
            continue;
        };
        let entries: Vec<_> = entries.flatten().collect();
        if !rel.as_os_str().is_empty() && is_embedded_repository(&worktree.join(&rel)) {
            continue; // an embedded repository: git stages it as a gitlink, never its files
        }
        for entry in entries {
            listed += 1;
            if listed.is_multiple_of(DEADLINE_EVERY) && Instant::now() >= deadline {
                return Err(ScanError::TimedOut);
            }
            let name = entry.file_name();
            if name == ".git" {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = rel.join(&name);
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file() {
                if let Ok(meta) = entry.metadata()
                    && meta.len() > FILE_MAX
                {
                    large.push((path, meta.len()));
                }
            } else if !kind.is_symlink() && READ_BY_GIT.iter().any(|n| name == OsStr::new(n)) {
                return Ok(Some(Found::Special {
                    path: path.to_string_lossy().into_owned(),
                    kind: special_kind(kind),
                }));
            }
        }
    }
    first_staged(wt, base, large)
}

/// The first of `large` that git would stage: not ignored, and not tracked at the same size.
fn first_staged(
    wt: &Git,
    base: &str,
    mut large: Vec<(PathBuf, u64)>,
) -> Result<Option<Found>, ScanError> {
    if large.is_empty() {
        return Ok(None);
    }
    large.sort();
    let mut input = Vec::new();
    for (path, _) in &large {
        input.extend_from_slice(path.as_os_str().as_bytes());
        input.push(0);
    }
    // Exit 1: none is ignored.
    let out = wt
        .cmd(&["check-ignore", "-z", "--stdin"])
        .stdin(&input)
        .output()?;
    if !matches!(out.status.code(), Some(0 | 1)) {
        return Err(ScanError::Git(git::failed(&["check-ignore"], &out)));
    }
    let ignored: Vec<&[u8]> = git::split_z(&out.stdout);
    let mut args: Vec<&OsStr> = ["ls-tree", "-z", "-l", "--full-tree", base, "--"]
        .map(OsStr::new)
        .to_vec();
    args.extend(large.iter().map(|(p, _)| p.as_os_str()));
    let tracked = wt
        .cmd(&args)
        .envs(&[("GIT_LITERAL_PATHSPECS", "1")])
        .run()?;
    let sizes: Vec<(&[u8], u64)> = git::split_z(&tracked)
        .into_iter()
        .filter_map(|record| {
            let (meta, path) = record.split_at(record.iter().position(|b| *b == b'\t')?);
            let size = std::str::from_utf8(meta.rsplit(|b| *b == b' ').next()?)
                .ok()?
                .trim()
                .parse()
                .ok()?;
            Some((&path[1..], size))
        })
        .collect();
    for (path, size) in large {
        let bytes = path.as_os_str().as_bytes();
        if ignored.contains(&bytes) || sizes.contains(&(bytes, size)) {
            continue;
        }
        return Ok(Some(Found::TooLarge {
            path: path.to_string_lossy().into_owned(),
            size,
        }));
    }
    Ok(None)
}

/// Whether `dir` holds a repository git would stage as a gitlink: its `.git` is a git
/// directory, or a file `gitdir: PATH` naming one (as git's own check: `HEAD` a regular
/// file naming a ref or an object, `objects/` and `refs/` directories). Any other `.git` (an
/// empty file, a `gitdir:` to nowhere) leaves the directory's files staged one by one, so
/// they are looked at like any other.
fn is_embedded_repository(dir: &Path) -> bool {
    let dot_git = dir.join(".git");
    let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
        return false;
    };
    if meta.is_dir() {
        return is_git_directory(&dot_git);
    }
    if !meta.is_file() {
        return false;
    }
    let Some(text) = small_file(&dot_git) else {
        return false;
    };
    let Some(target) = text.strip_prefix("gitdir:") else {
        return false;
    };
    let target = Path::new(target.trim());
    is_git_directory(&if target.is_absolute() {
        target.to_path_buf()
    } else {
        dir.join(target)
    })
}

/// Whether `gitdir` is a git directory as git recognises one.
fn is_git_directory(gitdir: &Path) -> bool {
    let head_ok = small_file(&gitdir.join("HEAD")).is_some_and(|head| {
        let head = head.trim_end();
        head.starts_with("ref: refs/")
            || (matches!(head.len(), 40 | 64) && head.bytes().all(|b| b.is_ascii_hexdigit()))
    });
    let dir = |name: &str| std::fs::metadata(gitdir.join(name)).is_ok_and(|m| m.is_dir());
    head_ok && dir("objects") && dir("refs")
}

/// The text of the regular file at `path` (no symlink followed, never blocking on a FIFO),
/// when it has at most 4 KiB of UTF-8.
fn small_file(path: &Path) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take(4096).read_to_string(&mut text).ok()?;
    Some(text)
}

/// A file of the attempt's registration directory that is neither a regular file nor a
/// directory (the command replaced `index` by a FIFO, say).
/// Checked before any git runs in the worktree: git reads these first.
#[must_use]
pub fn special_in_registration(own: &Path) -> Option<Found> {
    let entries = std::fs::read_dir(own).ok()?;
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if !kind.is_file() && !kind.is_dir() {
            return Some(Found::Special {
                path: own.join(entry.file_name()).to_string_lossy().into_owned(),
                kind: if kind.is_symlink() {
                    "a symbolic link"
                } else {
                    special_kind(kind)
                },
            });
        }
    }
    None
}

/// What kind of special file `kind` is, as the end of a sentence ("a FIFO").
pub(super) fn special_kind(kind: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_char_device() {
        "a character device"
    } else {
        "a special file"
    }
}
