//! The shape of a worktree-relative path.

use alloc::vec::Vec;
use core::fmt;

/// The longest path accepted, in bytes: 4096, Linux's `PATH_MAX`. A worktree-relative
/// path longer than that cannot be a real file's name beneath any worktree, and bounding
/// it bounds the work of matching it against the contract's patterns.
pub const MAX_PATH_BYTES: usize = 4096;

/// The longest segment accepted, in bytes: 255, `NAME_MAX` on Linux's file systems.
pub const MAX_SEGMENT_BYTES: usize = 255;

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
    /// The path is longer than [`MAX_PATH_BYTES`].
    TooLong {
        /// The path's length in bytes.
        len: usize,
    },
    /// A segment is longer than [`MAX_SEGMENT_BYTES`].
    SegmentTooLong {
        /// The segment's 1-based position in the path.
        position: usize,
        /// The segment's length in bytes.
        len: usize,
    },
}

impl fmt::Display for PathShapeError {
    /// One sentence; it never quotes the path, so an over-long path is not echoed back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::TooLong { len } => {
                return write!(
                    f,
                    "the path is {len} bytes long; at most {MAX_PATH_BYTES} bytes are allowed"
                );
            }
            Self::SegmentTooLong { position, len } => {
                return write!(
                    f,
                    "segment {position} of the path is {len} bytes long; at most {MAX_SEGMENT_BYTES} bytes are allowed"
                );
            }
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
/// Returns the first [`PathShapeError`] the path violates, in this order: empty, longer
/// than [`MAX_PATH_BYTES`] (checked first, before the path is scanned), absolute, NUL,
/// backslash, then per segment: empty, `.`, `..`, longer than [`MAX_SEGMENT_BYTES`].
/// Backslashes are refused so that a path means the same thing on every host.
pub fn segments(path: &str) -> Result<Vec<&str>, PathShapeError> {
    if path.is_empty() {
        return Err(PathShapeError::Empty);
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(PathShapeError::TooLong { len: path.len() });
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
        .enumerate()
        .map(|(i, segment)| match segment {
            "" => Err(PathShapeError::EmptySegment),
            "." => Err(PathShapeError::CurrentDir),
            ".." => Err(PathShapeError::ParentDir),
            s if s.len() > MAX_SEGMENT_BYTES => Err(PathShapeError::SegmentTooLong {
                position: i + 1,
                len: s.len(),
            }),
            s => Ok(s),
        })
        .collect()
}

/// Why `c` would make a name that a reader could not read as it is, if it would: a control
/// character (Unicode `Cc`), which a terminal acts on (a line feed shows a fake second
/// entry); a bidirectional formatting character (U+061C, U+200E, U+200F, U+202A–U+202E,
/// U+2066–U+2069), which reorders what is displayed; or an invisible one (U+00AD, U+180E,
/// U+200B–U+200D, U+2060–U+2064, U+FEFF), which makes two names look the same.
#[must_use]
pub fn unreadable(c: char) -> Option<&'static str> {
    match u32::from(c) {
        0x00..=0x1F | 0x7F..=0x9F => Some("the control character"),
        0x061C | 0x200E | 0x200F | 0x202A..=0x202E | 0x2066..=0x2069 => {
            Some("the bidirectional formatting character")
        }
        0x00AD | 0x180E | 0x200B..=0x200D | 0x2060..=0x2064 | 0xFEFF => {
            Some("the invisible character")
        }
        _ => None,
    }
}

