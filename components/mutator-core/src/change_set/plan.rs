//! The virtual tree: a change set's operations decided in order against one base.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::{Action, Bases, ChangeOp, FileChange, MAX_FILE_BYTES, OpCode, OpProblem};
use crate::gates::{Refusal, RefusalCode};
use crate::revision::Revision;

/// Whether the operations' revisions are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RevisionPolicy {
    /// As every writer: see the module [`super`] on revisions.
    Required,
    /// Not checked at all: a patch planned over files held in memory, which are the base by
    /// definition.
    Unchecked,
}

/// One path of the virtual tree.
struct Slot {
    /// Its revision on disk (`None`: nothing there).
    base: Option<Revision>,
    /// What it holds now, after the operations so far.
    now: Option<Vec<u8>>,
    /// Whether an earlier operation acted on it.
    touched: bool,
    /// The base path whose file `now` came from (its permission bits go with it).
    origin: Option<String>,
}

/// A problem before its operation's index and line are known.
struct Found {
    path: String,
    code: OpCode,
    message: String,
    current: Option<Revision>,
    edits: Option<crate::edit::Rejection>,
    hunks: Vec<crate::patch::HunkProblem>,
}

impl Found {
    fn new(path: &str, code: OpCode, message: String) -> Box<Self> {
        Box::new(Self {
            path: String::from(path),
            code,
            message,
            current: None,
            edits: None,
            hunks: Vec::new(),
        })
    }

    fn refused(path: &str, r: Refusal) -> Box<Self> {
        Self::new(path, OpCode::Refused(r.code), r.message)
    }
}

struct Virtual<'b, B: Bases + ?Sized> {
    bases: &'b mut B,
    policy: RevisionPolicy,
    slots: BTreeMap<String, Slot>,
    /// Paths whose gates or base read refused, with the refusal (decided once).
    refused: BTreeMap<String, Refusal>,
}

