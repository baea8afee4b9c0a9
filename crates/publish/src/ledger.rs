//! The broker's ledger: what it published, path by path, so `deliver` can check that every
//! change of a confined run's candidate is the broker's (its provenance).
//!
//! `deliver` creates an empty ledger file in its attempt's private directory (outside the
//! worktree and outside every grant of the confinement) and names it in [`VAR`] when its
//! command is `satyrn-host confine`. The broker appends one JSON line per publication,
//! `{"path": P, "sha256": S}` (`null` for a deletion), under a lock; the last line of a path
//! is its final state. `confine` removes [`VAR`] from the command's environment.

use std::collections::HashMap;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Mutex;

/// The environment variable naming the ledger file.
pub const VAR: &str = "SATYRN_PROVENANCE";

/// An open ledger.
#[derive(Debug)]
pub struct Ledger {
    file: Mutex<std::fs::File>,
}

impl Ledger {
    /// Opens the existing ledger file at `path` for appending (no symlink followed).
    ///
    /// # Errors
    ///
    /// The operating-system error of `open`.
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .append(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)?;
        Ok(Self {
            file: Mutex::new(file),
        })
    }

    /// Records what the confinement enforces (the line `confine` prints at start), for the
    /// receipt's `confinement`.
    pub fn enforced(&self, summary: &str) {
        let line = serde_json::json!({ "enforced": summary }).to_string();
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let _ = writeln!(file, "{line}");
    }

    /// Records that the broker published `sha256` at `path` (`None`: deleted it). An
    /// error is said on stderr: the check then refuses that path, which is safe.
    pub fn record(&self, path: &str, sha256: Option<&str>) {
        let line = serde_json::json!({ "path": path, "sha256": sha256 }).to_string();
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Err(e) = writeln!(file, "{line}") {
            let _ = writeln!(
                io::stderr(),
                "satyrn-host confine: cannot record the publication of {path}: {e}"
            );
        }
    }
}

/// What a ledger holds.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Record {
    /// The final state of each path: `Some(sha256)` published, `None` deleted.
    pub published: HashMap<String, Option<String>>,
    /// What the confinement enforced; `None` when `confine` never said (it did not get
    /// that far).
    pub enforced: Option<String>,
}

/// Reads the ledger at `path`. Lines that do not parse are skipped (the check then refuses
/// their path).
///
/// # Errors
///
/// The operating-system error of reading the file.
pub fn read(path: &Path) -> io::Result<Record> {
    let text = std::fs::read_to_string(path)?;
    let mut record = Record::default();
    for line in text.lines() {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if let Some(line) = value["enforced"].as_str() {
            record.enforced = Some(line.to_owned());
            continue;
        }
        let Some(p) = value["path"].as_str() else {
            continue;
        };
        record
            .published
            .insert(p.to_owned(), value["sha256"].as_str().map(str::to_owned));
    }
    Ok(record)
}
