//! The proof that a file named like a publish temporary is one satyrn made, and that the
//! publish that made it is gone — the only ground on which the sweep removes anything.
//!
//! A name alone proves nothing: repository content can look like anything, a committed
//! `src/.id_rsa.satyrn-999999999-0.tmp` included. So before a writer gives a temporary a
//! name (or renames a target aside under one), it records that name in the worktree's
//! **journal**: one entry file, created exclusively and held under an exclusive `flock`
//! for as long as the name may exist, holding the name's worktree-relative path and the
//! device and inode numbers of the files that may be under it (the new content, and the
//! displaced or deleted target). The entry is removed once the name is gone. A `SIGKILL`
//! leaves the entry behind, and the kernel releases its lock.
//!
//! [`Journal::sweep`] removes a file only when all of these hold: an entry names it, by a
//! temporary's name (`.<name>.satyrn-<pid>-<nonce>.tmp`: a forged entry can name nothing
//! else); the entry's lock can be taken (so its writer is gone: a lock held is a live publish); the
//! path's directories are reached without following a symbolic link; and what is there is
//! a regular file with one link whose device and inode the entry recorded. Then the entry
//! itself is removed. Nothing else is ever removed: a tracked file, a file the agent made,
//! or a private file named like a temporary has no entry, and a checkout or rename gives a
//! file a new inode or keeps the old one elsewhere.
//!
//! The journal is the directory `satyrn-temporaries` in the worktree's own git directory:
//! `.git/` of a main worktree, or the administrative directory a linked worktree's `.git`
//! file names (`gitdir: <abs>`, which must hold `commondir`). It lives with the worktree,
//! whatever the environment of the process that publishes (`TMPDIR` differs between
//! `deliver`, `attempt` and Pi), outside the worktree's content, and goes away with a
//! linked worktree's registration. A root without such a git directory has no journal: its
//! temporaries are then never swept (one a `SIGKILL` left stays, visible, until removed by
//! hand); publishing works the same.

use std::io::Write;
use std::os::fd::OwnedFd;

use rustix::fs::{AtFlags, FileType, FlockOperation, Mode, OFlags};
use rustix::io::Errno;
use satyrn_mutator_core::path;

/// The journal directory's name inside the git directory.
pub const JOURNAL_DIR: &str = "satyrn-temporaries";

/// The first line of every entry.
const MAGIC: &str = "satyrn-temporary 1";

/// The inode field of an entry whose name is about to be created exclusively.
const PENDING: &str = "-";

/// The most bytes of a `.git` file read.
const GIT_FILE_MAX: usize = 4096;

/// The most bytes of an entry read.
const ENTRY_MAX: usize = 8192;

/// A file's identity as recorded: its inode number and, where the file system keeps one,
/// its birth time, so a recycled inode number is not taken for the recorded file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileId {
    /// The inode number.
    pub ino: u64,
    /// The birth time (seconds, nanoseconds), when known.
    pub born: Option<(i64, u32)>,
}

impl FileId {
    /// The device and identity of `fd` (`statx`), or of `name` in `fd` when given (never
    /// following a symbolic link).
    pub(super) fn of(fd: &impl rustix::fd::AsFd, name: Option<&str>) -> Option<(u64, Self)> {
        use rustix::fs::{StatxFlags, statx};
        let (path, flags) = match name {
            Some(n) => (n, AtFlags::SYMLINK_NOFOLLOW),
            None => ("", AtFlags::EMPTY_PATH),
        };
        let st = statx(fd, path, flags, StatxFlags::BASIC_STATS | StatxFlags::BTIME).ok()?;
        let dev = rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor);
        let born = (st.stx_mask & StatxFlags::BTIME.bits() != 0)
            .then_some((st.stx_btime.tv_sec, st.stx_btime.tv_nsec));
        Some((
            dev,
            Self {
                ino: st.stx_ino,
                born,
            },
        ))
    }

    fn render(self) -> String {
        match self.born {
            Some((s, n)) => format!("{}@{s}.{n}", self.ino),
            None => self.ino.to_string(),
        }
    }

    fn parse(text: &str) -> Option<Self> {
        let (ino, born) = match text.split_once('@') {
            Some((ino, born)) => {
                let (s, n) = born.split_once('.')?;
                (ino, Some((s.parse().ok()?, n.parse().ok()?)))
            }
            None => (text, None),
        };
        Some(Self {
            ino: ino.parse().ok()?,
            born,
        })
    }

    /// Whether `found` is this file: the same inode, born at the same time when both know.
    pub(super) fn matches(self, found: Self) -> bool {
        self.ino == found.ino
            && match (self.born, found.born) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    }
}

