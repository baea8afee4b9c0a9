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
mod search;

use alloc::string::String;
use alloc::vec::Vec;

use satyrn_mutator_core::{
    change_set, delete, edit, fnmatch, list, read, replace, revision_map, tree, write,
};

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
        let worktree = preopen::Preopen::single().map_err(mutation_failed)?;
        let core_request = replace::ReplaceRequest {
            path: &request.path,
            writable_paths: &request.writable_paths,
            private_paths: &request.private_paths,
            expected_sha256: request.expected_sha256.as_deref(),
            old_text: &request.old_text,
            new_text: &request.new_text,
        };
        replace::decide(&worktree, &core_request)
            .map(Into::into)
            .map_err(Into::into)
    }

    fn revision(
        path: String,
        writable_paths: Vec<String>,
        private_paths: Vec<String>,
    ) -> Result<String, wit::RevisionError> {
        let worktree =
            preopen::Preopen::single().map_err(|e| wit::RevisionError::NotEditable(e.0))?;
        replace::revision(&worktree, &path, &writable_paths, &private_paths)
            .map(|r| r.to_hex())
            .map_err(Into::into)
    }

    fn revisions(
        paths: Vec<String>,
        writable_paths: Vec<String>,
        private_paths: Vec<String>,
    ) -> Vec<Result<String, wit::RevisionError>> {
        let worktree = match preopen::Preopen::single() {
            Ok(worktree) => worktree,
            Err(e) => {
                return paths
                    .iter()
                    .map(|_| Err(wit::RevisionError::NotEditable(e.0.clone())))
                    .collect();
            }
        };
        revision_map::revisions(&worktree, &paths, &writable_paths, &private_paths)
            .into_iter()
            .map(|r| r.map(|r| r.to_hex()).map_err(Into::into))
            .collect()
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
            private_paths: &request.private_paths,
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
            Err(e) => Err(e.into()),
        }
    }

    fn edit(request: wit::EditRequest) -> Result<wit::EditPlan, wit::EditError> {
        let worktree = preopen::Preopen::single().map_err(|e| {
            wit::EditError::Refused(wit::Refusal {
                code: wit::RefusalCode::MutationFailed,
                message: e.0,
            })
        })?;
        let edits: Vec<edit::EditOp<'_>> = request.edits.iter().map(edit_op).collect();
        let core_request = edit::EditRequest {
            path: &request.path,
            writable_paths: &request.writable_paths,
            private_paths: &request.private_paths,
            expected_sha256: request.expected_sha256.as_deref(),
            edits: &edits,
        };
        match edit::decide(&worktree, &core_request) {
            Ok(p) => Ok(wit::EditPlan {
                plan: p.plan.into(),
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
            Err(edit::EditError::Rejected(r)) => Err(wit::EditError::Rejected(rejection(r))),
        }
    }

    fn list(request: wit::ListRequest) -> Result<wit::ListPage, wit::ReadError> {
        let worktree = preopen::Preopen::single().map_err(unavailable)?;
        let page = list::list(
            &worktree,
            &list::ListRequest {
                path: request.path.as_deref(),
                pattern: request.pattern.as_deref(),
                recursive: request.recursive,
                cursor: request.cursor.as_deref(),
                limit: request.limit,
                writable_paths: &request.writable_paths,
                private_paths: &request.private_paths,
            },
        )?;
        Ok(wit::ListPage {
            entries: page
                .entries
                .into_iter()
                .map(|e| wit::ListEntry {
                    path: e.path,
                    kind: e.kind.into(),
                    size: e.size,
                    writable: e.writable,
                })
                .collect(),
            next_cursor: page.next_cursor,
            hidden: page.hidden,
            unreadable: page.unreadable,
            notice: page.notice,
        })
    }

    fn search(request: wit::SearchRequest) -> Result<wit::SearchPage, wit::ReadError> {
        search::search(request)
    }

    fn write(request: wit::WriteRequest) -> Result<wit::WritePlan, wit::ReplaceError> {
        let worktree = preopen::Preopen::single().map_err(mutation_failed)?;
        let plan = write::decide(
            &worktree,
            &write::WriteRequest {
                path: &request.path,
                writable_paths: &request.writable_paths,
                private_paths: &request.private_paths,
                expected_sha256: request.expected_sha256.as_deref(),
                content: &request.content,
            },
        )?;
        Ok(match plan {
            write::WritePlan::Create {
                path,
                content,
                next,
            } => wit::WritePlan::Create(wit::CreatedFile {
                path,
                content,
                next_sha256: next.to_hex(),
            }),
            write::WritePlan::Overwrite(plan) => wit::WritePlan::Overwrite(plan.into()),
        })
    }

    fn delete_file(request: wit::DeleteRequest) -> Result<wit::DeletePlan, wit::ReplaceError> {
        let worktree = preopen::Preopen::single().map_err(mutation_failed)?;
        let plan = delete::decide(
            &worktree,
            &delete::DeleteRequest {
                path: &request.path,
                writable_paths: &request.writable_paths,
                private_paths: &request.private_paths,
                expected_sha256: request.expected_sha256.as_deref(),
            },
        )?;
        Ok(wit::DeletePlan {
            path: plan.path,
            base_sha256: plan.base.to_hex(),
        })
    }

    fn change_set(
        request: wit::ChangeSetRequest,
    ) -> Result<Vec<wit::FileChange>, wit::ChangeSetError> {
        let worktree = preopen::Preopen::single().map_err(|e| {
            wit::ChangeSetError::InvalidRequest(alloc::format!("the worktree: {}", e.0))
        })?;
        let batches: Vec<Vec<edit::EditOp<'_>>> = request
            .ops
            .iter()
            .map(|op| match op {
                wit::ChangeOp::Edit(e) => e.edits.iter().map(edit_op).collect(),
                _ => Vec::new(),
            })
            .collect();
        let ops: Vec<change_set::ChangeOp<'_>> = request
            .ops
            .iter()
            .zip(&batches)
            .map(|(op, batch)| match op {
                wit::ChangeOp::Edit(e) => change_set::ChangeOp {
                    path: &e.path,
                    expected_sha256: e.expected_sha256.as_deref(),
                    action: change_set::Action::Edit(batch),
                    line: None,
                },
                wit::ChangeOp::Write(w) => change_set::ChangeOp {
                    path: &w.path,
                    expected_sha256: w.expected_sha256.as_deref(),
                    action: change_set::Action::Write(&w.content),
                    line: None,
                },
                wit::ChangeOp::Delete(d) => change_set::ChangeOp {
                    path: &d.path,
                    expected_sha256: d.expected_sha256.as_deref(),
                    action: change_set::Action::Delete,
                    line: None,
                },
                wit::ChangeOp::Move(m) => change_set::ChangeOp {
                    path: &m.path,
                    expected_sha256: m.expected_sha256.as_deref(),
                    action: change_set::Action::Move {
                        to: &m.to,
                        to_expected_sha256: m.to_expected_sha256.as_deref(),
                    },
                    line: None,
                },
            })
            .collect();
        change_set::decide(
            &worktree,
            &change_set::ChangeSetRequest {
                ops: &ops,
                writable_paths: &request.writable_paths,
                private_paths: &request.private_paths,
            },
        )
        .map(file_changes)
        .map_err(change_set_error)
    }

    fn apply_patch(
        request: wit::PatchRequest,
    ) -> Result<Vec<wit::FileChange>, wit::ChangeSetError> {
        let worktree = preopen::Preopen::single().map_err(|e| {
            wit::ChangeSetError::InvalidRequest(alloc::format!("the worktree: {}", e.0))
        })?;
        change_set::decide_patch(
            &worktree,
            &change_set::PatchRequest {
                patch: &request.patch,
                expected_sha256: &request.expected_sha256,
                writable_paths: &request.writable_paths,
                private_paths: &request.private_paths,
                agent_root: request.agent_root.as_deref(),
            },
        )
        .map(file_changes)
        .map_err(change_set_error)
    }
}

fn edit_op(op: &wit::EditOp) -> edit::EditOp<'_> {
    match op {
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
    }
}

