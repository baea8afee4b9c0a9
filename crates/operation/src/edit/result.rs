//! The typed results of `edit`: a success (changed lines and a preview) and the details
//! of a refusal (every problem of a refused batch, or the current revision of a stale
//! file), each converted once from the component's records.

use schemars::JsonSchema;
use serde::Serialize;

use satyrn_code::Code;
use satyrn_engine as engine;

/// A line range, 1-indexed and inclusive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(transform = crate::schema::portable)]
pub struct LineRange {
    /// First line.
    pub start_line: u32,
    /// Last line.
    pub end_line: u32,
}

/// One region of an edit's preview.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(transform = crate::schema::portable)]
pub struct Hunk {
    /// First line shown.
    pub start_line: u32,
    /// Last line shown.
    pub end_line: u32,
    /// The lines, each ended by `\n`.
    pub text: String,
}

/// The result of a successful `edit`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(transform = crate::schema::portable)]
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

/// The details a refused `edit` (or change set) carries besides its code and message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum EditDetails {
    /// The batch was refused: every problem.
    Rejected(EditRejection),
    /// The revision was stale: the current one.
    Stale(StaleDetails),
    /// A change set was refused: every refused operation's problem.
    ChangeSet(crate::ChangeSetRejection),
}

impl From<engine::Problem> for Problem {
    fn from(p: engine::Problem) -> Self {
        Problem {
            index: p.index,
            code: p.code.into(),
            message: p.message,
            match_count: p.match_count,
            matches: p.matches.into_iter().map(SelectorMatch::from).collect(),
            near_miss: p.near_miss.map(NearMiss::from),
            conflicts_with: p.conflicts_with,
        }
    }
}

impl From<engine::NearMiss> for NearMiss {
    fn from(n: engine::NearMiss) -> Self {
        match n {
            engine::NearMiss::Whitespace(w) => NearMiss::Whitespace {
                line: w.line,
                text: w.text,
            },
            engine::NearMiss::Diverges(d) => NearMiss::Diverges {
                selector_line: d.selector_line,
                selector_text: d.selector_text,
                line: d.line,
                text: d.text,
            },
            engine::NearMiss::Prefix(x) => NearMiss::Prefix {
                line: x.line,
                prefix: x.prefix,
                matched_chars: x.matched_chars,
                selector_chars: x.selector_chars,
                text: x.text,
            },
        }
    }
}

impl From<engine::LineRange> for LineRange {
    fn from(r: engine::LineRange) -> Self {
        Self {
            start_line: r.start_line,
            end_line: r.end_line,
        }
    }
}

impl From<engine::PreviewHunk> for Hunk {
    fn from(h: engine::PreviewHunk) -> Self {
        Self {
            start_line: h.start_line,
            end_line: h.end_line,
            text: h.text,
        }
    }
}

impl From<engine::SelectorMatch> for SelectorMatch {
    fn from(m: engine::SelectorMatch) -> Self {
        Self {
            occurrence: m.occurrence,
            line: m.line,
            text: m.text,
        }
    }
}