/// A worktree's journal: its git directory, where the journal directory is made by the
/// first record and then kept (empty between calls): making and removing a directory on
/// every publish cost two metadata updates of the git directory each time.
#[derive(Debug)]
pub(super) struct Journal {
    git_dir: OwnedFd,
}

/// One recorded name; the entry is removed on drop. Hold it until the name is gone.
#[derive(Debug)]
pub(super) struct Record<'a> {
    /// The journal it belongs to, which outlives it.
    _journal: &'a Journal,
    dir: OwnedFd,
    entry: String,
    /// Holds the entry's lock while the record lives.
    _held: OwnedFd,
    /// Tests only: leave the entry behind on drop, as a kill does.
    keep_entry: bool,
}

impl Record<'_> {
    /// Adds the inode of the name created exclusively since [`Journal::record`]; `false`
    /// when the entry could not be rewritten (it then still proves by birth time).
    pub(super) fn prove(&self, rel: &str, dev: u64, id: FileId) -> bool {
        self.write(rel, dev, &[id])
    }

    /// As a `SIGKILL` would leave it: the lock released, the entry kept. Returns once the
    /// lock can be taken: a child that another test thread forked while the lock's
    /// descriptor was open shares the lock until that child execs, and a sweep in between
    /// would rightly take it for a live publish.
    #[cfg(test)]
    pub(super) fn abandon(mut self) {
        self.keep_entry = true;
        let dir = rustix::io::fcntl_dupfd_cloexec(&self.dir, 0).expect("dup");
        let entry = self.entry.clone();
        drop(self);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let file = rustix::fs::openat(
                &dir,
                entry.as_str(),
                OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .expect("the abandoned entry stays");
            if rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive).is_ok() {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the abandoned entry {entry} stayed locked for 10 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// The entry kept and its lock held by the returned descriptor (a live writer).
    #[cfg(test)]
    pub(super) fn hand_over(mut self) -> OwnedFd {
        self.keep_entry = true;
        rustix::io::fcntl_dupfd_cloexec(&self._held, 0).expect("dup")
    }

    fn write(&self, rel: &str, dev: u64, ids: &[FileId]) -> bool {
        let inos: Vec<String> = ids.iter().map(|id| id.render()).collect();
        let inos = if inos.is_empty() {
            PENDING.to_owned()
        } else {
            inos.join(" ")
        };
        let body = format!("{MAGIC}\n{dev} {inos}\n{rel}\n");
        let mut written = body.as_bytes();
        let mut at = 0u64;
        while !written.is_empty() {
            match rustix::io::pwrite(&self._held, written, at) {
                Ok(0) => return false,
                Ok(n) => {
                    written = &written[n..];
                    at += n as u64;
                }
                Err(Errno::INTR) => {}
                Err(_) => return false,
            }
        }
        rustix::fs::ftruncate(&self._held, at).is_ok()
    }
}

impl Drop for Record<'_> {
    fn drop(&mut self) {
        if self.keep_entry {
            return;
        }
        let _ = rustix::fs::unlinkat(&self.dir, self.entry.as_str(), AtFlags::empty());
    }
}

impl Journal {
    /// The journal of the worktree `root`; `None` when the root has no git directory of its
    /// own that can hold one (see the module). Creates nothing: the journal directory
    /// (mode 0700) is made by the first [`Journal::record`].
    pub(super) fn open(root: &OwnedFd) -> Option<Self> {
        Some(Self {
            git_dir: git_dir_of(root)?,
        })
    }

    /// The journal of the worktree whose git directory is `git_dir` (already opened), for a
    /// caller that knows it without reading the worktree's `.git` (which its command may
    /// have rewritten to name another worktree's).
    pub(super) fn at(git_dir: OwnedFd) -> Self {
        Self { git_dir }
    }

    /// The journal directory, made if missing (opened first: it is kept between calls).
    fn made(&self) -> Option<OwnedFd> {
        if let Some(dir) = open_journal_dir(&self.git_dir) {
            return Some(dir);
        }
        match rustix::fs::mkdirat(&self.git_dir, JOURNAL_DIR, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(Errno::EXIST) => open_journal_dir(&self.git_dir),
            Err(_) => None,
        }
    }

    /// Records that the file at `rel` (worktree-relative) may hold one of the files `ids`
    /// on device `dev`, before that name is given. `None` when the entry cannot be written
    /// (the name then stays unproven: never swept). An empty `ids` records a name about
    /// to be created exclusively (`O_EXCL`), whose inode is not known yet: until
    /// [`Record::prove`] adds it, the sweep accepts only a file born after the entry.
    pub(super) fn record(&self, rel: &str, dev: u64, ids: &[FileId]) -> Option<Record<'_>> {
        let entry = entry_name(rel);
        let dir = self.made()?;
        let file = rustix::fs::openat(
            &dir,
            entry.as_str(),
            OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .ok()?;
        let record = Record {
            _journal: self,
            dir,
            entry,
            _held: file,
            keep_entry: false,
        };
        rustix::fs::flock(&record._held, FlockOperation::LockExclusive).ok()?;
        record.write(rel, dev, ids).then_some(record)
    }

