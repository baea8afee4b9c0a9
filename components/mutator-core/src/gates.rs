//! The gates every operation shares, their limits, and the plan and refusal types.
//!
//! Each operation checks its request's shape first, then these gates in this order:
//! never inside `.git`, never a private path ([`is_private`]: private wins over writable),
//! declared writable (writers only), a revision given (writers of existing files only),
//! then the no-follow open of the target. `replace`, `edit`, `read`, `write`, `delete`,
//! `list` and `search` all call into this module, and nothing here calls them.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::fnmatch;
use crate::path::is_git_admin;
use crate::revision::Revision;
use crate::worktree::Worktree;

/// The largest file `edit`, `read`, `write`, `delete` and `search` handle: 16 MiB.
/// (`replace` alone accepts up to [`crate::replace::MAX_FILE_BYTES`].)
pub const MAX_TEXT_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// The private paths of a contract that does not name its own (`private_paths` omitted):
/// environment files, private keys and credential stores, at the root and at any depth
/// (`*` matches `/` under `fnmatch` rules). A contract that names `private_paths` replaces
/// this list (an empty list makes nothing private). See `docs/contract.md`.
pub const DEFAULT_PRIVATE_PATHS: &[&str] = &[
    ".env",
    ".env.*",
    "*/.env",
    "*/.env.*",
    ".envrc",
    "*/.envrc",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.keystore",
    "*.jks",
    "id_rsa*",
    "*/id_rsa*",
    "id_dsa*",
    "*/id_dsa*",
    "id_ecdsa*",
    "*/id_ecdsa*",
    "id_ed25519*",
    "*/id_ed25519*",
    ".ssh/*",
    "*/.ssh/*",
    ".aws/*",
    "*/.aws/*",
    ".gnupg/*",
    "*/.gnupg/*",
    ".netrc",
    "*/.netrc",
    ".npmrc",
    "*/.npmrc",
    ".pypirc",
    "*/.pypirc",
    ".git-credentials",
    "*/.git-credentials",
    ".docker/config.json",
    "*/.docker/config.json",
];

/// What the host must publish for `replace`, `edit` and an overwriting `write`.
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
    /// The path is private ([`is_private`]); checked before the declaration.
    PathPrivate,
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
    /// A `write` that creates (`expected_sha256` absent) names a path that exists.
    TargetExists,
    /// The target cannot be edited (see [`Worktree::read_regular`]) or is not UTF-8.
    MutationFailed,
}

impl RefusalCode {
    /// The protocol's spelling, e.g. `PATH_UNDECLARED`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PathPrivate => "PATH_PRIVATE",
            Self::PathUndeclared => "PATH_UNDECLARED",
            Self::RevisionUnavailable => "REVISION_UNAVAILABLE",
            Self::RevisionStale => "REVISION_STALE",
            Self::AnchorMissing => "ANCHOR_MISSING",
            Self::AnchorAmbiguous => "ANCHOR_AMBIGUOUS",
            Self::TargetExists => "TARGET_EXISTS",
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

impl Refusal {
    /// A refusal with this code and message.
    #[must_use]
    pub fn new(code: RefusalCode, message: String) -> Self {
        Self { code, message }
    }
}

/// Whether `path` is private: it matches one of `private_paths` (`fnmatch` rules, as
/// `writable_paths`), or one of its parent directories does (a private directory hides
/// everything beneath it).
#[must_use]
pub fn is_private(path: &str, private_paths: &[String]) -> bool {
    is_private_in(path, &fnmatch::PatternSet::few_names(private_paths))
}

/// [`is_private`] with the patterns translated once.
#[must_use]
pub fn is_private_in(path: &str, private: &fnmatch::PatternSet) -> bool {
    if private.is_empty() {
        return false;
    }
    private.matches(path)
        || path
            .match_indices('/')
            .any(|(at, _)| private.matches(&path[..at]))
}

/// The message of a [`RefusalCode::PathPrivate`] refusal.
#[must_use]
pub fn private_message(path: &str) -> String {
    format!(
        "`{path}` is private under the contract's `private_paths`: it is never read, listed, searched, written or deleted"
    )
}

/// The message of a refusal for a path inside `.git`.
#[must_use]
pub fn git_admin_message(path: &str) -> String {
    format!("`{path}` is inside git's administrative files (`.git`), which are never writable")
}

/// The shape of a writer's request: its path's segments ([`crate::path::segments`]) and its
/// expected revision, if any.
///
/// # Errors
///
/// The message of an `InvalidRequest`, naming the field (`path: …`, `expected_sha256: …`).
pub fn request_shape<'a>(
    path: &'a str,
    expected_sha256: Option<&str>,
) -> Result<(Vec<&'a str>, Option<Revision>), String> {
    let segments = crate::path::segments(path).map_err(|e| format!("path: {e}"))?;
    let expected = expected_sha256
        .map(Revision::parse)
        .transpose()
        .map_err(|e| format!("expected_sha256: {e}"))?;
    Ok((segments, expected))
}

