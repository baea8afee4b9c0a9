//! `candidates list`: every candidate, its base against the current `HEAD`, its files.
//!
//! The cost is a fixed number of git processes whatever the number of candidates: one
//! `for-each-ref`, one `rev-parse HEAD` (run at the same time), `diff-tree --stdin` for all
//! the commits (one process, or one per CPU up to 4 from 256 commits on, at the same time),
//! and one `rev-list --count` per distinct base (candidates of one task share their base;
//! counted while `diff-tree` runs). Figures: `docs/performance.md`.

use std::collections::HashMap;

use serde::Serialize;

use super::{Candidate, Error, Namespace};
use satyrn_git::{self as git, Git};

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

/// The list of every candidate under `namespace`, sorted by id. `HEAD` is read while the
/// refs are listed, and the numstat is computed while the bases are counted (two threads,
/// each waiting on its own git process).
///
/// # Errors
///
/// [`Error::Git`] when git fails; [`Error::Unexpected`] when its output cannot be read.
pub fn list(git: &Git, namespace: &Namespace) -> Result<Vec<Entry>, Error> {
    let (candidates, head) = std::thread::scope(|scope| {
        let head = scope.spawn(|| super::head_commit(git));
        let candidates = super::load(git, namespace);
        (candidates, joined(head))
    });
    rows(git, candidates?, head?)
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
    rows(git, candidates, head)
}

/// A scoped thread's result; its panic goes on in the caller.
fn joined<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// The rows for `candidates` against `head`: the numstat (one `diff-tree`) in a thread of
/// its own while the distinct bases are counted.
fn rows(git: &Git, candidates: Vec<Candidate>, head: Option<String>) -> Result<Vec<Entry>, Error> {
    if candidates.is_empty() {
        return Ok(Vec::new());
    }
    let (files, behind) = std::thread::scope(|scope| {
        let files = scope.spawn(|| file_changes(git, &candidates));
        let behind = behind_counts(git, &candidates, head.as_deref());
        (joined(files), behind)
    });
    let (files, behind) = (files?, behind?);
    Ok(candidates
        .into_iter()
        .map(|c| Entry {
            base_is_head: c.base.is_some() && c.base == head,
            behind: c
                .base
                .as_ref()
                .and_then(|base| behind.get(base).copied().flatten()),
            files: files.get(&c.commit).cloned().unwrap_or_default(),
            id: c.id,
            head_ref: c.head_ref,
            commit: c.commit,
            base: c.base,
            created: c.created,
            receipt: c.receipt_tag,
        })
        .collect())
}

/// `git rev-list --count <base>..<head>` for every distinct base (none when `HEAD` is
/// unborn).
fn behind_counts(
    git: &Git,
    candidates: &[Candidate],
    head: Option<&str>,
) -> Result<HashMap<String, Option<u64>>, Error> {
    let mut behind: HashMap<String, Option<u64>> = HashMap::new();
    let Some(head) = head else {
        return Ok(behind);
    };
    for base in candidates.iter().filter_map(|c| c.base.as_ref()) {
        if !behind.contains_key(base) {
            let n = count_behind(git, base, head)?;
            behind.insert(base.clone(), n);
        }
    }
    Ok(behind)
}

fn count_behind(git: &Git, base: &str, head: &str) -> Result<Option<u64>, Error> {
    let range = format!("{base}..{head}");
    let line = git.line(&["rev-list", "--count", &range, "--"])?;
    line.parse()
        .map(Some)
        .map_err(|_| Error::Unexpected(format!("git rev-list --count {range} printed {line:?}")))
}

/// Below this many distinct commits the numstat is one `diff-tree`; from it on, the
/// commits are split over one `diff-tree` per CPU (at most [`MAX_DIFF_PROCESSES`]).
const SPLIT_FROM: usize = 256;

/// The most `diff-tree` processes one `list` runs at once.
const MAX_DIFF_PROCESSES: usize = 4;

/// The numstat of every distinct commit against its first parent: `git diff-tree --stdin`
/// over all of them — split into equal chunks run at once, one per CPU (at most
/// [`MAX_DIFF_PROCESSES`]), from [`SPLIT_FROM`] commits on, since `diff-tree` works one
/// commit at a time on one core. Fully buffered (`GIT_FLUSH=0`: by default git flushes
/// after every commit when writing to a pipe, a write and a wake-up of our reader each).
pub(super) fn file_changes(
    git: &Git,
    candidates: &[Candidate],
) -> Result<HashMap<String, Vec<FileChange>>, Error> {
    let mut seen = std::collections::HashSet::new();
    let commits: Vec<&str> = candidates
        .iter()
        .map(|c| c.commit.as_str())
        .filter(|c| seen.insert(*c))
        .collect();
    let processes = if commits.len() < SPLIT_FROM {
        1
    } else {
        std::thread::available_parallelism()
            .map_or(1, std::num::NonZero::get)
            .min(MAX_DIFF_PROCESSES)
    };
    let chunk = commits.len().div_ceil(processes).max(1);
    let parts: Vec<Result<HashMap<String, Vec<FileChange>>, Error>> = std::thread::scope(|scope| {
        let handles: Vec<_> = commits
            .chunks(chunk)
            .map(|part| scope.spawn(move || numstat(git, part)))
            .collect();
        handles.into_iter().map(joined).collect()
    });
    let mut map = HashMap::with_capacity(commits.len());
    for part in parts {
        map.extend(part?);
    }
    Ok(map)
}

/// One `git diff-tree --stdin --numstat` over `commits`.
fn numstat(git: &Git, commits: &[&str]) -> Result<HashMap<String, Vec<FileChange>>, Error> {
    let mut input = String::with_capacity(commits.len() * 41);
    for commit in commits {
        input.push_str(commit);
        input.push('\n');
    }
    let out = git
        .cmd(&[
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
        ])
        .stdin(input.as_bytes())
        .envs(&[("GIT_FLUSH", "0")])
        .run()?;
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
        .any(|c| satyrn_deliver::candidate::deceptive(c).is_some())
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