fn file_changes(changes: Vec<change_set::FileChange>) -> Vec<wit::FileChange> {
    changes
        .into_iter()
        .map(|c| wit::FileChange {
            path: c.path,
            base_sha256: c.base.map(|r| r.to_hex()),
            content: c.content,
            next_sha256: c.next.map(|r| r.to_hex()),
            mode_from: c.mode_from,
        })
        .collect()
}

fn rejection(r: edit::Rejection) -> wit::Rejection {
    wit::Rejection {
        message: r.message,
        problems: r.problems.into_iter().map(problem).collect(),
        omitted: r.omitted,
    }
}

fn change_set_error(e: change_set::ChangeSetError) -> wit::ChangeSetError {
    use satyrn_mutator_core::patch::HunkProblemCode as H;
    match e {
        change_set::ChangeSetError::InvalidRequest(m) => wit::ChangeSetError::InvalidRequest(m),
        change_set::ChangeSetError::Patch(p) => {
            wit::ChangeSetError::PatchInvalid(wit::PatchInvalid {
                line: u32::try_from(p.line).unwrap_or(u32::MAX),
                kind: String::from(p.code.kind()),
                message: p.message,
            })
        }
        change_set::ChangeSetError::Rejected { message, problems } => {
            wit::ChangeSetError::Rejected(wit::ChangeSetRejection {
                message,
                problems: problems
                    .into_iter()
                    .map(|p| wit::OpProblem {
                        index: p.index,
                        line: p.line,
                        path: p.path,
                        code: op_code(p.code),
                        message: p.message,
                        current_sha256: p.current.map(|r| r.to_hex()),
                        edits: p.edits.map(rejection),
                        hunks: p
                            .hunks
                            .into_iter()
                            .map(|h| wit::HunkProblem {
                                hunk: u32::try_from(h.hunk).unwrap_or(u32::MAX),
                                line: u32::try_from(h.line).unwrap_or(u32::MAX),
                                code: match h.code {
                                    H::LineEndingsUnsupported => {
                                        wit::HunkCode::LineEndingsUnsupported
                                    }
                                    H::AnchorMissing => wit::HunkCode::AnchorMissing,
                                    H::AnchorAmbiguous => wit::HunkCode::AnchorAmbiguous,
                                    H::ContextMissing => wit::HunkCode::ContextMissing,
                                    H::ContextAmbiguous => wit::HunkCode::ContextAmbiguous,
                                    H::NoPosition => wit::HunkCode::NoPosition,
                                },
                                message: h.message,
                            })
                            .collect(),
                    })
                    .collect(),
            })
        }
    }
}

