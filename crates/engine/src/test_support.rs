//! What the engine's unit tests share.

use std::os::fd::OwnedFd;

/// A temporary directory holding `files` (name, bytes), and a descriptor of it to preopen.
pub(crate) fn worktree(files: &[(&str, &[u8])]) -> (tempfile::TempDir, OwnedFd) {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, bytes) in files {
        std::fs::write(dir.path().join(name), bytes).expect("write");
    }
    let fd = OwnedFd::from(std::fs::File::open(dir.path()).expect("open"));
    (dir, fd)
}
