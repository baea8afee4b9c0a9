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
/// U+2066–U+2069), which reorders what is displayed; a line or paragraph separator (U+2028,
/// U+2029), which breaks the line; or an invisible one (U+00AD, U+034F, U+115F, U+1160,
/// U+180B–U+180F, U+200B–U+200D, U+2060–U+2064, U+2800, U+3164, U+FE00–U+FE0F, U+FEFF,
/// U+FFA0, U+E0000–U+E007F, U+E0100–U+E01EF: soft hyphen, grapheme joiner, Hangul fillers,
/// variation selectors, the blank Braille pattern, tags), which makes two names look the
/// same.
#[must_use]
pub fn unreadable(c: char) -> Option<&'static str> {
    match u32::from(c) {
        0x00..=0x1F | 0x7F..=0x9F => Some("the control character"),
        0x2028 | 0x2029 => Some("the line separator"),
        0x061C | 0x200E | 0x200F | 0x202A..=0x202E | 0x2066..=0x2069 => {
            Some("the bidirectional formatting character")
        }
        0x00AD
        | 0x034F
        | 0x115F
        | 0x1160
        | 0x180B..=0x180F
        | 0x200B..=0x200D
        | 0x2060..=0x2064
        | 0x2800
        | 0x3164
        | 0xFE00..=0xFE0F
        | 0xFEFF
        | 0xFFA0
        | 0xE0000..=0xE007F
        | 0xE0100..=0xE01EF => Some("the invisible character"),
        _ => None,
    }
}

/// Why `c` may not appear in a name satyrn makes or is asked to make (a candidate id, a new
/// file's name), if it may not: what a reader of the name would not see, or would see as
/// something else.
///
/// - control characters (Unicode `Cc`: U+0000–U+001F, U+007F–U+009F);
/// - bidirectional formatting characters (U+061C, U+200E, U+200F, U+202A–U+202E,
///   U+2066–U+2069), which reorder what is displayed;
/// - invisible characters (U+00AD, U+180E, U+200B–U+200D, U+2060–U+2064, U+FEFF), which
///   make two different names look the same;
/// - combining marks of the combining-diacritics blocks (U+0300–U+036F, U+1AB0–U+1AFF,
///   U+1DC0–U+1DFF, U+20D0–U+20FF, U+FE20–U+FE2F): with them `café` has a decomposed (NFD)
///   twin that looks identical to the composed (NFC) one; names must use the composed form;
/// - spaces other than ASCII's (U+00A0, U+1680, U+2000–U+200A, U+202F, U+205F, U+3000),
///   which look like a space;
/// - compatibility characters that read as ordinary ones: ligatures (U+FB00–U+FB4F, `ﬁ`),
///   fullwidth and halfwidth forms (U+FF00–U+FFEF, `Ａ`), letterlike symbols
///   (U+2100–U+214F, the Kelvin sign) and mathematical letters (U+1D400–U+1D7FF).
#[must_use]
pub fn deceptive(c: char) -> Option<&'static str> {
    if let Some(what) = unreadable(c) {
        return Some(what);
    }
    match u32::from(c) {
        0x0300..=0x036F | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF | 0xFE20..=0xFE2F => {
            Some("the combining mark")
        }
        0x00A0 | 0x1680 | 0x2000..=0x200A | 0x202F | 0x205F | 0x3000 => {
            Some("the space or line separator")
        }
        // Ligatures (ﬁ), fullwidth and halfwidth forms (Ａ), letterlike symbols (the Kelvin
        // sign K) and mathematical letters (𝐀): each reads as another, ordinary character.
        0xFB00..=0xFB4F | 0xFF00..=0xFFEF | 0x2100..=0x214F | 0x1D400..=0x1D7FF => {
            Some("the compatibility character")
        }
        _ => None,
    }
}

/// Why a new file may not be named `path`, if it may not: the message of the refusal when
/// its name holds a [`deceptive`] character. `write` refuses to create such a file, and
/// `deliver` refuses a candidate that adds one.
#[must_use]
pub fn new_name_refusal(path: &str) -> Option<alloc::string::String> {
    let (c, what) = path.chars().find_map(|c| deceptive(c).map(|w| (c, w)))?;
    Some(alloc::format!(
        "a new file's name may not contain {what} U+{:04X}: nobody reading the name could read it as it is",
        u32::from(c)
    ))
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

/// A path as an agent wrote it, made the canonical worktree-relative form before any
/// gate: a leading `./` (repeated) is dropped, `.` alone is the worktree root (`""`),
/// trailing `/`s are dropped, and an absolute path whose prefix is exactly `root` (the
/// worktree's absolute path, as the front end knows it, without a trailing `/`) becomes
/// relative to it. Nothing else changes, so every other shape (`..`, another absolute
/// path, a backslash, `a/./b`) still meets [`segments`]' refusals. The agent-facing
/// front ends (MCP, Pi, `apply_patch`) use it; `protocol` stays strict.
#[must_use]
pub fn as_agents_write<'p>(raw: &'p str, root: &str) -> &'p str {
    let mut path = raw;
    if !root.is_empty()
        && let Some(rest) = path.strip_prefix(root)
        && (rest.is_empty() || rest.starts_with('/'))
    {
        path = rest.trim_start_matches('/');
    }
    while let Some(rest) = path.strip_prefix("./") {
        path = rest.trim_start_matches('/');
    }
    if path == "." {
        return "";
    }
    // Only when something is left: `/` alone stays absolute (and refused).
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() { path } else { trimmed }
}

#[cfg(test)]
mod agents_write_tests {
    use super::as_agents_write;

    #[test]
    fn paths_as_agents_write_them_become_canonical_and_the_rest_is_left_to_refuse() {
        let root = "/work/repo";
        for (raw, canonical) in [
            ("src/a.rs", "src/a.rs"),
            ("./src/a.rs", "src/a.rs"),
            ("././src/a.rs", "src/a.rs"),
            (".", ""),
            ("./", ""),
            ("src/", "src"),
            ("src//", "src"),
            ("/work/repo/src/a.rs", "src/a.rs"),
            ("/work/repo", ""),
            ("/work/repo/", ""),
            ("/work/repo/./src", "src"),
            // Left as they are, for the strict rules to refuse.
            ("/work/repository/x", "/work/repository/x"),
            ("/etc/passwd", "/etc/passwd"),
            ("../x", "../x"),
            ("src/../x", "src/../x"),
            ("src/./a.rs", "src/./a.rs"),
            ("src\\a.rs", "src\\a.rs"),
            ("/", "/"),
            ("", ""),
        ] {
            assert_eq!(as_agents_write(raw, root), canonical, "{raw:?}");
        }
        // Without a known root, absolute paths stay absolute.
        assert_eq!(as_agents_write("/work/repo/a", ""), "/work/repo/a");
        // What is left is refused exactly as before.
        assert!(super::segments(as_agents_write("/etc/passwd", root)).is_err());
        assert!(super::segments(as_agents_write("src/../x", root)).is_err());
        assert_eq!(
            super::segments(as_agents_write("./src/a.rs", root)).unwrap(),
            ["src", "a.rs"]
        );
    }
}
