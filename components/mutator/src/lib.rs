//! satyrn's mutator as a WASI component.
//!
//! A thin binding: the decisions live in `satyrn-mutator-core`; this crate converts the
//! WIT types, implements [`Worktree`](satyrn_mutator_core::worktree::Worktree) over the
//! single read-only preopen ([`preopen`]), and provides what a `no_std` guest must
//! define itself ([`runtime`]).
#![no_std]

extern crate alloc;

mod preopen;
mod runtime;

use alloc::string::String;
use alloc::vec::Vec;

use satyrn_mutator_core::{edit, fnmatch, read, replace};

wit_bindgen::generate!({
    world: "mutator-component",
    path: "../../wit",
    with: {
        "wasi:filesystem/types@0.2.12": wasip2::filesystem::types,
        "wasi:filesystem/preopens@0.2.12": wasip2::filesystem::preopens,
        "wasi:io/streams@0.2.12": wasip2::io::streams,
        "wasi:io/error@0.2.12": wasip2::io::error,
        "wasi:io/poll@0.2.12": wasip2::io::poll,
        "wasi:clocks/wall-clock@0.2.12": wasip2::clocks::wall_clock,
    },
});

use exports::satyrn::mutator::mutator::Guest;
use satyrn::mutator::types as wit;

struct Component;

impl Guest for Component {
    fn replace(request: wit::ReplaceRequest) -> Result<wit::Plan, wit::ReplaceError> {
        let worktree = match preopen::Preopen::single() {
            Ok(w) => w,
            Err(e) => {
                return Err(wit::ReplaceError::Refused(wit::Refusal {
                    code: wit::RefusalCode::MutationFailed,
                    message: e.0,
                }));
            }
        };
        let core_request = replace::ReplaceRequest {
            path: &request.path,
            writable_paths: &request.writable_paths,
            expected_sha256: request.expected_sha256.as_deref(),
            old_text: &request.old_text,
            new_text: &request.new_text,
        };
        match replace::decide(&worktree, &core_request) {
            Ok(plan) => Ok(wit::Plan {
                path: plan.path,
                base_sha256: plan.base.to_hex(),
                new_content: plan.new_content,
                next_sha256: plan.next.to_hex(),
            }),
            Err(replace::ReplaceError::InvalidRequest(m)) => {
                Err(wit::ReplaceError::InvalidRequest(m))
            }
            Err(replace::ReplaceError::Refused(r)) => {
                Err(wit::ReplaceError::Refused(wit::Refusal {
                    code: refusal_code(r.code),
                    message: r.message,
                }))
            }
        }
    }

    fn revision(path: String, writable_paths: Vec<String>) -> Result<String, wit::RevisionError> {
        let worktree =
            preopen::Preopen::single().map_err(|e| wit::RevisionError::NotEditable(e.0))?;
        match replace::revision(&worktree, &path, &writable_paths) {
            Ok(r) => Ok(r.to_hex()),
            Err(replace::RevisionError::InvalidRequest(m)) => {
                Err(wit::RevisionError::InvalidRequest(m))
            }
            Err(replace::RevisionError::Undeclared) => Err(wit::RevisionError::Undeclared),
            Err(replace::RevisionError::NotEditable(m)) => Err(wit::RevisionError::NotEditable(m)),
        }
    }

    fn matches(path: String, patterns: Vec<String>) -> bool {
        fnmatch::matches_any(&path, &patterns)
    }

    fn read(request: wit::ReadRequest) -> Result<wit::ReadPage, wit::ReadError> {
        let worktree = preopen::Preopen::single().map_err(|e| {
            wit::ReadError::Refused(wit::ReadRefusal {
                code: wit::ReadCode::Unavailable,
                message: e.0,
            })
        })?;
        let core_request = read::ReadRequest {
            path: &request.path,
            writable_paths: &request.writable_paths,
            offset: request.offset,
            limit: request.limit,
        };
        match read::read(&worktree, &core_request) {
            Ok(p) => Ok(wit::ReadPage {
                path: p.path,
                sha256: p.revision.to_hex(),
                writable: p.writable,
                bom: p.bom,
                offset: p.offset,
                lines: p.lines,
                total_lines: p.total_lines,
                text: p.text,
                next_offset: p.next_offset,
                notice: p.notice,
            }),
            Err(read::ReadError::InvalidRequest(m)) => Err(wit::ReadError::InvalidRequest(m)),
            Err(read::ReadError::Refused { code, message }) => {
                Err(wit::ReadError::Refused(wit::ReadRefusal {
                    code: match code {
                        read::ReadCode::Unavailable => wit::ReadCode::Unavailable,
                        read::ReadCode::NotText => wit::ReadCode::NotText,
                        read::ReadCode::TooLarge => wit::ReadCode::TooLarge,
                        read::ReadCode::OutOfRange => wit::ReadCode::OutOfRange,
                    },
                    message,
                }))
            }
        }
    }

