//! The revision map: every tracked path that the contract declares writable and that is a
//! single-link regular file reached without any symlink, with its SHA-256.
//!
//! Tracked paths come from `git ls-files -z` (NUL-delimited, as bytes); matching and the
//! no-follow walk are the component's (`revision`), not a second matcher in the host.

use std::collections::BTreeMap;
use std::path::Path;

use crate::engine::{Loaded, RevisionError};
use crate::git::{self, Git};
use crate::repo::RepoRoot;

/// Builds the map for the worktree at `root`.
///
/// # Errors
///
/// A message when git or the component fails.
pub fn map(
    root: &RepoRoot,
    writable: &[String],
    private: &[String],
) -> Result<BTreeMap<String, String>, String> {
    let tracked = Git::at(root.path())
        .run(&["ls-files", "-z", "--cached", "--full-name"])
        .map_err(|e| format!("listing tracked files failed: {e}"))?;
    let loaded = Loaded::new().map_err(|e| e.to_string())?;
    let mut mutator = loaded.instantiate(root.dir()).map_err(|e| e.to_string())?;
    let mut revisions = BTreeMap::new();
    let mut seen = std::collections::BTreeSet::new();
    for raw in git::split_z(&tracked) {
        // A path that is not UTF-8 cannot be named in a contract or a request.
        let Ok(path) = std::str::from_utf8(raw) else {
            continue;
        };
        // An unmerged path is listed once per stage.
        if !seen.insert(path) {
            continue;
        }
        match mutator
            .revision(path, writable, private)
            .map_err(|e| e.to_string())?
        {
            Ok(sha) => {
                revisions.insert(path.to_string(), sha);
            }
            Err(
                RevisionError::Undeclared
                | RevisionError::Private
                | RevisionError::NotEditable(_)
                | RevisionError::InvalidRequest(_),
            ) => {}
        }
    }
    Ok(revisions)
}

/// Whether `path` is tracked content the map could name (for messages).
#[must_use]
pub fn describe_empty(repo: &Path) -> String {
    format!(
        "no tracked regular file in {} matches writable_paths (symlinks and hard-linked files are never editable)",
        repo.display()
    )
}
