//! What a reviewer of a candidate should see that the diff does not show plainly: the
//! receipt's `warnings` (see `docs/delivery.md`).
//!
//! - [`Kind::SymlinkLeavesRepository`]: a symlink added or changed by the candidate whose
//!   target is absolute or climbs above the repository root (decided lexically on the target
//!   text, from the link's own directory);
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

use crate::git::{self, Git, GitError};

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
/// the repository and gitlinks to missing commits. Sorted by kind, then path.
///
/// # Errors
///
/// [`GitError`] when git cannot list or read the changes.
pub fn in_candidate(wt: &Git, commit: &str) -> Result<Vec<Warning>, GitError> {
    let raw = wt.run(&[
        "diff-tree",
        "-r",
        "-z",
        "--raw",
        "--no-renames",
        "--no-commit-id",
        "--ignore-submodules=none",
        commit,
    ])?;
    let records = git::split_z(&raw);
    let mut warnings = Vec::new();
    for pair in records.chunks(2) {
        let [header, path] = pair else { continue };
        // ":<old mode> <new mode> <old sha> <new sha> <status>"
        let fields: Vec<&[u8]> = header.split(|b| *b == b' ').collect();
        let (Some(mode), Some(sha), Some(status)) = (fields.get(1), fields.get(3), fields.get(4))
        else {
            continue;
        };
        if status.starts_with(b"D") {
            continue;
        }
        let sha = String::from_utf8_lossy(sha).into_owned();
        let shown = String::from_utf8_lossy(path).into_owned();
        match *mode {
            b"120000" => {
                let target = wt.run(&["cat-file", "blob", &sha])?;
                if let Some(how) = leaves(path, &target) {
                    warnings.push(Warning {
                        kind: Kind::SymlinkLeavesRepository,
                        path: shown,
                        detail: format!("symlink to {:?} {how}", String::from_utf8_lossy(&target)),
                    });
                }
            }
            b"160000" => {
                let out =
                    wt.output_env(&["cat-file", "-e", &sha], &[("GIT_NO_LAZY_FETCH", "1")])?;
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

/// How the symlink at repository path `link` with target `target` leaves the repository,
/// or `None` when it stays inside (lexically).
fn leaves(link: &[u8], target: &[u8]) -> Option<&'static str> {
    if target.starts_with(b"/") {
        return Some("is absolute");
    }
    let mut depth = link.split(|b| *b == b'/').count().saturating_sub(1);
    for segment in target.split(|b| *b == b'/') {
        match segment {
            b"" | b"." => {}
            b".." => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return Some("climbs above the repository root"),
            },
            _ => depth += 1,
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
    fn symlink_targets_are_judged_lexically_from_the_link_directory() {
        assert_eq!(leaves(b"l", b"/etc/passwd"), Some("is absolute"));
        assert_eq!(
            leaves(b"l", b"../x"),
            Some("climbs above the repository root")
        );
        assert_eq!(
            leaves(b"d/l", b"../../x"),
            Some("climbs above the repository root")
        );
        assert_eq!(
            leaves(b"d/l", b"a/../../../x"),
            Some("climbs above the repository root")
        );
        assert_eq!(leaves(b"d/l", b"../a.txt"), None);
        assert_eq!(leaves(b"d/e/l", b"./../../a.txt"), None);
        assert_eq!(leaves(b"l", b"a/b/../c"), None);
        assert_eq!(leaves(b"l", b""), None);
    }
}
