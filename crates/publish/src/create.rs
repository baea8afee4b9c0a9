//! The writer of new files: creates one file beneath the worktree root, never replacing
//! anything.
//!
//! The missing directories on the way are created one segment at a time and each is
//! reopened `O_NOFOLLOW | O_DIRECTORY`, so a symbolic link is never followed, not even one
//! swapped in right after the `mkdirat`. The content is written and fsynced in a temporary
//! in the target's directory (anonymous where the file system has `O_TMPFILE`), then given
//! the target's name with a no-replace commit (`linkat` of the anonymous file, or
//! `renameat2(RENAME_NOREPLACE)`): of two creators of one path exactly one wins, the other
//! gets [`PublishError::Exists`], and the winner's bytes are never overwritten.

use std::os::fd::OwnedFd;

use rustix::fs::{AtFlags, Mode};
use rustix::io::Errno;

use super::temporary::{self, Temporary};
use super::{
    PublishError, checked_segments, dup_root, failed, open_segment, sync_committed, write_all,
};
use satyrn_os::signals::HeldSignals;

/// The permission bits of every created file: never executable, never set-id.
const FILE_MODE: u32 = 0o644;

/// The mode asked of every created directory (the process's umask applies, as to `mkdir`).
const DIR_MODE: u32 = 0o755;

/// Creates `path` (worktree-relative, `/`-separated) beneath `root` with `content`. The
/// caller holds the worktree lock ([`satyrn_os::lock::WorktreeLock`]).
///
/// The path is checked again with the component's own rules ([`satyrn_mutator_core::path`]:
/// shape, not inside `.git`). Missing parent directories are created one segment at a time
/// (`mkdirat`, mode 0o755 less the umask), each reopened `O_NOFOLLOW | O_DIRECTORY` and
/// fsynced into its parent; an existing segment must be a real directory. The file gets
/// mode 0o644 exactly (`fchmod`, whatever the umask), its content is written to a temporary
/// in the target's directory and fsynced, then committed without replacing anything
/// (`linkat` of the anonymous temporary; with a named temporary, `renameat2` with
/// `RENAME_NOREPLACE`, or link then unlink without it); then the directory is fsynced. A
/// failure of that last fsync is reported on stderr: the file is created.
///
/// Process-global effects, from the first directory created until the file is committed and
/// its directory synced (or a failure's directories are removed again): the termination
/// signals are held and `SIGXFSZ` is ignored, exactly as in [`super::publish`]. The stale temporaries of
/// killed publishes in the target's directory are removed first (reported on stderr).
///
/// # Errors
///
/// [`PublishError::Exists`] when `path` exists, of any kind (a directory, or a symbolic
/// link even dangling: never followed, never replaced), checked first and again by the
/// commit itself, so a concurrent creator that won makes this one `Exists`.
/// [`PublishError::Failed`] for everything else: an unsafe or `.git` path, a segment that is
/// a symbolic link or not a directory, any create, write or sync failure. Nothing is then
/// left behind: the directories this call created are removed again (innermost first, each
/// only while it is empty).
pub fn create(root: &OwnedFd, path: &str, content: &[u8]) -> Result<(), PublishError> {
    let segments = checked_segments(path, "create")?;
    let Some((leaf, dirs)) = segments.split_last() else {
        return Err(PublishError::Failed("empty path".to_string()));
    };
    // Held from the first `mkdirat` until a failure's directories are removed again, so a
    // termination signal never ends the process between the two.
    let held = HeldSignals::hold();
    let mut made = MadeDirs::default();
    let journal = super::swept(root);
    let outcome = make_parent(root, dirs, path, &mut made)
        .and_then(|dir| create_in(&dir, leaf, &dirs.join("/"), path, content, journal.as_ref()));
    if outcome.is_err() {
        made.remove();
    }
    drop(held);
    outcome
}

