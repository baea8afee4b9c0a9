//! What a reviewer of a candidate should see that the diff does not show plainly: the
//! receipt's `warnings` (see `docs/delivery.md`).
//!
//! - [`Kind::SymlinkLeavesRepository`]: a symlink added or changed by the candidate whose
//!   target is absolute or climbs above the repository root (resolved from the link's own
//!   directory, through the worktree's other symlinks);
//! - [`Kind::GitlinkCommitMissing`]: a gitlink added or changed by the candidate whose commit
//!   is not in the repository's object store (typically an embedded repository the command
//!   created, whose objects went away with the worktree);
//! - [`Kind::SubmoduleWritesDropped`]: files the command wrote inside an uninitialized
//!   submodule's directory, which git does not stage and so are silently not part of the
//!   candidate.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use serde::Serialize;

use satyrn_git::{self as git, Git, GitError};

/// The kind of a warning, as spelled in the receipt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Kind {
    /// A symlink whose target leaves the repository.
    #[serde(rename = "symlink-leaves-repository")]
    SymlinkLeavesRepository,
    /// A gitlink to a commit missing from the object store.
    #[serde(rename = "gitlink-commit-missing")]
    GitlinkCommitMissing,
    /// Writes into an uninitialized submodule that are not in the candidate.
    #[serde(rename = "submodule-writes-dropped")]
    SubmoduleWritesDropped,
}

/// One reviewer-facing warning. Field order is the JSON order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Warning {
    /// What kind.
    pub kind: Kind,
    /// The repository path concerned (lossy if not UTF-8).
    pub path: String,
    /// A sentence for the reviewer.
    pub detail: String,
}

/// The most entries counted inside one submodule directory.
const COUNT_LIMIT: usize = 10_000;

/// Warnings about the candidate `commit`'s changes against its parent: symlinks that leave
/// the repository (resolved through the other symlinks of `worktree`, the worktree the
/// candidate was staged from) and gitlinks to missing commits. Sorted by kind, then path.
///
/// # Errors
///
/// [`GitError`] when git cannot list or read the changes.
pub fn in_candidate(wt: &Git, worktree: &Path, commit: &str) -> Result<Vec<Warning>, GitError> {
    let mut warnings = Vec::new();
    for change in super::candidate::changes(wt, commit)? {
        if change.status == b'D' {
            continue;
        }
        let (path, sha) = (change.path.as_slice(), change.new_sha.as_str());
        let shown = String::from_utf8_lossy(path).into_owned();
        match change.new_mode.as_str() {
            "120000" => {
                let target = wt.run(&["cat-file", "blob", sha])?;
                if let Some(how) = leaves(worktree, path, &target) {
                    warnings.push(Warning {
                        kind: Kind::SymlinkLeavesRepository,
                        path: shown,
                        detail: format!("symlink to {:?} {how}", String::from_utf8_lossy(&target)),
                    });
                }
            }
            "160000" => {
                let out = wt
                    .cmd(&["cat-file", "-e", sha])
                    .envs(&[("GIT_NO_LAZY_FETCH", "1")])
                    .output()?;
                if !out.status.success() {
                    warnings.push(Warning {
                        kind: Kind::GitlinkCommitMissing,
                        path: shown,
                        detail: format!(
                            "gitlink to commit {sha}, which is not in the repository's object store"
                        ),
                    });
                }
            }
            _ => {}
        }
    }
    warnings.sort();
    Ok(warnings)
}

/// The most symlinks followed while resolving one target (as the kernel's `MAXSYMLINKS`).
const MAX_HOPS: usize = 40;

/// How the symlink at repository path `link` with target `target` leaves the repository,
/// or `None` when it stays inside. Resolved segment by segment from the link's directory;
/// a segment that is itself a symlink in `worktree` is followed (up to [`MAX_HOPS`]), so a
/// target that leaves only through another link is caught too. Segments that do not exist
/// are taken as plain names.
fn leaves(worktree: &Path, link: &[u8], target: &[u8]) -> Option<String> {
    if target.starts_with(b"/") {
        return Some("is absolute".to_owned());
    }
    let mut at: Vec<Vec<u8>> = link.split(|b| *b == b'/').map(<[u8]>::to_vec).collect();
    at.pop();
    let mut pending: std::collections::VecDeque<Vec<u8>> =
        target.split(|b| *b == b'/').map(<[u8]>::to_vec).collect();
    let mut hops = 0;
    while let Some(segment) = pending.pop_front() {
        match segment.as_slice() {
            b"" | b"." => {}
            b".." => {
                if at.pop().is_none() {
                    return Some(if hops == 0 {
                        "climbs above the repository root".to_owned()
                    } else {
                        "leads above the repository root through another symlink".to_owned()
                    });
                }
            }
            _ => {
                at.push(segment);
                let here = worktree.join(OsStr::from_bytes(&at.join(&b'/')));
                let Ok(next) = std::fs::read_link(&here) else {
                    continue;
                };
                hops += 1;
                if hops > MAX_HOPS {
                    return None;
                }
                let via = String::from_utf8_lossy(&at.join(&b'/')).into_owned();
                let next = next.as_os_str().as_bytes();
                if next.starts_with(b"/") {
                    return Some(format!(
                        "leads to an absolute path through the symlink {via}"
                    ));
                }
                at.pop();
                for s in next.split(|b| *b == b'/').rev() {
                    pending.push_front(s.to_vec());
                }
            }
        }
    }
    None
}

