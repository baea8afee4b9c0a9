//! The only writer: atomically replaces ([`publish`]), creates ([`create`]) or deletes
//! ([`delete`]) one file beneath the worktree root.
//!
//! [`publish`] reopens the target's directory one segment at a time with
//! `O_NOFOLLOW | O_DIRECTORY`, so no symlink anywhere on the path is followed; removes the
//! temporaries the worktree's journal proves killed publishes left ([`journal`]); confirms the target is still a
//! single-link regular file whose bytes hash to the plan's base revision; writes the new
//! content to a temporary in the same directory — anonymous (`O_TMPFILE`) where the file
//! system allows, so nothing is visible until the commit — with the target's permission
//! bits; fsyncs it; names it; and commits it ([`commit`]: the target re-checked, the names
//! exchanged, the displaced file re-hashed and swapped back if a writer changed it), relative
//! to the directory descriptor; then fsyncs the directory. Every failure after the temporary
//! exists removes it. The caller holds the worktree lock ([`satyrn_os::lock`]) throughout, so
//! cooperating satyrn processes cannot interleave; a writer that does not take the lock can
//! still lose an update in a window of a few system calls (POSIX has no compare-and-rename;
//! see `docs/architecture.md`). [`create`] and [`delete`] reuse these pieces: the same
//! path re-check, no-follow walk, sweep, temporary, target check and held signals.

use std::io::Write;
use std::os::fd::OwnedFd;

use rustix::fs::{FileType, Mode, OFlags};
use rustix::io::Errno;
use satyrn_mutator_core::path;
use satyrn_mutator_core::revision::Revision;

use satyrn_code::{Code, Failure};

mod change_set;
mod commit;
mod create;
mod delete;
mod journal;
pub mod ledger;
mod temporary;
#[cfg(test)]
mod tests_create;
#[cfg(test)]
mod tests_delete;
#[cfg(test)]
mod tests_support;

pub use change_set::{
    Boundary, RECORDS_DIR, Recovered, SetChange, publish_set, recover, recover_with_git_dir,
};
pub use create::create;
pub use delete::delete;

use satyrn_os::signals::HeldSignals;
use temporary::Temporary;
pub use temporary::is_temporary_name;

/// Why a publish, create or delete did not happen. In every case the target is unchanged
/// and no temporary is left behind (unless removing it failed, which the message then
/// says); only the parent directories a [`create`] made may remain.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The target's bytes no longer hash to the plan's base revision (`REVISION_STALE`).
    #[error("{0}")]
    Stale(String),
    /// An operational failure decided here, e.g. a path of the wrong kind
    /// (`MUTATION_FAILED`).
    #[error("{0}")]
    Failed(String),
    /// An operating-system call failed (`MUTATION_FAILED`): on which path, doing what, and
    /// the error, kept as the source.
    #[error("`{path}`: {what} failed: {source}")]
    Io {
        /// The worktree-relative path being published.
        path: String,
        /// The step, e.g. "fsync of the temporary".
        what: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// [`create`] only: the path already exists, of any kind (`TARGET_EXISTS`).
    #[error("{0}")]
    Exists(String),
}

impl PublishError {
    /// Whether this is a `MUTATION_FAILED` ([`PublishError::Failed`] or
    /// [`PublishError::Io`]), and its message.
    #[must_use]
    pub fn failure_message(&self) -> Option<String> {
        match self {
            Self::Failed(_) | Self::Io { .. } => Some(self.to_string()),
            Self::Stale(_) | Self::Exists(_) => None,
        }
    }
}

impl From<PublishError> for Failure {
    fn from(e: PublishError) -> Self {
        let code = match e {
            PublishError::Stale(_) => Code::RevisionStale,
            PublishError::Failed(_) | PublishError::Io { .. } => Code::MutationFailed,
            PublishError::Exists(_) => Code::TargetExists,
        };
        Failure::new(code, e.to_string())
    }
}

fn failed(path: &str, what: &str, e: impl Into<std::io::Error>) -> PublishError {
    PublishError::Io {
        path: path.to_owned(),
        what: what.to_owned(),
        source: e.into(),
    }
}

