//! `change_set`: file operations over several files (edit, write, delete, move) decided
//! together in the component and published all together or not at all
//! ([`satyrn_publish::publish_set`]). `apply_patch` (`operation/apply_patch.rs`) reaches
//! the same decision and the same publish from a patch.

use schemars::JsonSchema;
use serde::Serialize;

use super::{ChangeSetArgs, EditRefusal, Problem, Scope, Seen, internal, lock, partly_seen};
use crate::EditDetails;
use satyrn_code::{Code, Failure};
use satyrn_engine as engine;
use satyrn_publish as publish;

/// What a change set did to one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum FileStatus {
    Created,
    Modified,
    Deleted,
}

/// One path a change set changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(transform = super::schema::portable)]
#[schemars(transform = changed_file_schema)]
pub struct ChangedFile {
    /// The path, canonical worktree-relative.
    pub path: String,
    /// `created`, `modified` or `deleted` (a move is its source deleted and its destination
    /// created).
    pub status: FileStatus,
    /// The file's revision now; none (`null` in the protocol) for a deleted path.
    #[schemars(with = "String")]
    pub sha256: Option<String>,
    /// For a moved file's destination, the path it was moved from (left out otherwise): a
    /// client's view of the destination is no more than its view of the source was.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub moved_from: Option<String>,
}

fn changed_file_schema(schema: &mut schemars::Schema) {
    super::schema::optional(schema, &["sha256", "moved_from"]);
}

/// The result of a published change set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(transform = super::schema::portable)]
pub struct ChangeSetResult {
    /// Every changed path, in path order.
    pub files: Vec<ChangedFile>,
}

/// One problem of a hunk of a patch's Update.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HunkProblem {
    /// The hunk's index in its Update, from 1.
    pub hunk: u32,
    /// Its line in the patch.
    pub line: u32,
    /// `HUNK_CONTEXT_MISSING`, `HUNK_CONTEXT_AMBIGUOUS`, `HUNK_ANCHOR_MISSING`,
    /// `HUNK_ANCHOR_AMBIGUOUS`, `HUNK_NO_POSITION` or `LINE_ENDINGS_UNSUPPORTED`.
    pub code: &'static str,
    /// What was found (the near miss) and how to retry.
    pub message: String,
}

/// Why one operation of a change set was refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpProblem {
    /// The operation's 0-based index.
    pub index: u32,
    /// For a patch: the line of the operation's header.
    pub line: Option<u32>,
    /// The path.
    pub path: String,
    /// The code (for a refused edit batch, its first problem's).
    pub code: Code,
    /// Why.
    pub message: String,
    /// For `REVISION_STALE`: the current revision.
    pub current_sha256: Option<String>,
    /// For a refused edit batch: every problem.
    pub edits: Option<Vec<Problem>>,
    /// For `HUNKS_REFUSED`: each hunk's problem.
    pub hunks: Vec<HunkProblem>,
}

/// The details of a refused change set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChangeSetRejection {
    /// Every refused operation, in order.
    pub problems: Vec<OpProblem>,
}

fn hunk_code(code: engine::HunkCode) -> &'static str {
    use engine::HunkCode as H;
    match code {
        H::LineEndingsUnsupported => "LINE_ENDINGS_UNSUPPORTED",
        H::AnchorMissing => "HUNK_ANCHOR_MISSING",
        H::AnchorAmbiguous => "HUNK_ANCHOR_AMBIGUOUS",
        H::ContextMissing => "HUNK_CONTEXT_MISSING",
        H::ContextAmbiguous => "HUNK_CONTEXT_AMBIGUOUS",
        H::NoPosition => "HUNK_NO_POSITION",
    }
}

fn op_code(code: engine::OpCode) -> Code {
    use engine::OpCode as O;
    match code {
        O::PathPrivate => Code::PathPrivate,
        O::PathUndeclared => Code::PathUndeclared,
        O::RevisionUnavailable => Code::RevisionUnavailable,
        O::RevisionStale => Code::RevisionStale,
        O::TargetExists => Code::TargetExists,
        O::MutationFailed => Code::MutationFailed,
        O::NotText => Code::NotText,
        O::EditsRejected => Code::NoOpBatch,
        O::HunksRefused => Code::HunksRefused,
        O::AddExists => Code::AddExists,
        O::MoveExists => Code::MoveExists,
        O::FileMissing => Code::FileMissing,
        O::TooLarge => Code::ResultTooLarge,
    }
}

/// Maps the component's refusal of a change set to its code and details: the first
/// refused operation's code, every problem in the details.
pub(super) fn change_set_refusal(e: engine::ChangeSetError) -> EditRefusal {
    match e {
        engine::ChangeSetError::InvalidRequest(m) => (Failure::new(Code::InvalidRequest, m), None),
        engine::ChangeSetError::PatchInvalid(p) => (
            Failure::new(
                Code::PatchInvalid,
                format!("line {}: {} ({})", p.line, p.message, p.kind),
            ),
            None,
        ),
        engine::ChangeSetError::Rejected(r) => {
            let problems: Vec<OpProblem> = r
                .problems
                .into_iter()
                .map(|p| {
                    let edits: Option<Vec<Problem>> = p
                        .edits
                        .map(|e| e.problems.into_iter().map(Problem::from).collect());
                    let code = match (&edits, p.code) {
                        (Some(edits), engine::OpCode::EditsRejected) => {
                            edits.first().map_or(Code::NoOpBatch, |e| e.code)
                        }
                        (_, code) => op_code(code),
                    };
                    OpProblem {
                        index: p.index,
                        line: p.line,
                        path: p.path,
                        code,
                        message: p.message,
                        current_sha256: p.current_sha256,
                        edits,
                        hunks: p
                            .hunks
                            .into_iter()
                            .map(|h| HunkProblem {
                                hunk: h.hunk,
                                line: h.line,
                                code: hunk_code(h.code),
                                message: h.message,
                            })
                            .collect(),
                    }
                })
                .collect();
            let (code, first) = problems
                .first()
                .map_or((Code::InternalError, String::new()), |p| {
                    (p.code, p.message.clone())
                });
            (
                Failure::new(code, format!("{}: {first}", r.message)),
                Some(Box::new(EditDetails::ChangeSet(ChangeSetRejection {
                    problems,
                }))),
            )
        }
    }
}