/// Warnings for files the command wrote inside uninitialized submodules of the worktree
/// (gitlinks in its index whose directory has content but no `.git`). Sorted by path.
///
/// # Errors
///
/// [`GitError`] when the index cannot be listed.
pub fn dropped_submodule_writes(wt: &Git, worktree: &Path) -> Result<Vec<Warning>, GitError> {
    let listed = wt.run(&["ls-files", "-s", "-z"])?;
    let mut warnings = Vec::new();
    for entry in git::split_z(&listed) {
        // "<mode> <sha> <stage>\t<path>"
        let Some(tab) = entry.iter().position(|b| *b == b'\t') else {
            continue;
        };
        if !entry.starts_with(b"160000 ") {
            continue;
        }
        let path = &entry[tab + 1..];
        let dir = worktree.join(OsStr::from_bytes(path));
        let Ok(meta) = dir.symlink_metadata() else {
            continue;
        };
        if !meta.is_dir() || dir.join(".git").symlink_metadata().is_ok() {
            continue;
        }
        let n = count_entries(&dir);
        if n > 0 {
            let shown = String::from_utf8_lossy(path).into_owned();
            let count = if n >= COUNT_LIMIT {
                format!("at least {n} entries")
            } else if n == 1 {
                "1 entry".to_owned()
            } else {
                format!("{n} entries")
            };
            warnings.push(Warning {
                kind: Kind::SubmoduleWritesDropped,
                detail: format!(
                    "{count} written inside the uninitialized submodule {shown} are not in the candidate"
                ),
                path: shown,
            });
        }
    }
    warnings.sort();
    Ok(warnings)
}

/// Entries below `dir` (not following symlinks), up to [`COUNT_LIMIT`].
fn count_entries(dir: &Path) -> usize {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            n += 1;
            if n >= COUNT_LIMIT {
                return n;
            }
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(entry.path());
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlink_targets_are_judged_from_the_link_directory() {
        let none = Path::new("/nonexistent/satyrn-worktree");
        let leaves = |l: &[u8], t: &[u8]| leaves(none, l, t);
        assert_eq!(leaves(b"l", b"/etc/passwd").as_deref(), Some("is absolute"));
        let climbs = Some("climbs above the repository root");
        assert_eq!(leaves(b"l", b"../x").as_deref(), climbs);
        assert_eq!(leaves(b"d/l", b"../../x").as_deref(), climbs);
        assert_eq!(leaves(b"d/l", b"a/../../../x").as_deref(), climbs);
        assert_eq!(leaves(b"d/l", b"../a.txt"), None);
        assert_eq!(leaves(b"d/e/l", b"./../../a.txt"), None);
        assert_eq!(leaves(b"l", b"a/b/../c"), None);
        assert_eq!(leaves(b"l", b""), None);
    }

    #[test]
    fn a_target_that_leaves_through_another_symlink_is_caught() {
        let dir = tempfile::tempdir().expect("tempdir");
        let wt = dir.path();
        std::fs::create_dir(wt.join("d")).expect("mkdir");
        std::os::unix::fs::symlink("/", wt.join("root")).expect("symlink");
        std::os::unix::fs::symlink("..", wt.join("d/up")).expect("symlink");
        std::os::unix::fs::symlink("loop", wt.join("loop")).expect("symlink");
        assert_eq!(
            leaves(wt, b"x", b"root/etc").as_deref(),
            Some("leads to an absolute path through the symlink root")
        );
        assert_eq!(
            leaves(wt, b"d/x", b"up/../y").as_deref(),
            Some("leads above the repository root through another symlink")
        );
        assert_eq!(leaves(wt, b"d/x", b"up/d"), None);
        assert_eq!(leaves(wt, b"x", b"loop"), None, "a loop stays inside");
    }
}
