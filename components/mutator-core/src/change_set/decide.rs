//! The two ways into a change set: its operations ([`decide`]) and a patch
//! ([`decide_patch`]), each shape-checked, then planned over the worktree's gates.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::{
    Action, ChangeOp, ChangeSetError, FileChange, MAX_OPS, OpProblem, RevisionPolicy,
    WorktreeBases, plan,
};
use crate::patch::{Op, Patch};
use crate::revision::Revision;
use crate::tree::Tree;

/// A change set written as operations.
#[derive(Debug, Clone, Copy)]
pub struct ChangeSetRequest<'a> {
    /// The operations, in order (1 to [`MAX_OPS`]).
    pub ops: &'a [ChangeOp<'a>],
    /// The contract's `writable_paths`.
    pub writable_paths: &'a [String],
    /// The contract's `private_paths` (private wins over writable).
    pub private_paths: &'a [String],
}

/// A change set written as a patch.
#[derive(Debug, Clone, Copy)]
pub struct PatchRequest<'a> {
    /// The envelope, `*** Begin Patch` … `*** End Patch` ([`crate::patch::parse`]).
    pub patch: &'a str,
    /// The revisions the caller saw, by path (written as the patch writes paths); a path
    /// the patch does not touch is ignored.
    pub expected_sha256: &'a [(String, String)],
    /// The contract's `writable_paths`.
    pub writable_paths: &'a [String],
    /// The contract's `private_paths`.
    pub private_paths: &'a [String],
    /// The worktree's absolute path, for an agent-facing front end: paths are then taken as
    /// agents write them ([`crate::path::as_agents_write`]). `None`: strict paths only.
    pub agent_root: Option<&'a str>,
}

fn shape(index: usize, field: &str, path: &str) -> Result<(), ChangeSetError> {
    crate::path::segments(path)
        .map(|_| ())
        .map_err(|e| ChangeSetError::InvalidRequest(format!("ops[{index}].{field}: {e}")))
}

fn revision_shape(index: usize, field: &str, sha: Option<&str>) -> Result<(), ChangeSetError> {
    match sha.map(Revision::parse) {
        Some(Err(e)) => Err(ChangeSetError::InvalidRequest(format!(
            "ops[{index}].{field}: {e}"
        ))),
        _ => Ok(()),
    }
}

/// The shape of one operation: its paths, its revisions' spelling, an edit's batch.
fn check(index: usize, op: &ChangeOp<'_>) -> Result<(), ChangeSetError> {
    shape(index, "path", op.path)?;
    revision_shape(index, "expected_sha256", op.expected_sha256)?;
    match op.action {
        Action::Edit(edits) => crate::edit::check_batch(edits)
            .map_err(|e| ChangeSetError::InvalidRequest(format!("ops[{index}].{e}"))),
        Action::Move {
            to,
            to_expected_sha256,
        } => {
            shape(index, "to", to)?;
            revision_shape(index, "to_expected_sha256", to_expected_sha256)?;
            if to == op.path {
                return Err(ChangeSetError::InvalidRequest(format!(
                    "ops[{index}]: a move to `{to}` itself changes nothing"
                )));
            }
            Ok(())
        }
        Action::Hunks {
            move_to: Some(dest),
            ..
        } => shape(index, "move_to", dest),
        Action::Hunks { .. } | Action::Write(_) | Action::Add(_) | Action::Delete => Ok(()),
    }
}

fn rejected(problems: Vec<OpProblem>, total: usize) -> ChangeSetError {
    ChangeSetError::Rejected {
        message: format!(
            "{} of the {total} operation{} {} refused; nothing was changed",
            problems.len(),
            if total == 1 { "" } else { "s" },
            if problems.len() == 1 { "was" } else { "were" }
        ),
        problems,
    }
}

