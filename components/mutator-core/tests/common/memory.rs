//! An in-memory worktree for the native tests: files by path, `None` standing for something
//! that is not a regular file (a symlink, a directory).
#![allow(dead_code)]

use satyrn_mutator_core::worktree::{NotEditable, Worktree};
use std::collections::BTreeMap;

/// Files by path.
pub struct Memory(pub BTreeMap<String, Option<Vec<u8>>>);

impl Worktree for Memory {
    fn read_regular(&self, segments: &[&str], max_len: u64) -> Result<Vec<u8>, NotEditable> {
        match self.0.get(&segments.join("/")) {
            Some(Some(bytes)) if bytes.len() as u64 <= max_len => Ok(bytes.clone()),
            Some(Some(_)) => Err(NotEditable("is too large".into())),
            Some(None) => Err(NotEditable("is a symbolic link, not a regular file".into())),
            None => Err(NotEditable("does not exist".into())),
        }
    }
}

/// A worktree with one file.
pub fn one(path: &str, bytes: &[u8]) -> Memory {
    Memory(BTreeMap::from([(path.to_string(), Some(bytes.to_vec()))]))
}
