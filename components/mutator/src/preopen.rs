//! [`Worktree`] over the single read-only directory the host preopened.
//!
//! The walk opens one segment at a time with no symlink-follow flag and checks each
//! entry's type with a no-follow `stat-at` first, so a symlink is refused at every
//! position, not only at the leaf (wasmtime's no-follow `open-at` would follow an
//! intermediate symlink that stays inside the preopen).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use satyrn_mutator_core::tree::{DirEntry, Entries, EntryKind, Tree};
use satyrn_mutator_core::worktree::{NotEditable, Worktree};
use wasip2::filesystem::preopens::get_directories;
use wasip2::filesystem::types::{
    Descriptor, DescriptorFlags, DescriptorStat, DescriptorType, ErrorCode, OpenFlags, PathFlags,
};

/// Bytes read per `read` call.
const CHUNK: u64 = 1 << 20;

/// The worktree root: the one directory the host preopened.
pub struct Preopen {
    root: Descriptor,
}

impl Preopen {
    /// The single preopened directory.
    ///
    /// # Errors
    ///
    /// When the host preopened no directory or more than one: a host that hands the
    /// component more than the worktree breaks its confinement, so the component refuses
    /// to work at all.
    pub fn single() -> Result<Self, NotEditable> {
        let mut dirs = get_directories();
        match (dirs.pop(), dirs.is_empty()) {
            (Some((root, _)), true) => Ok(Self { root }),
            (None, _) => Err(NotEditable(String::from(
                "the host preopened no directory; it must preopen exactly the worktree",
            ))),
            (Some(_), false) => Err(NotEditable(format!(
                "the host preopened {} directories; it must preopen exactly one, the worktree",
                dirs.len() + 1
            ))),
        }
    }
}

impl Worktree for Preopen {
    fn read_regular(&self, segments: &[&str], max_len: u64) -> Result<Vec<u8>, NotEditable> {
        let Some((leaf, dirs)) = segments.split_last() else {
            return Err(NotEditable(String::from("the path is empty")));
        };
        let mut current: Option<Descriptor> = None;
        for (depth, segment) in dirs.iter().enumerate() {
            let shown = segments[..=depth].join("/");
            let parent = current.as_ref().unwrap_or(&self.root);
            current = Some(open_subdir(parent, segment, &shown)?);
        }
        let parent = current.as_ref().unwrap_or(&self.root);
        read_opened(parent, leaf, &segments.join("/"), max_len)
    }
}

/// A directory of the walk: the root preopen, or one opened beneath it.
pub enum Dir {
    /// The preopened worktree root.
    Root,
    /// A directory opened (no-follow) beneath it.
    Sub(Descriptor),
}

impl Preopen {
    fn descriptor<'a>(&'a self, dir: &'a Dir) -> &'a Descriptor {
        match dir {
            Dir::Root => &self.root,
            Dir::Sub(d) => d,
        }
    }
}

impl Tree for Preopen {
    type Dir = Dir;

    fn root(&self) -> Result<Dir, NotEditable> {
        Ok(Dir::Root)
    }

    fn open_dir(&self, dir: &Dir, name: &str, shown: &str) -> Result<Dir, NotEditable> {
        let parent = self.descriptor(dir);
        open_subdir(parent, name, shown).map(Dir::Sub)
    }

    fn entries(&self, dir: &Dir, shown: &str) -> Result<Entries, NotEditable> {
        let parent = self.descriptor(dir);
        let stream = parent
            .read_directory()
            .map_err(|e| io_error(shown_or_root(shown), e))?;
        let mut out = Entries::default();
        loop {
            match stream.read_directory_entry() {
                Ok(Some(entry)) => out.entries.push(DirEntry {
                    kind: kind_of(entry.type_),
                    name: entry.name,
                }),
                Ok(None) => return Ok(out),
                Err(ErrorCode::IllegalByteSequence) => out.unnamed = out.unnamed.saturating_add(1),
                Err(e) => return Err(io_error(shown_or_root(shown), e)),
            }
        }
    }

    fn stat(
        &self,
        dir: &Dir,
        name: &str,
        shown: &str,
    ) -> Result<Option<(EntryKind, u64)>, NotEditable> {
        match self.descriptor(dir).stat_at(PathFlags::empty(), name) {
            Ok(stat) => Ok(Some((kind_of(stat.type_), stat.size))),
            Err(ErrorCode::NoEntry) => Ok(None),
            Err(e) => Err(io_error(shown, e)),
        }
    }

    fn read_file(
        &self,
        dir: &Dir,
        name: &str,
        shown: &str,
        max_len: u64,
    ) -> Result<Vec<u8>, NotEditable> {
        read_opened(self.descriptor(dir), name, shown, max_len)
    }
}

/// Reads the single-link regular file `leaf` in `parent` with few calls, for every reader
/// (`read`, the writers' gates, `search`, the revision map): a no-follow `lstat` and its
/// checks first, so a FIFO, socket or device is refused without ever being opened (in any
/// WASI host, whose `open-at` may block on a FIFO); then a no-follow open, the same checks
/// on what was opened, and a read up to the size it had. Whatever was opened is what is
/// checked and read; only an entry swapped in between the `lstat` and the open is opened
/// before it is refused (satyrn's host opens without blocking).
///
/// A file renamed over after the open is read as it was (it has no link left, which is no
/// alias): that is the bytes the name held a moment ago, exactly as if the rename had come
/// just after the read, and the host's publish step, which re-reads the name under the
/// worktree lock, answers `REVISION_STALE` for it.
fn read_opened(
    parent: &Descriptor,
    leaf: &str,
    shown: &str,
    max_len: u64,
) -> Result<Vec<u8>, NotEditable> {
    check_regular(&lstat(parent, leaf, shown)?, shown, max_len)?;
    let file = open_leaf(parent, leaf, shown)?;
    let opened = file.stat().map_err(|e| io_error(shown, e))?;
    check_regular(&opened, shown, max_len)?;
    read_all(&file, opened.size, shown)
}