fn op_code(code: change_set::OpCode) -> wit::OpCode {
    use satyrn_mutator_core::gates::RefusalCode as R;
    match code {
        change_set::OpCode::Refused(R::PathPrivate) => wit::OpCode::PathPrivate,
        change_set::OpCode::Refused(R::PathUndeclared) => wit::OpCode::PathUndeclared,
        change_set::OpCode::Refused(R::RevisionUnavailable) => wit::OpCode::RevisionUnavailable,
        change_set::OpCode::Refused(R::RevisionStale) => wit::OpCode::RevisionStale,
        change_set::OpCode::Refused(R::TargetExists) => wit::OpCode::TargetExists,
        change_set::OpCode::Refused(R::MutationFailed | R::AnchorMissing | R::AnchorAmbiguous) => {
            wit::OpCode::MutationFailed
        }
        change_set::OpCode::NotText => wit::OpCode::NotText,
        change_set::OpCode::EditsRejected => wit::OpCode::EditsRejected,
        change_set::OpCode::HunksRefused => wit::OpCode::HunksRefused,
        change_set::OpCode::AddExists => wit::OpCode::AddExists,
        change_set::OpCode::MoveExists => wit::OpCode::MoveExists,
        change_set::OpCode::FileMissing => wit::OpCode::FileMissing,
        change_set::OpCode::TooLarge => wit::OpCode::TooLarge,
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

fn unavailable(e: satyrn_mutator_core::worktree::NotEditable) -> wit::ReadError {
    wit::ReadError::Refused(wit::ReadRefusal {
        code: wit::ReadCode::Unavailable,
        message: e.0,
    })
}

fn mutation_failed(e: satyrn_mutator_core::worktree::NotEditable) -> wit::ReplaceError {
    wit::ReplaceError::Refused(wit::Refusal {
        code: wit::RefusalCode::MutationFailed,
        message: e.0,
    })
}

impl From<read::ReadError> for wit::ReadError {
    fn from(e: read::ReadError) -> Self {
        match e {
            read::ReadError::InvalidRequest(m) => Self::InvalidRequest(m),
            read::ReadError::Refused { code, message } => Self::Refused(wit::ReadRefusal {
                code: match code {
                    read::ReadCode::Unavailable => wit::ReadCode::Unavailable,
                    read::ReadCode::NotText => wit::ReadCode::NotText,
                    read::ReadCode::TooLarge => wit::ReadCode::TooLarge,
                    read::ReadCode::OutOfRange => wit::ReadCode::OutOfRange,
                    read::ReadCode::Private => wit::ReadCode::Private,
                },
                message,
            }),
        }
    }
}

impl From<replace::RevisionError> for wit::RevisionError {
    fn from(e: replace::RevisionError) -> Self {
        match e {
            replace::RevisionError::InvalidRequest(m) => Self::InvalidRequest(m),
            replace::RevisionError::Undeclared => Self::Undeclared,
            replace::RevisionError::Private => Self::Private,
            replace::RevisionError::NotEditable(m) => Self::NotEditable(m),
        }
    }
}

impl From<replace::ReplaceError> for wit::ReplaceError {
    fn from(e: replace::ReplaceError) -> Self {
        match e {
            replace::ReplaceError::InvalidRequest(m) => Self::InvalidRequest(m),
            replace::ReplaceError::Refused(r) => Self::Refused(wit::Refusal {
                code: refusal_code(r.code),
                message: r.message,
            }),
        }
    }
}

impl From<replace::Plan> for wit::Plan {
    fn from(plan: replace::Plan) -> Self {
        Self {
            path: plan.path,
            base_sha256: plan.base.to_hex(),
            new_content: plan.new_content,
            next_sha256: plan.next.to_hex(),
        }
    }
}

impl From<tree::EntryKind> for wit::EntryKind {
    fn from(kind: tree::EntryKind) -> Self {
        match kind {
            tree::EntryKind::File => Self::File,
            tree::EntryKind::Directory => Self::Directory,
            tree::EntryKind::Symlink => Self::Symlink,
            tree::EntryKind::Other => Self::Other,
        }
    }
}

fn refusal_code(code: replace::RefusalCode) -> wit::RefusalCode {
    match code {
        replace::RefusalCode::PathPrivate => wit::RefusalCode::PathPrivate,
        replace::RefusalCode::TargetExists => wit::RefusalCode::TargetExists,
        replace::RefusalCode::PathUndeclared => wit::RefusalCode::PathUndeclared,
        replace::RefusalCode::RevisionUnavailable => wit::RefusalCode::RevisionUnavailable,
        replace::RefusalCode::RevisionStale => wit::RefusalCode::RevisionStale,
        replace::RefusalCode::AnchorMissing => wit::RefusalCode::AnchorMissing,
        replace::RefusalCode::AnchorAmbiguous => wit::RefusalCode::AnchorAmbiguous,
        replace::RefusalCode::MutationFailed => wit::RefusalCode::MutationFailed,
    }
}

export!(Component);