/// Decides a change set written as operations: the shape of the request (1 to
/// [`MAX_OPS`] operations, each path's shape, each revision's spelling, each batch's),
/// then [`plan`] over the worktree's gates.
///
/// # Errors
///
/// [`ChangeSetError::InvalidRequest`] for the shape; [`ChangeSetError::Rejected`] with every
/// refused operation's problem.
pub fn decide<T: Tree + ?Sized>(
    tree: &T,
    request: &ChangeSetRequest<'_>,
) -> Result<Vec<FileChange>, ChangeSetError> {
    if request.ops.is_empty() {
        return Err(ChangeSetError::InvalidRequest(String::from(
            "ops: at least one operation is required",
        )));
    }
    if request.ops.len() > MAX_OPS {
        return Err(ChangeSetError::InvalidRequest(format!(
            "ops: at most {MAX_OPS} operations per change set, got {}",
            request.ops.len()
        )));
    }
    for (index, op) in request.ops.iter().enumerate() {
        check(index, op)?;
    }
    let mut bases = WorktreeBases::new(tree, request.writable_paths, request.private_paths);
    plan(request.ops, &mut bases, RevisionPolicy::Required)
        .map_err(|problems| rejected(problems, request.ops.len()))
}

/// The operations of a parsed patch, with its paths taken as agents write them relative
/// to `root` ([`crate::path::as_agents_write`]; `""`: as written) and each existing file's
/// revision looked up by `revision`.
pub fn patch_ops<'p>(
    patch: &'p Patch,
    root: &str,
    revision: &dyn Fn(&str) -> Option<&'p str>,
) -> Vec<ChangeOp<'p>> {
    let path = |raw: &'p str| crate::path::as_agents_write(raw, root);
    patch
        .ops
        .iter()
        .map(|op| {
            let (line, written, action) = match op {
                Op::Add { line, path, text } => (*line, path, Action::Add(text)),
                Op::Delete { line, path } => (*line, path, Action::Delete),
                Op::Update {
                    line,
                    path: p,
                    move_to,
                    hunks,
                } => (
                    *line,
                    p,
                    Action::Hunks {
                        hunks,
                        move_to: move_to.as_deref().map(path),
                    },
                ),
            };
            let at = path(written);
            ChangeOp {
                path: at,
                expected_sha256: revision(at),
                action,
                line: Some(u32::try_from(line).unwrap_or(u32::MAX)),
            }
        })
        .collect()
}

/// Decides a change set written as a patch: it is parsed ([`crate::patch::parse`]), its
/// paths taken as agents write them when `agent_root` is given, each existing file's
/// revision taken from `expected_sha256`, then decided as [`decide`] does.
///
/// # Errors
///
/// [`ChangeSetError::Patch`] when it does not parse; otherwise as [`decide`], an
/// `InvalidRequest` naming the operation's header line.
pub fn decide_patch<T: Tree + ?Sized>(
    tree: &T,
    request: &PatchRequest<'_>,
) -> Result<Vec<FileChange>, ChangeSetError> {
    let patch = crate::patch::parse(request.patch).map_err(ChangeSetError::Patch)?;
    if patch.ops.len() > MAX_OPS {
        return Err(ChangeSetError::InvalidRequest(format!(
            "patch: at most {MAX_OPS} file operations per patch, got {}",
            patch.ops.len()
        )));
    }
    let root = request.agent_root.unwrap_or("");
    let expected: Vec<(&str, &str)> = request
        .expected_sha256
        .iter()
        .map(|(p, s)| (crate::path::as_agents_write(p, root), s.as_str()))
        .collect();
    for (p, s) in &expected {
        if let Err(e) = Revision::parse(s) {
            return Err(ChangeSetError::InvalidRequest(format!(
                "expected_sha256[`{p}`]: {e}"
            )));
        }
    }
    let lookup = |p: &str| expected.iter().find(|(q, _)| *q == p).map(|(_, s)| *s);
    let ops = patch_ops(&patch, root, &lookup);
    for op in &ops {
        let line = op.line.unwrap_or(0);
        let named = |p: &str| {
            crate::path::segments(p).map(|_| ()).map_err(|e| {
                ChangeSetError::InvalidRequest(format!(
                    "patch line {line}: `{}`: {e}",
                    crate::path::shown(p)
                ))
            })
        };
        named(op.path)?;
        if let Action::Hunks {
            move_to: Some(dest),
            ..
        } = op.action
        {
            named(dest)?;
        }
    }
    let mut bases = WorktreeBases::new(tree, request.writable_paths, request.private_paths);
    plan(&ops, &mut bases, RevisionPolicy::Required)
        .map_err(|problems| rejected(problems, ops.len()))
}
