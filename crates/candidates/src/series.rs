//! `candidates series ID`: one row per attempt of the series `ID` (candidates `ID/001` …),
//! read from the receipts the attempts left — a candidate's receipt tag, or, for an attempt
//! that made no candidate, its receipt ref alone (`deliver --attempt I --push`) — so "ran,
//! no change" and "never ran" are different rows.
//!
//! The cost is two git processes whatever the series' size: one `for-each-ref` that prints
//! every ref of the series with its receipt's text, and the numstat of every candidate
//! commit (the `diff-tree` of `candidates list`).

use serde::Serialize;

use super::list::FileChange;
use super::{Candidate, Error, HEAD_LEAF, Namespace, RECEIPT_LEAF};
use satyrn_deliver::candidate::MAX_ATTEMPTS;
use satyrn_git::Git;

/// What is known of one index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// It made a candidate (a head ref).
    Candidate,
    /// It ran and left its receipt, but no candidate.
    NoCandidate,
    /// Its receipt ref is there, but its text is no receipt (someone else's ref).
    Unreadable,
    /// Nothing of it is there: it never ran, is still running, or was stopped before it
    /// finished (an interrupted attempt leaves nothing, so its requeue can run).
    Missing,
}

/// One index of the series.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Row {
    /// The attempt index, from 1.
    pub index: u16,
    /// Its candidate id (`ID/III`).
    pub id: String,
    /// What is there.
    pub state: State,
    /// The receipt's `outcome`, `code` and `message` (`None` when there is no receipt, or it
    /// cannot be read).
    pub outcome: Option<String>,
    /// The receipt's code.
    pub code: Option<String>,
    /// The receipt's message.
    pub message: Option<String>,
    /// Where it ran (the receipt's `attempt.host`).
    pub host: Option<String>,
    /// How long it ran, in milliseconds (the receipt's `attempt.duration_ms`).
    pub duration_ms: Option<u64>,
    /// The commit the attempt started from (the receipt's `base_commit`).
    pub base: Option<String>,
    /// The candidate commit.
    pub commit: Option<String>,
    /// The candidate's changed files against its base.
    pub files: Vec<FileChange>,
}

/// The series view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Series {
    /// The series id (the contract id).
    pub id: String,
    /// How many indexes the view covers: `--attempts`, else the highest index found.
    pub attempts: u16,
    /// One row per index, 1 to `attempts`.
    pub rows: Vec<Row>,
    /// The indexes with nothing there.
    pub missing: Vec<u16>,
    /// The distinct base commits of the rows, in index order: more than one means the
    /// attempts did not all start from the same commit (a series emitted without `--rev`
    /// while the branch moved).
    pub bases: Vec<String>,
    /// Refs under the series that name no index of it (another shape, or past
    /// `attempts`), by name.
    pub other: Vec<String>,
}

/// The series `id` under `namespace`, over indexes 1 to `attempts` (default: the highest
/// index found).
///
/// # Errors
///
/// [`Error::NotFound`] when nothing of the series is there and no `attempts` was given;
/// [`Error::Git`] when git fails.
pub fn series(
    git: &Git,
    namespace: &Namespace,
    id: &str,
    attempts: Option<u16>,
) -> Result<Series, Error> {
    let prefix = format!("{}{id}/", namespace.0);
    let format =
        "--format=%(refname)%00%(objecttype)%00%(objectname)%00%(parent)%00%(contents)%00%00";
    let out = git.run(&["for-each-ref", format, &prefix])?;
    let text = String::from_utf8_lossy(&out);
    let mut heads: Vec<(u16, String, Option<String>)> = Vec::new();
    let mut receipts: Vec<(u16, String)> = Vec::new();
    let mut other = Vec::new();
    for record in text.split("\0\0\n").filter(|r| !r.is_empty()) {
        let fields: Vec<&str> = record.splitn(5, '\0').collect();
        let [name, kind, object, parent, contents] = fields[..] else {
            continue;
        };
        let rest = name.strip_prefix(prefix.as_str()).unwrap_or(name);
        let found = rest
            .strip_suffix(HEAD_LEAF)
            .map(|n| (n, true))
            .or_else(|| rest.strip_suffix(RECEIPT_LEAF).map(|n| (n, false)))
            .and_then(|(n, head)| index_of(n).map(|i| (i, head)));
        match found {
            Some((index, true)) if kind == "commit" => heads.push((
                index,
                object.to_owned(),
                parent
                    .split(' ')
                    .next()
                    .filter(|p| !p.is_empty())
                    .map(str::to_owned),
            )),
            Some((index, false)) if kind == "tag" => receipts.push((index, contents.to_owned())),
            _ => other.push(name.to_owned()),
        }
    }
    let highest = heads
        .iter()
        .map(|h| h.0)
        .chain(receipts.iter().map(|r| r.0))
        .max();
    let attempts = match (attempts, highest) {
        (Some(n), _) => n,
        (None, Some(n)) => n,
        (None, None) => {
            return Err(Error::NotFound(format!(
                "no attempt of the series `{id}` is under {}",
                namespace.0
            )));
        }
    };
    let candidates: Vec<Candidate> = heads
        .iter()
        .filter(|h| h.0 <= attempts)
        .map(|(index, commit, base)| Candidate {
            id: attempt_id(id, *index),
            head_ref: String::new(),
            commit: commit.clone(),
            base: base.clone(),
            receipt_tag: None,
            created: None,
        })
        .collect();
    let mut changes = if candidates.is_empty() {
        std::collections::HashMap::new()
    } else {
        super::list::file_changes(git, &candidates)?
    };
    other.extend(
        heads
            .iter()
            .map(|h| h.0)
            .chain(receipts.iter().map(|r| r.0))
            .filter(|i| *i > attempts)
            .map(|i| format!("{prefix}{i:03}/")),
    );
    other.sort();
    other.dedup();
    let mut rows = Vec::with_capacity(usize::from(attempts));
    let mut missing = Vec::new();
    for index in 1..=attempts {
        let head = heads.iter().find(|h| h.0 == index);
        let text = receipts.iter().find(|r| r.0 == index).map(|r| r.1.as_str());
        let receipt = text
            .and_then(|t| serde_json::from_str::<serde_json::Value>(t.trim_end()).ok())
            .filter(serde_json::Value::is_object);
        let state = match (head, &receipt, text) {
            (Some(_), _, _) => State::Candidate,
            (None, Some(_), _) => State::NoCandidate,
            (None, None, Some(_)) => State::Unreadable,
            (None, None, None) => State::Missing,
        };
        if state == State::Missing {
            missing.push(index);
        }
        let field = |name: &str| {
            receipt
                .as_ref()
                .and_then(|r| r.get(name))
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        };
        let run = receipt.as_ref().and_then(|r| r.get("attempt"));
        rows.push(Row {
            index,
            id: attempt_id(id, index),
            state,
            outcome: field("outcome"),
            code: field("code"),
            message: field("message"),
            host: run
                .and_then(|a| a.get("host"))
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned),
            duration_ms: run
                .and_then(|a| a.get("duration_ms"))
                .and_then(serde_json::Value::as_u64),
            base: field("base_commit").or_else(|| head.and_then(|h| h.2.clone())),
            commit: head.map(|h| h.1.clone()),
            files: head.and_then(|h| changes.remove(&h.1)).unwrap_or_default(),
        });
    }
    let mut bases: Vec<String> = Vec::new();
    for base in rows.iter().filter_map(|r| r.base.clone()) {
        if !bases.contains(&base) {
            bases.push(base);
        }
    }
    Ok(Series {
        id: id.to_owned(),
        attempts,
        rows,
        missing,
        bases,
        other,
    })
}

