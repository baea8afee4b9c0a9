//! Serializes satyrn's worktree administration in one repository.
//!
//! `git worktree add` creates `<common dir>/worktrees/<name>/` and only then writes its
//! files; a concurrent `git worktree list`, `add`, `remove` or `prune` in the same repository
//! that reads the half-made entry fails (`fatal: failed to read …/commondir`). Two
//! `deliver`s on one repository would therefore fail each other now and then. Every
//! `deliver` step that lists, adds, removes or prunes worktrees holds this lock: an
//! exclusive `flock` on the descriptor of the repository's common git directory. Nothing
//! is created for it, and the kernel releases it when the process exits, however it exits.
//! It is held for a few git calls at a time, never while the command runs, and it does not
//! order `deliver` against a user's own concurrent `git worktree` commands.

use std::time::Duration;

use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags};
use satyrn_os::lock::{Waited, wait_exclusive};

use super::error::LockError;
use satyrn_git::Git;
use satyrn_os::signals;

/// How long [`AdminLock::acquire`] waits at most: 60 s.
pub const WAIT: Duration = Duration::from_secs(60);

/// A held lock; released on drop.
#[derive(Debug)]
pub struct AdminLock {
    _dir: OwnedFd,
}

impl AdminLock {
    /// Waits (up to [`WAIT`], and not past a signal recorded by [`signals`]) for the lock of
    /// the repository `repo` is in; `on_wait` is called once, with the common directory,
    /// when the lock is not free at the first try.
    ///
    /// # Errors
    ///
    /// Why it is not held: the common directory cannot be found or opened, `flock` is not
    /// supported, a signal arrived, or the wait ran out. Callers go on without it (the
    /// race it prevents is rare and ends in `GIT_FAILED`, never in a wrong result).
    pub fn acquire(repo: &Git, on_wait: impl FnOnce(&str)) -> Result<Self, LockError> {
        let dir = repo
            .line(&["rev-parse", "--path-format=absolute", "--git-common-dir"])
            .map_err(LockError::CommonDir)?;
        Self::acquire_in(dir, on_wait)
    }

    /// As [`AdminLock::acquire`], for the repository whose common directory is `dir`: no
    /// git runs.
    ///
    /// # Errors
    ///
    /// As [`AdminLock::acquire`], but for finding the directory.
    pub fn acquire_in(dir: String, on_wait: impl FnOnce(&str)) -> Result<Self, LockError> {
        let fd = rustix::fs::open(
            dir.as_str(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::empty(),
        )
        .map_err(|e| LockError::Open {
            dir: dir.clone(),
            source: e.into(),
        })?;
        let mut on_wait = Some(on_wait);
        let waited = wait_exclusive(&fd, WAIT, || {
            if let Some(tell) = on_wait.take() {
                tell(&dir);
            }
            signals::received().is_none()
        })
        .map_err(|source| LockError::Lock {
            dir: dir.clone(),
            source,
        })?;
        match waited {
            Waited::Locked => Ok(Self { _dir: fd }),
            Waited::Stopped => Err(LockError::Interrupted),
            Waited::TimedOut => Err(LockError::Busy {
                dir,
                seconds: WAIT.as_secs(),
            }),
        }
    }
}

/// [`AdminLock::acquire`], saying on stderr when it has to wait and when it failed (unless
/// a signal ended the wait), and going on without the lock.
#[must_use]
pub fn acquire_or_warn(repo: &Git) -> Option<AdminLock> {
    acquire_or_warn_with(|waiting| AdminLock::acquire(repo, waiting))
}

/// [`acquire_or_warn`] for the repository whose common directory is `common`: no git runs.
#[must_use]
pub fn acquire_or_warn_in(common: &std::path::Path) -> Option<AdminLock> {
    acquire_or_warn_with(|waiting| {
        AdminLock::acquire_in(common.to_string_lossy().into_owned(), waiting)
    })
}

fn acquire_or_warn_with(
    acquire: impl FnOnce(&dyn Fn(&str)) -> Result<AdminLock, LockError>,
) -> Option<AdminLock> {
    let waiting = |dir: &str| {
        use std::io::Write;
        // After a signal the wait ends at once (cleanup then goes on without the lock).
        if signals::received().is_some() {
            return;
        }
        let _ = writeln!(
            std::io::stderr(),
            "satyrn-host deliver: waiting for the worktree lock of {dir} (another deliver holds it; at most {} s)",
            WAIT.as_secs()
        );
    };
    match acquire(&waiting) {
        Ok(lock) => Some(lock),
        Err(LockError::Interrupted) => None,
        Err(_) if signals::received().is_some() => None,
        Err(e) => {
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "satyrn-host deliver: going on without the worktree lock: {e}"
            );
            None
        }
    }
}
