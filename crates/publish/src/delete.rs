//! The remover: deletes one file beneath the worktree root, iff it still holds the bytes
//! the agent saw.
//!
//! After the usual checks (no symbolic link followed on the way, a single-link regular file
//! hashing to the base revision), the target is first renamed aside, in its own directory,
//! to a hidden temporary name (`renameat2(RENAME_NOREPLACE)`); the renamed entry is checked
//! again (the same inode, still hashing to the base), and only then unlinked. A writer that
//! does not take satyrn's lock and renamed a new file over the target, or rewrote it, is
//! then seen: its file is put back under the target's name (`RENAME_NOREPLACE`) and the
//! delete is `REVISION_STALE`.

use std::os::fd::OwnedFd;

use rustix::fs::{AtFlags, RenameFlags};
use rustix::io::Errno;
use satyrn_mutator_core::revision::Revision;

use super::commit::{still_the_target, unchanged};
use super::temporary;
use super::{
    PublishError, Target, check_target, checked_segments, failed, open_parent, sync_committed,
};
use satyrn_os::signals::HeldSignals;

/// Removes the file at `path` (worktree-relative, `/`-separated) beneath `root` iff it is a
/// single-link regular file whose bytes hash to `base`. The caller holds the worktree lock
/// ([`satyrn_os::lock::WorktreeLock`]).
///
/// The path is checked again with the component's own rules (shape, not inside `.git`); no
/// symbolic link is followed, on the way or at the target. The target is renamed aside to
/// `.<name>.satyrn-<pid>-<nonce>.tmp`, re-checked there (same inode, same bytes), then
/// unlinked, and the directory fsynced; a failure of that fsync is reported on stderr, the
/// file is deleted. Where the file system has no `RENAME_NOREPLACE` (and in debug builds
/// with `SATYRN_TEST_PUBLISH_FALLBACK=2`), the target is re-checked under its own name right
/// before the `unlinkat` instead.
///
/// Process-global effects, from the rename aside until the directory is synced (or the
/// file put back): the termination signals are held and `SIGXFSZ` ignored, as in
/// [`super::publish`]. A `SIGKILL` in that instant leaves the file under its hidden name,
/// recorded in the worktree's journal, which the next publish, create or delete removes
/// (the sweep: [`super::sweep`]).
///
/// # Errors
///
/// [`PublishError::Stale`] when the bytes no longer hash to `base` (at the first check, or
/// after the rename aside: the file is then put back), or the name was replaced or removed
/// meanwhile. [`PublishError::Failed`] when the path is unsafe or inside `.git`, a segment
/// is a symbolic link or not a directory, the target is missing, a symbolic link, a
/// directory, not a regular file or has more than one link, or a rename or unlink fails.
/// The file is then where and as it was.
pub fn delete(root: &OwnedFd, path: &str, base: &Revision) -> Result<(), PublishError> {
    let segments = checked_segments(path, "delete")?;
    let Some((leaf, dirs)) = segments.split_last() else {
        return Err(PublishError::Failed("empty path".to_string()));
    };
    let dir = open_parent(root, dirs, path)?;
    let journal = super::swept(root);
    let target = check_target(&dir, leaf, base, path)?;
    let rel_dir = dirs.join("/");
    let proof = temporary::Proof {
        journal: journal.as_ref(),
        dir: &rel_dir,
        displaced: None,
    };
    let held = HeldSignals::hold();
    let outcome = if temporary::forced_no_noreplace() {
        remove_in_place(&dir, leaf, path, base, &target)
    } else {
        match rename_aside(&dir, leaf, path, proof, &target)? {
            // The record lives until the aside name is gone (unlinked or put back).
            Some((aside, _record)) => remove_aside(&dir, leaf, &aside, path, base, &target),
            None => remove_in_place(&dir, leaf, path, base, &target),
        }
    };
    if outcome.is_ok() {
        sync_committed(&dir, path, "deleted");
    }
    drop(held);
    outcome
}

/// Renames `leaf` to a fresh hidden temporary name, recorded in the journal first as
/// holding the target; `None` when the file system has no `RENAME_NOREPLACE`.
fn rename_aside<'a>(
    dir: &OwnedFd,
    leaf: &str,
    path: &str,
    proof: temporary::Proof<'a>,
    target: &Target,
) -> Result<Option<(String, Option<super::journal::Record<'a>>)>, PublishError> {
    let mut unsupported = false;
    let mut record = None;
    let renamed = temporary::for_each_candidate_name(temporary::stem(leaf), |name| {
        let recorded = proof.record(name, &target.file);
        match rustix::fs::renameat_with(dir, leaf, dir, name, RenameFlags::NOREPLACE) {
            Ok(()) => {
                record = recorded;
                Ok(true)
            }
            Err(Errno::EXIST) => Ok(false),
            Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {
                unsupported = true;
                Err(PublishError::Failed(String::new()))
            }
            Err(Errno::NOENT) => Err(PublishError::Stale(format!(
                "`{path}` was removed or renamed while it was being deleted (by a writer that does not take satyrn's lock); read it again"
            ))),
            Err(e) => Err(failed(path, "renaming the target aside", e)),
        }
    });
    match renamed {
        Ok(name) => Ok(Some((name, record))),
        Err(_) if unsupported => Ok(None),
        Err(e) => Err(e),
    }
}

/// After the rename aside: unlinks `aside` if it is still the checked file with the base
/// revision's bytes, else puts it back as `leaf`.
fn remove_aside(
    dir: &OwnedFd,
    leaf: &str,
    aside: &str,
    path: &str,
    base: &Revision,
    target: &Target,
) -> Result<(), PublishError> {
    let verdict = still_the_target(dir, aside, path, target)
        .and_then(|()| unchanged(path, base, target))
        .and_then(|()| {
            rustix::fs::unlinkat(dir, aside, AtFlags::empty())
                .map_err(|e| failed(path, "unlinking the target", e))
        });
    let Err(refusal) = verdict else {
        return Ok(());
    };
    match rustix::fs::renameat_with(dir, aside, dir, leaf, RenameFlags::NOREPLACE) {
        Ok(()) => Err(refusal),
        Err(e) => Err(PublishError::Failed(format!(
            "{refusal}; putting it back failed ({}), so it is kept as `{aside}` beside it",
            std::io::Error::from(e)
        ))),
    }
}

/// Without `RENAME_NOREPLACE`: re-checks `leaf` itself, then unlinks it.
fn remove_in_place(
    dir: &OwnedFd,
    leaf: &str,
    path: &str,
    base: &Revision,
    target: &Target,
) -> Result<(), PublishError> {
    still_the_target(dir, leaf, path, target)?;
    unchanged(path, base, target)?;
    rustix::fs::unlinkat(dir, leaf, AtFlags::empty())
        .map_err(|e| failed(path, "unlinking the target", e))
}
