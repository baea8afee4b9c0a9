//! The read operation: a file's revision and one page of its text.
//!
//! A read reaches the file exactly as an edit does (path shape, never inside `.git`, a
//! single-link regular file reached without symlinks), but needs no declaration: any
//! such file beneath the worktree may be read. The page is a run of whole lines starting
//! at a 1-indexed line `offset`, at most [`MAX_READ_LINES`] lines and [`MAX_READ_BYTES`]
//! bytes; when more follows, the page says how to continue.

use alloc::format;
use alloc::string::{String, ToString};

use crate::fnmatch;
use crate::lines::LineIndex;
use crate::path;
use crate::path::is_git_admin;
use crate::revision::Revision;
use crate::worktree::Worktree;

/// The largest file that can be read: 16 MiB (the same as for edits).
pub const MAX_READ_FILE_BYTES: u64 = crate::gates::MAX_TEXT_FILE_BYTES;
/// The most lines one page holds (and the default `limit`).
pub const MAX_READ_LINES: u32 = 2000;
/// The most bytes of text one page holds: 50 KiB.
pub const MAX_READ_BYTES: usize = 50 * 1024;

/// One read, as received.
#[derive(Debug, Clone, Copy)]
pub struct ReadRequest<'a> {
    /// Worktree-relative path (see [`path::segments`]).
    pub path: &'a str,
    /// The contract's `writable_paths`, only to report whether the path is writable.
    pub writable_paths: &'a [String],
    /// The contract's `private_paths`: a private path is never read.
    pub private_paths: &'a [String],
    /// The first line to return, 1-indexed; `None` is 1.
    pub offset: Option<u32>,
    /// The most lines to return; `None` (or more than [`MAX_READ_LINES`]) is [`MAX_READ_LINES`].
    pub limit: Option<u32>,
}

/// One page of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadPage {
    /// The request's path.
    pub path: String,
    /// The revision of the whole file (what an edit must name).
    pub revision: Revision,
    /// Whether the contract declares the path writable.
    pub writable: bool,
    /// Whether the file starts with a UTF-8 byte-order mark (not part of `text`).
    pub bom: bool,
    /// The first line of the page, 1-indexed.
    pub offset: u32,
    /// How many lines the page holds.
    pub lines: u32,
    /// How many lines the file has.
    pub total_lines: u32,
    /// The page's lines, exactly as in the file (line endings included).
    pub text: String,
    /// The `offset` of the next page, when the file continues past this one.
    pub next_offset: Option<u32>,
    /// When the page is not the rest of the file: what was shown and how to continue.
    pub notice: Option<String>,
}

/// Why a read returned no page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadCode {
    /// Missing, not a regular file, reached through a symlink, hard-linked, inside
    /// `.git`, larger than [`MAX_READ_FILE_BYTES`], or unreadable.
    Unavailable,
    /// Not UTF-8, or contains NUL bytes (binary).
    NotText,
    /// The first requested line alone is larger than a page ([`MAX_READ_BYTES`]).
    TooLarge,
    /// `offset` is past the last line.
    OutOfRange,
    /// The path is private under the contract's `private_paths` (`PATH_PRIVATE`).
    Private,
}

impl ReadCode {
    /// The protocol's spelling, e.g. `READ_UNAVAILABLE`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unavailable => "READ_UNAVAILABLE",
            Self::NotText => "READ_NOT_TEXT",
            Self::TooLarge => "READ_TOO_LARGE",
            Self::OutOfRange => "READ_OUT_OF_RANGE",
            Self::Private => "PATH_PRIVATE",
        }
    }
}

/// Why a read failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// The request is malformed (path shape, a zero `offset` or `limit`).
    InvalidRequest(String),
    /// The file cannot be read as a page of text.
    Refused {
        /// Which refusal.
        code: ReadCode,
        /// Why, naming the path.
        message: String,
    },
}