impl<B: Bases + ?Sized> Virtual<'_, B> {
    /// Loads `path` (gates, then its base) the first time it is named.
    fn load(&mut self, path: &str) -> Result<(), Box<Found>> {
        if self.slots.contains_key(path) {
            return Ok(());
        }
        if let Some(r) = self.refused.get(path) {
            return Err(Found::refused(path, r.clone()));
        }
        let loaded = self.bases.admit(path).and_then(|()| self.bases.read(path));
        match loaded {
            Ok(bytes) => {
                self.slots.insert(
                    String::from(path),
                    Slot {
                        base: bytes.as_deref().map(Revision::of),
                        origin: bytes.as_ref().map(|_| String::from(path)),
                        now: bytes,
                        touched: false,
                    },
                );
                Ok(())
            }
            Err(r) => {
                self.refused.insert(String::from(path), r.clone());
                Err(Found::refused(path, r))
            }
        }
    }

    fn slot(&self, path: &str) -> &Slot {
        &self.slots[path]
    }

    fn set(&mut self, path: &str, now: Option<Vec<u8>>, origin: Option<String>) {
        if let Some(slot) = self.slots.get_mut(path) {
            slot.now = now;
            slot.origin = origin;
            slot.touched = true;
        }
    }

    /// The gate of the revision for an operation on the existing file at `path`.
    fn revision(&self, path: &str, expected: Option<&str>) -> Result<(), Box<Found>> {
        if self.policy == RevisionPolicy::Unchecked {
            return Ok(());
        }
        let slot = self.slot(path);
        let expected = match expected.map(Revision::parse) {
            None => None,
            Some(Ok(r)) => Some(r),
            Some(Err(e)) => {
                return Err(Found::new(
                    path,
                    OpCode::Refused(RefusalCode::MutationFailed),
                    format!("expected_sha256 of `{path}`: {e}"),
                ));
            }
        };
        // Hashed only for a path this set changed already (its base's revision is known).
        let now = || slot.now.as_deref().map(Revision::of);
        match (slot.touched, expected) {
            (false, None) => Err(Found::new(
                path,
                OpCode::Refused(RefusalCode::RevisionUnavailable),
                format!("no revision is known for `{path}`: read the file before changing it"),
            )),
            (false, Some(e)) if Some(e) != slot.base => {
                let current = slot.base.unwrap_or_else(|| Revision::of(b""));
                let mut found = Found::new(
                    path,
                    OpCode::Refused(RefusalCode::RevisionStale),
                    crate::gates::stale_message(path, &e, &current),
                );
                found.current = slot.base;
                Err(found)
            }
            (true, Some(e)) if Some(e) != slot.base && Some(e) != now() => {
                let mut found = Found::new(
                    path,
                    OpCode::Refused(RefusalCode::RevisionStale),
                    format!(
                        "`{path}`: expected revision {e} is neither the file's on disk nor what the earlier operations of this set made of it; a later operation on a path needs no revision"
                    ),
                );
                found.current = now();
                Err(found)
            }
            _ => Ok(()),
        }
    }

    /// The current content of the existing file `path`, after its revision gate.
    fn existing(
        &self,
        path: &str,
        expected: Option<&str>,
        verb: &str,
    ) -> Result<Vec<u8>, Box<Found>> {
        let Some(now) = self.slot(path).now.clone() else {
            return Err(missing(path, verb));
        };
        self.revision(path, expected)?;
        Ok(now)
    }

    /// The origin `path`'s current content carries.
    fn origin(&self, path: &str) -> Option<String> {
        self.slot(path).origin.clone()
    }

    fn apply(&mut self, op: &ChangeOp<'_>) -> Result<(), Box<Found>> {
        let path = op.path;
        self.load(path)?;
        match op.action {
            Action::Edit(edits) => {
                let now = self.existing(path, op.expected_sha256, "edit")?;
                let text = text(path, &now, false)?;
                let applied = crate::edit::apply(text, edits).map_err(|mut r| {
                    r.message = format!("`{path}`: {}", r.message);
                    let mut found = Found::new(path, OpCode::EditsRejected, r.message.clone());
                    found.edits = Some(r);
                    found
                })?;
                let origin = self.origin(path);
                self.set(path, Some(sized(path, applied.content)?), origin);
            }
            Action::Hunks { hunks, move_to } => {
                let now = self.existing(path, op.expected_sha256, "update")?;
                let text = text(path, &now, true)?;
                let new = crate::patch::apply_update(text, hunks).map_err(|problems| {
                    let mut found = Found::new(
                        path,
                        OpCode::HunksRefused,
                        format!(
                            "{} of the {} hunk{} of `{path}` do{} not apply",
                            problems.len(),
                            hunks.len(),
                            if hunks.len() == 1 { "" } else { "s" },
                            if problems.len() == 1 { "es" } else { "" }
                        ),
                    );
                    found.hunks = problems;
                    found
                })?;
                let new = sized(path, new.into_bytes())?;
                let origin = self.origin(path);
                match move_to {
                    Some(dest) if dest != path => {
                        self.load(dest)?;
                        if self.slot(dest).now.is_some() {
                            return Err(Found::new(
                                dest,
                                OpCode::MoveExists,
                                format!("`{dest}` exists: Move to never replaces a file"),
                            ));
                        }
                        self.set(path, None, None);
                        self.set(dest, Some(new), origin);
                    }
                    _ => self.set(path, Some(new), origin),
                }
            }
            Action::Write(content) => {
                let slot = self.slot(path);
                let creating = slot.now.is_none();
                if creating {
                    if op.expected_sha256.is_some()
                        && !slot.touched
                        && self.policy == RevisionPolicy::Required
                    {
                        return Err(Found::new(
                            path,
                            OpCode::FileMissing,
                            format!(
                                "`{path}` does not exist, so it has no revision: to create it, leave expected_sha256 out"
                            ),
                        ));
                    }
                    self.set(path, Some(sized(path, content.as_bytes().to_vec())?), None);
                } else {
                    if op.expected_sha256.is_none()
                        && !slot.touched
                        && self.policy == RevisionPolicy::Required
                    {
                        return Err(Found::new(
                            path,
                            OpCode::Refused(RefusalCode::TargetExists),
                            format!(
                                "`{path}` already exists; to overwrite it, read it and pass its revision as expected_sha256"
                            ),
                        ));
                    }
                    self.revision(path, op.expected_sha256)?;
                    let origin = self.origin(path);
                    self.set(
                        path,
                        Some(sized(path, content.as_bytes().to_vec())?),
                        origin,
                    );
                }
            }
            Action::Add(content) => {
                if self.slot(path).now.is_some() {
                    return Err(Found::new(
                        path,
                        OpCode::AddExists,
                        format!(
                            "`{path}` exists: Add File creates a new file only (use Update File to change it)"
                        ),
                    ));
                }
                self.set(path, Some(sized(path, content.as_bytes().to_vec())?), None);
            }
            Action::Delete => {
                self.existing(path, op.expected_sha256, "delete")?;
                self.set(path, None, None);
            }
            Action::Move {
                to,
                to_expected_sha256,
            } => {
                let now = self.existing(path, op.expected_sha256, "move")?;
                self.load(to)?;
                let dest = self.slot(to);
                if dest.now.is_some() {
                    if !dest.touched
                        && to_expected_sha256.is_none()
                        && self.policy == RevisionPolicy::Required
                    {
                        return Err(Found::new(
                            to,
                            OpCode::MoveExists,
                            format!(
                                "`{to}` exists: a move replaces a file only at the revision given as to_expected_sha256"
                            ),
                        ));
                    }
                    self.revision(to, to_expected_sha256)?;
                }
                let origin = self.origin(path);
                self.set(path, None, None);
                self.set(to, Some(now), origin);
            }
        }
        Ok(())
    }
}

