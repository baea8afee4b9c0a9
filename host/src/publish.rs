//! The only writer: atomically replaces one file beneath the worktree root.
//!
//! [`publish`] reopens the target's directory one segment at a time with
//! `O_NOFOLLOW | O_DIRECTORY`, so no symlink anywhere on the path is followed; confirms the
//! target is still a single-link regular file whose bytes hash to the plan's base
//! revision; writes the new content to an exclusively created temporary in the same
//! directory with the target's permission bits; fsyncs it; renames it over the target
//! relative to the directory descriptor; and fsyncs the directory. Every failure after the
//! temporary exists removes it. The caller holds the worktree lock ([`crate::lock`])
//! throughout, so cooperating satyrn processes cannot interleave; a non-cooperating writer
//! that changes the file between the re-check and the rename is not detected (POSIX has no
//! compare-and-rename).

use std::fmt;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use satyrn_mutator_core::path;
use satyrn_mutator_core::revision::Revision;

use crate::code::{Code, Failure};

/// Why a publish did not happen. In every case the target is unchanged and no temporary
/// is left behind (unless removing it failed, which the message then says).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublishError {
    /// The target's bytes no longer hash to the plan's base revision (`REVISION_STALE`).
    Stale(String),
    /// Any operational failure (`MUTATION_FAILED`).
    Failed(String),
}

impl fmt::Display for PublishError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stale(m) | Self::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for PublishError {}

impl From<PublishError> for Failure {
    fn from(e: PublishError) -> Self {
        match e {
            PublishError::Stale(m) => Failure::new(Code::RevisionStale, m),
            PublishError::Failed(m) => Failure::new(Code::MutationFailed, m),
        }
    }
}

fn failed(path: &str, what: &str, e: impl Into<std::io::Error>) -> PublishError {
    PublishError::Failed(format!("publishing `{path}` failed: {what}: {}", e.into()))
}

/// Replaces the file at `path` (worktree-relative, `/`-separated) beneath `root` with
/// `content`, if and only if its current bytes hash to `base`.
///
/// The path is checked again here, with the component's own rules
/// ([`path::segments`], [`path::is_git_admin`]): the writer does not rely on the decision
/// code to hand it a safe path. `SIGINT`, `SIGTERM`, `SIGHUP` and `SIGQUIT` are held from
/// just before the temporary is created until it is renamed or removed, so a caller that
/// stops this process mid-publish cannot leave a temporary behind (a held signal takes
/// effect right after; only `SIGKILL` cannot be held, see `docs/architecture.md`).
///
/// The rename is the commit point: once it succeeded the edit is published, and a failure
/// to fsync the directory afterwards is reported on stderr, not as a refusal.
///
/// # Errors
///
/// [`PublishError::Stale`] when the target's bytes changed; [`PublishError::Failed`] when
/// the path is not a safe worktree-relative path, a segment is a symlink or not a
/// directory, the target is not a single-link regular file, or any read, write, sync or
/// rename before the commit point fails. The target is then unchanged.
pub fn publish(
    root: &OwnedFd,
    path: &str,
    base: &Revision,
    content: &[u8],
) -> Result<(), PublishError> {
    let segments = path::segments(path)
        .map_err(|e| PublishError::Failed(format!("refusing to publish `{path}`: {e}")))?;
    if path::is_git_admin(&segments) {
        return Err(PublishError::Failed(format!(
            "refusing to publish `{path}`: it is inside `.git`"
        )));
    }
    let Some((leaf, dirs)) = segments.split_last() else {
        return Err(PublishError::Failed("empty path".to_string()));
    };
    let dir = open_parent(root, dirs, path)?;
    let (mode, uid, gid) = check_target(&dir, leaf, base, path)?;
    let held = HeldSignals::hold();
    let temp = Temporary::create(&dir, leaf, path)?;
    let result = (|| {
        rustix::fs::fchmod(&temp.file, mode).map_err(|e| failed(path, "setting the mode", e))?;
        // Keep the owner when we may (as root); otherwise the file is ours, as any editor's.
        if rustix::process::geteuid().is_root() {
            let _ = rustix::fs::fchown(&temp.file, Some(uid), Some(gid));
            rustix::fs::fchmod(&temp.file, mode)
                .map_err(|e| failed(path, "setting the mode", e))?;
        }
        write_all(&temp.file, content).map_err(|e| failed(path, "writing the temporary", e))?;
        rustix::fs::fsync(&temp.file).map_err(|e| failed(path, "syncing the temporary", e))?;
        rustix::fs::renameat(&dir, &temp.name, &dir, *leaf)
            .map_err(|e| failed(path, "renaming the temporary over the target", e))
    })();
    let outcome = match result {
        Ok(()) => {
            temp.disarm();
            if let Err(e) = rustix::fs::fsync(&dir) {
                let _ = writeln!(
                    std::io::stderr(),
                    "satyrn-host: `{path}` was published, but syncing its directory failed: {e}"
                );
            }
            Ok(())
        }
        Err(e) => Err(temp.remove_after(e)),
    };
    drop(held);
    outcome
}

