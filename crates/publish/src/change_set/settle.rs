//! Settling a change set's record: rolling it back (not committed) or forward (committed).
//! The live publish uses the same two functions on a failure and after its mark, and so
//! does the recovery of a killed one; every step is idempotent and acts only on a regular
//! single-link file whose device and identity the record holds, so settling twice (a kill
//! during recovery) is settling once, and nothing the record does not name is ever touched.
//! Each says whether it reached its end state (nothing of the set's left under a temporary
//! name; rolled back: no new file at a path); every directory it changed is synced first.

use std::os::fd::OwnedFd;

use rustix::fs::{AtFlags, RenameFlags};
use satyrn_mutator_core::path;

use super::record::{Entry, Id, Kind, Record};
use crate::journal::FileId;

/// The directory `rel` (worktree-relative, `""`: the root), walked without following a
/// symbolic link; `None` when it is not there.
fn dir_at(root: &OwnedFd, rel: &str) -> Option<OwnedFd> {
    let segments: Vec<&str> = if rel.is_empty() {
        Vec::new()
    } else {
        path::segments(rel).ok()?
    };
    crate::open_parent(root, &segments, rel).ok()
}

/// Whether `name` in `dir` is the recorded file `id` on `dev`: a regular file with one link
/// (every file a publish names is one) of that identity.
fn is(dir: &OwnedFd, name: &str, dev: u64, id: Option<Id>) -> bool {
    let Some(id) = id else {
        return false;
    };
    let regular = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|st| {
        rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::RegularFile
            && st.st_nlink == 1
    });
    regular
        && FileId::of(dir, Some(name))
            .is_some_and(|(d, found)| d == dev && id.file_id().matches(found))
}

/// Whether `name` in `dir` may hold one of the recorded files (`None`: the directory is
/// gone, so nothing of the set is there). Fails closed: an error other than "no such file"
/// counts as present.
fn holds_any(dir: Option<&OwnedFd>, name: &str, dev: u64, ids: [Option<Id>; 2]) -> bool {
    let Some(dir) = dir else {
        return false;
    };
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Err(rustix::io::Errno::NOENT) => false,
        Err(_) => true,
        Ok(_) => ids.into_iter().any(|id| is(dir, name, dev, id)),
    }
}

fn absent(dir: &OwnedFd, name: &str) -> bool {
    matches!(
        rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW),
        Err(rustix::io::Errno::NOENT)
    )
}

/// The parent directory and leaf of an entry's path.
fn parent_and_leaf<'e>(root: &OwnedFd, entry: &'e Entry) -> Option<(OwnedFd, &'e str)> {
    let (dir, leaf) = match entry.path.rsplit_once('/') {
        Some((dir, leaf)) => (dir, leaf),
        None => ("", entry.path.as_str()),
    };
    Some((dir_at(root, dir)?, leaf))
}

/// Undoes whatever of `record` was done, in reverse: every base is back under its name,
/// every new file and temporary name gone, every directory made removed (while empty).
/// `true` when that end state was reached for every path.
pub(super) fn roll_back(root: &OwnedFd, record: &Record) -> bool {
    let dev = record.dev;
    let mut settled = true;
    for entry in record.entries.iter().rev() {
        let home = dir_at(root, &entry.home);
        let target = parent_and_leaf(root, entry);
        match entry.kind {
            Kind::Replace => {
                let (Some(home), Some((dir, leaf))) = (home, target) else {
                    continue;
                };
                if is(&home, &entry.temp, dev, entry.base) && is(&dir, leaf, dev, entry.new) {
                    // Exchanged: exchange back.
                    let _ = rustix::fs::renameat_with(
                        &home,
                        entry.temp.as_str(),
                        &dir,
                        leaf,
                        RenameFlags::EXCHANGE,
                    );
                    let _ = rustix::fs::fsync(&dir);
                }
                if is(&home, &entry.temp, dev, entry.new) {
                    let _ = rustix::fs::unlinkat(&home, entry.temp.as_str(), AtFlags::empty());
                    let _ = rustix::fs::fsync(&home);
                }
                settled &= !holds_any(Some(&home), &entry.temp, dev, [entry.new, entry.base])
                    && !is(&dir, leaf, dev, entry.new);
            }
            Kind::Create => {
                if let Some((dir, leaf)) = target
                    && is(&dir, leaf, dev, entry.new)
                {
                    let _ = rustix::fs::unlinkat(&dir, leaf, AtFlags::empty());
                    let _ = rustix::fs::fsync(&dir);
                }
                if let Some(home) = &home
                    && is(home, &entry.temp, dev, entry.new)
                {
                    let _ = rustix::fs::unlinkat(home, entry.temp.as_str(), AtFlags::empty());
                    let _ = rustix::fs::fsync(home);
                }
                settled &= !holds_any(home.as_ref(), &entry.temp, dev, [entry.new, None])
                    && !parent_and_leaf(root, entry)
                        .is_some_and(|(dir, leaf)| is(&dir, leaf, dev, entry.new));
            }
            Kind::Delete => {
                let Some((dir, leaf)) = target else {
                    continue;
                };
                if is(&dir, &entry.temp, dev, entry.base) && absent(&dir, leaf) {
                    let _ = rustix::fs::renameat_with(
                        &dir,
                        entry.temp.as_str(),
                        &dir,
                        leaf,
                        RenameFlags::NOREPLACE,
                    );
                    let _ = rustix::fs::fsync(&dir);
                }
                settled &= !holds_any(Some(&dir), &entry.temp, dev, [entry.base, None]);
            }
        }
    }
    for made in record.made.iter().rev() {
        let (parent, name) = match made.rsplit_once('/') {
            Some((parent, name)) => (parent, name),
            None => ("", made.as_str()),
        };
        if let Some(parent) = dir_at(root, parent)
            && rustix::fs::unlinkat(&parent, name, AtFlags::REMOVEDIR).is_ok()
        {
            let _ = rustix::fs::fsync(&parent);
        }
    }
    settled
}

/// Finishes a committed `record`: removes the displaced bases (a replace's, under its
/// temporary name; a delete's, renamed aside), then syncs each directory it removed from
/// once. `true` when none is left.
pub(super) fn roll_forward(root: &OwnedFd, record: &Record) -> bool {
    let mut settled = true;
    let mut changed: Vec<OwnedFd> = Vec::new();
    for entry in &record.entries {
        let (dir, name) = match entry.kind {
            Kind::Replace => (dir_at(root, &entry.home), entry.temp.as_str()),
            Kind::Delete => (
                parent_and_leaf(root, entry).map(|(d, _)| d),
                entry.temp.as_str(),
            ),
            Kind::Create => continue,
        };
        if let Some(dir) = &dir
            && is(dir, name, record.dev, entry.base)
        {
            let _ = rustix::fs::unlinkat(dir, name, AtFlags::empty());
        }
        settled &= !holds_any(dir.as_ref(), name, record.dev, [entry.base, None]);
        if let Some(dir) = dir
            && !changed.iter().any(|d| super::same_dir(d, &dir))
        {
            changed.push(dir);
        }
    }
    // Not synced, a removal could come back after a power loss: the record stays for the
    // next recovery, which finds the removal done and syncs again.
    for dir in &changed {
        settled &= rustix::fs::fsync(dir).is_ok();
    }
    settled
}