fn refuse(code: ReadCode, message: String) -> ReadError {
    ReadError::Refused { code, message }
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Reads one page of a file.
///
/// # Errors
///
/// [`ReadError::InvalidRequest`] for a malformed path or a zero `offset`/`limit`;
/// [`ReadError::Refused`] with a [`ReadCode`] otherwise.
pub fn read<W: Worktree + ?Sized>(
    worktree: &W,
    request: &ReadRequest<'_>,
) -> Result<ReadPage, ReadError> {
    let path = request.path;
    let segments =
        path::segments(path).map_err(|e| ReadError::InvalidRequest(format!("path: {e}")))?;
    if request.offset == Some(0) {
        return Err(ReadError::InvalidRequest(
            "offset: lines are numbered from 1".to_string(),
        ));
    }
    if request.limit == Some(0) {
        return Err(ReadError::InvalidRequest(
            "limit: must be at least 1".to_string(),
        ));
    }
    if is_git_admin(&segments) {
        return Err(refuse(
            ReadCode::Unavailable,
            format!("`{path}` is inside git's administrative files (`.git`), which are never read"),
        ));
    }
    if crate::gates::is_private(path, request.private_paths) {
        return Err(refuse(
            ReadCode::Private,
            crate::gates::private_message(path),
        ));
    }
    let bytes = worktree
        .read_regular(&segments, MAX_READ_FILE_BYTES)
        .map_err(|e| refuse(ReadCode::Unavailable, e.0))?;
    let revision = Revision::of(&bytes);
    if memchr::memchr(0, &bytes).is_some() {
        return Err(refuse(
            ReadCode::NotText,
            format!("`{path}` contains NUL bytes: it is binary, not text"),
        ));
    }
    let Ok(text) = core::str::from_utf8(&bytes) else {
        return Err(refuse(
            ReadCode::NotText,
            format!("`{path}` is not valid UTF-8 text"),
        ));
    };
    let (bom, body) = match text.strip_prefix('\u{feff}') {
        Some(body) => (true, body),
        None => (false, text),
    };
    let index = LineIndex::new(body);
    let total = index.total();
    let offset = request.offset.unwrap_or(1);
    let first = usize::try_from(offset).unwrap_or(usize::MAX);
    if first > total.max(1) {
        return Err(refuse(
            ReadCode::OutOfRange,
            format!("offset {offset} is beyond the end of `{path}`, which has {total} lines"),
        ));
    }
    let limit = request.limit.unwrap_or(MAX_READ_LINES).min(MAX_READ_LINES);
    let wanted = usize::try_from(limit).unwrap_or(usize::MAX);
    let (start, _) = index.span(first);
    let mut end = start;
    let mut last = first - 1;
    let mut by_bytes = false;
    while last < total && last + 1 - first < wanted {
        let (_, line_end) = index.span(last + 1);
        if line_end - start > MAX_READ_BYTES {
            if last + 1 == first {
                return Err(refuse(
                    ReadCode::TooLarge,
                    format!(
                        "line {offset} of `{path}` is {} bytes, more than a page ({MAX_READ_BYTES} bytes), so it cannot be read; `search` in the file shows the matching part of the line with the file's revision, which an anchored `edit` takes",
                        line_end - start
                    ),
                ));
            }
            by_bytes = true;
            break;
        }
        end = line_end;
        last += 1;
    }
    let shown = last + 1 - first;
    let (next_offset, notice) = if last < total {
        let why = if by_bytes {
            format!("the {MAX_READ_BYTES}-byte page limit")
        } else if limit < MAX_READ_LINES {
            format!("the requested limit of {limit} lines")
        } else {
            format!("the {MAX_READ_LINES}-line page limit")
        };
        (
            Some(count(last + 1)),
            Some(format!(
                "[Showing lines {first}-{last} of {total} ({why}). Use offset={} to continue.]",
                last + 1
            )),
        )
    } else {
        (None, None)
    };
    Ok(ReadPage {
        path: path.to_string(),
        revision,
        writable: fnmatch::matches_any(path, request.writable_paths),
        bom,
        offset,
        lines: count(shown),
        total_lines: count(total),
        text: body.get(start..end).unwrap_or_default().to_string(),
        next_offset,
        notice,
    })
}
