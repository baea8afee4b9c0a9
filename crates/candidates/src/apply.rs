//! `candidates apply ID`: the candidate's changes into the caller's clean checkout, staged
//! for review and commit. Never moves a branch, never commits, never applies part of it.
//!
//! 1. A dirty checkout (`deliver`'s own test: tracked, staged or deleted changes, untracked
//!    files) is refused before anything is read or written.
//! 2. The result tree is computed without touching the checkout: the candidate's own tree
//!    when `HEAD` is its base, else `git merge-tree --write-tree --merge-base=<base> HEAD
//!    <candidate>` (a 3-way merge). Conflicts refuse the whole apply, naming every
//!    conflicted path.
//! 3. A path the result adds that exists in the checkout (an ignored file or directory: the
//!    checkout is clean), or below a non-directory that is not being removed, refuses the
//!    whole apply (`git read-tree -m -u` would overwrite an ignored file silently).
//! 4. `git read-tree -m -u <HEAD> <tree>` moves the index and the working tree from `HEAD`'s
//!    tree to the result.

use serde::Serialize;

use super::{Error, Namespace};
use satyrn_git::{self as git, Git};

/// What was applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Applied {
    /// The candidate id.
    pub id: String,
    /// The candidate commit.
    pub commit: String,
    /// Its base.
    pub base: String,
    /// The caller's `HEAD` the changes were applied onto.
    pub head: String,
    /// Whether a 3-way merge was needed (`HEAD` moved since the base).
    pub three_way: bool,
    /// The paths changed in the checkout (staged), sorted by bytes.
    pub paths: Vec<String>,
}

/// Applies candidate `id` of `namespace` to the checkout of `git`.
///
/// # Errors
///
/// [`Error::Dirty`], [`Error::NotFound`], [`Error::Conflict`]; [`Error::Unexpected`] for
/// an unborn `HEAD` or a candidate without a base; [`Error::Git`] when a git step fails.
/// The checkout is unchanged in every case.
pub fn apply(git: &Git, namespace: &Namespace, id: &str) -> Result<Applied, Error> {
    if let Some(entries) = satyrn_git::root::dirty_entries(git)? {
        return Err(Error::Dirty(entries));
    }
    let candidate = super::find(git, namespace, id)?;
    let head = super::head_commit(git)?.ok_or_else(|| {
        Error::Unexpected("HEAD is unborn; there is nothing to apply onto".to_owned())
    })?;
    let base = candidate
        .base
        .clone()
        .ok_or_else(|| Error::Unexpected(format!("candidate {id:?} has no base commit")))?;
    let three_way = base != head;
    let tree = if three_way {
        merged_tree(git, id, &base, &head, &candidate.commit)?
    } else {
        git.line(&[
            "rev-parse",
            "--verify",
            &format!("{}^{{tree}}", candidate.commit),
        ])?
    };
    let changed = git.run(&[
        "diff-tree",
        "-r",
        "-z",
        "--name-only",
        "--no-renames",
        "--ignore-submodules=none",
        &head,
        &tree,
    ])?;
    let mut paths: Vec<String> = git::split_z(&changed)
        .into_iter()
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    paths.sort();
    let blocked = in_the_way(git, &head, &tree)?;
    if !blocked.is_empty() {
        return Err(Error::Overwrite {
            id: id.to_owned(),
            paths: blocked,
        });
    }
    git.run(&["read-tree", "-m", "-u", &head, &tree])?;
    Ok(Applied {
        id: id.to_owned(),
        commit: candidate.commit,
        base,
        head,
        three_way,
        paths,
    })
}

/// The paths of the checkout that moving from `head` to `tree` would overwrite although
/// git does not track them: an added path that exists (file, link or directory), or an
/// ancestor of one that exists as a non-directory and is not removed by the move.
fn in_the_way(git: &Git, head: &str, tree: &str) -> Result<Vec<String>, Error> {
    use std::os::unix::ffi::OsStrExt;
    let names = |filter: &str| {
        git.run(&[
            "diff-tree",
            "-r",
            "-z",
            "--name-only",
            "--no-renames",
            "--ignore-submodules=none",
            filter,
            head,
            tree,
        ])
    };
    let added = names("--diff-filter=A")?;
    let removed = names("--diff-filter=D")?;
    let removed: Vec<&[u8]> = git::split_z(&removed);
    let root = git.cwd();
    let exists =
        |rel: &[u8]| std::fs::symlink_metadata(root.join(std::ffi::OsStr::from_bytes(rel)));
    let mut blocked: Vec<String> = Vec::new();
    for path in git::split_z(&added) {
        if exists(path).is_ok() {
            blocked.push(String::from_utf8_lossy(path).into_owned());
            continue;
        }
        let ancestors = path
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'/')
            .map(|(at, _)| &path[..at]);
        for ancestor in ancestors {
            let in_way =
                exists(ancestor).is_ok_and(|m| !m.is_dir()) && !removed.contains(&ancestor);
            if in_way {
                blocked.push(String::from_utf8_lossy(ancestor).into_owned());
                break;
            }
        }
    }
    blocked.sort();
    blocked.dedup();
    Ok(blocked)
}

/// The 3-way merge of `commit` onto `head` with `base` as merge base, written as a tree
/// object only (no ref, no index, no file of the checkout).
fn merged_tree(git: &Git, id: &str, base: &str, head: &str, commit: &str) -> Result<String, Error> {
    let merge_base = format!("--merge-base={base}");
    let args = [
        "merge-tree",
        "--write-tree",
        "-z",
        "--name-only",
        "--no-messages",
        &merge_base,
        head,
        commit,
    ];
    let out = git.output(&args)?;
    let records = git::split_z(&out.stdout);
    match out.status.code() {
        Some(0) => records
            .first()
            .map(|t| String::from_utf8_lossy(t).into_owned())
            .ok_or_else(|| Error::Unexpected("git merge-tree printed no tree".to_owned())),
        Some(1) => {
            let mut paths: Vec<String> = records
                .iter()
                .skip(1)
                .take_while(|r| !r.is_empty())
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .collect();
            paths.sort();
            paths.dedup();
            Err(Error::Conflict {
                id: id.to_owned(),
                paths,
            })
        }
        _ => Err(Error::Git(git::failed(&args, &out))),
    }
}
