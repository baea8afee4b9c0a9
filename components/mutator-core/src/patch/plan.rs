//! A patch's operations decided against one base, in order, over a virtual tree: what
//! every touched path holds before and after, or every problem at once.
//!
//! The base is read once per path (`read`); later operations see what earlier ones made
//! (a patch may delete a path and add it again, or move a file and then update the moved
//! one). Nothing is written here: the caller publishes the outcome all together or not at
//! all.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::{HunkProblem, Op, apply_update};

/// What a path holds: nothing, or a UTF-8 text.
pub type Content = Option<String>;

/// One path the patch touches: its content in the base and after the whole patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The path (as the operations name it; the caller has made it canonical).
    pub path: String,
    /// Its content in the base.
    pub before: Content,
    /// Its content after every operation.
    pub after: Content,
}

/// Why one operation cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpProblem {
    /// The operation's index in the patch, from 1.
    pub op: usize,
    /// Its header's line in the patch.
    pub line: usize,
    /// The path it names.
    pub path: String,
    /// What is wrong.
    pub code: OpProblemCode,
    /// A sentence saying what was found.
    pub message: String,
    /// For an Update whose hunks do not apply: each hunk's problem.
    pub hunks: Vec<HunkProblem>,
}

/// The kinds of operations that cannot be applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpProblemCode {
    /// Add File of a path that exists (in the base, or made by an earlier operation).
    AddExists,
    /// Delete File or Update File of a path that does not exist.
    FileMissing,
    /// Move to a path that exists.
    MoveExists,
    /// The hunks of an Update do not apply (see [`OpProblem::hunks`]).
    HunksRefused,
    /// The base of the path could not be read (the reader's message).
    Unreadable,
}

impl OpProblemCode {
    /// The protocol's spelling, e.g. `ADD_EXISTS`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AddExists => "ADD_EXISTS",
            Self::FileMissing => "FILE_MISSING",
            Self::MoveExists => "MOVE_EXISTS",
            Self::HunksRefused => "HUNKS_REFUSED",
            Self::Unreadable => "FILE_UNREADABLE",
        }
    }
}

/// The virtual tree: each path's base (read once) and its current content.
struct Tree<'r> {
    read: &'r mut dyn FnMut(&str) -> Result<Content, String>,
    paths: BTreeMap<String, (Content, Content)>,
}

impl Tree<'_> {
    /// The current content of `path`, reading its base the first time.
    fn get(&mut self, path: &str) -> Result<Content, String> {
        if let Some((_, now)) = self.paths.get(path) {
            return Ok(now.clone());
        }
        let base = (self.read)(path)?;
        self.paths
            .insert(String::from(path), (base.clone(), base.clone()));
        Ok(base)
    }

    fn set(&mut self, path: &str, content: Content) {
        if let Some(entry) = self.paths.get_mut(path) {
            entry.1 = content;
        }
    }
}

/// Decides `ops` in order against the base `read` gives (`Ok(None)`: the path does not
/// exist; `Err`: it cannot be read, with a message). Returns every path whose content
/// changes, in path order; or every operation's problem, in operation order (an operation
/// that fails leaves the virtual tree as it was, and later operations are still decided).
///
/// # Errors
///
/// One [`OpProblem`] per operation that cannot be applied.
pub fn plan(
    ops: &[Op],
    read: &mut dyn FnMut(&str) -> Result<Content, String>,
) -> Result<Vec<Change>, Vec<OpProblem>> {
    let mut tree = Tree {
        read,
        paths: BTreeMap::new(),
    };
    let mut problems = Vec::new();
    for (index, op) in ops.iter().enumerate() {
        let (line, path) = match op {
            Op::Add { line, path, .. }
            | Op::Delete { line, path }
            | Op::Update { line, path, .. } => (*line, path.as_str()),
        };
        let problem = |code, message: String, hunks| OpProblem {
            op: index + 1,
            line,
            path: String::from(path),
            code,
            message,
            hunks,
        };
        let current = match tree.get(path) {
            Ok(current) => current,
            Err(message) => {
                problems.push(problem(OpProblemCode::Unreadable, message, Vec::new()));
                continue;
            }
        };
        match op {
            Op::Add { text, .. } => {
                if current.is_some() {
                    problems.push(problem(
                        OpProblemCode::AddExists,
                        format!("`{path}` exists: Add File creates a new file only (use Update File to change it)"),
                        Vec::new(),
                    ));
                    continue;
                }
                tree.set(path, Some(text.clone()));
            }
            Op::Delete { .. } => {
                if current.is_none() {
                    problems.push(problem(
                        OpProblemCode::FileMissing,
                        format!("`{path}` does not exist: there is nothing to delete"),
                        Vec::new(),
                    ));
                    continue;
                }
                tree.set(path, None);
            }
            Op::Update { move_to, hunks, .. } => {
                let Some(text) = current else {
                    problems.push(problem(
                        OpProblemCode::FileMissing,
                        format!("`{path}` does not exist: Update File changes an existing file (use Add File to create it)"),
                        Vec::new(),
                    ));
                    continue;
                };
                let new = match apply_update(&text, hunks) {
                    Ok(new) => new,
                    Err(hunk_problems) => {
                        problems.push(problem(
                            OpProblemCode::HunksRefused,
                            format!(
                                "{} of the {} hunk{} of `{path}` do{} not apply",
                                hunk_problems.len(),
                                hunks.len(),
                                if hunks.len() == 1 { "" } else { "s" },
                                if hunk_problems.len() == 1 { "es" } else { "" }
                            ),
                            hunk_problems,
                        ));
                        continue;
                    }
                };
                match move_to.as_deref() {
                    Some(dest) if dest != path => {
                        match tree.get(dest) {
                            Ok(None) => {}
                            Ok(Some(_)) => {
                                problems.push(problem(
                                    OpProblemCode::MoveExists,
                                    format!("`{dest}` exists: Move to never replaces a file"),
                                    Vec::new(),
                                ));
                                continue;
                            }
                            Err(message) => {
                                problems.push(problem(
                                    OpProblemCode::Unreadable,
                                    message,
                                    Vec::new(),
                                ));
                                continue;
                            }
                        }
                        tree.set(path, None);
                        tree.set(dest, Some(new));
                    }
                    _ => tree.set(path, Some(new)),
                }
            }
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(tree
        .paths
        .into_iter()
        .filter(|(_, (before, after))| before != after)
        .map(|(path, (before, after))| Change {
            path,
            before,
            after,
        })
        .collect())
}