    /// Removes, under `root`, every temporary whose entry proves it satyrn's and its
    /// writer gone (see the module), and those entries; each removal, and each failure to
    /// remove, is reported on stderr. Runs under the worktree lock; fails nothing.
    pub(super) fn sweep(&self, root: &OwnedFd) -> Vec<String> {
        let mut said = Vec::new();
        let Some(dir) = open_journal_dir(&self.git_dir) else {
            return said;
        };
        let Ok(entries) = rustix::fs::Dir::read_from(&dir) else {
            return said;
        };
        for entry in entries.flatten() {
            let Ok(name) = entry.file_name().to_str() else {
                continue;
            };
            if name == "." || name == ".." {
                continue;
            }
            if let Some(message) = settle(&dir, root, name) {
                let _ = writeln!(std::io::stderr(), "satyrn-host: {message}");
                said.push(message);
            }
        }
        said
    }
}

/// One entry: nothing when its writer is alive; otherwise removes the temporary it
/// proves, then the entry; what was done, if anything, as a sentence.
fn settle(dir: &OwnedFd, root: &OwnedFd, entry: &str) -> Option<String> {
    let file = rustix::fs::openat(
        dir,
        entry,
        OFlags::RDWR | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let stat = rustix::fs::fstat(&file).ok()?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return None;
    }
    if rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive).is_err() {
        return None; // a live publish holds it
    }
    let mut buf = vec![0u8; ENTRY_MAX];
    let n = rustix::io::pread(&file, &mut buf[..], 0).unwrap_or(0);
    let said = parse(&buf[..n]).and_then(|(dev, inos, rel)| {
        let proof = match inos {
            Some(ids) => Identity::Files(ids),
            None => Identity::BornAfter(birth(&file)?),
        };
        remove_proven(root, dev, &proof, rel)
    });
    let _ = rustix::fs::unlinkat(dir, entry, AtFlags::empty());
    said
}

/// The entry's name for the temporary at `rel`: its leaf's `<pid>-<nonce>` (unique among
/// live writers: a pid is one process, the nonce one name of it), else a hash of `rel`.
fn entry_name(rel: &str) -> String {
    let leaf = rel.rsplit('/').next().unwrap_or(rel);
    let tail = leaf
        .strip_suffix(".tmp")
        .and_then(|s| s.rsplit_once(".satyrn-"))
        .map(|(_, t)| t);
    match tail {
        Some(t) if t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') => {
            format!("{t}.entry")
        }
        _ => format!(
            "{}.entry",
            &satyrn_mutator_core::revision::Revision::of(rel.as_bytes()).to_hex()[..24]
        ),
    }
}

/// What the file under a recorded name must be.
enum Identity {
    /// One of these files.
    Files(Vec<FileId>),
    /// Created exclusively after the entry: born no earlier than this (seconds, nanos).
    BornAfter((i64, u32)),
}

/// The device, inodes (`None`: pending, see [`Journal::record`]) and path an entry records.
fn parse(bytes: &[u8]) -> Option<(u64, Option<Vec<FileId>>, &str)> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut lines = text.split('\n');
    if lines.next()? != MAGIC {
        return None;
    }
    let ids = lines.next()?;
    let mut ids = ids.split(' ');
    let dev = ids.next()?.parse().ok()?;
    let rest: Vec<&str> = ids.collect();
    let inos = if rest == [PENDING] {
        None
    } else {
        let inos = rest
            .iter()
            .map(|i| FileId::parse(i))
            .collect::<Option<Vec<FileId>>>()?;
        if inos.is_empty() {
            return None;
        }
        Some(inos)
    };
    let rel = lines.next()?;
    (lines.next() == Some("") && lines.next().is_none()).then_some((dev, inos, rel))
}

/// The birth time of `fd` (`statx`), when the file system records one.
fn birth(fd: &impl rustix::fd::AsFd) -> Option<(i64, u32)> {
    use rustix::fs::{StatxFlags, statx};
    let st = statx(fd, "", AtFlags::EMPTY_PATH, StatxFlags::BTIME).ok()?;
    (st.stx_mask & StatxFlags::BTIME.bits() != 0)
        .then_some((st.stx_btime.tv_sec, st.stx_btime.tv_nsec))
}