/// `name` as text shows it to a reader: every character [`unreadable`] names written as
/// `\u{XXXX}` (hexadecimal, upper case) and a backslash as `\\`, everything else as it is.
/// A name with neither comes back borrowed. The escaped form is unambiguous (a path the
/// tools accept never holds a backslash) but is not the name: the structured results carry
/// the exact name.
#[must_use]
pub fn shown(name: &str) -> alloc::borrow::Cow<'_, str> {
    use core::fmt::Write;
    if !name.chars().any(|c| c == '\\' || unreadable(c).is_some()) {
        return alloc::borrow::Cow::Borrowed(name);
    }
    let mut out = alloc::string::String::with_capacity(name.len() + 8);
    for c in name.chars() {
        if c == '\\' {
            out.push_str("\\\\");
        } else if unreadable(c).is_some() {
            let _ = write!(out, "\\u{{{:04X}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    alloc::borrow::Cow::Owned(out)
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
    fn shown_escapes_what_a_reader_could_not_read_and_nothing_else() {
        assert!(matches!(
            shown("src/lib.rs"),
            alloc::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(shown("café/ファイル.rs"), "café/ファイル.rs");
        assert_eq!(shown("a\nb.txt"), "a\\u{000A}b.txt");
        assert_eq!(shown("\u{1b}[31mred"), "\\u{001B}[31mred");
        assert_eq!(shown("evil\u{202E}txt.exe"), "evil\\u{202E}txt.exe");
        assert_eq!(shown("zero\u{200B}width"), "zero\\u{200B}width");
        assert_eq!(shown("back\\slash"), "back\\\\slash");
        assert_eq!(shown("\u{7f}\u{85}"), "\\u{007F}\\u{0085}");
    }

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

    /// A path of exactly `len` bytes made of segments of at most `segment` bytes.
    fn path_of(len: usize, segment: usize) -> alloc::string::String {
        let mut path = alloc::string::String::new();
        while path.len() < len {
            if !path.is_empty() {
                path.push('/');
            }
            let room = (len - path.len()).min(segment);
            // Never leave a single byte for the next round: it would be a trailing `/`.
            let take = if len - path.len() - room == 1 {
                room - 1
            } else {
                room
            };
            path.extend(core::iter::repeat_n('a', take));
        }
        path
    }

    #[test]
    fn segment_length_limit() {
        let at = "s".repeat(MAX_SEGMENT_BYTES);
        assert_eq!(segments(&at).unwrap(), [at.as_str()]);
        let over = "s".repeat(MAX_SEGMENT_BYTES + 1);
        let nested = alloc::format!("a/{over}/b");
        assert_eq!(
            segments(&nested),
            Err(PathShapeError::SegmentTooLong {
                position: 2,
                len: MAX_SEGMENT_BYTES + 1
            })
        );
        // Bytes, not characters: 128 two-byte characters are 256 bytes.
        assert_eq!(
            segments(&"é".repeat(128)),
            Err(PathShapeError::SegmentTooLong {
                position: 1,
                len: 256
            })
        );
        assert!(segments(&"é".repeat(127)).is_ok());
    }

    #[test]
    fn path_length_limit() {
        let at = path_of(MAX_PATH_BYTES, MAX_SEGMENT_BYTES);
        assert_eq!(at.len(), MAX_PATH_BYTES);
        assert!(segments(&at).is_ok());
        let over = path_of(MAX_PATH_BYTES + 1, MAX_SEGMENT_BYTES);
        assert_eq!(over.len(), MAX_PATH_BYTES + 1);
        assert_eq!(
            segments(&over),
            Err(PathShapeError::TooLong {
                len: MAX_PATH_BYTES + 1
            })
        );
        // Checked before anything else, so a huge path is refused without being scanned.
        let huge = alloc::format!("/{}", "a/".repeat(5_000_000));
        assert_eq!(
            segments(&huge),
            Err(PathShapeError::TooLong { len: huge.len() })
        );
    }

    #[test]
    fn length_messages_never_quote_the_path() {
        let over = "q".repeat(MAX_PATH_BYTES + 1);
        let message = alloc::format!("{}", segments(&over).unwrap_err());
        assert_eq!(
            message,
            "the path is 4097 bytes long; at most 4096 bytes are allowed"
        );
        let message = alloc::format!("{}", segments(&"q".repeat(300)).unwrap_err());
        assert_eq!(
            message,
            "segment 1 of the path is 300 bytes long; at most 255 bytes are allowed"
        );
    }
}
