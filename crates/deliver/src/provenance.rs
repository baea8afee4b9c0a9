//! The provenance check of a confined run's candidate: every change is the broker's.
//!
//! When `deliver`'s command is `satyrn-host confine …` without `--unconfined`
//! ([`run_of`]), `deliver` gives it
//! an empty ledger in the attempt's private directory ([`satyrn_publish::ledger`]); the
//! broker records each publication there, out of the command's reach. After the
//! contract check ([`super::conformance`]), each changed path must then be the broker's
//! last publication of it: an added or modified file's content (its blob's SHA-256) is the
//! one the broker last published there, with the base's mode (a new file: `100644`, as the
//! broker creates it); a deleted file is one the broker last deleted. A mode-only change, a
//! type change (a symlink) and a gitlink are never the broker's. Landlock does not cover
//! `chmod`, so this is what refuses a mode the confined command set.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::Path;

use super::candidate::RawChange;
use super::conformance::{Breach, ChangeKind};
use satyrn_git::{Git, GitError};
use satyrn_publish::ledger::Record;

/// The code of a change the broker did not make, in the receipt's `outside_contract`.
pub const NOT_BROKERED: &str = "NOT_BROKERED";

/// The ledger's file name in the attempt's private directory.
pub const LEDGER_FILE: &str = "provenance.jsonl";

/// How `deliver`'s command runs, as far as the provenance check is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Run {
    /// Not `satyrn-host confine`: no provenance check.
    Plain,
    /// `satyrn-host confine --unconfined`: the command could write anything, the ledger
    /// included, so a ledger would prove nothing and none is given.
    Unconfined,
    /// `satyrn-host confine` with the kernel's boundary: the ledger lies outside every
    /// grant, so what it says is the broker's.
    Confined,
}

/// How `argv` runs: `satyrn-host confine` is this very binary (by file name) with
/// `confine` as its first argument; `--unconfined` among its options (before `--`) makes
/// it [`Run::Unconfined`].
#[must_use]
pub fn run_of(argv: &[OsString]) -> Run {
    let ours = std::env::current_exe().ok();
    let ours = ours.as_deref().and_then(Path::file_name);
    let [program, sub, options @ ..] = argv else {
        return Run::Plain;
    };
    if sub != "confine"
        || Path::new(program).file_name().is_none()
        || Path::new(program).file_name() != ours
    {
        return Run::Plain;
    }
    let options = options.iter().take_while(|a| *a != "--");
    if options.clone().any(|a| a == "--unconfined") {
        Run::Unconfined
    } else {
        Run::Confined
    }
}

/// Creates the empty ledger of a confined run in `dir` (the attempt's private directory),
/// before its command starts.
///
/// # Errors
///
/// The operating-system error of creating it.
pub fn create_ledger(dir: &Path) -> std::io::Result<std::path::PathBuf> {
    let path = dir.join(LEDGER_FILE);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)?;
    Ok(path)
}

/// The receipt's `confinement` for a command that ran as `run`, with the ledger `record`
/// of a confined run read after it: `None` for a command that is not `confine`.
#[must_use]
pub fn confinement(run: Run, record: Option<&Record>) -> Option<String> {
    match run {
        Run::Plain => None,
        Run::Unconfined => Some(
            "--unconfined: nothing was enforced by the kernel, and no provenance check was made"
                .to_owned(),
        ),
        Run::Confined => Some(record.and_then(|r| r.enforced.clone()).unwrap_or_else(|| {
            "confine did not start its broker: nothing was enforced".to_owned()
        })),
    }
}

/// The changes among `changes` that the broker's `ledger` does not account for.
///
/// # Errors
///
/// [`GitError`] when a blob cannot be read.
pub fn check(
    wt: &Git,
    changes: &[RawChange],
    ledger: &HashMap<String, Option<String>>,
) -> Result<Vec<Breach>, GitError> {
    let mut breaches = Vec::new();
    for change in changes {
        let path = String::from_utf8_lossy(&change.path).into_owned();
        let kind = ChangeKind::of(change);
        let published = ledger.get(&path);
        let why = match kind {
            ChangeKind::Mode => Some(format!(
                "its mode changed from {} to {}; the broker keeps modes",
                change.old_mode, change.new_mode
            )),
            ChangeKind::Type | ChangeKind::Gitlink => {
                Some("the broker writes regular files only".to_owned())
            }
            ChangeKind::Deleted => match published {
                Some(None) => None,
                _ => Some("the broker did not delete it".to_owned()),
            },
            ChangeKind::Added | ChangeKind::Modified => {
                let mode_ok = if kind == ChangeKind::Added {
                    change.new_mode == "100644"
                } else {
                    change.new_mode == change.old_mode
                };
                match published {
                    Some(Some(sha)) if mode_ok => {
                        let blob = wt.run(&["cat-file", "blob", &change.new_sha])?;
                        let content = satyrn_mutator_core::revision::Revision::of(&blob).to_hex();
                        (content != *sha).then(|| {
                            format!("its content is not the broker's last publication ({sha})")
                        })
                    }
                    Some(Some(_)) => Some(format!(
                        "its mode is {}, which the broker did not set",
                        change.new_mode
                    )),
                    Some(None) => Some("the broker deleted it last".to_owned()),
                    None => Some("the broker never wrote it".to_owned()),
                }
            }
        };
        if let Some(why) = why {
            breaches.push(Breach {
                detail: format!("`{path}` was changed around satyrn's broker: {why}"),
                path,
                change: kind,
                code: NOT_BROKERED,
            });
        }
    }
    Ok(breaches)
}
