//! Serializes every `satyrn-host` process that edits one worktree.
//!
//! The lock is an exclusive `flock` on the worktree root directory, held from the
//! component's read to the publish's rename. It creates nothing inside the worktree, and the
//! kernel releases it when the process exits, however it exits.
//!
//! Waiting is bounded ([`LOCK_WAIT`]): a holder that never lets go (a call stuck in the
//! kernel, a process stopped by a debugger) turns into a named failure of the next caller
//! instead of a hang.
//!
//! Every acquisition opens the directory afresh (`openat(root, ".")`): an `flock` belongs to
//! an open file description, so locking the one descriptor a process shares between its
//! threads would let every thread "hold" it at once. A fresh description excludes threads
//! of one process (an MCP session's concurrent calls) exactly as it excludes processes.

use std::marker::PhantomData;
use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

use rustix::fs::{FlockOperation, Mode, OFlags, flock};

/// A held worktree lock; released on drop.
#[derive(Debug)]
pub struct WorktreeLock<'a> {
    dir: OwnedFd,
    root: PhantomData<&'a ()>,
}

/// The longest a caller waits for the worktree lock: 60 s (far longer than any bounded
/// operation holds it: the publish of the largest file takes seconds).
pub const LOCK_WAIT: Duration = Duration::from_secs(60);

impl<'a> WorktreeLock<'a> {
    /// Waits up to [`LOCK_WAIT`] for the exclusive lock on the worktree root `dir`.
    ///
    /// # Errors
    ///
    /// As [`WorktreeLock::acquire_within`].
    pub fn acquire(dir: &'a impl AsFd) -> std::io::Result<Self> {
        Self::acquire_within(dir, LOCK_WAIT)
    }

    /// Waits up to `wait` for the exclusive lock, retrying a non-blocking `flock` with a
    /// growing pause (from 1 ms up to 10 ms).
    ///
    /// # Errors
    ///
    /// [`std::io::ErrorKind::TimedOut`] when someone still holds the lock after `wait`;
    /// otherwise the `openat` or `flock` error (for example on a file system that does not
    /// support it).
    pub fn acquire_within(dir: &'a impl AsFd, wait: Duration) -> std::io::Result<Self> {
        let own = Self::open(dir)?;
        match wait_exclusive(&own, wait, || true)? {
            Waited::Locked => Ok(Self {
                dir: own,
                root: PhantomData,
            }),
            Waited::TimedOut | Waited::Stopped => Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "another satyrn call has held the worktree lock for more than {} s",
                    wait.as_secs_f64()
                ),
            )),
        }
    }

    /// Takes the lock if no one holds it; `None` when someone does.
    ///
    /// # Errors
    ///
    /// The `openat` or `flock` error.
    pub fn try_acquire(dir: &'a impl AsFd) -> std::io::Result<Option<Self>> {
        Self::lock(dir)
    }

    fn lock(dir: &'a impl AsFd) -> std::io::Result<Option<Self>> {
        let own = Self::open(dir)?;
        Ok(try_exclusive(&own)?.then_some(Self {
            dir: own,
            root: PhantomData,
        }))
    }

    /// A fresh open file description of the directory `dir`.
    fn open(dir: &'a impl AsFd) -> std::io::Result<OwnedFd> {
        Ok(rustix::fs::openat(
            dir,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?)
    }
}

/// How [`wait_exclusive`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// The lock is held.
    Locked,
    /// Someone still held it when the wait was over.
    TimedOut,
    /// `keep_waiting` said to stop.
    Stopped,
}

/// One non-blocking exclusive `flock` of `fd` (retried on `EINTR`): whether it was taken.
///
/// # Errors
///
/// The `flock` error other than `EWOULDBLOCK` (for example on a file system that does not
/// support it).
pub fn try_exclusive(fd: &impl AsFd) -> std::io::Result<bool> {
    loop {
        match flock(fd, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(true),
            Err(rustix::io::Errno::INTR) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => return Ok(false),
            Err(e) => return Err(e.into()),
        }
    }
}

/// The one bounded wait for an exclusive `flock` of `fd`: [`try_exclusive`], then after
/// every busy try `keep_waiting()` (false stops the wait) and a growing pause (from 1 ms up
/// to 10 ms), until the lock is taken or `wait` has passed. The lock belongs to `fd`'s
/// open file description and is released when it is closed.
///
/// # Errors
///
/// As [`try_exclusive`].
pub fn wait_exclusive(
    fd: &impl AsFd,
    wait: Duration,
    mut keep_waiting: impl FnMut() -> bool,
) -> std::io::Result<Waited> {
    let deadline = Instant::now() + wait;
    let mut pause = Duration::from_millis(1);
    loop {
        if try_exclusive(fd)? {
            return Ok(Waited::Locked);
        }
        if !keep_waiting() {
            return Ok(Waited::Stopped);
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(Waited::TimedOut);
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(10));
    }
}

impl Drop for WorktreeLock<'_> {
    fn drop(&mut self) {
        let _ = flock(&self.dir, FlockOperation::Unlock);
    }
}

#[cfg(test)]
mod tests {
    use super::WorktreeLock;

    #[test]
    fn the_lock_excludes_other_threads_of_the_process() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = std::fs::File::open(dir.path()).expect("open root");
        let held = WorktreeLock::acquire(&root).expect("lock");
        std::thread::scope(|scope| {
            let other = scope.spawn(|| WorktreeLock::try_acquire(&root).expect("try").is_some());
            assert!(
                !other.join().expect("thread"),
                "a second thread took a held lock"
            );
        });
        drop(held);
        assert!(WorktreeLock::try_acquire(&root).expect("try").is_some());
    }

    #[test]
    fn waiting_for_a_held_lock_ends_at_the_deadline() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = std::fs::File::open(dir.path()).expect("open root");
        let held = WorktreeLock::acquire(&root).expect("lock");
        let wait = std::time::Duration::from_millis(200);
        let refused = std::thread::scope(|scope| {
            scope
                .spawn(|| WorktreeLock::acquire_within(&root, wait).map(drop))
                .join()
                .expect("thread")
        });
        let e = refused.expect_err("the lock is held");
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
        assert!(e.to_string().contains("held the worktree lock"), "{e}");
        // Released in time, the same wait succeeds.
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| WorktreeLock::acquire_within(&root, wait * 50).map(drop));
            drop(held);
            waiter
                .join()
                .expect("thread")
                .expect("acquired after the release");
        });
    }
}
