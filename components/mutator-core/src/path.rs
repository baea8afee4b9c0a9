//! The shape of a worktree-relative path.

use alloc::vec::Vec;
use core::fmt;

/// Why a path is not a well-formed worktree-relative path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathShapeError {
    /// The path is the empty string.
    Empty,
    /// The path starts with `/`.
    Absolute,
    /// The path contains a NUL character.
    Nul,
    /// The path contains a backslash; only `/` separates segments.
    Backslash,
    /// A segment is empty (`a//b`, a trailing `/`).
    EmptySegment,
    /// A segment is `.`.
    CurrentDir,
    /// A segment is `..`.
    ParentDir,
}

impl fmt::Display for PathShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Empty => "the path is empty",
            Self::Absolute => "the path is absolute; it must be relative to the worktree",
            Self::Nul => "the path contains a NUL character",
            Self::Backslash => "the path contains a backslash; use `/` to separate segments",
            Self::EmptySegment => "the path has an empty segment",
            Self::CurrentDir => "the path has a `.` segment",
            Self::ParentDir => "the path has a `..` segment",
        })
    }
}

/// Splits a relative, `/`-separated path into its segments.
///
/// # Errors
///
/// Returns the first [`PathShapeError`] the path violates: empty, absolute, NUL,
/// backslash, empty segment, `.` or `..` segment. Backslashes are refused so that a
/// path means the same thing on every host.
pub fn segments(path: &str) -> Result<Vec<&str>, PathShapeError> {
    if path.is_empty() {
        return Err(PathShapeError::Empty);
    }
    if path.starts_with('/') {
        return Err(PathShapeError::Absolute);
    }
    if path.contains('\0') {
        return Err(PathShapeError::Nul);
    }
    if path.contains('\\') {
        return Err(PathShapeError::Backslash);
    }
    path.split('/')
        .map(|segment| match segment {
            "" => Err(PathShapeError::EmptySegment),
            "." => Err(PathShapeError::CurrentDir),
            ".." => Err(PathShapeError::ParentDir),
            s => Ok(s),
        })
        .collect()
}

/// Whether a segment is `.git` (in any letter case): git's administrative files (or a
/// linked worktree's `.git` pointer) are never writable or readable through satyrn,
/// whatever a contract declares — editing them could point git elsewhere or make it run
/// commands (hooks, `core.*`).
#[must_use]
pub fn is_git_admin(segments: &[&str]) -> bool {
    segments.iter().any(|s| s.eq_ignore_ascii_case(".git"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_relative_paths() {
        assert_eq!(segments("a").unwrap(), ["a"]);
        assert_eq!(segments("src/lib.rs").unwrap(), ["src", "lib.rs"]);
        assert_eq!(segments("..hidden/.x").unwrap(), ["..hidden", ".x"]);
    }

    #[test]
    fn refuses_each_bad_shape() {
        assert_eq!(segments(""), Err(PathShapeError::Empty));
        assert_eq!(segments("/etc/passwd"), Err(PathShapeError::Absolute));
        assert_eq!(segments("a\0b"), Err(PathShapeError::Nul));
        assert_eq!(segments("a\\b"), Err(PathShapeError::Backslash));
        assert_eq!(segments("a//b"), Err(PathShapeError::EmptySegment));
        assert_eq!(segments("a/"), Err(PathShapeError::EmptySegment));
        assert_eq!(segments("./a"), Err(PathShapeError::CurrentDir));
        assert_eq!(segments("a/../b"), Err(PathShapeError::ParentDir));
        assert_eq!(segments(".."), Err(PathShapeError::ParentDir));
    }
}