/// Replaces the file at `path` (worktree-relative, `/`-separated) beneath `root` with
/// `content`, if and only if its current bytes hash to `base`. The caller must hold the
/// worktree lock ([`satyrn_os::lock::WorktreeLock`]).
///
/// The path is checked again here, with the component's own rules
/// ([`path::segments`], [`path::is_git_admin`]): the writer does not rely on the decision
/// code to hand it a safe path.
///
/// Process-global effects, from just before the temporary is created until it is renamed
/// or removed: `SIGINT`, `SIGTERM`, `SIGHUP` and `SIGQUIT` are held, so a caller that stops
/// this process mid-publish cannot leave a temporary behind (a held signal takes effect
/// right after); `SIGXFSZ` is ignored, so a file-size limit (`RLIMIT_FSIZE`) fails the
/// write (`EFBIG`) instead of killing the process. Only `SIGKILL` cannot be held: the
/// temporary is anonymous until the commit where the file system has `O_TMPFILE`, every
/// name it gets is recorded in the worktree's journal first, and every publish first
/// removes the temporaries the journal proves a killed publish left ([`sweep`], reported
/// on stderr). See `docs/architecture.md`.
///
/// The exchange of the names (or, without `RENAME_EXCHANGE`, the rename) is the commit
/// point: once it stood the re-check, the edit is published, and a failure to fsync the
/// directory afterwards is reported on stderr, not as a refusal.
///
/// # Errors
///
/// [`PublishError::Stale`] when the target's bytes changed, up to the commit (the names are
/// then swapped back), or the file opened as the target was renamed over or removed right
/// after the open (no link left); [`PublishError::Failed`] when
/// the path is not a safe worktree-relative path, a segment is a symlink or not a
/// directory, the target is not a single-link regular file, or any read, write, sync or
/// rename before the commit point fails (a file-size limit included). The target is then
/// unchanged.
pub fn publish(
    root: &OwnedFd,
    path: &str,
    base: &Revision,
    content: &[u8],
) -> Result<(), PublishError> {
    let segments = checked_segments(path, "publish")?;
    let Some((leaf, dirs)) = segments.split_last() else {
        return Err(PublishError::Failed("empty path".to_string()));
    };
    let dir = open_parent(root, dirs, path)?;
    let journal = swept(root);
    let target = check_target(&dir, leaf, base, path)?;
    let rel_dir = dirs.join("/");
    let proof = temporary::Proof {
        journal: journal.as_ref(),
        dir: &rel_dir,
        displaced: journal
            .as_ref()
            .and_then(|_| journal::FileId::of(&target.file, None))
            .map(|(_, id)| id),
    };
    let held = HeldSignals::hold();
    let outcome = write_and_commit(&dir, leaf, path, base, &target, content, proof);
    drop(held);
    outcome
}

/// Removes every publish temporary under the worktree `root` that the worktree's journal
/// proves a killed `satyrn-host` left ([`journal`]: never a file on its name alone), and
/// says each on stderr; returns what was said. The caller holds the worktree lock (or
/// knows no publish can be running). Fails nothing.
pub fn sweep(root: &OwnedFd) -> Vec<String> {
    journal::Journal::open(root).map_or_else(Vec::new, |j| j.sweep(root))
}

/// [`sweep`] with the worktree's git directory given (`deliver` knows its attempt's
/// registration): the worktree's `.git`, which the command may have rewritten, is not read.
/// Fails nothing; a `git_dir` that cannot be opened (no symlink followed) sweeps nothing.
pub fn sweep_with_git_dir(root: &OwnedFd, git_dir: &std::path::Path) -> Vec<String> {
    let flags = rustix::fs::OFlags::RDONLY
        | rustix::fs::OFlags::DIRECTORY
        | rustix::fs::OFlags::NOFOLLOW
        | rustix::fs::OFlags::CLOEXEC;
    match rustix::fs::open(git_dir, flags, rustix::fs::Mode::empty()) {
        Ok(dir) => journal::Journal::at(dir).sweep(root),
        Err(_) => Vec::new(),
    }
}

