//! A worktree on the real file system for the native tests of the walking operations
//! (`list`, `search`, `write`): every segment is inspected with `symlink_metadata` before
//! it is used, so a symlink is refused at any position (a test-grade stand-in for the
//! component's descriptor walk, which runs the same decisions in `tests/it`).
#![allow(dead_code)]

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use satyrn_mutator_core::tree::{DirEntry, Entries, EntryKind, Tree};
use satyrn_mutator_core::worktree::{NotEditable, Worktree};

/// A worktree rooted at a real directory.
pub struct Disk(pub PathBuf);

fn kind(meta: &fs::Metadata) -> EntryKind {
    let t = meta.file_type();
    if t.is_symlink() {
        EntryKind::Symlink
    } else if t.is_dir() {
        EntryKind::Directory
    } else if t.is_file() {
        EntryKind::File
    } else {
        EntryKind::Other
    }
}

fn io(shown: &str, e: std::io::Error) -> NotEditable {
    NotEditable(format!("`{shown}` cannot be used: {e}"))
}

impl Tree for Disk {
    type Dir = PathBuf;

    fn root(&self) -> Result<PathBuf, NotEditable> {
        Ok(self.0.clone())
    }

    fn open_dir(&self, dir: &PathBuf, name: &str, shown: &str) -> Result<PathBuf, NotEditable> {
        let path = dir.join(name);
        let meta = fs::symlink_metadata(&path).map_err(|e| io(shown, e))?;
        match kind(&meta) {
            EntryKind::Directory => Ok(path),
            EntryKind::Symlink => Err(NotEditable(format!("`{shown}` is a symbolic link"))),
            _ => Err(NotEditable(format!("`{shown}` is not a directory"))),
        }
    }

    fn entries(&self, dir: &PathBuf, shown: &str) -> Result<Entries, NotEditable> {
        let mut out = Entries::default();
        for entry in fs::read_dir(dir).map_err(|e| io(shown, e))? {
            let entry = entry.map_err(|e| io(shown, e))?;
            let meta = entry.metadata().map_err(|e| io(shown, e))?;
            match entry.file_name().into_string() {
                Ok(name) => out.entries.push(DirEntry {
                    name,
                    kind: kind(&meta),
                }),
                Err(_) => out.unnamed += 1,
            }
        }
        Ok(out)
    }

    fn stat(
        &self,
        dir: &PathBuf,
        name: &str,
        shown: &str,
    ) -> Result<Option<(EntryKind, u64)>, NotEditable> {
        match fs::symlink_metadata(dir.join(name)) {
            Ok(meta) => Ok(Some((kind(&meta), meta.len()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(shown, e)),
        }
    }

    fn read_file(
        &self,
        dir: &PathBuf,
        name: &str,
        shown: &str,
        max_len: u64,
    ) -> Result<Vec<u8>, NotEditable> {
        let path = dir.join(name);
        let meta = fs::symlink_metadata(&path).map_err(|e| io(shown, e))?;
        if kind(&meta) != EntryKind::File || meta.nlink() != 1 || meta.len() > max_len {
            return Err(NotEditable(format!("`{shown}` is not an editable file")));
        }
        fs::read(&path).map_err(|e| io(shown, e))
    }
}

impl Worktree for Disk {
    fn read_regular(&self, segments: &[&str], max_len: u64) -> Result<Vec<u8>, NotEditable> {
        let (leaf, dirs) = segments
            .split_last()
            .ok_or_else(|| NotEditable("the path is empty".into()))?;
        let mut dir = self.0.clone();
        for (depth, segment) in dirs.iter().enumerate() {
            dir = self.open_dir(&dir, segment, &segments[..=depth].join("/"))?;
        }
        self.read_file(&dir, leaf, &segments.join("/"), max_len)
    }
}
