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

use satyrn_mutator_core::{fnmatch, replace};

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
            Err(replace::ReplaceError::InvalidRequest(m)) => Err(wit::ReplaceError::InvalidRequest(m)),
            Err(replace::ReplaceError::Refused(r)) => Err(wit::ReplaceError::Refused(wit::Refusal {
                code: refusal_code(r.code),
                message: r.message,
            })),
        }
    }

    fn revision(path: String, writable_paths: Vec<String>) -> Result<String, wit::RevisionError> {
        let worktree = preopen::Preopen::single().map_err(|e| wit::RevisionError::NotEditable(e.0))?;
        match replace::revision(&worktree, &path, &writable_paths) {
            Ok(r) => Ok(r.to_hex()),
            Err(replace::RevisionError::InvalidRequest(m)) => Err(wit::RevisionError::InvalidRequest(m)),
            Err(replace::RevisionError::Undeclared) => Err(wit::RevisionError::Undeclared),
            Err(replace::RevisionError::NotEditable(m)) => Err(wit::RevisionError::NotEditable(m)),
        }
    }

    fn matches(path: String, patterns: Vec<String>) -> bool {
        fnmatch::matches_any(&path, &patterns)
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
