//! Protocol responses: one compact JSON line, fields always in the order
//! `version, ok, code, message[, result]`, and the typed results of each operation.

use serde::Serialize;

use super::VERSION;
use crate::code::{Code, Failure};

/// The result of a successful `replace`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplaceResult {
    /// The edited path.
    pub path: String,
    /// The file's revision after the edit.
    pub sha256: String,
}

/// The result of a successful `read`: one page of the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReadResult {
    /// The read path.
    pub path: String,
    /// The revision of the whole file.
    pub sha256: String,
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
    /// The page's lines exactly as in the file.
    pub text: String,
    /// The `offset` of the next page, or `null` at the end.
    pub next_offset: Option<u32>,
    /// What was shown and how to continue, or `null` at the end.
    pub notice: Option<String>,
}

/// A line range, 1-indexed and inclusive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineRange {
    /// First line.
    pub start_line: u32,
    /// Last line.
    pub end_line: u32,
}

/// One region of an edit's preview.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hunk {
    /// First line shown.
    pub start_line: u32,
    /// Last line shown.
    pub end_line: u32,
    /// The lines, each ended by `\n`.
    pub text: String,
}

/// The result of a successful `edit`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EditResult {
    /// The edited path.
    pub path: String,
    /// The file's revision after the edit.
    pub sha256: String,
    /// The changed line ranges of the new content.
    pub changed: Vec<LineRange>,
    /// The changed regions with two lines of context, at most 8192 bytes of text.
    pub preview: Vec<Hunk>,
    /// Preview lines left out by the cap.
    pub preview_omitted_lines: u32,
}

/// One occurrence of a selector.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SelectorMatch {
    /// Its occurrence number, 1-indexed.
    pub occurrence: u32,
    /// The line it starts on.
    pub line: u32,
    /// That line's text.
    pub text: String,
}

/// The nearest near miss of a missing selector.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NearMiss {
    /// The selector with different whitespace.
    Whitespace {
        /// Where it starts.
        line: u32,
        /// The file's exact text.
        text: String,
    },
    /// The closest candidate diverges at a selector line.
    Diverges {
        /// The selector line (1-indexed) that does not match.
        selector_line: u32,
        /// Its text.
        selector_text: String,
        /// The file line compared with it.
        line: u32,
        /// Its text.
        text: String,
    },
    /// Only a prefix of the selector occurs.
    Prefix {
        /// Where it first occurs.
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

/// One problem of a refused batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The edit's 0-based index, or `null` for `NO_OP_BATCH`.
    pub index: Option<u32>,
    /// The problem's code.
    pub code: Code,
    /// Why.
    pub message: String,
    /// How often the selector occurs (ambiguous and out-of-range selectors), else 0.
    pub match_count: u32,
    /// The first 8 occurrences (ambiguous and out-of-range selectors).
    pub matches: Vec<SelectorMatch>,
    /// For a missing selector, or `null`.
    pub near_miss: Option<NearMiss>,
    /// For a conflict, the earlier edit's index, or `null`.
    pub conflicts_with: Option<u32>,
}

/// The details of a failure, in `result`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EditRejection {
    /// Every problem of the batch, in edit order (at most 100).
    pub problems: Vec<Problem>,
    /// Problems found beyond those listed.
    pub problems_omitted: u32,
}

/// The details of a stale revision found by the component.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StaleDetails {
    /// The revision the file holds now.
    pub current_sha256: String,
}

/// What a response's `result` holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Payload {
    /// A `replace` success.
    Replace(ReplaceResult),
    /// A `read` success.
    Read(ReadResult),
    /// An `edit` success.
    Edit(EditResult),
    /// An `edit` refused for its batch.
    Rejected(EditRejection),
    /// An `edit` refused for a stale revision.
    Stale(StaleDetails),
    /// A `list` success.
    List(crate::operation::ListResult),
    /// A `search` success.
    Search(crate::operation::SearchResult),
    /// A `write` success.
    Write(crate::operation::WriteResult),
    /// A `delete` success.
    Delete(crate::operation::DeleteResult),
}

/// One protocol response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// Which operation answered; decides whether a `result` field is present.
    pub shape: Shape,
    /// The outcome; `Ok` for success.
    pub code: Code,
    /// Empty on success, otherwise why.
    pub message: String,
    /// The operation's result on success; typed details on some failures.
    pub result: Option<Payload>,
}

/// Whether a response carries a `result` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Four fields: `version, ok, code, message`.
    Check,
    /// Five fields: `… , result` (every operation but `check`).
    WithResult,
}

impl Response {
    pub(super) fn failure(shape: Shape, failure: Failure) -> Self {
        Self {
            shape,
            code: failure.code,
            message: failure.message,
            result: None,
        }
    }

    /// The compact JSON line (without the newline).
    #[must_use]
    pub fn to_json(&self) -> String {
        #[derive(Serialize)]
        struct Four<'a> {
            version: u64,
            ok: bool,
            code: &'a str,
            message: &'a str,
        }
        #[derive(Serialize)]
        struct Five<'a> {
            version: u64,
            ok: bool,
            code: &'a str,
            message: &'a str,
            result: &'a Option<Payload>,
        }
        let ok = self.code == Code::Ok;
        let rendered = match self.shape {
            Shape::Check => serde_json::to_string(&Four {
                version: VERSION,
                ok,
                code: self.code.as_str(),
                message: &self.message,
            }),
            Shape::WithResult => serde_json::to_string(&Five {
                version: VERSION,
                ok,
                code: self.code.as_str(),
                message: &self.message,
                result: &self.result,
            }),
        };
        rendered.unwrap_or_else(|_| {
            r#"{"version":1,"ok":false,"code":"INTERNAL_ERROR","message":"cannot render the response","result":null}"#
                .to_string()
        })
    }

    /// The exit status for this response.
    #[must_use]
    pub fn exit_status(&self) -> u8 {
        self.code.exit_status()
    }
}