/// The temporary's name pattern: `.<name>.satyrn-<pid>-<nonce>.tmp`.
#[must_use]
pub fn is_temporary_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".tmp")) else {
        return false;
    };
    let Some((_, tail)) = rest.rsplit_once(".satyrn-") else {
        return false;
    };
    let Some((pid, nonce)) = tail.split_once('-') else {
        return false;
    };
    !pid.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit())
        && !nonce.is_empty()
        && nonce.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The termination signals a publish holds.
const HELD: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// The held signals that arrived, one bit per signal number.
static ARRIVED: AtomicU64 = AtomicU64::new(0);

/// One hold at a time in a process: the dispositions are process-wide, so two threads
/// publishing at once must not save and restore each other's handlers.
static HOLD: Mutex<()> = Mutex::new(());

extern "C" fn record_arrival(signal: libc::c_int) {
    if let Ok(bit) = u32::try_from(signal) {
        ARRIVED.fetch_or(1u64 << (bit % 64), Ordering::SeqCst);
    }
}

/// Termination signals held for the whole process until dropped: while held, their
/// disposition is a handler that only records arrivals (a signal mask would not do: it is
/// per thread, and a process-directed signal goes to any thread not blocking it). On drop
/// the previous dispositions come back and every recorded signal is raised again, so the
/// process ends as it would have (or ignores what it ignored), only after the publish is
/// complete.
struct HeldSignals {
    previous: Vec<(libc::c_int, libc::sigaction)>,
    _one_at_a_time: MutexGuard<'static, ()>,
}

impl HeldSignals {
    fn hold() -> Self {
        let guard = HOLD
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        ARRIVED.store(0, Ordering::SeqCst);
        let mut previous = Vec::with_capacity(HELD.len());
        for signal in HELD {
            // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value; the
            // handler only updates an atomic, which is async-signal-safe.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction =
                    record_arrival as extern "C" fn(libc::c_int) as libc::sighandler_t;
                action.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&raw mut action.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, &raw const action, &raw mut old) == 0 {
                    previous.push((signal, old));
                }
            }
        }
        Self {
            previous,
            _one_at_a_time: guard,
        }
    }
}

impl Drop for HeldSignals {
    fn drop(&mut self) {
        for (signal, old) in &self.previous {
            // SAFETY: restores the disposition saved by `hold`.
            unsafe {
                libc::sigaction(*signal, old, std::ptr::null_mut());
            }
        }
        let arrived = ARRIVED.swap(0, Ordering::SeqCst);
        for signal in HELD {
            if u32::try_from(signal).is_ok_and(|bit| arrived & (1u64 << (bit % 64)) != 0) {
                // SAFETY: raise(3) with a signal number we held.
                unsafe {
                    libc::raise(signal);
                }
            }
        }
    }
}

fn open_parent(root: &OwnedFd, dirs: &[&str], path: &str) -> Result<OwnedFd, PublishError> {
    let mut dir = rustix::io::fcntl_dupfd_cloexec(root, 0)
        .map_err(|e| failed(path, "duplicating the worktree descriptor", e))?;
    for segment in dirs {
        dir = rustix::fs::openat(
            &dir,
            *segment,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            Errno::LOOP | Errno::NOTDIR => PublishError::Failed(format!(
                "publishing `{path}` failed: `{segment}` is not a directory (symbolic links are never followed)"
            )),
            e => failed(path, &format!("opening directory `{segment}`"), e),
        })?;
    }
    Ok(dir)
}