/// The gates every writer shares before it touches the file system, in order: not inside
/// `.git` and not private ([`RefusalCode::PathPrivate`]; `.git` is
/// [`RefusalCode::PathUndeclared`]), then declared writable ([`RefusalCode::PathUndeclared`]).
pub(crate) fn declared_gates(
    path: &str,
    segments: &[&str],
    writable_paths: &[String],
    private_paths: &[String],
) -> Result<(), Refusal> {
    declared_gates_in(
        path,
        segments,
        &fnmatch::PatternSet::few_names(writable_paths),
        &fnmatch::PatternSet::few_names(private_paths),
    )
}

/// [`declared_gates`] with the patterns translated once (a change set checks many paths).
pub(crate) fn declared_gates_in(
    path: &str,
    segments: &[&str],
    writable: &fnmatch::PatternSet,
    private: &fnmatch::PatternSet,
) -> Result<(), Refusal> {
    if is_git_admin(segments) {
        return Err(Refusal::new(
            RefusalCode::PathUndeclared,
            git_admin_message(path),
        ));
    }
    if is_private_in(path, private) {
        return Err(Refusal::new(
            RefusalCode::PathPrivate,
            private_message(path),
        ));
    }
    if !writable.matches(path) {
        return Err(Refusal::new(
            RefusalCode::PathUndeclared,
            format!("`{path}` is not declared writable by the contract"),
        ));
    }
    Ok(())
}

/// Whether a change a command made outside satyrn's tools to `path` (a candidate's added,
/// modified or deleted path, or one whose mode or type changed) is within the contract: the
/// writers' own [`declared_gates`] — not inside `.git`, not private, declared writable —
/// after the path's shape ([`crate::path::segments`]). `deliver` refuses a candidate with
/// any path this refuses, so a candidate never holds a change satyrn's tools would refuse.
///
/// # Errors
///
/// The [`Refusal`]: [`RefusalCode::PathPrivate`], or [`RefusalCode::PathUndeclared`] for an
/// undeclared path, a path inside `.git` or a path no satyrn tool can name (its shape).
pub fn candidate_change(
    path: &str,
    writable_paths: &[String],
    private_paths: &[String],
) -> Result<(), Refusal> {
    let segments = crate::path::segments(path).map_err(|e| {
        Refusal::new(
            RefusalCode::PathUndeclared,
            format!(
                "`{}` is not a path the contract can declare: {e}",
                crate::path::shown(path)
            ),
        )
    })?;
    declared_gates(path, &segments, writable_paths, private_paths)
}

/// The policy gates of the writers of an existing file (`replace`, `edit`, an overwriting
/// `write`, `delete`), in their order, after the request's shape was checked:
/// [`declared_gates`] (before any file-system access), a revision was given, and the
/// target is a single-link regular file of at most `max_len` bytes reached without any
/// symlink. Returns the expected revision and the file's bytes; the caller compares the
/// revision next.
pub(crate) fn policy_gates<W: Worktree + ?Sized>(
    worktree: &W,
    path: &str,
    segments: &[&str],
    (writable_paths, private_paths): (&[String], &[String]),
    expected: Option<Revision>,
    max_len: u64,
) -> Result<(Revision, Vec<u8>), Refusal> {
    declared_gates(path, segments, writable_paths, private_paths)?;
    let Some(expected) = expected else {
        return Err(Refusal::new(
            RefusalCode::RevisionUnavailable,
            format!("no revision is known for `{path}`: read the file before editing it"),
        ));
    };
    let bytes = worktree
        .read_regular(segments, max_len)
        .map_err(|e| Refusal::new(RefusalCode::MutationFailed, e.0))?;
    Ok((expected, bytes))
}

