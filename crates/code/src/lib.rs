//! Every result code satyrn reports, and the one table that maps each to its exit status.
//!
//! The exit statuses are stable (see `docs/exit-codes.md`):
//!
//! | exit | meaning |
//! |---|---|
//! | 0 | `OK` |
//! | 1 | `INTERNAL_ERROR`: an unexpected internal error (a bug) |
//! | 2 | usage error (bad command line); no JSON is printed |
//! | 3 | `CONTRACT_UNREADABLE` |
//! | 4 | `CONTRACT_INVALID` |
//! | 5 | `CONTRACT_MISSING_FIELD` |
//! | 6 | `REPO_UNAVAILABLE` |
//! | 7 | `INVALID_REQUEST` |
//! | 8 | `NO_CANDIDATE`: every other handled delivery result (`PUSH_TIMEOUT` included) |
//! | 9 | `MUTATION_REFUSED`: the policy refusals (`TARGET_EXISTS` included), `MUTATION_FAILED` and the batch refusals of `edit` |
//! | 10 | `ATTEMPT_FAILED` |
//! | 11 | `READ_REFUSED`: the four refusals of `read` |
//! | 12 | `PATH_PRIVATE`: the path is private, whatever the operation |
//! | 13 | `CANDIDATES_REFUSED`: `CANDIDATE_NOT_FOUND`, `CANDIDATE_CHANGED`, `APPLY_CONFLICT` |
//! | 14 | `CPU_UNSUPPORTED`: this CPU lacks features the embedded component was compiled for |
//! | 15 | `CONFINE_UNAVAILABLE`: `confine` cannot hold the command to the contract here (no Landlock, an ABI below 3, a rule that cannot be built); nothing was run |

use std::fmt;

/// The largest request any front end accepts, and so the largest patch or new text one
/// operation receives: 64 MiB. The protocol refuses a longer stdin, the broker a longer
/// frame, `apply_patch` a longer patch; the engine sizes its hostcall fuel from it.
pub const MAX_REQUEST_BYTES: usize = 64 * 1024 * 1024;

