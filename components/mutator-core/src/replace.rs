//! The replacement decision: every gate, in order, and the resulting plan.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

use crate::anchor::{self, Occurrences};
use crate::fnmatch;
use crate::path::{self, is_git_admin};
use crate::revision::{Hasher, Revision};
use crate::worktree::Worktree;

/// The largest file, in bytes, that `replace` reads: 256 MiB. Larger targets are
/// [`RefusalCode::MutationFailed`].
pub const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// One exact-text replacement, as received.
#[derive(Debug, Clone, Copy)]
pub struct ReplaceRequest<'a> {
    /// Worktree-relative path (see [`path::segments`]).
    pub path: &'a str,
    /// The contract's `writable_paths` patterns.
    pub writable_paths: &'a [String],
    /// The revision the caller saw, or `None` when it never read the file.
    pub expected_sha256: Option<&'a str>,
    /// The anchor; must be non-empty and occur exactly once.
    pub old_text: &'a str,
    /// The replacement, inserted literally.
    pub new_text: &'a str,
}

/// What the host must publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The request's path.
    pub path: String,
    /// The revision the decision was made on; the publisher re-checks it.
    pub base: Revision,
    /// The complete new content.
    pub new_content: Vec<u8>,
    /// The revision of `new_content`.
    pub next: Revision,
}

/// The policy refusals, in gate order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalCode {
    /// The path matches no `writable_paths` pattern.
    PathUndeclared,
    /// The path is declared, but no revision was given.
    RevisionUnavailable,
    /// The file's bytes are not the ones the caller saw.
    RevisionStale,
    /// The anchor does not occur.
    AnchorMissing,
    /// The anchor occurs more than once.
    AnchorAmbiguous,
    /// The target cannot be edited (see [`Worktree::read_regular`]) or is not UTF-8.
    MutationFailed,
}

impl RefusalCode {
    /// The protocol's spelling, e.g. `PATH_UNDECLARED`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PathUndeclared => "PATH_UNDECLARED",
            Self::RevisionUnavailable => "REVISION_UNAVAILABLE",
            Self::RevisionStale => "REVISION_STALE",
            Self::AnchorMissing => "ANCHOR_MISSING",
            Self::AnchorAmbiguous => "ANCHOR_AMBIGUOUS",
            Self::MutationFailed => "MUTATION_FAILED",
        }
    }
}

/// A refusal with its human-readable message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// Which gate refused.
    pub code: RefusalCode,
    /// Why, naming the path.
    pub message: String,
}

/// Why no plan was produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplaceError {
    /// The request is malformed; not a policy decision.
    InvalidRequest(String),
    /// A gate refused.
    Refused(Refusal),
}

impl fmt::Display for ReplaceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidRequest(m) => write!(f, "invalid request: {m}"),
            Self::Refused(r) => write!(f, "{}: {}", r.code.as_str(), r.message),
        }
    }
}

fn refuse(code: RefusalCode, message: String) -> ReplaceError {
    ReplaceError::Refused(Refusal { code, message })
}

/// The policy gates shared by `replace` and `edit`, in their order, after the request's
/// shape was checked: the path is not inside `.git` and matches a `writable_paths` pattern
/// (before any file-system access), a revision was given, and the target is a single-link
/// regular file of at most `max_len` bytes reached without any symlink. Returns the
/// expected revision and the file's bytes; the caller compares the revision next.
pub(crate) fn policy_gates<W: Worktree + ?Sized>(
    worktree: &W,
    path: &str,
    segments: &[&str],
    writable_paths: &[String],
    expected: Option<Revision>,
    max_len: u64,
) -> Result<(Revision, Vec<u8>), Refusal> {
    let refusal = |code, message| Refusal { code, message };
    if is_git_admin(segments) {
        return Err(refusal(
            RefusalCode::PathUndeclared,
            git_admin_message(path),
        ));
    }
    if !fnmatch::matches_any(path, writable_paths) {
        return Err(refusal(
            RefusalCode::PathUndeclared,
            format!("`{path}` is not declared writable by the contract"),
        ));
    }
    let Some(expected) = expected else {
        return Err(refusal(
            RefusalCode::RevisionUnavailable,
            format!("no revision is known for `{path}`: read the file before editing it"),
        ));
    };
    let bytes = worktree
        .read_regular(segments, max_len)
        .map_err(|e| refusal(RefusalCode::MutationFailed, e.0))?;
    Ok((expected, bytes))
}

