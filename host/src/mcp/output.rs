//! The tools' structured results: the operation layer's results, converted once, with
//! absent values left out (never `null`, which a strict output schema would refuse).

use schemars::JsonSchema;
use serde::Serialize;

use crate::protocol::{EditResult, Hunk, LineRange, ReadResult};

/// `read`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(transform = super::args::portable)]
pub struct ReadOutput {
    /// The path, as asked.
    pub path: String,
    /// The revision of the whole file (what `edit` is based on; recorded by the session).
    pub sha256: String,
    /// Whether the task contract declares the file writable.
    pub writable: bool,
    /// Whether the file starts with a UTF-8 byte-order mark (not part of `text`).
    pub bom: bool,
    /// The first line shown, 1-indexed.
    pub offset: u32,
    /// How many lines are shown.
    pub lines: u32,
    /// How many lines the file has.
    pub total_lines: u32,
    /// The lines, exactly as in the file.
    pub text: String,
    /// Where the next page starts, when the file continues.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u32")]
    pub next_offset: Option<u32>,
    /// When the page is not the rest of the file: what was shown and how to continue.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub notice: Option<String>,
}

impl From<ReadResult> for ReadOutput {
    fn from(r: ReadResult) -> Self {
        Self {
            path: r.path,
            sha256: r.sha256,
            writable: r.writable,
            bom: r.bom,
            offset: r.offset,
            lines: r.lines,
            total_lines: r.total_lines,
            text: r.text,
            next_offset: r.next_offset,
            notice: r.notice,
        }
    }
}

/// A range of lines of the new file.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(transform = super::args::portable)]
pub struct LinesOutput {
    /// The first line, 1-indexed.
    pub start_line: u32,
    /// The last line.
    pub end_line: u32,
}

impl From<LineRange> for LinesOutput {
    fn from(r: LineRange) -> Self {
        Self {
            start_line: r.start_line,
            end_line: r.end_line,
        }
    }
}

/// A changed region of the new file with a little context.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(transform = super::args::portable)]
pub struct HunkOutput {
    /// The first line shown.
    pub start_line: u32,
    /// The last line shown.
    pub end_line: u32,
    /// Those lines.
    pub text: String,
}

impl From<Hunk> for HunkOutput {
    fn from(h: Hunk) -> Self {
        Self {
            start_line: h.start_line,
            end_line: h.end_line,
            text: h.text,
        }
    }
}

/// `edit`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(transform = super::args::portable)]
pub struct EditOutput {
    /// The path edited.
    pub path: String,
    /// The file's new revision (recorded by the session).
    pub sha256: String,
    /// The changed line ranges of the new file.
    pub changed: Vec<LinesOutput>,
    /// The changed regions with two lines of context.
    pub preview: Vec<HunkOutput>,
    /// Lines of preview left out to keep it short.
    pub preview_omitted_lines: u32,
}

impl From<EditResult> for EditOutput {
    fn from(r: EditResult) -> Self {
        Self {
            path: r.path,
            sha256: r.sha256,
            changed: r.changed.into_iter().map(Into::into).collect(),
            preview: r.preview.into_iter().map(Into::into).collect(),
            preview_omitted_lines: r.preview_omitted_lines,
        }
    }
}

/// `boundary`'s result: what this session may do.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(transform = super::args::portable)]
pub struct BoundaryOutput {
    /// The contract's id.
    pub contract_id: String,
    /// The task.
    pub task: String,
    /// The fnmatch patterns of the files that may be edited (`*` matches across `/`).
    pub writable_paths: Vec<String>,
    /// The fnmatch patterns of the paths that are never read, listed, searched or changed.
    pub private_paths: Vec<String>,
    /// The repository's current `HEAD` commit, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub head: Option<String>,
    /// The repository's root.
    pub repository: String,
}