/// A result code, as spelled in protocol responses and delivery receipts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Code {
    /// Success.
    Ok,
    /// A bug: something that should not happen did.
    InternalError,
    /// This CPU lacks features the embedded component was precompiled to use (a binary
    /// built with `SATYRN_COMPONENT_CPU=native` on another machine); nothing was done.
    CpuUnsupported,
    /// `confine`: the kernel cannot enforce the boundary (Landlock absent, disabled, or an
    /// ABI below 3), or the rules could not be built; nothing was run.
    ConfineUnavailable,
    /// The contract file cannot be read (missing, a directory, no permission).
    ContractUnreadable,
    /// The contract is not a valid contract document (YAML syntax, not a mapping, unknown
    /// or duplicate keys, anchors or aliases, tags, too large, not UTF-8).
    ContractInvalid,
    /// A required contract field is missing or has the wrong shape.
    ContractMissingField,
    /// The repository is not an existing worktree root.
    RepoUnavailable,
    /// The protocol request is malformed.
    InvalidRequest,
    /// The path is not declared writable.
    PathUndeclared,
    /// No revision was given for a declared path.
    RevisionUnavailable,
    /// The file changed since the caller read it.
    RevisionStale,
    /// The anchor does not occur.
    AnchorMissing,
    /// The anchor occurs more than once.
    AnchorAmbiguous,
    /// The target cannot be edited or the publish failed; the file is unchanged.
    MutationFailed,
    /// Delivery: the repository has tracked changes, deletions or untracked files.
    RepoDirty,
    /// Delivery: the contract id is not a valid single ref component.
    InvalidCandidateId,
    /// Delivery: the candidate ref already exists.
    CandidateExists,
    /// Delivery: the command changed nothing.
    NoChange,
    /// Delivery: the command exited non-zero or was killed by a signal.
    CommandFailed,
    /// Delivery: the command's executable could not be started.
    CommandUnavailable,
    /// Delivery: the command outlived its timeout.
    CommandTimeout,
    /// Delivery: the command moved `HEAD` in its worktree.
    HeadMoved,
    /// Delivery: a git operation failed.
    GitFailed,
    /// Delivery: the attempt's worktree could not be removed.
    CleanupFailed,
    /// Delivery: `deliver` itself received SIGINT, SIGTERM or SIGHUP.
    Interrupted,
    /// Delivery (`--push`): the push did not end by its deadline and was stopped; the local
    /// candidate is kept, and whether the remote has it is unknown.
    PushTimeout,
    /// Deliver: the command changed the caller's repository (refs, the stash, configuration,
    /// hooks, worktree registrations); nothing is published.
    RepositoryChanged,
    /// Deliver: the candidate changes a path its contract does not allow (private, not
    /// declared writable, inside `.git`); nothing is published.
    OutsideContract,
    /// Deliver: the command left a FIFO, socket or device where git would open it.
    SpecialFile,
    /// Deliver: a new or changed file of the candidate is larger than the limit.
    CandidateTooLarge,
    /// Deliver: the work after the command (checks, staging, the candidate commit) did not
    /// finish by the attempt's deadline.
    FinishTimeout,
    /// Candidates: no candidate has the given id.
    CandidateNotFound,
    /// Candidates: the candidate's ref no longer names the expected commit.
    CandidateChanged,
    /// Candidates: the candidate does not merge cleanly onto `HEAD`; nothing was applied.
    ApplyConflict,
    /// Attempt: preparation, Pi or artifact publication failed.
    AttemptFailed,
    /// Edit: `occurrence` is not between 1 and the number of occurrences.
    OccurrenceOutOfRange,
    /// Edit: two replacements of a batch overlap.
    EditsOverlap,
    /// Edit: two insertions of a batch at one point.
    InsertionsCollide,
    /// Edit: an insertion on the boundary or inside of a replacement.
    InsertionInReplacement,
    /// Edit: an edit changes nothing.
    NoOpEdit,
    /// Edit: the batch as a whole leaves the file unchanged.
    NoOpBatch,
    /// Edit: a selector (`old_text` or `anchor_text`) is empty.
    SelectorEmpty,
    /// Edit: the file has mixed or bare-CR line endings and an edit spans lines.
    LineEndingsUnsupported,
    /// Read: missing, not a regular file, symlinked, hard-linked, inside `.git`, too
    /// large or unreadable.
    ReadUnavailable,
    /// Read: not UTF-8, or binary (NUL bytes).
    ReadNotText,
    /// Read: the first requested line alone is larger than a page.
    ReadTooLarge,
    /// Read: `offset` is past the last line.
    ReadOutOfRange,
    /// Replace, edit or write: the result would be larger than a file may be (16 MiB).
    ResultTooLarge,
    /// Write (overwrite) or delete: the revision was seen only in part (a page, a search
    /// hit), so the whole file is not replaced or removed.
    PartlySeen,
    /// Write: the file to create already exists (`expected_sha256: null` means create).
    TargetExists,
    /// The path is private under the contract's `private_paths` (or their default): it is
    /// never read, listed, searched, written or deleted, even when it is also writable.
    PathPrivate,
    /// A patch that does not parse (`apply_patch`): the line and what was expected.
    PatchInvalid,
    /// A change set's file is not text (not UTF-8, or a patch's Update of a file with a NUL).
    NotText,
    /// A patch's Update whose hunks do not apply (each hunk's problem in the details).
    HunksRefused,
    /// A patch's Add of a path that exists.
    AddExists,
    /// A move onto a path that exists, without its revision.
    MoveExists,
    /// A change set's operation on a path that does not exist.
    FileMissing,
}

