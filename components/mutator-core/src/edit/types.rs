//! The records of a batch: the edits as received, the problems of a refused batch and
//! the plan of a decided one.

use alloc::string::String;
use alloc::vec::Vec;

use crate::gates::{Plan, Refusal};
use crate::revision::Revision;

/// One edit of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EditOp<'a> {
    /// Replace one occurrence of `old_text` with `new_text`.
    Replace {
        /// The selector; non-empty.
        old_text: &'a str,
        /// The replacement, literal.
        new_text: &'a str,
        /// Which occurrence, 1-indexed; required when `old_text` occurs more than once.
        occurrence: Option<u32>,
    },
    /// Insert `new_text` right after one occurrence of `anchor_text`.
    InsertAfter {
        /// The selector; non-empty.
        anchor_text: &'a str,
        /// The inserted text, literal; non-empty.
        new_text: &'a str,
        /// Which occurrence, 1-indexed; required when `anchor_text` occurs more than once.
        occurrence: Option<u32>,
    },
}

impl<'a> EditOp<'a> {
    /// The text the edit selects: `old_text` or `anchor_text`.
    pub(super) fn selector(&self) -> &'a str {
        match *self {
            Self::Replace { old_text, .. } => old_text,
            Self::InsertAfter { anchor_text, .. } => anchor_text,
        }
    }

    /// The text the edit puts in.
    pub(super) fn new_text(&self) -> &'a str {
        match *self {
            Self::Replace { new_text, .. } | Self::InsertAfter { new_text, .. } => new_text,
        }
    }

    /// The occurrence asked for, 1-indexed.
    pub(super) fn occurrence(&self) -> Option<u32> {
        match *self {
            Self::Replace { occurrence, .. } | Self::InsertAfter { occurrence, .. } => occurrence,
        }
    }

    /// The name of the selector's field, for messages.
    pub(super) fn field(&self) -> &'static str {
        match self {
            Self::Replace { .. } => "old_text",
            Self::InsertAfter { .. } => "anchor_text",
        }
    }
}

/// One batch, as received.
#[derive(Debug, Clone, Copy)]
pub struct EditRequest<'a> {
    /// Worktree-relative path (see [`crate::path::segments`]).
    pub path: &'a str,
    /// The contract's `writable_paths` patterns.
    pub writable_paths: &'a [String],
    /// The contract's `private_paths` patterns (private wins over writable).
    pub private_paths: &'a [String],
    /// The revision the caller saw, or `None` when it never read the file.
    pub expected_sha256: Option<&'a str>,
    /// The edits; between 1 and [`MAX_EDITS`](super::MAX_EDITS).
    pub edits: &'a [EditOp<'a>],
}

/// What is wrong with a batch; each problem names one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ProblemCode {
    /// The selector is empty.
    SelectorEmpty,
    /// The file's line endings are mixed or contain a bare CR, and the edit's text
    /// contains a line break that would have to be normalized.
    LineEndingsUnsupported,
    /// The edit changes nothing (`new_text` equals `old_text`, or an empty insertion).
    NoOpEdit,
    /// The selector occurs nowhere.
    AnchorMissing,
    /// The selector occurs more than once and no `occurrence` was given.
    AnchorAmbiguous,
    /// `occurrence` is not between 1 and the number of occurrences.
    OccurrenceOutOfRange,
    /// Two replacements overlap.
    EditsOverlap,
    /// Two insertions at one point.
    InsertionsCollide,
    /// An insertion on the boundary or inside of a replacement.
    InsertionInReplacement,
    /// The batch as a whole leaves the file unchanged.
    NoOpBatch,
}

impl ProblemCode {
    /// The protocol's spelling, e.g. `OCCURRENCE_OUT_OF_RANGE`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SelectorEmpty => "SELECTOR_EMPTY",
            Self::LineEndingsUnsupported => "LINE_ENDINGS_UNSUPPORTED",
            Self::NoOpEdit => "NO_OP_EDIT",
            Self::AnchorMissing => "ANCHOR_MISSING",
            Self::AnchorAmbiguous => "ANCHOR_AMBIGUOUS",
            Self::OccurrenceOutOfRange => "OCCURRENCE_OUT_OF_RANGE",
            Self::EditsOverlap => "EDITS_OVERLAP",
            Self::InsertionsCollide => "INSERTIONS_COLLIDE",
            Self::InsertionInReplacement => "INSERTION_IN_REPLACEMENT",
            Self::NoOpBatch => "NO_OP_BATCH",
        }
    }
}

