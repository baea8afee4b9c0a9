//! The write operation: a whole file's new content — a new file, or an existing file
//! overwritten at the revision the caller saw.
//!
//! `expected_sha256: None` means **create**: the path must not exist (any kind, a symlink
//! included: [`RefusalCode::TargetExists`]); missing parent directories beneath the root
//! are fine (the publisher creates them one segment at a time, never following a symlink),
//! but a parent that is a symlink or not a directory is refused. A revision means
//! **overwrite**: the gates of `replace` (single-link regular file reached without
//! symlinks, revision equal). The content is at most [`MAX_TEXT_FILE_BYTES`].

use alloc::format;
use alloc::string::{String, ToString};

use crate::gates::{MAX_TEXT_FILE_BYTES, Plan, Refusal, RefusalCode, declared_gates, seen_file};
use crate::replace::ReplaceError;
use crate::revision::Revision;
use crate::tree::{EntryKind, Tree};
use crate::worktree::{NotEditable, Worktree};

/// One write, as received.
#[derive(Debug, Clone, Copy)]
pub struct WriteRequest<'a> {
    /// Worktree-relative path (see [`crate::path::segments`]).
    pub path: &'a str,
    /// The contract's `writable_paths` patterns.
    pub writable_paths: &'a [String],
    /// The contract's `private_paths` patterns (private wins over writable).
    pub private_paths: &'a [String],
    /// `None`: create a new file. Otherwise the revision the caller saw of the file it
    /// overwrites.
    pub expected_sha256: Option<&'a str>,
    /// The whole new content.
    pub content: &'a str,
}

/// What the host must publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WritePlan {
    /// Create the file: it must still not exist when published (a no-replace commit).
    Create {
        /// The request's path.
        path: String,
        /// The content.
        content: String,
        /// Its revision.
        next: Revision,
    },
    /// Replace the file's content, as for `replace`.
    Overwrite(Plan),
}

fn refuse(code: RefusalCode, message: String) -> ReplaceError {
    ReplaceError::Refused(Refusal::new(code, message))
}

/// Decides one write, in this order: request shape (path, revision spelling, content
/// size); not inside `.git`, not private, declared writable; then for a create, that
/// nothing exists at the path and every existing parent is a directory reached without a
/// symlink; for an overwrite, the gates of [`crate::replace::decide`] up to the revision.
///
/// # Errors
///
/// [`ReplaceError::InvalidRequest`] or the first refusal.
pub fn decide<W: Worktree + Tree + ?Sized>(
    worktree: &W,
    request: &WriteRequest<'_>,
) -> Result<WritePlan, ReplaceError> {
    let path = request.path;
    let (segments, expected) = crate::gates::request_shape(path, request.expected_sha256)
        .map_err(ReplaceError::InvalidRequest)?;
    if request.content.len() as u64 > MAX_TEXT_FILE_BYTES {
        return Err(ReplaceError::InvalidRequest(format!(
            "content: {} bytes; at most {MAX_TEXT_FILE_BYTES} bytes are allowed",
            request.content.len()
        )));
    }
    let next = Revision::of(request.content.as_bytes());
    let Some(expected) = expected else {
        declared_gates(
            path,
            &segments,
            request.writable_paths,
            request.private_paths,
        )
        .map_err(ReplaceError::Refused)?;
        probe_absent(worktree, &segments, path)?;
        return Ok(WritePlan::Create {
            path: path.to_string(),
            content: request.content.to_string(),
            next,
        });
    };
    let base = seen_file(
        worktree,
        path,
        &segments,
        (request.writable_paths, request.private_paths),
        Some(expected),
    )
    .map_err(ReplaceError::Refused)?;
    Ok(WritePlan::Overwrite(Plan {
        path: path.to_string(),
        base,
        new_content: request.content.as_bytes().to_vec(),
        next,
    }))
}

/// Confirms nothing exists at `segments` and every parent that exists is a directory
/// reached without a symlink.
fn probe_absent<T: Tree + ?Sized>(
    tree: &T,
    segments: &[&str],
    path: &str,
) -> Result<(), ReplaceError> {
    let failed = |e: NotEditable| refuse(RefusalCode::MutationFailed, e.0);
    let mut dir = tree.root().map_err(failed)?;
    for (depth, segment) in segments.iter().enumerate() {
        let shown = segments[..=depth].join("/");
        let leaf = depth + 1 == segments.len();
        match tree.stat(&dir, segment, &shown).map_err(failed)? {
            None => return Ok(()),
            Some((kind, _)) if leaf => {
                return Err(refuse(
                    RefusalCode::TargetExists,
                    format!(
                        "`{path}` already exists ({}); to overwrite a file, read it and pass its revision as expected_sha256",
                        kind_name(kind)
                    ),
                ));
            }
            Some((EntryKind::Directory, _)) => {
                dir = tree.open_dir(&dir, segment, &shown).map_err(failed)?;
            }
            Some((EntryKind::Symlink, _)) => {
                return Err(failed(NotEditable(format!(
                    "`{shown}` is a symbolic link; satyrn never follows symbolic links"
                ))));
            }
            Some(_) => {
                return Err(failed(NotEditable(format!("`{shown}` is not a directory"))));
            }
        }
    }
    Ok(())
}

fn kind_name(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::File => "a file",
        EntryKind::Directory => "a directory",
        EntryKind::Symlink => "a symbolic link",
        EntryKind::Other => "a special file",
    }
}