fn attempt_id(id: &str, index: u16) -> String {
    satyrn_deliver::candidate::attempt_id(id, Some(index))
}

/// The index a ref's middle part names: exactly three digits, 1 to [`MAX_ATTEMPTS`].
fn index_of(text: &str) -> Option<u16> {
    (text.len() == 3 && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse::<u16>().ok())
        .flatten()
        .filter(|i| (1..=MAX_ATTEMPTS).contains(i))
}

/// The series as a table: a summary line, then one row per index.
#[must_use]
pub fn table(series: &Series) -> String {
    use std::fmt::Write;
    let count = |state: State| series.rows.iter().filter(|r| r.state == state).count();
    let mut out = format!(
        "series {}: {} attempts; {} with a candidate, {} without, {}{} missing{}\n",
        super::list::readable(&series.id),
        series.attempts,
        count(State::Candidate),
        count(State::NoCandidate),
        match count(State::Unreadable) {
            0 => String::new(),
            n => format!("{n} unreadable, "),
        },
        series.missing.len(),
        if series.missing.is_empty() {
            String::new()
        } else {
            format!(
                " ({})",
                series
                    .missing
                    .iter()
                    .map(|i| format!("{i:03}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    );
    if series.bases.len() > 1 {
        let _ = writeln!(
            out,
            "the attempts started from {} different commits: {}",
            series.bases.len(),
            series
                .bases
                .iter()
                .map(|b| b.chars().take(12).collect::<String>())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let header = ["#", "STATE", "CODE", "HOST", "DURATION", "CHANGE"];
    let rows: Vec<[String; 6]> = series
        .rows
        .iter()
        .map(|r| {
            [
                format!("{:03}", r.index),
                match r.state {
                    State::Candidate => "candidate",
                    State::NoCandidate => "no candidate",
                    State::Unreadable => "unreadable",
                    State::Missing => "missing",
                }
                .to_owned(),
                r.code
                    .as_deref()
                    .map_or_else(|| "-".to_owned(), super::list::readable),
                r.host
                    .as_deref()
                    .map_or_else(|| "-".to_owned(), super::list::readable),
                r.duration_ms.map_or_else(
                    || "-".to_owned(),
                    |ms| format!("{:.1} s", ms as f64 / 1000.0),
                ),
                if r.state == State::Candidate {
                    let added: u64 = r.files.iter().filter_map(|f| f.added).sum();
                    let removed: u64 = r.files.iter().filter_map(|f| f.removed).sum();
                    format!("{} files +{added} -{removed}", r.files.len())
                } else {
                    "-".to_owned()
                },
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in std::iter::once(header.map(str::to_owned)).chain(rows) {
        let mut line = String::new();
        for (cell, w) in row.iter().zip(widths) {
            let _ = write!(line, "{cell:<w$}  ");
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    for name in &series.other {
        let _ = writeln!(out, "not of this series: {}", super::list::readable(name));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_three_digit_indexes_in_range_name_an_attempt() {
        assert_eq!(index_of("001"), Some(1));
        assert_eq!(index_of("999"), Some(999));
        for bad in ["000", "1", "01", "0001", "abc", "", "1a2", "+01"] {
            assert_eq!(index_of(bad), None, "{bad}");
        }
    }
}