/// One occurrence of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectorMatch {
    /// Its `occurrence` number, 1-indexed.
    pub occurrence: u32,
    /// The line it starts on, 1-indexed.
    pub line: u32,
    /// That line's text (cut at [`MAX_QUOTE_BYTES`](super::MAX_QUOTE_BYTES)).
    pub text: String,
}

/// The nearest thing to a missing selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NearMiss {
    /// The file has the selector with different whitespace.
    Whitespace {
        /// The line where it starts.
        line: u32,
        /// The file's exact text (whole lines for a multi-line selector).
        text: String,
    },
    /// The closest candidate matches the selector's first lines and then diverges.
    Diverges {
        /// The selector line (1-indexed) that does not match.
        selector_line: u32,
        /// That selector line.
        selector_text: String,
        /// The file line (1-indexed) it was compared with.
        line: u32,
        /// That file line.
        text: String,
    },
    /// Only a prefix of the selector occurs.
    Prefix {
        /// Where the prefix first occurs.
        line: u32,
        /// The prefix.
        prefix: String,
        /// Its length in characters.
        matched_chars: u32,
        /// The selector's length in characters.
        selector_chars: u32,
        /// The file line where it occurs.
        text: String,
    },
}

/// One problem of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The edit's index in the batch (0-indexed); `None` for [`ProblemCode::NoOpBatch`].
    pub index: Option<u32>,
    /// What is wrong.
    pub code: ProblemCode,
    /// A human-readable explanation.
    pub message: String,
    /// How often the selector occurs (0 when not counted).
    pub match_count: u32,
    /// The first [`MAX_LISTED_MATCHES`](super::MAX_LISTED_MATCHES) occurrences, for ambiguous and out-of-range selectors.
    pub matches: Vec<SelectorMatch>,
    /// For a missing selector, its nearest near miss, if any.
    pub near_miss: Option<NearMiss>,
    /// For a conflict, the index of the earlier edit it conflicts with.
    pub conflicts_with: Option<u32>,
}

/// A line range, 1-indexed and inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineRange {
    /// First line.
    pub start_line: u32,
    /// Last line.
    pub end_line: u32,
}

/// One region of the preview.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// First line shown.
    pub start_line: u32,
    /// Last line shown.
    pub end_line: u32,
    /// The lines, each ended by `\n` (long lines cut at [`MAX_QUOTE_BYTES`](super::MAX_QUOTE_BYTES)).
    pub text: String,
}

/// A decided batch, before hashing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The complete new content (BOM included).
    pub content: Vec<u8>,
    /// The changed line ranges of the new content, in order.
    pub changed: Vec<LineRange>,
    /// The preview, at most [`MAX_PREVIEW_BYTES`](super::MAX_PREVIEW_BYTES) of text.
    pub preview: Vec<Hunk>,
    /// Lines of the preview left out by the byte cap.
    pub preview_omitted_lines: u32,
}

/// A decided batch: what to publish and what to tell the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditPlan {
    /// What the host must publish.
    pub plan: Plan,
    /// See [`Applied::changed`].
    pub changed: Vec<LineRange>,
    /// See [`Applied::preview`].
    pub preview: Vec<Hunk>,
    /// See [`Applied::preview_omitted_lines`].
    pub preview_omitted_lines: u32,
}

/// A refused batch: every problem (up to [`MAX_PROBLEMS`](super::MAX_PROBLEMS)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// A summary naming the problems.
    pub message: String,
    /// The problems, in edit order.
    pub problems: Vec<Problem>,
    /// Problems found beyond [`MAX_PROBLEMS`](super::MAX_PROBLEMS).
    pub omitted: u32,
}

/// Why no plan was produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditError {
    /// The request is malformed; not a policy decision.
    InvalidRequest(String),
    /// A gate refused (never [`RefusalCode::RevisionStale`](crate::gates::RefusalCode::RevisionStale): see [`EditError::Stale`]).
    Refused(Refusal),
    /// The file's revision is not the expected one.
    Stale {
        /// Why, naming both revisions.
        message: String,
        /// The revision the file holds now.
        current: Revision,
    },
    /// The batch itself was refused.
    Rejected(Rejection),
}