/// The worktree's journal, after its sweep.
fn swept(root: &OwnedFd) -> Option<journal::Journal> {
    let journal = journal::Journal::open(root)?;
    journal.sweep(root);
    Some(journal)
}

/// The segments of `path` once it passed the component's own rules again
/// ([`path::segments`], [`path::is_git_admin`]): the writers do not rely on the decision
/// code to hand them a safe path. `verb` names the refused action in the message.
fn checked_segments<'p>(path: &'p str, verb: &str) -> Result<Vec<&'p str>, PublishError> {
    let segments = path::segments(path)
        .map_err(|e| PublishError::Failed(format!("refusing to {verb} `{path}`: {e}")))?;
    if path::is_git_admin(&segments) {
        return Err(PublishError::Failed(format!(
            "refusing to {verb} `{path}`: it is inside `.git`"
        )));
    }
    Ok(segments)
}

/// Writes `content` to a new temporary and renames it over `leaf`; removes the temporary
/// on any failure before the commit point.
fn write_and_commit(
    dir: &OwnedFd,
    leaf: &str,
    path: &str,
    base: &Revision,
    target: &Target,
    content: &[u8],
    proof: temporary::Proof<'_>,
) -> Result<(), PublishError> {
    let mut temp = Temporary::create(dir, leaf, path, proof)?;
    let committed = match fill(path, target, &mut temp, content) {
        Ok(name) => commit::commit(dir, leaf, &name, path, base, target),
        Err(e) => commit::Committed::Undone(e),
    };
    match committed {
        commit::Committed::Published => {
            temp.disarm();
            sync_committed(dir, path, "published");
            Ok(())
        }
        commit::Committed::Undone(e) => Err(temp.remove_after(e)),
        commit::Committed::Stuck(e) => {
            temp.disarm();
            Err(e)
        }
    }
}

/// Syncs `dir` after a commit point; a failure is reported on stderr, not returned: the
/// file is already `done` ("published", "created", "deleted").
fn sync_committed(dir: &OwnedFd, path: &str, done: &str) {
    if let Err(e) = rustix::fs::fsync(dir) {
        let _ = writeln!(
            std::io::stderr(),
            "satyrn-host: `{path}` was {done}, but syncing its directory failed: {e}"
        );
    }
}

/// Gives the temporary the target's mode (and owner), writes and syncs `content`, then
/// names it; returns the name.
fn fill(
    path: &str,
    target: &Target,
    temp: &mut Temporary<'_>,
    content: &[u8],
) -> Result<String, PublishError> {
    rustix::fs::fchmod(&temp.file, target.mode).map_err(|e| failed(path, "setting the mode", e))?;
    // Keep the owner when we may (as root); otherwise the file is ours, as any editor's.
    if rustix::process::geteuid().is_root() {
        let _ = rustix::fs::fchown(&temp.file, Some(target.uid), Some(target.gid));
        rustix::fs::fchmod(&temp.file, target.mode)
            .map_err(|e| failed(path, "setting the mode", e))?;
    }
    write_all(&temp.file, content).map_err(|e| failed(path, "writing the temporary", e))?;
    rustix::fs::fsync(&temp.file).map_err(|e| failed(path, "syncing the temporary", e))?;
    let name = temp.name(path)?.to_owned();
    satyrn_os::fault::trigger("publish");
    Ok(name)
}

fn open_parent(root: &OwnedFd, dirs: &[&str], path: &str) -> Result<OwnedFd, PublishError> {
    let mut dir = dup_root(root, path)?;
    for segment in dirs {
        dir = open_segment(&dir, segment, path)?;
    }
    Ok(dir)
}

/// A descriptor of the worktree root of the caller's own, to walk down from.
fn dup_root(root: &OwnedFd, path: &str) -> Result<OwnedFd, PublishError> {
    rustix::io::fcntl_dupfd_cloexec(root, 0)
        .map_err(|e| failed(path, "duplicating the worktree descriptor", e))
}