fn missing(path: &str, verb: &str) -> Box<Found> {
    Found::new(
        path,
        OpCode::FileMissing,
        format!(
            "`{path}` does not exist (on disk, or after the earlier operations of this set): there is nothing to {verb}"
        ),
    )
}

/// `bytes` as text: UTF-8, and for a patch's hunks without a NUL byte.
fn text<'t>(path: &str, bytes: &'t [u8], no_nul: bool) -> Result<&'t str, Box<Found>> {
    let text = core::str::from_utf8(bytes).map_err(|_| {
        Found::new(
            path,
            OpCode::NotText,
            format!(
                "`{path}` is not UTF-8 text; it can be replaced whole, deleted or moved, not edited"
            ),
        )
    })?;
    if no_nul && bytes.contains(&0) {
        return Err(Found::new(
            path,
            OpCode::NotText,
            format!(
                "`{path}` holds a NUL byte (a binary file); it can be replaced whole, deleted or moved, not patched"
            ),
        ));
    }
    Ok(text)
}

fn sized(path: &str, content: Vec<u8>) -> Result<Vec<u8>, Box<Found>> {
    if content.len() as u64 > MAX_FILE_BYTES {
        return Err(Found::new(
            path,
            OpCode::TooLarge,
            format!(
                "the change would make `{path}` {} bytes, over the {MAX_FILE_BYTES} bytes a file may have",
                content.len()
            ),
        ));
    }
    Ok(content)
}

/// Decides `ops` in order against `bases` (each path's gates passed and its base read the
/// first time an operation names it). Returns every path whose content changes, in path
/// order; or every operation's problem, in operation order: an operation that is refused
/// leaves the virtual tree as it was, and the later ones are still decided (so one retry
/// can fix every problem).
///
/// # Errors
///
/// One [`OpProblem`] per refused operation.
pub fn plan<B: Bases + ?Sized>(
    ops: &[ChangeOp<'_>],
    bases: &mut B,
    policy: RevisionPolicy,
) -> Result<Vec<FileChange>, Vec<OpProblem>> {
    let mut tree = Virtual {
        bases,
        policy,
        slots: BTreeMap::new(),
        refused: BTreeMap::new(),
    };
    let mut problems = Vec::new();
    for (index, op) in ops.iter().enumerate() {
        if let Err(found) = tree.apply(op) {
            let found = *found;
            problems.push(OpProblem {
                index: u32::try_from(index).unwrap_or(u32::MAX),
                line: op.line,
                path: found.path,
                code: found.code,
                message: found.message,
                current: found.current,
                edits: found.edits,
                hunks: found.hunks,
            });
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(tree
        .slots
        .into_iter()
        .filter_map(|(path, slot)| {
            let next = slot.now.as_deref().map(Revision::of);
            if next == slot.base && (slot.now.is_none() || slot.origin.as_deref() == Some(&path)) {
                return None;
            }
            let mode_from = slot.origin.filter(|o| *o != path);
            Some(FileChange {
                path,
                base: slot.base,
                content: slot.now,
                next,
                mode_from,
            })
        })
        .collect())
}