/// [`policy_gates`] and then the revision gate, for the writers that take a file whole
/// (`write` over an existing file, `delete`): returns the file's revision, which equals the
/// expected one.
///
/// # Errors
///
/// The first refusal; [`RefusalCode::RevisionStale`] when the bytes are not the ones seen.
pub(crate) fn seen_file<W: Worktree + ?Sized>(
    worktree: &W,
    path: &str,
    segments: &[&str],
    patterns: (&[String], &[String]),
    expected: Option<Revision>,
) -> Result<Revision, Refusal> {
    let (expected, bytes) = policy_gates(
        worktree,
        path,
        segments,
        patterns,
        expected,
        MAX_TEXT_FILE_BYTES,
    )?;
    let base = Revision::of(&bytes);
    if base != expected {
        return Err(Refusal::new(
            RefusalCode::RevisionStale,
            stale_message(path, &expected, &base),
        ));
    }
    Ok(base)
}

/// The message of a stale revision.
#[must_use]
pub fn stale_message(path: &str, expected: &Revision, current: &Revision) -> String {
    format!(
        "`{path}` changed since it was read: expected revision {expected}, it is now {current}; read it again"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    fn defaults() -> Vec<String> {
        DEFAULT_PRIVATE_PATHS
            .iter()
            .map(|p| p.to_string())
            .collect()
    }

    #[test]
    fn the_default_keeps_secrets_private_at_any_depth() {
        let private = defaults();
        for path in [
            ".env",
            ".env.local",
            "app/.env",
            "app/.env.production",
            "certs/server.pem",
            "server.key",
            ".ssh/id_rsa",
            "home/.ssh/config",
            "deploy/id_ed25519.pub",
            ".aws/credentials",
            ".npmrc",
            "pkg/.npmrc",
            ".docker/config.json",
        ] {
            assert!(is_private(path, &private), "{path}");
        }
        for path in [
            "src/env.rs",
            "environment.md",
            "src/keys.rs",
            "docs/ssh.md",
            ".envision/a.txt",
            "README.md",
        ] {
            assert!(!is_private(path, &private), "{path}");
        }
    }

    #[test]
    fn a_candidate_change_passes_the_writers_declared_gates() {
        let writable = ["src/*".to_string(), ".gitignore".to_string()];
        let private = ["*.key".to_string()];
        assert!(candidate_change("src/a.rs", &writable, &private).is_ok());
        assert!(candidate_change(".gitignore", &writable, &private).is_ok());
        let code = |p: &str| candidate_change(p, &writable, &private).unwrap_err().code;
        assert_eq!(code("src/b.key"), RefusalCode::PathPrivate);
        assert_eq!(code("README.md"), RefusalCode::PathUndeclared);
        assert_eq!(code("src/.git/config"), RefusalCode::PathUndeclared);
        let shape = candidate_change("src/a\\b", &writable, &private).unwrap_err();
        assert_eq!(shape.code, RefusalCode::PathUndeclared);
        assert!(shape.message.contains("backslash"), "{}", shape.message);
    }

    #[test]
    fn a_private_directory_hides_everything_beneath_it() {
        let private = ["secrets".to_string()];
        assert!(is_private("secrets", &private));
        assert!(is_private("secrets/a/b.txt", &private));
        assert!(!is_private("secretsx/a.txt", &private));
        assert!(!is_private("a/secrets", &private));
        assert!(!is_private("secrets/a", &[]));
    }

    #[test]
    fn private_wins_over_writable_and_git_comes_first() {
        let writable = ["*".to_string()];
        let private = [".env".to_string()];
        let err = declared_gates(".env", &[".env"], &writable, &private).unwrap_err();
        assert_eq!(err.code, RefusalCode::PathPrivate);
        let err = declared_gates(".git/x", &[".git", "x"], &writable, &private).unwrap_err();
        assert_eq!(err.code, RefusalCode::PathUndeclared);
        assert!(declared_gates("a.txt", &["a.txt"], &writable, &private).is_ok());
        let err = declared_gates("a.txt", &["a.txt"], &[], &private).unwrap_err();
        assert_eq!(err.code, RefusalCode::PathUndeclared);
    }
}
