//! `candidates diff ID`: the candidate's patch against its own base (its only parent),
//! never against whatever `HEAD` is now.

use super::{Error, Namespace};
use satyrn_git::Git;

/// The patch of candidate `id` against its base (`git diff-tree -p` of the commit: no
/// colour, no external diff driver, no text conversion, no rename detection), as bytes.
///
/// # Errors
///
/// [`Error::NotFound`], or [`Error::Git`] when git fails.
pub fn diff(git: &Git, namespace: &Namespace, id: &str) -> Result<Vec<u8>, Error> {
    let candidate = super::find(git, namespace, id)?;
    Ok(git.run(&[
        "diff-tree",
        "-p",
        "-r",
        "--root",
        "--no-commit-id",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--no-renames",
        "--ignore-submodules=none",
        &candidate.commit,
        "--",
    ])?)
}
