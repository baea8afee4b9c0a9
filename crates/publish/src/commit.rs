//! The commit: the named, complete, synced temporary takes the target's place, with the
//! narrowest window POSIX allows for a writer that does not take satyrn's lock.
//!
//! Right before the commit the target's name must still lead to the inode that was checked
//! (a single-link regular file). Then, where the file system has it,
//! `renameat2(RENAME_EXCHANGE)` swaps the two names atomically, so the displaced file is
//! still reachable under the temporary's name; its bytes are hashed again through the
//! descriptor kept since the check. If they still hash to the base revision, the displaced
//! file is removed and the edit stands; if a writer changed them (or the name had been
//! replaced), the names are swapped back and the publish is `REVISION_STALE`. Without
//! `RENAME_EXCHANGE`, the target is re-hashed right before a plain `renameat`.

use std::os::fd::OwnedFd;

use rustix::fs::{AtFlags, FileType, RenameFlags};
use rustix::io::Errno;
use satyrn_mutator_core::revision::Revision;

use super::{PublishError, Target, failed, hash_file};

/// How a commit ended, and so what becomes of the temporary's name.
pub(super) enum Committed {
    /// The new content is the target; the temporary's name is gone (renamed away, or the
    /// displaced file under it removed).
    Published,
    /// Nothing changed; the temporary's name (if any) still holds the new content and is
    /// to be removed.
    Undone(PublishError),
    /// The new content is the target, but the displaced file had been changed and could not
    /// be swapped back: it is kept under the temporary's name, which the error names.
    Stuck(PublishError),
}

/// Puts the temporary `name` in `leaf`'s place if the target is still the checked file with
/// the base revision's bytes.
pub(super) fn commit(
    dir: &OwnedFd,
    leaf: &str,
    name: &str,
    path: &str,
    base: &Revision,
    target: &Target,
) -> Committed {
    if let Err(e) = still_the_target(dir, leaf, path, target) {
        return Committed::Undone(e);
    }
    if !super::temporary::forced_fallback() {
        match rustix::fs::renameat_with(dir, name, dir, leaf, RenameFlags::EXCHANGE) {
            Ok(()) => return check_displaced(dir, leaf, name, path, base, target),
            // No RENAME_EXCHANGE on this file system or kernel: the plain rename below.
            Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {}
            Err(e) => {
                return Committed::Undone(failed(
                    path,
                    "exchanging the temporary and the target",
                    e,
                ));
            }
        }
    }
    if let Err(e) = unchanged(path, base, target) {
        return Committed::Undone(e);
    }
    match rustix::fs::renameat(dir, name, dir, leaf) {
        Ok(()) => Committed::Published,
        Err(e) => Committed::Undone(failed(path, "renaming the temporary over the target", e)),
    }
}

/// After the exchange: `name` holds the displaced file. Keeps the edit if that is the
/// checked inode with the base revision's bytes, else swaps back.
fn check_displaced(
    dir: &OwnedFd,
    leaf: &str,
    name: &str,
    path: &str,
    base: &Revision,
    target: &Target,
) -> Committed {
    let verdict =
        still_the_target(dir, name, path, target).and_then(|()| unchanged(path, base, target));
    match verdict {
        Ok(()) => {
            if let Err(e) = rustix::fs::unlinkat(dir, name, AtFlags::empty()) {
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr(),
                    "satyrn-host: `{path}` was published, but removing its previous content `{name}` failed: {}",
                    std::io::Error::from(e)
                );
            }
            Committed::Published
        }
        Err(changed) => {
            match rustix::fs::renameat_with(dir, name, dir, leaf, RenameFlags::EXCHANGE) {
                Ok(()) => Committed::Undone(changed),
                Err(e) => Committed::Stuck(PublishError::Failed(format!(
                    "`{path}` was published, but {changed}; swapping the previous content back failed ({}), so it is kept as `{name}` beside it",
                    std::io::Error::from(e)
                ))),
            }
        }
    }
}

/// `entry` in `dir` is still the checked target: the same inode, a single-link regular file.
pub(super) fn still_the_target(
    dir: &OwnedFd,
    entry: &str,
    path: &str,
    target: &Target,
) -> Result<(), PublishError> {
    let stat = rustix::fs::statat(dir, entry, AtFlags::SYMLINK_NOFOLLOW)
        .map_err(|e| failed(path, "inspecting the target again", e))?;
    let same = stat.st_dev == target.dev
        && stat.st_ino == target.ino
        && stat.st_nlink == 1
        && FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile;
    if same {
        Ok(())
    } else {
        Err(PublishError::Stale(format!(
            "`{path}` was replaced by another file meanwhile (by a writer that does not take satyrn's lock); read it again"
        )))
    }
}

/// The checked inode still hashes to `base`.
pub(super) fn unchanged(path: &str, base: &Revision, target: &Target) -> Result<(), PublishError> {
    let current = hash_file(&target.file, target.size)
        .map_err(|e| failed(path, "reading the target again", e))?;
    if &current == base {
        Ok(())
    } else {
        Err(PublishError::Stale(format!(
            "`{path}` changed meanwhile (by a writer that does not take satyrn's lock): expected revision {base}, it is now {current}; read it again"
        )))
    }
}
