//! `candidates list`: every candidate, its base against the current `HEAD`, its files.
//!
//! The cost is a fixed number of git processes whatever the number of candidates: one
//! `for-each-ref`, one `rev-parse HEAD`, one `diff-tree --stdin` for all the commits, and one
//! `rev-list --count` per distinct base (candidates of one task share their base).

use std::collections::HashMap;

use serde::Serialize;

use super::{Candidate, Error, Namespace};
use crate::git::{self, Git};

/// One changed file of a candidate, from `git diff-tree --numstat` against its base.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileChange {
    /// The path (lossy when not UTF-8).
    pub path: String,
    /// Lines added; `None` for a binary file.
    pub added: Option<u64>,
    /// Lines removed; `None` for a binary file.
    pub removed: Option<u64>,
}

/// One row of the list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    /// The candidate id.
    pub id: String,
    /// The commit ref.
    #[serde(rename = "ref")]
    pub head_ref: String,
    /// The candidate commit.
    pub commit: String,
    /// The base commit (its first parent).
    pub base: Option<String>,
    /// Whether the base is the current `HEAD`.
    pub base_is_head: bool,
    /// Commits in `HEAD` that are not in the base (`git rev-list --count base..HEAD`);
    /// `None` when `HEAD` is unborn or there is no base.
    pub behind: Option<u64>,
    /// The publication time (RFC 3339, UTC) from the receipt ref, `None` without one.
    pub created: Option<String>,
    /// The receipt tag object, `None` without one.
    pub receipt: Option<String>,
    /// The changed files, in git's order (bytes).
    pub files: Vec<FileChange>,
}

impl Entry {
    /// Lines added over every text file.
    #[must_use]
    pub fn added(&self) -> u64 {
        self.files.iter().filter_map(|f| f.added).sum()
    }

    /// Lines removed over every text file.
    #[must_use]
    pub fn removed(&self) -> u64 {
        self.files.iter().filter_map(|f| f.removed).sum()
    }
}

/// The list of every candidate under `namespace`, sorted by id.
///
/// # Errors
///
/// [`Error::Git`] when git fails; [`Error::Unexpected`] when its output cannot be read.
pub fn list(git: &Git, namespace: &Namespace) -> Result<Vec<Entry>, Error> {
    let candidates = super::load(git, namespace)?;
    entries(git, candidates)
}

/// The rows for `candidates`.
///
/// # Errors
///
/// As [`list`].
pub fn entries(git: &Git, candidates: Vec<Candidate>) -> Result<Vec<Entry>, Error> {
    if candidates.is_empty() {
        return Ok(Vec::new());
    }
    let head = super::head_commit(git)?;
    let mut files = file_changes(git, &candidates)?;
    let mut behind: HashMap<String, Option<u64>> = HashMap::new();
    let mut out = Vec::with_capacity(candidates.len());
    for c in candidates {
        let count = match (&c.base, &head) {
            (Some(base), Some(head)) => match behind.get(base) {
                Some(n) => *n,
                None => {
                    let n = count_behind(git, base, head)?;
                    behind.insert(base.clone(), n);
                    n
                }
            },
            _ => None,
        };
        out.push(Entry {
            base_is_head: c.base.is_some() && c.base == head,
            behind: count,
            files: files.remove(&c.commit).unwrap_or_default(),
            id: c.id,
            head_ref: c.head_ref,
            commit: c.commit.clone(),
            base: c.base,
            created: c.created,
            receipt: c.receipt_tag,
        });
    }
    Ok(out)
}

fn count_behind(git: &Git, base: &str, head: &str) -> Result<Option<u64>, Error> {
    let range = format!("{base}..{head}");
    let line = git.line(&["rev-list", "--count", &range, "--"])?;
    line.parse()
        .map(Some)
        .map_err(|_| Error::Unexpected(format!("git rev-list --count {range} printed {line:?}")))
}

/// The numstat of every distinct commit against its first parent, from one
/// `git diff-tree --stdin`.
fn file_changes(
    git: &Git,
    candidates: &[Candidate],
) -> Result<HashMap<String, Vec<FileChange>>, Error> {
    let mut input = String::new();
    let mut seen = std::collections::HashSet::new();
    for c in candidates {
        if seen.insert(c.commit.as_str()) {
            input.push_str(&c.commit);
            input.push('\n');
        }
    }
    let out = git.run_input(
        &[
            "diff-tree",
            "--stdin",
            "--always",
            "--root",
            "-r",
            "-z",
            "--numstat",
            "--no-renames",
            "--no-ext-diff",
            "--ignore-submodules=none",
        ],
        input.as_bytes(),
    )?;
    let mut map: HashMap<String, Vec<FileChange>> = HashMap::new();
    let mut current: Option<String> = None;
    for record in git::split_z(&out) {
        let text = String::from_utf8_lossy(record);
        let mut parts = text.splitn(3, '\t');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(added), Some(removed), Some(path)) => {
                let Some(commit) = &current else {
                    return Err(Error::Unexpected(format!(
                        "git diff-tree printed {text:?} before a commit"
                    )));
                };
                map.entry(commit.clone()).or_default().push(FileChange {
                    path: path.to_owned(),
                    added: added.parse().ok(),
                    removed: removed.parse().ok(),
                });
            }
            _ => {
                let commit = text.trim().to_owned();
                map.entry(commit.clone()).or_default();
                current = Some(commit);
            }
        }
    }
    Ok(map)
}

/// The list as a human-readable table, one candidate per line.
#[must_use]
pub fn table(entries: &[Entry]) -> String {
    use std::fmt::Write;
    let rows: Vec<[String; 6]> = entries
        .iter()
        .map(|e| {
            [
                readable(&e.id),
                short(&e.commit),
                e.base.as_deref().map_or_else(|| "-".to_owned(), short),
                match (e.base_is_head, e.behind) {
                    (true, _) => "HEAD".to_owned(),
                    (false, Some(n)) => format!("{n} behind"),
                    (false, None) => "-".to_owned(),
                },
                format!("{} +{} -{}", e.files.len(), e.added(), e.removed()),
                e.created.clone().unwrap_or_else(|| "-".to_owned()),
            ]
        })
        .collect();
    let header = ["ID", "COMMIT", "BASE", "BASE VS HEAD", "FILES", "CREATED"];
    let mut widths = header.map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(header.map(str::to_owned)).chain(rows) {
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(widths).enumerate() {
            if i + 1 == header.len() {
                line.push_str(cell);
            } else {
                let _ = write!(line, "{cell:<w$}  ");
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// `text` as it is, or quoted and escaped when it holds a character a reader could not
/// see as it is (a ref fetched from a remote was never checked by `deliver`).
#[must_use]
pub fn readable(text: &str) -> String {
    if text
        .chars()
        .any(|c| crate::deliver::candidate::deceptive(c).is_some())
    {
        format!("{text:?}")
    } else {
        text.to_owned()
    }
}

/// The first 12 hex digits of an object id.
fn short(oid: &str) -> String {
    oid.chars().take(12).collect()
}
