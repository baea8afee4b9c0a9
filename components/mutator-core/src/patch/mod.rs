//! `apply_patch`: the patch envelope OpenAI's models are trained to write, parsed strictly
//! ([`parse`]) and applied exactly ([`apply_update`]).
//!
//! Matching is exact: the context and `-` lines of a hunk must occur exactly once, as whole
//! lines, in the part of the file the hunk may touch — after the previous hunk's match, and
//! after its `@@ ANCHOR` line when it has one (the anchor is an exact substring of exactly
//! one line there). There is no whitespace or Unicode fallback; when a hunk does not match,
//! the near miss (a whitespace-only difference, the line where the closest candidate
//! diverges) is reported so that one retry succeeds. A hunk of only `+` lines is placed
//! right after its anchor line, or at the end with `*** End of File`; without either it has
//! no place and is refused. An Update keeps the file's byte-order mark, its line endings
//! (the new lines take them) and its final-newline shape. A whole patch is decided against
//! one base as a change set ([`crate::change_set::decide_patch`]).

use alloc::string::String;
use alloc::vec::Vec;

mod apply;
mod parse;

pub use apply::{HunkProblem, HunkProblemCode, apply_update};
pub use parse::parse;

/// A parsed patch: its file operations in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// The operations, in the order written.
    pub ops: Vec<Op>,
}

/// One file operation of a patch. `line` is the 1-indexed line of its header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// `*** Add File:` — create `path` with `text` (LF line endings, a final newline
    /// unless empty).
    Add {
        /// The header's line.
        line: usize,
        /// The path as written.
        path: String,
        /// The new file's text.
        text: String,
    },
    /// `*** Delete File:` — remove `path`.
    Delete {
        /// The header's line.
        line: usize,
        /// The path as written.
        path: String,
    },
    /// `*** Update File:` — change `path` by `hunks`, and move it to `move_to`.
    Update {
        /// The header's line.
        line: usize,
        /// The path as written.
        path: String,
        /// `*** Move to:`, as written.
        move_to: Option<String>,
        /// The hunks, in file order.
        hunks: Vec<Hunk>,
    },
}

/// One hunk of an Update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// The line of its `@@` (or of its first line, for a first hunk without one).
    pub line: usize,
    /// The text after `@@ `, when given.
    pub anchor: Option<String>,
    /// The lines it replaces (context and `-` lines), in order.
    pub old: Vec<String>,
    /// The lines it puts there (context and `+` lines), in order.
    pub new: Vec<String>,
    /// `*** End of File`: `old` must end at the file's end.
    pub end_of_file: bool,
}

/// Why a patch does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchError {
    /// The 1-indexed line of the patch.
    pub line: usize,
    /// What is wrong.
    pub code: PatchErrorCode,
    /// A sentence saying what was expected.
    pub message: String,
}

/// The kinds of malformed patches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchErrorCode {
    /// No `*** Begin Patch` first.
    NoBegin,
    /// No `*** End Patch` last.
    NoEnd,
    /// A line that is no operation, or an operation without a path.
    BadHeader,
    /// A line inside an Update that is neither a hunk nor a hunk line.
    BadHunkLine,
    /// A hunk without any line.
    EmptyHunk,
    /// An Update (without `*** Move to:`) without any hunk.
    EmptyUpdate,
}

impl PatchErrorCode {
    /// The protocol's code for every malformed patch (the kind is in the message and in
    /// [`PatchErrorCode::kind`]).
    pub const CODE: &'static str = "PATCH_INVALID";

    /// The kind, e.g. `NO_END`.
    #[must_use]
    pub fn kind(self) -> &'static str {
        match self {
            Self::NoBegin => "NO_BEGIN",
            Self::NoEnd => "NO_END",
            Self::BadHeader => "BAD_HEADER",
            Self::BadHunkLine => "BAD_HUNK_LINE",
            Self::EmptyHunk => "EMPTY_HUNK",
            Self::EmptyUpdate => "EMPTY_UPDATE",
        }
    }
}

#[cfg(test)]
mod tests;