/// Opens the directory `name` in `parent`: `lstat` first (a symlink or anything but a
/// directory is refused, never followed), then a no-follow `open-at` of a directory.
fn open_subdir(parent: &Descriptor, name: &str, shown: &str) -> Result<Descriptor, NotEditable> {
    let stat = lstat(parent, name, shown)?;
    match stat.type_ {
        DescriptorType::Directory => {}
        DescriptorType::SymbolicLink => return Err(symlink(shown)),
        _ => return Err(NotEditable(format!("`{shown}` is not a directory"))),
    }
    parent
        .open_at(
            PathFlags::empty(),
            name,
            OpenFlags::DIRECTORY,
            DescriptorFlags::READ,
        )
        .map_err(|e| io_error(shown, e))
}

/// Opens `leaf` in `parent` for reading without following a symlink (the flags every read
/// of a file uses).
fn open_leaf(parent: &Descriptor, leaf: &str, shown: &str) -> Result<Descriptor, NotEditable> {
    parent
        .open_at(
            PathFlags::empty(),
            leaf,
            OpenFlags::empty(),
            DescriptorFlags::READ,
        )
        .map_err(|e| io_error(shown, e))
}

fn shown_or_root(shown: &str) -> &str {
    if shown.is_empty() { "." } else { shown }
}

fn kind_of(t: DescriptorType) -> EntryKind {
    match t {
        DescriptorType::RegularFile => EntryKind::File,
        DescriptorType::Directory => EntryKind::Directory,
        DescriptorType::SymbolicLink => EntryKind::Symlink,
        _ => EntryKind::Other,
    }
}

fn lstat(parent: &Descriptor, name: &str, shown: &str) -> Result<DescriptorStat, NotEditable> {
    parent
        .stat_at(PathFlags::empty(), name)
        .map_err(|e| io_error(shown, e))
}

fn check_regular(stat: &DescriptorStat, shown: &str, max_len: u64) -> Result<(), NotEditable> {
    match stat.type_ {
        DescriptorType::RegularFile => {}
        DescriptorType::SymbolicLink => return Err(symlink(shown)),
        DescriptorType::Directory => return Err(NotEditable(format!("`{shown}` is a directory"))),
        other => {
            return Err(NotEditable(format!(
                "`{shown}` is not a regular file ({})",
                type_name(other)
            )));
        }
    }
    if stat.link_count > 1 {
        return Err(NotEditable(format!(
            "`{shown}` has {} hard links; a hard-linked file aliases another path, so it is never edited",
            stat.link_count
        )));
    }
    if stat.size > max_len {
        return Err(NotEditable(format!(
            "`{shown}` is {} bytes, over the {max_len}-byte limit",
            stat.size
        )));
    }
    Ok(())
}

/// Reads `file` from the start up to `size` bytes (its size when it was opened; at most
/// `max_len`, which the caller checked), asking for exactly what is left in chunks of at
/// most [`CHUNK`], so a small file costs one call and the host allocates no more than it
/// returns. A file that shrank meanwhile ends at its end; one that grew is read as far as it
/// was: either way the publish step re-reads the name before it replaces anything.
fn read_all(file: &Descriptor, size: u64, shown: &str) -> Result<Vec<u8>, NotEditable> {
    let mut content = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    while (content.len() as u64) < size {
        let offset = content.len() as u64;
        let (chunk, eof) = file
            .read(CHUNK.min(size - offset), offset)
            .map_err(|e| io_error(shown, e))?;
        content.extend_from_slice(&chunk);
        if eof || chunk.is_empty() {
            break;
        }
    }
    Ok(content)
}

fn symlink(shown: &str) -> NotEditable {
    NotEditable(format!(
        "`{shown}` is a symbolic link; satyrn never follows symbolic links"
    ))
}

fn io_error(shown: &str, e: ErrorCode) -> NotEditable {
    let why = match e {
        ErrorCode::NoEntry => String::from("does not exist"),
        ErrorCode::Loop => String::from("is a symbolic link; satyrn never follows symbolic links"),
        ErrorCode::NotPermitted | ErrorCode::Access => {
            String::from("is not accessible from the worktree")
        }
        ErrorCode::NotDirectory => String::from("is not beneath a directory"),
        ErrorCode::IsDirectory => String::from("is a directory"),
        other => format!("cannot be read: {}", other.message().trim_end_matches('.')),
    };
    NotEditable(format!("`{shown}` {why}"))
}

fn type_name(t: DescriptorType) -> &'static str {
    match t {
        DescriptorType::BlockDevice => "block device",
        DescriptorType::CharacterDevice => "character device",
        DescriptorType::Fifo => "FIFO",
        DescriptorType::Socket => "socket",
        DescriptorType::Directory => "directory",
        DescriptorType::SymbolicLink => "symbolic link",
        DescriptorType::RegularFile => "regular file",
        // wasmtime reports a FIFO (and other special files) as `unknown`.
        DescriptorType::Unknown => "a FIFO, socket or other special file",
    }
}
