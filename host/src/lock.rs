//! Serializes every `satyrn-host` process that edits one worktree.
//!
//! The lock is an exclusive `flock` on the worktree root directory, held from the
//! component's read to the publish's rename. It creates nothing inside the worktree, and the
//! kernel releases it when the process exits, however it exits.
//!
//! Every acquisition opens the directory afresh (`openat(root, ".")`): an `flock` belongs to
//! an open file description, so locking the one descriptor a process shares between its
//! threads would let every thread "hold" it at once. A fresh description excludes threads
//! of one process (an MCP session's concurrent calls) exactly as it excludes processes.

use std::marker::PhantomData;
use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::{FlockOperation, Mode, OFlags, flock};

/// A held worktree lock; released on drop.
#[derive(Debug)]
pub struct WorktreeLock<'a> {
    dir: OwnedFd,
    root: PhantomData<&'a ()>,
}

impl<'a> WorktreeLock<'a> {
    /// Blocks until the exclusive lock on the worktree root `dir` is held.
    ///
    /// # Errors
    ///
    /// The `openat` or `flock` error (for example on a file system that does not support it).
    pub fn acquire(dir: &'a impl AsFd) -> std::io::Result<Self> {
        Self::lock(dir, FlockOperation::LockExclusive).map(|held| held.expect("a blocking lock"))
    }

    /// Takes the lock if no one holds it; `None` when someone does.
    ///
    /// # Errors
    ///
    /// As [`WorktreeLock::acquire`].
    pub fn try_acquire(dir: &'a impl AsFd) -> std::io::Result<Option<Self>> {
        Self::lock(dir, FlockOperation::NonBlockingLockExclusive)
    }

    fn lock(dir: &'a impl AsFd, operation: FlockOperation) -> std::io::Result<Option<Self>> {
        let own = rustix::fs::openat(
            dir,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        loop {
            match flock(&own, operation) {
                Ok(()) => {
                    return Ok(Some(Self {
                        dir: own,
                        root: PhantomData,
                    }));
                }
                Err(rustix::io::Errno::INTR) => {}
                Err(rustix::io::Errno::WOULDBLOCK) => return Ok(None),
                Err(e) => return Err(e.into()),
            }
        }
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
}
