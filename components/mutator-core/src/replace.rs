//! The replacement decision: every gate, in order, and the resulting plan.

use alloc::format;
use alloc::string::{String, ToString};
use core::fmt;

use crate::anchor::{self, Occurrences};
use crate::gates::policy_gates;
pub use crate::gates::{Plan, Refusal, RefusalCode};
use crate::path;
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
    /// The contract's `private_paths` patterns (private wins over writable).
    pub private_paths: &'a [String],
    /// The revision the caller saw, or `None` when it never read the file.
    pub expected_sha256: Option<&'a str>,
    /// The anchor; must be non-empty and occur exactly once.
    pub old_text: &'a str,
    /// The replacement, inserted literally.
    pub new_text: &'a str,
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

/// Decides one replacement. The gates run in this order, and the first that fails
/// decides the result:
///
/// 1. request shape: path ([`path::segments`]), revision spelling, non-empty anchor —
///    [`ReplaceError::InvalidRequest`];
/// 2. the path is not inside `.git` and not private ([`RefusalCode::PathPrivate`]), and
///    matches a `writable_paths` pattern, before any file-system access —
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
    let (segments, expected) = crate::gates::request_shape(request.path, request.expected_sha256)
        .map_err(ReplaceError::InvalidRequest)?;
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
        (request.writable_paths, request.private_paths),
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
            crate::gates::stale_message(path, &expected, &base),
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
    /// The path matches no `writable_paths` pattern (or is inside `.git`).
    Undeclared,
    /// The path is private.
    Private,
    /// The path is declared but is not an editable file; the reason.
    NotEditable(String),
}

/// The revision of a declared, editable file, under the same path, pattern and no-follow
/// rules as [`decide`], and the size limit of `edit` and `read`
/// ([`crate::gates::MAX_TEXT_FILE_BYTES`]): a file an agent could neither read nor edit
/// gets no revision.
///
/// # Errors
///
/// [`RevisionError`], naming the first rule the path fails.
pub fn revision<W: Worktree + ?Sized>(
    worktree: &W,
    path: &str,
    writable_paths: &[String],
    private_paths: &[String],
) -> Result<Revision, RevisionError> {
    let segments =
        path::segments(path).map_err(|e| RevisionError::InvalidRequest(format!("path: {e}")))?;
    crate::gates::declared_gates(path, &segments, writable_paths, private_paths).map_err(|r| {
        if r.code == RefusalCode::PathPrivate {
            RevisionError::Private
        } else {
            RevisionError::Undeclared
        }
    })?;
    let bytes = worktree
        .read_regular(&segments, crate::gates::MAX_TEXT_FILE_BYTES)
        .map_err(|e| RevisionError::NotEditable(e.0))?;
    Ok(Revision::of(&bytes))
}
