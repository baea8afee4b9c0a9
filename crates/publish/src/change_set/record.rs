//! The intent record of a change set: what its publish is about to do, written and synced
//! before the first name changes, and the mark that commits it.
//!
//! The records live in `satyrn-change-sets/` in the worktree's own git directory (the one
//! the temporaries' journal uses, [`super::super::journal`]), so no candidate can contain
//! one. A record is a JSON file `<pid>-<nonce>.intent` while its publish may still be
//! undone; renaming it to `<pid>-<nonce>.committed` (and syncing the directory) is the
//! change set's **linearization point**. Records are read only under the worktree lock,
//! which the publish holds throughout: any record found then is a killed publish's.

use std::io::Write;
use std::os::fd::OwnedFd;

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;
use serde::{Deserialize, Serialize};

use super::super::journal::FileId;

/// The directory of the records, inside the git directory.
pub const RECORDS_DIR: &str = "satyrn-change-sets";

const INTENT: &str = ".intent";
const COMMITTED: &str = ".committed";

/// The most bytes of a record read back (1,000 operations with 4 KiB paths fit), and the
/// most bytes one recovery reads in all.
pub(super) const RECORD_MAX: u64 = 64 << 20;

/// The most records one recovery examines (a killed publish leaves one; more were put there
/// by something else that can write the git directory).
pub(super) const MAX_EXAMINED: usize = 64;

/// The most directory entries one recovery lists.
const MAX_ENTRIES: usize = 4096;

/// What a publish does to one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Kind {
    /// The new content's file and the base exchange names.
    Replace,
    /// The new content's file is renamed to the path (which did not exist).
    Create,
    /// The base is renamed aside, then removed.
    Delete,
}

/// A file's identity as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Id {
    pub ino: u64,
    pub born: Option<(i64, u32)>,
}

impl From<FileId> for Id {
    fn from(id: FileId) -> Self {
        Self {
            ino: id.ino,
            born: id.born,
        }
    }
}

impl Id {
    pub(super) fn file_id(self) -> FileId {
        FileId {
            ino: self.ino,
            born: self.born,
        }
    }
}

/// One path of a change set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Entry {
    /// The worktree-relative path.
    pub path: String,
    pub kind: Kind,
    /// The worktree-relative directory holding `temp` (`""`: the root). For a create whose
    /// directories are made by the publish, the deepest one that existed.
    pub home: String,
    /// The temporary name in `home`: the new content (replace, create; after the exchange of
    /// a replace, the displaced base) or the base renamed aside (delete).
    pub temp: String,
    /// The new content's file (replace, create).
    pub new: Option<Id>,
    /// The base's file (replace, delete).
    pub base: Option<Id>,
}

/// A change set's intent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Record {
    /// The format's version: 1.
    pub version: u32,
    /// The device of every file named.
    pub dev: u64,
    /// The worktree root's identity: a record is settled only under the root it names.
    pub root: Id,
    /// The paths, in commit order.
    pub entries: Vec<Entry>,
    /// The directories the publish makes, worktree-relative, each after its parent.
    pub made: Vec<String>,
}

/// Where a record stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    /// Not committed: to roll back.
    Intent,
    /// Committed: to roll forward.
    Committed,
}

/// The records directory of one worktree.
pub(super) struct Records {
    dir: OwnedFd,
}

/// What a record file holds.
pub(super) enum Content {
    /// A whole record.
    Record(Record),
    /// A write cut short (no final line feed: the process died while writing it, before
    /// anything it names was done).
    Torn,
    /// Whole, but not a record this build writes, or it cannot be read: why.
    Unusable(String),
}

/// The records one recovery examines, and how many it left unexamined: a recovery's cost is
/// bounded ([`MAX_EXAMINED`] records, [`RECORD_MAX`] bytes, [`MAX_ENTRIES`] names listed)
/// whatever the directory holds.
pub(super) struct Listing {
    /// In id order.
    pub found: Vec<Found>,
    /// Records (or, past [`MAX_ENTRIES`], names) not examined.
    pub unexamined: usize,
}

