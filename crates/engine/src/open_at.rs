//! The component's `descriptor.open-at`, implemented by the host so that an open never
//! blocks and never follows a symbolic link.
//!
//! wasmtime-wasi opens a file with plain `O_RDONLY`, which blocks until a writer appears
//! when the name is a FIFO: a FIFO swapped in between the component's type check and its
//! open would hold the call (and the worktree lock) forever. This implementation replaces
//! that one function in the linker and keeps every other `wasi:filesystem` function of
//! wasmtime-wasi:
//!
//! - the path is walked one segment at a time from the parent descriptor, each segment
//!   opened with `O_NOFOLLOW | O_NONBLOCK | O_NOCTTY` (and `O_DIRECTORY` before the last),
//!   so a symbolic link anywhere is `loop`, `..` and empty segments are `not-permitted`, and
//!   no open waits for anything;
//! - only read-only opens exist (the preopen is read-only): creating, truncating, writing
//!   or following symbolic links is `not-permitted`, as wasmtime-wasi answers them;
//! - the opened descriptor is `fstat`ed: a directory becomes a directory descriptor, anything
//!   else a file descriptor that stays non-blocking, so the component's own type check sees
//!   what was opened and refuses it, and a read of a FIFO or socket fails instead of
//!   waiting.

use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::{FileType, Mode, OFlags};
use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::{Descriptor, Dir, File};
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DescriptorFlags, ErrorCode, OpenFlags, PathFlags,
};
use wasmtime_wasi::{FsPerms, OpenMode};

use super::State;

/// The interface whose `open-at` is replaced, as wasmtime-wasi registers it.
const INTERFACE: &str = "wasi:filesystem/types@0.2.12";

/// Replaces wasmtime-wasi's `[method]descriptor.open-at` in `linker` (which must already
/// hold wasmtime-wasi's `wasi:filesystem/types`).
///
/// # Errors
///
/// wasmtime's error when the function cannot be defined.
pub(super) fn add_to_linker(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut types = linker.instance(INTERFACE)?;
    types.func_wrap(
        "[method]descriptor.open-at",
        |mut store: StoreContextMut<'_, State>,
         (parent, path_flags, path, open_flags, flags): (
            Resource<Descriptor>,
            PathFlags,
            String,
            OpenFlags,
            DescriptorFlags,
        )| {
            let state = store.data_mut();
            let opened =
                open_at(state, &parent, path_flags, &path, open_flags, flags).and_then(|d| {
                    state
                        .table
                        .push(d)
                        .map_err(|_| ErrorCode::InsufficientMemory)
                });
            Ok((opened,))
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

fn open_at(
    state: &State,
    parent: &Resource<Descriptor>,
    path_flags: PathFlags,
    path: &str,
    open_flags: OpenFlags,
    flags: DescriptorFlags,
) -> Result<Descriptor, ErrorCode> {
    let parent = match state.table.get(parent) {
        Ok(Descriptor::Dir(dir)) => dir,
        Ok(Descriptor::File(_)) => return Err(ErrorCode::NotDirectory),
        Err(_) => return Err(ErrorCode::BadDescriptor),
    };
    let writes = DescriptorFlags::WRITE | DescriptorFlags::MUTATE_DIRECTORY;
    let changes = OpenFlags::CREATE | OpenFlags::EXCLUSIVE | OpenFlags::TRUNCATE;
    if flags.intersects(writes)
        || open_flags.intersects(changes)
        || path_flags.contains(PathFlags::SYMLINK_FOLLOW)
    {
        return Err(ErrorCode::NotPermitted);
    }
    if flags.intersects(
        DescriptorFlags::FILE_INTEGRITY_SYNC
            | DescriptorFlags::DATA_INTEGRITY_SYNC
            | DescriptorFlags::REQUESTED_WRITE_SYNC,
    ) {
        return Err(ErrorCode::Unsupported);
    }
    let opened = walk(parent.dir.as_fd(), path)?;
    let stat = rustix::fs::fstat(&opened).map_err(errno)?;
    let is_dir = FileType::from_raw_mode(stat.st_mode) == FileType::Directory;
    if open_flags.contains(OpenFlags::DIRECTORY) && !is_dir {
        return Err(ErrorCode::NotDirectory);
    }
    let file = std::fs::File::from(opened);
    Ok(if is_dir {
        Descriptor::Dir(Dir::new(file, FsPerms::ReadOnly, OpenMode::READ, true))
    } else {
        Descriptor::File(File::new(file, FsPerms::ReadOnly, OpenMode::READ, true))
    })
}

/// Opens `path` beneath `dir`, one segment at a time, never following a symbolic link
/// and never blocking.
fn walk(dir: std::os::fd::BorrowedFd<'_>, path: &str) -> Result<OwnedFd, ErrorCode> {
    let segments: Vec<&str> = path.split('/').collect();
    let Some((leaf, dirs)) = segments.split_last() else {
        return Err(ErrorCode::NoEntry);
    };
    let base = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY;
    let base = base | OFlags::CLOEXEC;
    let mut current: Option<OwnedFd> = None;
    for segment in dirs {
        let next = open_segment(
            current.as_ref().map_or(dir, AsFd::as_fd),
            segment,
            base | OFlags::DIRECTORY,
        )?;
        current = Some(next);
    }
    open_segment(current.as_ref().map_or(dir, AsFd::as_fd), leaf, base)
}

fn open_segment(
    dir: std::os::fd::BorrowedFd<'_>,
    segment: &str,
    flags: OFlags,
) -> Result<OwnedFd, ErrorCode> {
    match segment {
        "" => Err(ErrorCode::NoEntry),
        ".." => Err(ErrorCode::NotPermitted),
        _ => loop {
            match rustix::fs::openat(dir, segment, flags, Mode::empty()) {
                Err(rustix::io::Errno::INTR) => {}
                other => return other.map_err(errno),
            }
        },
    }
}

/// The WASI code of an `open`/`fstat` failure (the same mapping wasmtime-wasi applies).
fn errno(e: rustix::io::Errno) -> ErrorCode {
    ErrorCode::from(std::io::Error::from(e))
}