/// Publishes what the component decided, after confirming it is about what was asked:
/// every path among `asked` (a plan naming any other is a bug: `INTERNAL_ERROR`, nothing
/// written), each path once, and each new content within the file limit. The caller has
/// refused a set that replaces content seen only in part ([`super::seen_in_part`]).
pub(super) fn publish_changes(
    scope: Scope<'_>,
    changes: &[engine::FileChange],
    asked: &[&str],
) -> Result<ChangeSetResult, Failure> {
    let mut bases = Vec::with_capacity(changes.len());
    for (i, change) in changes.iter().enumerate() {
        if !asked.contains(&change.path.as_str())
            || changes[..i].iter().any(|c| c.path == change.path)
        {
            return Err(internal(format!(
                "the component planned a change of `{}`, which the request did not ask for (or twice)",
                change.path
            )));
        }
        let base = change
            .base_sha256
            .as_deref()
            .map(satyrn_mutator_core::revision::Revision::parse)
            .transpose()
            .map_err(|e| internal(format!("the component returned a malformed revision: {e}")))?;
        if let Some(content) = &change.content
            && content.len() as u64 > satyrn_mutator_core::gates::MAX_TEXT_FILE_BYTES
        {
            return Err(Failure::new(
                Code::ResultTooLarge,
                format!(
                    "the change would make `{}` {} bytes, over the {} bytes a file may have; nothing was written",
                    change.path,
                    content.len(),
                    satyrn_mutator_core::gates::MAX_TEXT_FILE_BYTES
                ),
            ));
        }
        bases.push(base);
    }
    let set: Vec<publish::SetChange<'_>> = changes
        .iter()
        .zip(&bases)
        .map(|(c, base)| publish::SetChange {
            path: &c.path,
            base: base.as_ref(),
            content: c.content.as_deref(),
            mode_from: c.mode_from.as_deref(),
        })
        .collect();
    publish::publish_set(scope.root.dir(), &set)?;
    Ok(ChangeSetResult {
        files: changes
            .iter()
            .map(|c| ChangedFile {
                path: c.path.clone(),
                status: match (&c.base_sha256, &c.content) {
                    (None, _) => FileStatus::Created,
                    (Some(_), Some(_)) => FileStatus::Modified,
                    (Some(_), None) => FileStatus::Deleted,
                },
                sha256: c.next_sha256.clone(),
                moved_from: c.mode_from.clone(),
            })
            .collect(),
    })
}

/// Decides and publishes a change set under the worktree lock.
///
/// # Errors
///
/// The refusal, with every refused operation in its details ([`EditRefusal`]); a publish
/// that finds a base changed since the decision is `REVISION_STALE`, and nothing is
/// written.
pub fn change_set(scope: Scope<'_>, args: &ChangeSetArgs) -> Result<ChangeSetResult, EditRefusal> {
    let plain = |f: Failure| (f, None);
    let ops = args
        .ops()
        .map_err(|m| plain(Failure::new(Code::InvalidRequest, m)))?;
    let _lock = lock(scope).map_err(plain)?;
    let mut mutator = scope.mutator().map_err(plain)?;
    let request = engine::ChangeSetRequest {
        ops,
        writable_paths: scope.contract.writable_paths.clone(),
        private_paths: scope.contract.private_paths.clone(),
    };
    let changes = mutator
        .call(|m| m.change_set(&request))
        .map_err(internal)
        .map_err(plain)?
        .map_err(change_set_refusal)?;
    let asked: Vec<&str> = args
        .ops
        .iter()
        .flat_map(|e| std::iter::once(e.path.as_str()).chain(e.to.as_deref()))
        .collect();
    if let Some((path, verb)) = replaces_unseen(&args.ops) {
        return Err(plain(partly_seen(&path, verb)));
    }
    publish_changes(scope, &changes, &asked).map_err(plain)
}

/// The path seen in part (its first operation's revision was seen in part, [`Seen::Part`])
/// whose content the set replaces or removes whole, followed through its moves
/// ([`super::seen_in_part`]), and the verb of the refusal.
fn replaces_unseen(ops: &[super::ChangeEntry]) -> Option<(String, &'static str)> {
    use super::ChangeKind;
    use super::seen_in_part::Step;
    let partly = |path: &str| {
        ops.iter()
            .find(|e| e.path == path)
            .is_some_and(|e| e.seen == Seen::Part && e.expected_sha256.is_some())
    };
    let steps: Vec<Step<'_>> = ops
        .iter()
        .map(|e| match (e.op, e.to.as_deref()) {
            (ChangeKind::Edit, _) => Step::Keep(&e.path),
            (ChangeKind::Write, _) => Step::Replace(&e.path),
            (ChangeKind::Delete, _) => Step::Remove(&e.path),
            (ChangeKind::Move, Some(to)) => Step::Move(&e.path, to),
            (ChangeKind::Move, None) => Step::Keep(&e.path),
        })
        .collect();
    super::seen_in_part::replaced(&steps, &partly)
}