/// Decides one replacement. The gates run in this order, and the first that fails
/// decides the result:
///
/// 1. request shape: path ([`path::segments`]), revision spelling, non-empty anchor —
///    [`ReplaceError::InvalidRequest`];
/// 2. the path matches a `writable_paths` pattern, before any file-system access —
///    [`RefusalCode::PathUndeclared`];
/// 3. a revision was given — [`RefusalCode::RevisionUnavailable`];
/// 4. the target is a single-link regular file reached without symlinks, at most
///    [`MAX_FILE_BYTES`] — [`RefusalCode::MutationFailed`];
/// 5. its SHA-256 equals the given revision — [`RefusalCode::RevisionStale`];
/// 6. its content is UTF-8 — [`RefusalCode::MutationFailed`];
/// 7. the anchor occurs exactly once as bytes — [`RefusalCode::AnchorMissing`] or
///    [`RefusalCode::AnchorAmbiguous`].
///
/// # Errors
///
/// The first failing gate, as above.
pub fn decide<W: Worktree + ?Sized>(
    worktree: &W,
    request: &ReplaceRequest<'_>,
) -> Result<Plan, ReplaceError> {
    let segments = path::segments(request.path)
        .map_err(|e| ReplaceError::InvalidRequest(format!("path: {e}")))?;
    let expected = request
        .expected_sha256
        .map(Revision::parse)
        .transpose()
        .map_err(|e| ReplaceError::InvalidRequest(format!("expected_sha256: {e}")))?;
    if request.old_text.is_empty() {
        return Err(ReplaceError::InvalidRequest(
            "old_text: must not be empty".to_string(),
        ));
    }
    let path = request.path;
    let (expected, bytes) = policy_gates(
        worktree,
        path,
        &segments,
        request.writable_paths,
        expected,
        MAX_FILE_BYTES,
    )
    .map_err(ReplaceError::Refused)?;
    // Found now but decided only after the revision and UTF-8 gates: knowing the match
    // lets one pass hash the base and keep the prefix's state for the next revision.
    let found = anchor::occurrences(&bytes, request.old_text.as_bytes());
    let mut hasher = Hasher::new();
    let mut unique = None;
    if let Occurrences::One(at) = found {
        hasher.update(&bytes[..at]);
        unique = Some((at, hasher.clone()));
        hasher.update(&bytes[at..]);
    } else {
        hasher.update(&bytes);
    }
    let base = hasher.finish();
    if base != expected {
        return Err(refuse(
            RefusalCode::RevisionStale,
            format!(
                "`{path}` changed since it was read: expected revision {expected}, it is now {base}; read it again"
            ),
        ));
    }
    if core::str::from_utf8(&bytes).is_err() {
        return Err(refuse(
            RefusalCode::MutationFailed,
            format!("`{path}` is not valid UTF-8 text"),
        ));
    }
    let Some((at, mut next)) = unique else {
        return Err(if found == Occurrences::None {
            refuse(
                RefusalCode::AnchorMissing,
                format!("old_text does not occur in `{path}`"),
            )
        } else {
            refuse(
                RefusalCode::AnchorAmbiguous,
                format!("old_text occurs more than once in `{path}`; include more context"),
            )
        });
    };
    let new_content = anchor::splice(
        &bytes,
        at,
        request.old_text.len(),
        request.new_text.as_bytes(),
    );
    next.update(request.new_text.as_bytes());
    next.update(&bytes[at + request.old_text.len()..]);
    let next = next.finish();
    Ok(Plan {
        path: path.to_string(),
        base,
        new_content,
        next,
    })
}

/// Why [`revision`] found no revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RevisionError {
    /// The path is malformed.
    InvalidRequest(String),
    /// The path matches no `writable_paths` pattern.
    Undeclared,
    /// The path is declared but is not an editable file; the reason.
    NotEditable(String),
}

/// The revision of a declared, editable file, under the same path, pattern and no-follow
/// rules as [`decide`], and the size limit of `edit` and `read`
/// ([`crate::edit::MAX_EDIT_FILE_BYTES`]): a file an agent could neither read nor edit
/// gets no revision.
///
/// # Errors
///
/// [`RevisionError`], naming the first rule the path fails.
pub fn revision<W: Worktree + ?Sized>(
    worktree: &W,
    path: &str,
    writable_paths: &[String],
) -> Result<Revision, RevisionError> {
    let segments =
        path::segments(path).map_err(|e| RevisionError::InvalidRequest(format!("path: {e}")))?;
    if is_git_admin(&segments) || !fnmatch::matches_any(path, writable_paths) {
        return Err(RevisionError::Undeclared);
    }
    let bytes = worktree
        .read_regular(&segments, crate::edit::MAX_EDIT_FILE_BYTES)
        .map_err(|e| RevisionError::NotEditable(e.0))?;
    Ok(Revision::of(&bytes))
}

pub(crate) fn git_admin_message(path: &str) -> String {
    format!("`{path}` is inside git's administrative files (`.git`), which are never writable")
}
