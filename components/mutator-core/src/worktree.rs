//! The file-system capability the decision needs: read one regular file without
//! following any symlink.

use alloc::string::String;
use alloc::vec::Vec;

/// Read access to the worktree the decision is about.
///
/// Implementations must walk the segments one at a time from the worktree root and must
/// refuse, rather than follow, a symlink at any segment (leaf or intermediate). The wasm
/// component implements this over its single read-only WASI preopen; tests implement it
/// over `std::fs`.
pub trait Worktree {
    /// Reads the whole content of the regular file at `segments` (already shape-checked
    /// by [`crate::path::segments`]).
    ///
    /// # Errors
    ///
    /// [`NotEditable`] with a human-readable reason when the target is missing, is not a
    /// regular file, is reached through a symlink, has more than one hard link, is larger
    /// than `max_len` bytes, or cannot be read.
    fn read_regular(&self, segments: &[&str], max_len: u64) -> Result<Vec<u8>, NotEditable>;
}

/// Why a target cannot be edited; the message is shown to the caller as is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotEditable(pub String);
