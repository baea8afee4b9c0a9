//! The delete operation: removes one regular file the caller saw.
//!
//! The gates of `replace` up to the revision, with the revision required: not inside
//! `.git`, not private, declared writable, a revision given, a single-link regular file of
//! at most [`crate::gates::MAX_TEXT_FILE_BYTES`] reached without symlinks (never a directory, never a
//! symlink: refused, not followed), its bytes hashing to the revision.

use alloc::string::{String, ToString};

use crate::gates::seen_file;
use crate::replace::ReplaceError;
use crate::revision::Revision;
use crate::worktree::Worktree;

/// One delete, as received.
#[derive(Debug, Clone, Copy)]
pub struct DeleteRequest<'a> {
    /// Worktree-relative path (see [`crate::path::segments`]).
    pub path: &'a str,
    /// The contract's `writable_paths` patterns.
    pub writable_paths: &'a [String],
    /// The contract's `private_paths` patterns (private wins over writable).
    pub private_paths: &'a [String],
    /// The revision the caller saw; `None` is [`crate::gates::RefusalCode::RevisionUnavailable`].
    pub expected_sha256: Option<&'a str>,
}

/// What the host must do: remove `path` if it still hashes to `base`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletePlan {
    /// The request's path.
    pub path: String,
    /// The revision the decision was made on; the publisher re-checks it.
    pub base: Revision,
}

/// Decides one delete.
///
/// # Errors
///
/// [`ReplaceError::InvalidRequest`] or the first refusal.
pub fn decide<W: Worktree + ?Sized>(
    worktree: &W,
    request: &DeleteRequest<'_>,
) -> Result<DeletePlan, ReplaceError> {
    let path = request.path;
    let (segments, expected) = crate::gates::request_shape(path, request.expected_sha256)
        .map_err(ReplaceError::InvalidRequest)?;
    let base = seen_file(
        worktree,
        path,
        &segments,
        (request.writable_paths, request.private_paths),
        expected,
    )
    .map_err(ReplaceError::Refused)?;
    Ok(DeletePlan {
        path: path.to_string(),
        base,
    })
}