fn create_in(
    dir: &OwnedFd,
    leaf: &str,
    dir_path: &str,
    path: &str,
    content: &[u8],
    journal: Option<&super::journal::Journal>,
) -> Result<(), PublishError> {
    match rustix::fs::statat(dir, leaf, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(_) => return Err(exists(path)),
        Err(Errno::NOENT) => {}
        Err(e) => return Err(failed(path, "inspecting the target", e)),
    }
    let proof = temporary::Proof {
        journal,
        dir: dir_path,
        displaced: None,
    };
    let outcome = write_and_link(dir, leaf, path, content, proof);
    if outcome.is_ok() {
        sync_committed(dir, path, "created");
    }
    outcome
}

/// The directories one call created, each with its parent, in creation order.
#[derive(Default)]
struct MadeDirs(Vec<(OwnedFd, String)>);

impl MadeDirs {
    /// Removes them, innermost first, each only while it is empty (`rmdir`): a failed
    /// create leaves the tree as it found it. Best effort: a directory that something else
    /// filled meanwhile stays, and so do its parents.
    fn remove(self) {
        for (parent, name) in self.0.into_iter().rev() {
            if rustix::fs::unlinkat(&parent, name.as_str(), AtFlags::REMOVEDIR).is_err() {
                return;
            }
            let _ = rustix::fs::fsync(&parent);
        }
    }
}

fn exists(path: &str) -> PublishError {
    PublishError::Exists(format!(
        "`{path}` already exists; read it and edit it instead of creating it"
    ))
}

/// Writes `content` to a temporary with mode 0o644, syncs it, and links it as `leaf`; the
/// temporary is removed on every failure.
fn write_and_link(
    dir: &OwnedFd,
    leaf: &str,
    path: &str,
    content: &[u8],
    proof: temporary::Proof<'_>,
) -> Result<(), PublishError> {
    let mut temp = Temporary::create(dir, leaf, path, proof)?;
    let written = rustix::fs::fchmod(&temp.file, Mode::from_raw_mode(FILE_MODE))
        .map_err(|e| failed(path, "setting the mode", e))
        .and_then(|()| {
            write_all(&temp.file, content).map_err(|e| failed(path, "writing the temporary", e))
        })
        .and_then(|()| {
            rustix::fs::fsync(&temp.file).map_err(|e| failed(path, "syncing the temporary", e))
        });
    match written.and_then(|()| temp.link_as_new(leaf, path)) {
        Ok(true) => {
            temp.disarm();
            Ok(())
        }
        Ok(false) => Err(temp.remove_after(exists(path))),
        Err(e) => Err(temp.remove_after(e)),
    }
}

/// Opens the directory `dirs` names beneath `root`, creating each missing segment (recorded
/// in `made`); never follows a symbolic link.
fn make_parent(
    root: &OwnedFd,
    dirs: &[&str],
    path: &str,
    made: &mut MadeDirs,
) -> Result<OwnedFd, PublishError> {
    let mut dir = dup_root(root, path)?;
    for segment in dirs {
        let created = match rustix::fs::mkdirat(&dir, *segment, Mode::from_raw_mode(DIR_MODE)) {
            Ok(()) => true,
            // A directory, or anything else the no-follow open below then refuses.
            Err(Errno::EXIST) => false,
            Err(e) => return Err(failed(path, &format!("creating directory `{segment}`"), e)),
        };
        if created {
            match rustix::io::dup(&dir) {
                Ok(parent) => made.0.push((parent, (*segment).to_string())),
                Err(e) => {
                    let _ = rustix::fs::unlinkat(&dir, *segment, AtFlags::REMOVEDIR);
                    return Err(failed(path, &format!("creating directory `{segment}`"), e));
                }
            }
        }
        let child = open_segment(&dir, segment, path)?;
        if created {
            rustix::fs::fsync(&dir)
                .map_err(|e| failed(path, &format!("syncing the directory of `{segment}`"), e))?;
        }
        dir = child;
    }
    Ok(dir)
}
