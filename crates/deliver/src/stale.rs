//! Stale attempts: worktrees that a `deliver` killed before its cleanup left registered.
//!
//! Every attempt's private temporary directory is an owned directory
//! ([`satyrn_os::owned_dir`], kind [`DELIVER`]): its `owner` marker names the `deliver`
//! process that created it. Before it creates its own attempt,
//! `deliver` runs [`prune`], which removes a registered worktree only when **all** of these
//! hold:
//!
//! - it is satyrn's: the worktree is `<dir>/worktree` and `<dir>`'s name is exactly
//!   `satyrn-deliver-<pid>-<n>-<9 digits>`; `<dir>` is a real directory (not a symlink)
//!   owned by the current user with mode `0700`; it holds a regular-file marker in the
//!   format of [`owned_dir`] whose pid is the one in the name;
//! - it is not locked (`git worktree lock`: a worktree someone locked is theirs to remove);
//! - its owner is provably gone, by [`owned_dir`]'s rules (another boot before this one; in
//!   the same pid namespace, no process with that pid, or one that started at another
//!   time). A marker from another pid namespace proves nothing, and is left alone.
//!
//! Removal is `git worktree remove --force`, or, when git refuses (the command removed or
//! rewrote the worktree's `.git`), removing the directory and `git worktree prune`; then the
//! temporary directory. An attempt directory in the system temporary directory that passes
//! the same checks and has nothing at `<dir>/worktree` (its `deliver` was killed before
//! `git worktree add`) is removed too, and so is an *empty* private one without a marker
//! (or with an empty one), at least a minute old, whose named pid has no process (killed
//! between creating it and writing the marker). A worktree that a receipt reported as
//! retained (`CLEANUP_FAILED`) has no marker any more ([`owned_dir::forget`]) and is never
//! pruned.

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::error::RemoveError;
use satyrn_git::{self as git, Git};
use satyrn_os::owned_dir::{self, DELIVER};

/// Why `worktree` is a stale attempt of satyrn's, or `None` when it is not provably one:
/// it is `<dir>/worktree` and `<dir>` is an abandoned [`DELIVER`] directory.
fn stale(worktree: &Path) -> io::Result<Option<String>> {
    if worktree.file_name() != Some(std::ffi::OsStr::new("worktree")) {
        return Ok(None);
    }
    match worktree.parent() {
        Some(dir) => owned_dir::stale(dir, DELIVER),
        None => Ok(None),
    }
}

/// Removes the stale attempts registered in `repo` (see the module documentation); returns
/// one line per attempt removed or failed, for stderr. Never fails the delivery: errors are
/// reported in the lines.
#[must_use]
pub fn prune(repo: &Git) -> Vec<String> {
    let list = match git::worktree_entries(repo) {
        Ok(l) => l,
        Err(e) => {
            return vec![format!(
                "cannot list worktrees to prune stale attempts: {e}"
            )];
        }
    };
    let mut notes = Vec::new();
    sweep_unregistered(&mut notes);
    for wt in list.iter().filter(|w| !w.locked) {
        let why = match stale(&wt.path) {
            Ok(Some(why)) => why,
            Ok(None) => continue,
            Err(e) => {
                notes.push(format!(
                    "cannot tell whether {} is stale: {e}",
                    wt.path.display()
                ));
                continue;
            }
        };
        notes.push(match remove(repo, &wt.path) {
            Ok(()) => format!("removed the stale attempt {} ({why})", wt.path.display()),
            Err(e) => format!(
                "cannot remove the stale attempt {} ({why}): {e}",
                wt.path.display()
            ),
        });
    }
    notes
}

/// Removes, from the system temporary directory, the attempt directories of dead owners
/// that never got a worktree (their `deliver` was killed before `git worktree add`): the
/// same checks as for a registered one, and nothing at `<dir>/worktree`. One with a
/// worktree is left alone here — it may belong to another repository.
fn sweep_unregistered(notes: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let Some(named_pid) = owned_dir::named_pid(&entry.file_name(), DELIVER) else {
            continue;
        };
        let worktree = entry.path().join("worktree");
        if worktree.symlink_metadata().is_ok() {
            continue;
        }
        if empty_orphan(&entry.path(), named_pid) {
            // Killed between creating the directory and writing its marker: nothing in it.
            let _ = std::fs::remove_file(entry.path().join(owned_dir::OWNER_FILE));
            if std::fs::remove_dir(entry.path()).is_ok() {
                notes.push(format!(
                    "removed the empty attempt directory {} (process {named_pid} no longer exists)",
                    entry.path().display()
                ));
            }
            continue;
        }
        let Ok(Some(why)) = stale(&worktree) else {
            continue;
        };
        notes.push(match std::fs::remove_dir_all(entry.path()) {
            Ok(()) => format!(
                "removed the stale attempt directory {} ({why})",
                entry.path().display()
            ),
            Err(e) => format!(
                "cannot remove the stale attempt directory {} ({why}): {e}",
                entry.path().display()
            ),
        });
    }
}

/// How old a marker-less attempt directory must be before it counts as abandoned: 60 s. Its
/// `deliver` writes the marker right after creating it; without the marker nothing proves
/// which pid namespace the name's pid is from, but no live `deliver` leaves it that long.
const UNMARKED_AGE: std::time::Duration = std::time::Duration::from_secs(60);

/// Whether `dir` is a private directory of ours with nothing in it but, at most, a marker
/// never written (an empty `owner`: killed between creating the file and writing it), older
/// than [`UNMARKED_AGE`], named for `pid`, which no process has.
fn empty_orphan(dir: &Path, pid: u32) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return false;
    };
    let old = meta
        .modified()
        .ok()
        .and_then(|m| m.elapsed().ok())
        .is_some_and(|age| age >= UNMARKED_AGE);
    old && meta.is_dir()
        && meta.uid() == rustix::process::geteuid().as_raw()
        && meta.mode() & 0o7777 == 0o700
        && owned_dir::holds_nothing_written(dir)
        && matches!(owned_dir::start_time(pid), Ok(None))
}

fn remove(repo: &Git, worktree: &Path) -> Result<(), RemoveError> {
    let mut args: Vec<std::ffi::OsString> =
        vec!["worktree".into(), "remove".into(), "--force".into()];
    args.push(worktree.as_os_str().to_owned());
    let removed = matches!(repo.output(&args), Ok(out) if out.status.success());
    if !removed {
        remove_dir_all(worktree)?;
    }
    repo.run(&["worktree", "prune"]).map_err(RemoveError::Git)?;
    if let Some(dir) = worktree.parent() {
        remove_dir_all(dir)?;
    }
    Ok(())
}

/// Removes `dir` and everything in it; a `dir` already gone is not an error.
fn remove_dir_all(dir: &Path) -> Result<(), RemoveError> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(RemoveError::Io(e)),
        _ => Ok(()),
    }
}
