//! What the engine's unit tests share.

use std::os::fd::OwnedFd;

use crate::{Build, Loaded, Mutator, ReadRequest};

/// A temporary directory holding `files` (name, bytes), and a descriptor of it to preopen.
pub(crate) fn worktree(files: &[(&str, &[u8])]) -> (tempfile::TempDir, OwnedFd) {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, bytes) in files {
        std::fs::write(dir.path().join(name), bytes).expect("write");
    }
    let fd = OwnedFd::from(std::fs::File::open(dir.path()).expect("open"));
    (dir, fd)
}

/// A fresh instance of `build` over `worktree`.
pub(crate) fn instance(build: Build, worktree: &OwnedFd) -> Mutator {
    Loaded::of(build)
        .expect("load")
        .instantiate(worktree)
        .expect("instance")
}

/// A read of the first page of `path`, with every path writable and none private.
pub(crate) fn read(path: &str) -> ReadRequest {
    ReadRequest {
        path: path.into(),
        writable_paths: vec!["*".into()],
        private_paths: Vec::new(),
        offset: None,
        limit: None,
    }
}