/// Confirms the target is a single-link regular file hashing to `base`; returns its
/// permission bits and owner.
fn check_target(
    dir: &OwnedFd,
    leaf: &str,
    base: &Revision,
    path: &str,
) -> Result<(Mode, rustix::fs::Uid, rustix::fs::Gid), PublishError> {
    // O_NONBLOCK: opening a FIFO that was swapped in must not hang.
    let file = rustix::fs::openat(
        dir,
        leaf,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY,
        Mode::empty(),
    )
    .map_err(|e| match e {
        Errno::LOOP => {
            PublishError::Failed(format!("publishing `{path}` failed: it is a symbolic link"))
        }
        e => failed(path, "opening the target", e),
    })?;
    let stat = rustix::fs::fstat(&file).map_err(|e| failed(path, "inspecting the target", e))?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(PublishError::Failed(format!(
            "publishing `{path}` failed: it is no longer a regular file"
        )));
    }
    if stat.st_nlink != 1 {
        return Err(PublishError::Failed(format!(
            "publishing `{path}` failed: it has {} hard links",
            stat.st_nlink
        )));
    }
    let current = hash_file(file).map_err(|e| failed(path, "reading the target", e))?;
    if &current != base {
        return Err(PublishError::Stale(format!(
            "`{path}` changed while the edit was decided: expected revision {base}, it is now {current}; read it again"
        )));
    }
    Ok((
        // The permission bits and the sticky bit; never set-user-ID or set-group-ID, which
        // any ordinary write to the file would have cleared too.
        Mode::from_raw_mode(stat.st_mode & 0o1777),
        rustix::fs::Uid::from_raw(stat.st_uid),
        rustix::fs::Gid::from_raw(stat.st_gid),
    ))
}

fn hash_file(file: OwnedFd) -> std::io::Result<Revision> {
    use sha2::{Digest, Sha256};
    let mut file = std::fs::File::from(file);
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
    }
    Ok(Revision::from_digest(hasher.finalize().into()))
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

/// The most bytes of the target's name used in its temporary's name: with the 34 bytes
/// around it (`.`, `.satyrn-`, a pid of up to 10 digits, `-`, 10 hex digits, `.tmp`),
/// the temporary's name stays well under `NAME_MAX` (255).
const TEMP_STEM_MAX: usize = 200;

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
fn truncate_at_char_boundary(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// An exclusively created temporary beside the target; removed on drop unless disarmed.
struct Temporary<'a> {
    dir: &'a OwnedFd,
    name: String,
    file: OwnedFd,
    armed: bool,
}

impl<'a> Temporary<'a> {
    fn create(dir: &'a OwnedFd, leaf: &str, path: &str) -> Result<Self, PublishError> {
        let pid = std::process::id();
        // A leaf may be up to NAME_MAX (255) bytes; the temporary's name adds up to 34
        // bytes around it, so only a prefix of a long leaf is used (on a character
        // boundary), or creating the temporary of a valid file would fail.
        let stem = truncate_at_char_boundary(leaf, TEMP_STEM_MAX);
        for attempt in 0u32..64 {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0);
            let name = format!(".{stem}.satyrn-{pid}-{nanos:08x}{attempt:02x}.tmp");
            match rustix::fs::openat(
                dir,
                name.as_str(),
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            ) {
                Ok(file) => {
                    return Ok(Self {
                        dir,
                        name,
                        file,
                        armed: true,
                    });
                }
                Err(Errno::EXIST) => {}
                Err(e) => return Err(failed(path, "creating the temporary", e)),
            }
        }
        Err(PublishError::Failed(format!(
            "publishing `{path}` failed: no free temporary name"
        )))
    }

    fn disarm(mut self) {
        self.armed = false;
    }

    /// Removes the temporary and returns `error`, extended if the removal failed.
    fn remove_after(mut self, error: PublishError) -> PublishError {
        self.armed = false;
        match rustix::fs::unlinkat(self.dir, self.name.as_str(), AtFlags::empty()) {
            Ok(()) => error,
            Err(e) => PublishError::Failed(format!(
                "{error}; the temporary {} could not be removed: {}",
                self.name,
                std::io::Error::from(e)
            )),
        }
    }
}

impl Drop for Temporary<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = rustix::fs::unlinkat(self.dir, self.name.as_str(), AtFlags::empty());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{is_temporary_name, truncate_at_char_boundary};

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
            assert!(
                matches!(err, super::PublishError::Failed(_)),
                "{path}: {err:?}"
            );
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
