//! Serializes every `satyrn-host` process that edits one worktree.
//!
//! The lock is an exclusive `flock` on the worktree root's own directory descriptor, held
//! from the component's read to the publish's rename. It creates nothing inside the
//! worktree, and the kernel releases it when the process exits, however it exits.

use std::os::fd::AsFd;

use rustix::fs::{FlockOperation, flock};

/// A held worktree lock; released on drop.
#[derive(Debug)]
pub struct WorktreeLock<'a> {
    dir: rustix::fd::BorrowedFd<'a>,
}

impl<'a> WorktreeLock<'a> {
    /// Blocks until the exclusive lock on `dir` is held.
    ///
    /// # Errors
    ///
    /// The `flock` error (for example on a file system that does not support it).
    pub fn acquire(dir: &'a impl AsFd) -> std::io::Result<Self> {
        let dir = dir.as_fd();
        loop {
            match flock(dir, FlockOperation::LockExclusive) {
                Ok(()) => return Ok(Self { dir }),
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}

impl Drop for WorktreeLock<'_> {
    fn drop(&mut self) {
        let _ = flock(self.dir, FlockOperation::Unlock);
    }
}