impl Code {
    /// The spelling used in JSON, e.g. `PATH_UNDECLARED`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        self.row().0
    }

    /// The process exit status this code ends with.
    #[must_use]
    pub fn exit_status(self) -> u8 {
        self.row().1
    }

    /// The one table: spelling and exit status of every code.
    fn row(self) -> (&'static str, u8) {
        match self {
            Self::Ok => ("OK", 0),
            Self::InternalError => ("INTERNAL_ERROR", 1),
            Self::CpuUnsupported => ("CPU_UNSUPPORTED", 14),
            Self::ConfineUnavailable => ("CONFINE_UNAVAILABLE", 15),
            Self::ContractUnreadable => ("CONTRACT_UNREADABLE", 3),
            Self::ContractInvalid => ("CONTRACT_INVALID", 4),
            Self::ContractMissingField => ("CONTRACT_MISSING_FIELD", 5),
            Self::RepoUnavailable => ("REPO_UNAVAILABLE", 6),
            Self::InvalidRequest => ("INVALID_REQUEST", 7),
            Self::RepoDirty => ("REPO_DIRTY", 8),
            Self::InvalidCandidateId => ("INVALID_CANDIDATE_ID", 8),
            Self::CandidateExists => ("CANDIDATE_EXISTS", 8),
            Self::NoChange => ("NO_CHANGE", 8),
            Self::CommandFailed => ("COMMAND_FAILED", 8),
            Self::CommandUnavailable => ("COMMAND_UNAVAILABLE", 8),
            Self::CommandTimeout => ("COMMAND_TIMEOUT", 8),
            Self::HeadMoved => ("HEAD_MOVED", 8),
            Self::GitFailed => ("GIT_FAILED", 8),
            Self::CleanupFailed => ("CLEANUP_FAILED", 8),
            Self::Interrupted => ("INTERRUPTED", 8),
            Self::PushTimeout => ("PUSH_TIMEOUT", 8),
            Self::RepositoryChanged => ("REPOSITORY_CHANGED", 8),
            Self::OutsideContract => ("OUTSIDE_CONTRACT", 8),
            Self::SpecialFile => ("SPECIAL_FILE", 8),
            Self::CandidateTooLarge => ("CANDIDATE_TOO_LARGE", 8),
            Self::FinishTimeout => ("FINISH_TIMEOUT", 8),
            Self::CandidateNotFound => ("CANDIDATE_NOT_FOUND", 13),
            Self::CandidateChanged => ("CANDIDATE_CHANGED", 13),
            Self::ApplyConflict => ("APPLY_CONFLICT", 13),
            Self::PathUndeclared => ("PATH_UNDECLARED", 9),
            Self::RevisionUnavailable => ("REVISION_UNAVAILABLE", 9),
            Self::RevisionStale => ("REVISION_STALE", 9),
            Self::AnchorMissing => ("ANCHOR_MISSING", 9),
            Self::AnchorAmbiguous => ("ANCHOR_AMBIGUOUS", 9),
            Self::MutationFailed => ("MUTATION_FAILED", 9),
            Self::AttemptFailed => ("ATTEMPT_FAILED", 10),
            Self::OccurrenceOutOfRange => ("OCCURRENCE_OUT_OF_RANGE", 9),
            Self::EditsOverlap => ("EDITS_OVERLAP", 9),
            Self::InsertionsCollide => ("INSERTIONS_COLLIDE", 9),
            Self::InsertionInReplacement => ("INSERTION_IN_REPLACEMENT", 9),
            Self::NoOpEdit => ("NO_OP_EDIT", 9),
            Self::NoOpBatch => ("NO_OP_BATCH", 9),
            Self::SelectorEmpty => ("SELECTOR_EMPTY", 9),
            Self::LineEndingsUnsupported => ("LINE_ENDINGS_UNSUPPORTED", 9),
            Self::ReadUnavailable => ("READ_UNAVAILABLE", 11),
            Self::ReadNotText => ("READ_NOT_TEXT", 11),
            Self::ReadTooLarge => ("READ_TOO_LARGE", 11),
            Self::ReadOutOfRange => ("READ_OUT_OF_RANGE", 11),
            Self::TargetExists => ("TARGET_EXISTS", 9),
            Self::PartlySeen => ("PARTLY_SEEN", 9),
            Self::ResultTooLarge => ("RESULT_TOO_LARGE", 9),
            Self::PathPrivate => ("PATH_PRIVATE", 12),
            Self::PatchInvalid => ("PATCH_INVALID", 7),
            Self::NotText => ("NOT_TEXT", 9),
            Self::HunksRefused => ("HUNKS_REFUSED", 9),
            Self::AddExists => ("ADD_EXISTS", 9),
            Self::MoveExists => ("MOVE_EXISTS", 9),
            Self::FileMissing => ("FILE_MISSING", 9),
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Exit status of a command-line usage error (no JSON is printed).
pub const USAGE_EXIT: u8 = 2;

/// A code and the message that explains it: what every command ends with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The result code.
    pub code: Code,
    /// A human-readable explanation.
    pub message: String,
}

impl Failure {
    /// A failure with this code and message.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for Failure {}

/// Serialized as its spelling (`"EDITS_OVERLAP"`), as every response shows it.
impl serde::Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}
