//! `read`: one page of a file, decided in the component. No lock: a read never publishes,
//! and every publish is an atomic rename.

use super::{Scope, internal, read_failure};
use crate::code::{Code, Failure};
use crate::engine;
use crate::protocol::ReadResult;

/// One read, as asked.
#[derive(Debug, Clone, Copy)]
pub struct ReadArgs<'a> {
    /// Worktree-relative path.
    pub path: &'a str,
    /// The first line, 1-indexed; `None` is 1.
    pub offset: Option<u32>,
    /// The most lines; `None` (or more than 2000) is 2000.
    pub limit: Option<u32>,
}

impl From<engine::ReadCode> for Code {
    fn from(code: engine::ReadCode) -> Self {
        match code {
            engine::ReadCode::Unavailable => Code::ReadUnavailable,
            engine::ReadCode::NotText => Code::ReadNotText,
            engine::ReadCode::TooLarge => Code::ReadTooLarge,
            engine::ReadCode::OutOfRange => Code::ReadOutOfRange,
            engine::ReadCode::Private => Code::PathPrivate,
        }
    }
}

/// Reads one page.
///
/// # Errors
///
/// The refusal, as a [`Failure`] with its code.
pub fn read(scope: Scope<'_>, args: ReadArgs<'_>) -> Result<ReadResult, Failure> {
    let mut mutator = scope
        .loaded
        .instantiate(scope.root.dir())
        .map_err(internal)?;
    let page = mutator
        .read(&engine::ReadRequest {
            path: args.path.to_string(),
            writable_paths: scope.contract.writable_paths.clone(),
            private_paths: scope.contract.private_paths.clone(),
            offset: args.offset,
            limit: args.limit,
        })
        .map_err(internal)?
        .map_err(read_failure)?;
    Ok(ReadResult {
        path: page.path,
        sha256: page.sha256,
        writable: page.writable,
        bom: page.bom,
        offset: page.offset,
        lines: page.lines,
        total_lines: page.total_lines,
        text: page.text,
        next_offset: page.next_offset,
        notice: page.notice,
    })
}