/// Removes the file at `rel` under `root` if it is a single-link regular file with device
/// `dev` and the recorded identity, reached without following a symbolic link.
fn remove_proven(root: &OwnedFd, dev: u64, identity: &Identity, rel: &str) -> Option<String> {
    let segments = path::segments(rel).ok()?;
    if path::is_git_admin(&segments) {
        return None;
    }
    let (leaf, dirs) = segments.split_last()?;
    // Only ever a temporary's name: an entry naming anything else is not satyrn's.
    if !super::is_temporary_name(leaf) {
        return None;
    }
    // The writers' own no-follow walk.
    let dir = super::open_parent(root, dirs, rel).ok()?;
    let stat = rustix::fs::statat(&dir, *leaf, AtFlags::SYMLINK_NOFOLLOW).ok()?;
    let identified = match identity {
        Identity::Files(ids) => {
            let (_, found) = FileId::of(&dir, Some(leaf))?;
            ids.iter().any(|id| id.matches(found))
        }
        Identity::BornAfter(entry_born) => {
            let file = rustix::fs::openat(
                &dir,
                *leaf,
                OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .ok()?;
            birth(&file).is_some_and(|born| born >= *entry_born)
        }
    };
    let proven = FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile
        && stat.st_nlink == 1
        && stat.st_dev == dev
        && identified;
    if !proven {
        return None;
    }
    Some(match rustix::fs::unlinkat(&dir, *leaf, AtFlags::empty()) {
        Ok(()) => format!("removed the publish temporary `{rel}` that a killed satyrn-host left"),
        Err(e) => format!(
            "cannot remove the publish temporary `{rel}` that a killed satyrn-host left: {}",
            std::io::Error::from(e)
        ),
    })
}

fn open_journal_dir(git_dir: &OwnedFd) -> Option<OwnedFd> {
    rustix::fs::openat(
        git_dir,
        JOURNAL_DIR,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()
}

/// The worktree's own git directory: `.git` when it is a directory, or the administrative
/// directory an absolute `gitdir:` line of a `.git` file names, if it holds `commondir`.
pub(super) fn git_dir_of(root: &OwnedFd) -> Option<OwnedFd> {
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::openat(root, ".git", dir_flags, Mode::empty()) {
        Ok(dir) => return Some(dir),
        Err(Errno::NOTDIR) => {}
        Err(_) => return None,
    }
    let file = rustix::fs::openat(
        root,
        ".git",
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let stat = rustix::fs::fstat(&file).ok()?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return None;
    }
    let mut buf = vec![0u8; GIT_FILE_MAX];
    let n = rustix::io::pread(&file, &mut buf[..], 0).ok()?;
    let text = std::str::from_utf8(&buf[..n]).ok()?;
    let target = text
        .strip_prefix("gitdir: ")?
        .trim_end_matches(['\n', '\r']);
    if !target.starts_with('/') || target.contains('\n') {
        return None;
    }
    let admin = rustix::fs::open(target, dir_flags, Mode::empty()).ok()?;
    rustix::fs::statat(&admin, "commondir", AtFlags::SYMLINK_NOFOLLOW).ok()?;
    Some(admin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_reads_back_and_nothing_else_parses() {
        let body = format!("{MAGIC}\n5 7 9@12.34\nsrc/.a.satyrn-1-ab.tmp\n");
        let ids = vec![
            FileId { ino: 7, born: None },
            FileId {
                ino: 9,
                born: Some((12, 34)),
            },
        ];
        assert_eq!(
            parse(body.as_bytes()),
            Some((5, Some(ids), "src/.a.satyrn-1-ab.tmp"))
        );
        let pending = format!("{MAGIC}\n5 -\na\n");
        assert_eq!(parse(pending.as_bytes()), Some((5, None, "a")));
        for bad in [
            "",
            "satyrn-temporary 2\n5 7\na\n",
            &format!("{MAGIC}\n5\na\n"),
            &format!("{MAGIC}\n5 x\na\n"),
            &format!("{MAGIC}\n5 7@1\na\n"),
            &format!("{MAGIC}\n5 7\na"),
            &format!("{MAGIC}\n5 7\na\nextra\n"),
        ] {
            assert_eq!(parse(bad.as_bytes()), None, "{bad:?}");
        }
    }

    #[test]
    fn entry_names_come_from_the_temporary_or_a_hash() {
        assert_eq!(
            entry_name("src/.a.satyrn-12-0badf00d01.tmp"),
            "12-0badf00d01.entry"
        );
        assert_eq!(entry_name("x").len(), 24 + ".entry".len());
        assert!(!entry_name("a/../b").contains('/'));
    }
}