/// Whether `id` has the shape this build writes: `<pid>-<ten hex digits>`.
fn own_shape(id: &str) -> bool {
    id.split_once('-').is_some_and(|(pid, nonce)| {
        !pid.is_empty()
            && pid.bytes().all(|b| b.is_ascii_digit())
            && nonce.len() == 10
            && nonce
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// One record on disk: its id (`<pid>-<nonce>`), state and content.
pub(super) struct Found {
    pub id: String,
    pub state: State,
    pub content: Content,
}

impl Records {
    /// The records directory of `git_dir`, made (mode 0700) when `make` and missing.
    /// `Ok(None)`: it does not exist (and is not to be made), or the name is taken by
    /// something that is not a directory (a file, a symlink: satyrn makes neither, so it
    /// holds no record of a publish). `Err`: it cannot be opened or made (for a publish, a
    /// name taken by anything else is this too: `ENOTDIR`).
    pub(super) fn open(git_dir: &OwnedFd, make: bool) -> std::io::Result<Option<Self>> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        match rustix::fs::openat(git_dir, RECORDS_DIR, flags, Mode::empty()) {
            Ok(dir) => return Ok(Some(Self { dir })),
            Err(Errno::NOENT) if make => {}
            Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) if !make => return Ok(None),
            Err(e) => return Err(e.into()),
        }
        match rustix::fs::mkdirat(git_dir, RECORDS_DIR, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(e.into()),
        }
        let _ = rustix::fs::fsync(git_dir);
        let dir = rustix::fs::openat(git_dir, RECORDS_DIR, flags, Mode::empty())?;
        Ok(Some(Self { dir }))
    }

    /// Writes `record` as a new intent and syncs it and the directory; returns its id. The
    /// JSON is compact (no raw line feed), then one line feed: a record without it was cut
    /// short. A record over [`RECORD_MAX`] bytes is refused (it could not be read back).
    pub(super) fn write_intent(&self, record: &Record) -> std::io::Result<String> {
        let mut body = serde_json::to_vec(record).map_err(std::io::Error::other)?;
        body.push(b'\n');
        if body.len() as u64 > RECORD_MAX {
            return Err(std::io::Error::other(format!(
                "the record would be {} bytes, over {RECORD_MAX}",
                body.len()
            )));
        }
        let pid = std::process::id();
        for attempt in 0u32..64 {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0);
            let id = format!("{pid}-{nanos:08x}{attempt:02x}");
            let file = match rustix::fs::openat(
                &self.dir,
                format!("{id}{INTENT}").as_str(),
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            ) {
                Ok(file) => file,
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(e.into()),
            };
            let written = super::super::write_all(&file, &body)
                .and_then(|()| rustix::fs::fsync(&file).map_err(Into::into))
                .and_then(|()| rustix::fs::fsync(&self.dir).map_err(Into::into));
            if let Err(e) = written {
                let _ = rustix::fs::unlinkat(
                    &self.dir,
                    format!("{id}{INTENT}").as_str(),
                    AtFlags::empty(),
                );
                return Err(e);
            }
            return Ok(id);
        }
        Err(std::io::Error::other("no free record name"))
    }

    /// Marks the intent `id` committed (a rename): the linearization point. `Err` when the
    /// rename failed (not committed); `Ok(false)` when it succeeded but syncing the directory
    /// failed (committed, but a power loss could still undo the mark: nothing may be removed
    /// until a later recovery syncs it); `Ok(true)` when the mark is durable.
    pub(super) fn commit(&self, id: &str) -> std::io::Result<bool> {
        rustix::fs::renameat(
            &self.dir,
            format!("{id}{INTENT}").as_str(),
            &self.dir,
            format!("{id}{COMMITTED}").as_str(),
        )?;
        Ok(rustix::fs::fsync(&self.dir).is_ok())
    }

    /// Syncs the records directory (a committed mark found at recovery is made durable
    /// before anything it names is removed).
    pub(super) fn sync(&self) -> bool {
        rustix::fs::fsync(&self.dir).is_ok()
    }

    /// Removes the record `id` in `state`.
    pub(super) fn remove(&self, id: &str, state: State) {
        let suffix = match state {
            State::Intent => INTENT,
            State::Committed => COMMITTED,
        };
        if let Err(e) = rustix::fs::unlinkat(
            &self.dir,
            format!("{id}{suffix}").as_str(),
            AtFlags::empty(),
        ) {
            let _ = writeln!(
                std::io::stderr(),
                "satyrn-host: removing the settled change-set record `{id}{suffix}` failed: {}",
                std::io::Error::from(e)
            );
        }
    }

    /// The records in the directory, in id order, within the bounds of a [`Listing`]: a
    /// record past them is counted, not read. `Err`: the directory cannot be listed.
    pub(super) fn found(&self) -> std::io::Result<Listing> {
        let entries = rustix::fs::Dir::read_from(&self.dir)?;
        let mut names = Vec::new();
        let mut unexamined = 0;
        for (listed, entry) in entries.enumerate() {
            if listed == MAX_ENTRIES {
                unexamined += 1;
                break;
            }
            let entry = entry?;
            let Ok(name) = entry.file_name().to_str() else {
                continue;
            };
            let (id, state) = if let Some(id) = name.strip_suffix(INTENT) {
                (id, State::Intent)
            } else if let Some(id) = name.strip_suffix(COMMITTED) {
                (id, State::Committed)
            } else {
                continue;
            };
            names.push((id.to_owned(), state, name.to_owned()));
        }
        // Names of the shape this build writes first: files of another shape, sorting before
        // a real record, cannot keep it from being examined.
        names.sort_by(|a, b| (!own_shape(&a.0), &a.0, &a.2).cmp(&(!own_shape(&b.0), &b.0, &b.2)));
        let mut found = Vec::new();
        let mut budget = RECORD_MAX;
        for (id, state, name) in names {
            if found.len() == MAX_EXAMINED {
                unexamined += 1;
                continue;
            }
            let Some(content) = self.read(&name, &mut budget) else {
                unexamined += 1;
                continue;
            };
            found.push(Found { id, state, content });
        }
        Ok(Listing { found, unexamined })
    }

    /// The record `name`, its bytes taken from `budget` (the size of the file opened, so a
    /// name swapped meanwhile cannot read more); `None` when it would overdraw it.
    fn read(&self, name: &str, budget: &mut u64) -> Option<Content> {
        let unusable = |why: &str, e: Errno| {
            Some(Content::Unusable(format!(
                "{why}: {}",
                std::io::Error::from(e)
            )))
        };
        let file = match rustix::fs::openat(
            &self.dir,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(file) => file,
            Err(e) => return unusable("it cannot be opened", e),
        };
        let stat = match rustix::fs::fstat(&file) {
            Ok(stat) => stat,
            Err(e) => return unusable("it cannot be inspected", e),
        };
        if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
            return Some(Content::Unusable("it is not a regular file".to_owned()));
        }
        let size = u64::try_from(stat.st_size).unwrap_or(0);
        if size > RECORD_MAX {
            return Some(Content::Unusable(format!(
                "it is {size} bytes, over {RECORD_MAX}"
            )));
        }
        *budget = budget.checked_sub(size)?;
        let mut buf = vec![0u8; usize::try_from(size).unwrap_or(0)];
        let mut at = 0;
        while at < buf.len() {
            match rustix::io::pread(&file, &mut buf[at..], at as u64) {
                Ok(0) => break,
                Ok(n) => at += n,
                Err(Errno::INTR) => {}
                Err(e) => return unusable("it cannot be read", e),
            }
        }
        let Some(body) = buf[..at].strip_suffix(b"\n") else {
            return Some(Content::Torn);
        };
        Some(match serde_json::from_slice::<Record>(body) {
            Ok(record) => Content::Record(record),
            Err(e) => Content::Unusable(format!("it is not a change-set record: {e}")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open_dir(path: &std::path::Path) -> OwnedFd {
        rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .expect("open")
    }

    /// A writer swapping every record's name between a 3-byte file and a 40 MiB one while
    /// recovery lists them cannot make one listing read more than its budget: the budget is
    /// charged by the size of the file opened, not of the name looked at before. Loops the
    /// race and counts.
    #[test]
    fn a_name_swapped_while_listed_never_overdraws_the_budget() {
        let tmp = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(tmp.path().join(RECORDS_DIR)).expect("mkdir");
        let records = Records::open(&open_dir(tmp.path()), false)
            .expect("open")
            .expect("there");
        let dir = tmp.path().join(RECORDS_DIR);
        for n in 0..MAX_EXAMINED {
            std::fs::write(dir.join(format!("{n}-00000000{n:02x}.intent")), "{}\n").expect("write");
            let big = std::fs::File::create(dir.join(format!("big-{n}"))).expect("create");
            big.set_len(40 << 20).expect("size");
        }
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let swapper = {
            let stop = std::sync::Arc::clone(&stop);
            let dir = open_dir(&dir);
            std::thread::spawn(move || {
                let mut swaps = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    for n in 0..MAX_EXAMINED {
                        let _ = rustix::fs::renameat_with(
                            &dir,
                            format!("{n}-00000000{n:02x}.intent").as_str(),
                            &dir,
                            format!("big-{n}").as_str(),
                            rustix::fs::RenameFlags::EXCHANGE,
                        );
                        swaps += 1;
                    }
                }
                swaps
            })
        };
        let (mut listings, mut most) = (0, 0);
        while listings < 80 {
            let listing = records.found().expect("list");
            let big = listing
                .found
                .iter()
                .filter(|f| matches!(f.content, Content::Torn))
                .count();
            most = most.max(big);
            listings += 1;
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let swaps = swapper.join().expect("swapper");
        eprintln!(
            "{listings} listings against {swaps} swaps: at most {most} big record(s) read in one"
        );
        assert!(swaps > 0);
        assert!(
            most <= 1,
            "one listing read {most} files of 40 MiB (budget 64 MiB)"
        );
    }
}