    fn edit(request: wit::EditRequest) -> Result<wit::EditPlan, wit::EditError> {
        let worktree = preopen::Preopen::single().map_err(|e| {
            wit::EditError::Refused(wit::Refusal {
                code: wit::RefusalCode::MutationFailed,
                message: e.0,
            })
        })?;
        let edits: Vec<edit::EditOp<'_>> = request
            .edits
            .iter()
            .map(|op| match op {
                wit::EditOp::Replace(r) => edit::EditOp::Replace {
                    old_text: &r.old_text,
                    new_text: &r.new_text,
                    occurrence: r.occurrence,
                },
                wit::EditOp::InsertAfter(i) => edit::EditOp::InsertAfter {
                    anchor_text: &i.anchor_text,
                    new_text: &i.new_text,
                    occurrence: i.occurrence,
                },
            })
            .collect();
        let core_request = edit::EditRequest {
            path: &request.path,
            writable_paths: &request.writable_paths,
            expected_sha256: request.expected_sha256.as_deref(),
            edits: &edits,
        };
        match edit::decide(&worktree, &core_request) {
            Ok(p) => Ok(wit::EditPlan {
                plan: wit::Plan {
                    path: p.plan.path,
                    base_sha256: p.plan.base.to_hex(),
                    new_content: p.plan.new_content,
                    next_sha256: p.plan.next.to_hex(),
                },
                changed: p
                    .changed
                    .into_iter()
                    .map(|r| wit::LineRange {
                        start_line: r.start_line,
                        end_line: r.end_line,
                    })
                    .collect(),
                preview: p
                    .preview
                    .into_iter()
                    .map(|h| wit::PreviewHunk {
                        start_line: h.start_line,
                        end_line: h.end_line,
                        text: h.text,
                    })
                    .collect(),
                preview_omitted_lines: p.preview_omitted_lines,
            }),
            Err(edit::EditError::InvalidRequest(m)) => Err(wit::EditError::InvalidRequest(m)),
            Err(edit::EditError::Refused(r)) => Err(wit::EditError::Refused(wit::Refusal {
                code: refusal_code(r.code),
                message: r.message,
            })),
            Err(edit::EditError::Stale { message, current }) => {
                Err(wit::EditError::Stale(wit::Stale {
                    message,
                    current_sha256: current.to_hex(),
                }))
            }
            Err(edit::EditError::Rejected(r)) => Err(wit::EditError::Rejected(wit::Rejection {
                message: r.message,
                problems: r.problems.into_iter().map(problem).collect(),
                omitted: r.omitted,
            })),
        }
    }
}

fn problem(p: edit::Problem) -> wit::Problem {
    wit::Problem {
        index: p.index,
        code: match p.code {
            edit::ProblemCode::SelectorEmpty => wit::ProblemCode::SelectorEmpty,
            edit::ProblemCode::LineEndingsUnsupported => wit::ProblemCode::LineEndingsUnsupported,
            edit::ProblemCode::NoOpEdit => wit::ProblemCode::NoOpEdit,
            edit::ProblemCode::AnchorMissing => wit::ProblemCode::AnchorMissing,
            edit::ProblemCode::AnchorAmbiguous => wit::ProblemCode::AnchorAmbiguous,
            edit::ProblemCode::OccurrenceOutOfRange => wit::ProblemCode::OccurrenceOutOfRange,
            edit::ProblemCode::EditsOverlap => wit::ProblemCode::EditsOverlap,
            edit::ProblemCode::InsertionsCollide => wit::ProblemCode::InsertionsCollide,
            edit::ProblemCode::InsertionInReplacement => wit::ProblemCode::InsertionInReplacement,
            edit::ProblemCode::NoOpBatch => wit::ProblemCode::NoOpBatch,
        },
        message: p.message,
        match_count: p.match_count,
        matches: p
            .matches
            .into_iter()
            .map(|m| wit::SelectorMatch {
                occurrence: m.occurrence,
                line: m.line,
                text: m.text,
            })
            .collect(),
        near_miss: p.near_miss.map(|n| match n {
            edit::NearMiss::Whitespace { line, text } => {
                wit::NearMiss::Whitespace(wit::WhitespaceMiss { line, text })
            }
            edit::NearMiss::Diverges {
                selector_line,
                selector_text,
                line,
                text,
            } => wit::NearMiss::Diverges(wit::Divergence {
                selector_line,
                selector_text,
                line,
                text,
            }),
            edit::NearMiss::Prefix {
                line,
                prefix,
                matched_chars,
                selector_chars,
                text,
            } => wit::NearMiss::Prefix(wit::PrefixMiss {
                line,
                prefix,
                matched_chars,
                selector_chars,
                text,
            }),
        }),
        conflicts_with: p.conflicts_with,
    }
}

fn refusal_code(code: replace::RefusalCode) -> wit::RefusalCode {
    match code {
        replace::RefusalCode::PathUndeclared => wit::RefusalCode::PathUndeclared,
        replace::RefusalCode::RevisionUnavailable => wit::RefusalCode::RevisionUnavailable,
        replace::RefusalCode::RevisionStale => wit::RefusalCode::RevisionStale,
        replace::RefusalCode::AnchorMissing => wit::RefusalCode::AnchorMissing,
        replace::RefusalCode::AnchorAmbiguous => wit::RefusalCode::AnchorAmbiguous,
        replace::RefusalCode::MutationFailed => wit::RefusalCode::MutationFailed,
    }
}

export!(Component);
