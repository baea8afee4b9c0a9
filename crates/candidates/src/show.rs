//! `candidates show ID`: one candidate's row of [`super::list`] and the receipt `deliver`
//! printed when it published it (the receipt ref's tag message).

use serde::Serialize;

use super::list::{self, Entry};
use super::{Error, Namespace};
use satyrn_git::Git;

/// One candidate and its receipt.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Shown {
    /// The candidate's row.
    pub candidate: Entry,
    /// The receipt as published (`None` without a receipt ref, or when its message is not
    /// JSON).
    pub receipt: Option<serde_json::Value>,
}

/// The candidate `id` under `namespace` and its receipt.
///
/// # Errors
///
/// [`Error::NotFound`], or [`Error::Git`] when git fails.
pub fn show(git: &Git, namespace: &Namespace, id: &str) -> Result<Shown, Error> {
    let candidate = super::find(git, namespace, id)?;
    let receipt = match &candidate.receipt_tag {
        Some(tag) => receipt_of(git, tag)?,
        None => None,
    };
    let entry = list::entries(git, vec![candidate])?
        .pop()
        .ok_or_else(|| Error::Unexpected(format!("candidate {id:?} vanished while listed")))?;
    Ok(Shown {
        candidate: entry,
        receipt,
    })
}

/// The JSON message of the receipt tag `tag`.
fn receipt_of(git: &Git, tag: &str) -> Result<Option<serde_json::Value>, Error> {
    let raw = git.run(&["cat-file", "tag", tag])?;
    let message = raw
        .windows(2)
        .position(|w| w == b"\n\n")
        .map_or(&raw[..0], |at| &raw[at + 2..]);
    Ok(serde_json::from_slice(message).ok())
}

/// `shown` for a terminal: the row's facts, one per line, then its files.
#[must_use]
pub fn text(shown: &Shown) -> String {
    use std::fmt::Write;
    let e = &shown.candidate;
    let mut out = String::new();
    let none = || "-".to_owned();
    let mut line = |label: &str, value: String| {
        let _ = writeln!(out, "{:<13}{value}", format!("{label}:"));
    };
    line("id", list::readable(&e.id));
    line("ref", list::readable(&e.head_ref));
    line("commit", e.commit.clone());
    line("base", e.base.clone().unwrap_or_else(none));
    line(
        "head",
        match (e.base_is_head, e.behind) {
            (true, _) => "the base is HEAD".to_owned(),
            (false, Some(n)) => format!("HEAD is {n} commit(s) past the base"),
            (false, None) => "HEAD is unborn".to_owned(),
        },
    );
    line("created", e.created.clone().unwrap_or_else(none));
    if let Some(r) = &shown.receipt {
        for field in ["contract_id", "repo", "exit_code", "signal"] {
            line(field, r.get(field).map_or_else(none, ToString::to_string));
        }
        for warning in r
            .get("warnings")
            .and_then(|w| w.as_array())
            .into_iter()
            .flatten()
        {
            line("warning", warning.to_string());
        }
    }
    line(
        "files",
        format!("{} (+{} -{})", e.files.len(), e.added(), e.removed()),
    );
    for f in &e.files {
        let count = |n: Option<u64>| n.map_or_else(|| "-".to_owned(), |n| n.to_string());
        let _ = writeln!(
            out,
            "  +{:<6} -{:<6} {}",
            count(f.added),
            count(f.removed),
            list::readable(&f.path)
        );
    }
    out
}