/// Opens the directory `segment` in `dir`, refusing a symbolic link or a non-directory.
fn open_segment(dir: &OwnedFd, segment: &str, path: &str) -> Result<OwnedFd, PublishError> {
    rustix::fs::openat(
        dir,
        segment,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        Errno::LOOP | Errno::NOTDIR => PublishError::Failed(format!(
            "`{path}`: `{segment}` is not a directory (symbolic links are never followed)"
        )),
        e => failed(path, &format!("opening directory `{segment}`"), e),
    })
}

/// The target as checked: its descriptor (kept open, so its inode stays the one checked),
/// identity, permission bits and owner.
struct Target {
    file: OwnedFd,
    dev: u64,
    ino: u64,
    mode: Mode,
    uid: rustix::fs::Uid,
    gid: rustix::fs::Gid,
    /// Its size when it was checked (the buffer of its re-hash).
    size: u64,
}

/// Confirms the target is a single-link regular file hashing to `base`.
fn check_target(
    dir: &OwnedFd,
    leaf: &str,
    base: &Revision,
    path: &str,
) -> Result<Target, PublishError> {
    // O_NONBLOCK: opening a FIFO that was swapped in must not hang.
    let file = rustix::fs::openat(
        dir,
        leaf,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY,
        Mode::empty(),
    )
    .map_err(|e| match e {
        Errno::LOOP => {
            PublishError::Failed(format!("`{path}` is a symbolic link (never followed)"))
        }
        e => failed(path, "opening the target", e),
    })?;
    let stat = rustix::fs::fstat(&file).map_err(|e| failed(path, "inspecting the target", e))?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(PublishError::Failed(format!(
            "`{path}` is not a regular file"
        )));
    }
    if stat.st_nlink == 0 {
        // Opened, then renamed over or removed by a writer that does not take the lock.
        return Err(PublishError::Stale(format!(
            "`{path}` was replaced or removed meanwhile (by a writer that does not take satyrn's lock); read it again"
        )));
    }
    if stat.st_nlink != 1 {
        return Err(PublishError::Failed(format!(
            "`{path}` has {} hard links (never written or deleted through one)",
            stat.st_nlink
        )));
    }
    let current = hash_file(&file, u64::try_from(stat.st_size).unwrap_or(0))
        .map_err(|e| failed(path, "reading the target", e))?;
    if &current != base {
        return Err(PublishError::Stale(format!(
            "`{path}` changed since it was read: expected revision {base}, it is now {current}; read it again"
        )));
    }
    Ok(Target {
        file,
        dev: stat.st_dev,
        ino: stat.st_ino,
        // The permission bits and the sticky bit; never set-user-ID or set-group-ID, which
        // any ordinary write to the file would have cleared too.
        mode: Mode::from_raw_mode(stat.st_mode & 0o1777),
        uid: rustix::fs::Uid::from_raw(stat.st_uid),
        gid: rustix::fs::Gid::from_raw(stat.st_gid),
        size: u64::try_from(stat.st_size).unwrap_or(0),
    })
}

/// The SHA-256 revision of everything in `file`, read from its start (`pread`, so the
/// descriptor's offset does not matter). `size` (what `fstat` said) sizes the buffer: one
/// byte more than the file, up to 1 MiB, so a small file is one read into a small buffer
/// (no 1 MiB mapping made and unmapped per call); the read that comes back short is taken as
/// the end, as for every regular file.
fn hash_file(file: &OwnedFd, size: u64) -> std::io::Result<Revision> {
    let mut hasher = satyrn_mutator_core::revision::Hasher::new();
    let len = usize::try_from(size.saturating_add(1)).map_or(1 << 20, |n| n.clamp(4096, 1 << 20));
    let mut buf = vec![0u8; len];
    let mut offset = 0u64;
    loop {
        let n = match rustix::io::pread(file, &mut buf[..], offset) {
            Ok(0) => break,
            Ok(n) => n,
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        };
        hasher.update(&buf[..n]);
        offset += n as u64;
        if n < buf.len() {
            break;
        }
    }
    Ok(hasher.finish())
}

