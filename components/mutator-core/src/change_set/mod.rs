//! Change sets: an ordered list of file operations over several files, decided against one
//! base, all gates and all paths, and published all together or not at all.
//!
//! A change set is either written as operations ([`decide`]: `edit`, `write`, `delete`,
//! `move`) or as a patch in the envelope OpenAI's models are trained to write
//! ([`decide_patch`], [`crate::patch`]). Both are planned by the same virtual tree
//! ([`plan`]): every operation sees what the earlier ones made (a set may delete a path and
//! add it again, or move a file and then edit it at its new path), every path passes the
//! gates of the single-file writers ([`bases`]: not inside `.git`, not private, declared
//! writable; a single-link regular file reached without symlinks, at most
//! [`MAX_TEXT_FILE_BYTES`]) the first time an operation touches it, and the revision an
//! operation names is checked against the file as it is on disk. If any operation is
//! refused, nothing is planned and every operation's problem is reported at once.
//!
//! Revisions. The first operation on an existing file must name its revision (the bytes the
//! caller saw): `None` is `REVISION_UNAVAILABLE`, another revision `REVISION_STALE` (with
//! the current one). A later operation on a path the set already changed needs none; if it
//! names one, it may be the base's or that of what the set made so far. A `write` without a
//! revision creates: an existing file is `TARGET_EXISTS`. A `move` onto an existing file
//! needs that file's revision (`to_expected_sha256`), else `MOVE_EXISTS`.

use alloc::string::String;
use alloc::vec::Vec;

use crate::edit::{EditOp, Rejection};
use crate::gates::{MAX_TEXT_FILE_BYTES, RefusalCode};
use crate::patch::{Hunk, HunkProblem, PatchError};
use crate::revision::Revision;

pub mod bases;
mod decide;
mod plan;

pub use bases::{Bases, WorktreeBases};
pub use decide::{ChangeSetRequest, PatchRequest, decide, decide_patch, patch_ops};
pub use plan::{RevisionPolicy, plan};

/// The most operations in one change set.
pub const MAX_OPS: usize = 1000;

/// The largest file a change set makes (each file).
pub const MAX_FILE_BYTES: u64 = MAX_TEXT_FILE_BYTES;

/// One operation of a change set.
#[derive(Debug, Clone, Copy)]
pub struct ChangeOp<'a> {
    /// The path it acts on (the source of a move), canonical worktree-relative.
    pub path: &'a str,
    /// The revision of `path` the caller saw (see the module on revisions).
    pub expected_sha256: Option<&'a str>,
    /// What it does.
    pub action: Action<'a>,
    /// For a patch: the 1-indexed line of the operation's header.
    pub line: Option<u32>,
}

/// What one operation does.
#[derive(Debug, Clone, Copy)]
pub enum Action<'a> {
    /// A batch of selector edits ([`crate::edit::apply`]).
    Edit(&'a [EditOp<'a>]),
    /// A patch's Update: its hunks ([`crate::patch::apply_update`]), then a move to
    /// `move_to` when given (which must not exist: `MOVE_EXISTS`).
    Hunks {
        /// The hunks, in file order.
        hunks: &'a [Hunk],
        /// `*** Move to:`.
        move_to: Option<&'a str>,
    },
    /// The whole new content: a create without a revision, an overwrite with one.
    Write(&'a str),
    /// A patch's Add: a create that refuses an existing path (`ADD_EXISTS`).
    Add(&'a str),
    /// Remove the file.
    Delete,
    /// Rename the file to `to`, its content and permission bits kept.
    Move {
        /// The destination.
        to: &'a str,
        /// The destination's revision, to replace an existing file there.
        to_expected_sha256: Option<&'a str>,
    },
}

/// What one path holds after the whole set, against its base.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// The canonical worktree-relative path.
    pub path: String,
    /// The revision of its base on disk; `None` when the path did not exist.
    pub base: Option<Revision>,
    /// Its new content; `None` when the set removes it.
    pub content: Option<Vec<u8>>,
    /// The revision of `content`.
    pub next: Option<Revision>,
    /// The base path whose permission bits a new file takes (a moved file's source); `None`:
    /// an existing file keeps its own, a new file gets the creator's default (0644).
    pub mode_from: Option<String>,
}

/// Why one operation cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpProblem {
    /// The operation's 0-based index.
    pub index: u32,
    /// For a patch: the 1-indexed line of its header.
    pub line: Option<u32>,
    /// The path it names (the destination, for a problem with a move's destination).
    pub path: String,
    /// What is wrong.
    pub code: OpCode,
    /// A sentence saying what was found and how to recover.
    pub message: String,
    /// For `REVISION_STALE`: the revision the file holds now.
    pub current: Option<Revision>,
    /// For [`OpCode::EditsRejected`]: every problem of the batch.
    pub edits: Option<Rejection>,
    /// For [`OpCode::HunksRefused`]: each hunk's problem.
    pub hunks: Vec<HunkProblem>,
}

/// The kinds of operations that cannot be applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpCode {
    /// A gate of the single-file writers refused (`PATH_PRIVATE`, `PATH_UNDECLARED`,
    /// `REVISION_UNAVAILABLE`, `REVISION_STALE`, `TARGET_EXISTS`, `MUTATION_FAILED`).
    Refused(RefusalCode),
    /// The file is not text: not UTF-8, or (for a patch's Update) it holds a NUL byte.
    NotText,
    /// The batch of an `edit` was refused ([`OpProblem::edits`]).
    EditsRejected,
    /// The hunks of an Update do not apply ([`OpProblem::hunks`]).
    HunksRefused,
    /// A patch's Add of a path that exists (on disk, or made by an earlier operation).
    AddExists,
    /// A move onto a path that exists, without its revision.
    MoveExists,
    /// An operation on a path that does not exist (on disk, or since an earlier operation).
    FileMissing,
    /// The content the set would give the file is over [`MAX_FILE_BYTES`].
    TooLarge,
}

impl OpCode {
    /// The protocol's spelling, e.g. `ADD_EXISTS`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Refused(code) => code.as_str(),
            Self::NotText => "NOT_TEXT",
            Self::EditsRejected => "EDITS_REJECTED",
            Self::HunksRefused => "HUNKS_REFUSED",
            Self::AddExists => "ADD_EXISTS",
            Self::MoveExists => "MOVE_EXISTS",
            Self::FileMissing => "FILE_MISSING",
            Self::TooLarge => "RESULT_TOO_LARGE",
        }
    }
}

/// Why a change set produced no plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeSetError {
    /// The request is malformed (no operation, too many, a path's shape, a revision's
    /// spelling); the message names the operation.
    InvalidRequest(String),
    /// The patch does not parse (`PATCH_INVALID`).
    Patch(PatchError),
    /// Operations were refused: every one's problem, in operation order.
    Rejected {
        /// A summary naming how many operations of how many were refused.
        message: String,
        /// The problems.
        problems: Vec<OpProblem>,
    },
}