/// Starts writing `file`'s dirty pages out without waiting for them
/// (`sync_file_range(SYNC_FILE_RANGE_WRITE)`). Several files started this way before any of
/// them is fsynced have their blocks allocated in one journal transaction, so the first fsync
/// commits it and the others find it committed: one commit instead of one per file. A hint
/// only: durability still comes from each file's fsync, and a failure here is ignored (the
/// fsync reports it).
fn start_writeback(file: &OwnedFd) {
    use std::os::fd::AsRawFd;
    // SAFETY: `file` is an open descriptor for the duration of the call; the call reads no
    // memory of ours.
    let _ = unsafe { libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
}

fn write_all(file: &OwnedFd, mut content: &[u8]) -> std::io::Result<()> {
    while !content.is_empty() {
        match rustix::io::write(file, content) {
            Ok(0) => return Err(std::io::Error::from(std::io::ErrorKind::WriteZero)),
            Ok(n) => content = &content[n..],
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::is_temporary_name;
    use super::temporary::truncate_at_char_boundary;

    /// The writer re-checks the path itself: a plan naming `..`, an absolute path or `.git`
    /// is refused and nothing is written anywhere; the same call on a plain path publishes.
    #[test]
    fn refuses_unsafe_plan_paths_whatever_the_decision_said() {
        use satyrn_mutator_core::revision::Revision;
        let outer = tempfile::tempdir().expect("tempdir");
        let root_path = outer.path().join("root");
        std::fs::create_dir_all(root_path.join(".git")).expect("mkdir");
        std::fs::write(outer.path().join("outside.txt"), b"outside\n").expect("write");
        std::fs::write(root_path.join(".git/config"), b"outside\n").expect("write");
        std::fs::write(root_path.join("a.txt"), b"outside\n").expect("write");
        let root = rustix::fs::open(
            &root_path,
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY,
            rustix::fs::Mode::empty(),
        )
        .expect("open root");
        let base = Revision::of(b"outside\n");
        for path in [
            "../outside.txt",
            "/etc/hostname",
            ".git/config",
            "./a.txt",
            "a//b",
            "",
        ] {
            let err = super::publish(&root, path, &base, b"owned\n").expect_err(path);
            assert!(err.failure_message().is_some(), "{path}: {err:?}");
        }
        assert_eq!(
            std::fs::read(outer.path().join("outside.txt")).expect("read"),
            b"outside\n"
        );
        assert_eq!(
            std::fs::read(root_path.join(".git/config")).expect("read"),
            b"outside\n"
        );
        super::publish(&root, "a.txt", &base, b"inside\n").expect("a plain path publishes");
        assert_eq!(
            std::fs::read(root_path.join("a.txt")).expect("read"),
            b"inside\n"
        );
    }

    #[test]
    fn recognizes_only_its_own_temporaries() {
        assert!(is_temporary_name(".a.txt.satyrn-123-0badf00d01.tmp"));
        assert!(is_temporary_name(".x.satyrn-y.satyrn-9-ab.tmp"));
        for name in [
            "a.txt",
            ".a.txt.satyrn-.tmp",
            ".a.satyrn-12-zz.tmp",
            "a.satyrn-1-a.tmp",
            ".a.satyrn-1-a.tmpx",
        ] {
            assert!(!is_temporary_name(name), "{name}");
        }
    }

    #[test]
    fn truncates_on_character_boundaries() {
        assert_eq!(truncate_at_char_boundary("abc", 200), "abc");
        assert_eq!(truncate_at_char_boundary("abcdef", 3), "abc");
        // `é` is two bytes: never split it.
        assert_eq!(truncate_at_char_boundary("aéé", 2), "a");
        assert_eq!(truncate_at_char_boundary("aéé", 3), "aé");
        assert_eq!(truncate_at_char_boundary(&"é".repeat(125), 200).len(), 200);
        assert_eq!(truncate_at_char_boundary(&"€".repeat(85), 200).len(), 198);
    }
}
