//! `candidates drop ID --expect COMMIT`: compare-and-delete. The candidate's refs are
//! deleted only if the head ref still names the commit the caller listed, in one
//! `git update-ref --stdin` transaction (head and receipt together, each against the value
//! read), so a candidate re-published meanwhile under the same id is never lost.

use serde::Serialize;

use super::{Error, Namespace};
use crate::git::Git;

/// What was deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Dropped {
    /// The candidate id.
    pub id: String,
    /// The commit the head ref named.
    pub commit: String,
    /// The refs deleted (head, then receipt when there was one).
    pub refs: Vec<String>,
}

/// Deletes the local candidate `id` if its head ref names `expected`.
///
/// # Errors
///
/// [`Error::NotFound`] when there is no such candidate (any more), [`Error::Changed`]
/// when it names another commit; [`Error::Git`] when git fails. Nothing is deleted then.
pub fn drop(git: &Git, id: &str, expected: &str) -> Result<Dropped, Error> {
    let namespace = Namespace::local();
    let candidate = super::find(git, &namespace, id)?;
    if candidate.commit != expected {
        return Err(Error::Changed {
            id: id.to_owned(),
            expected: expected.to_owned(),
            found: Some(candidate.commit),
        });
    }
    let mut input = format!("delete {}\0{expected}\0", candidate.head_ref).into_bytes();
    let mut refs = vec![candidate.head_ref.clone()];
    if let Some(tag) = &candidate.receipt_tag {
        let receipt = namespace.receipt_ref(id);
        input.extend_from_slice(format!("delete {receipt}\0{tag}\0").as_bytes());
        refs.push(receipt);
    }
    let args = [
        "-c",
        "core.filesRefLockTimeout=2000",
        "update-ref",
        "--no-deref",
        "-m",
        "satyrn candidates drop",
        "--stdin",
        "-z",
    ];
    let out = git.output_input(&args, &input)?;
    if out.status.success() {
        return Ok(Dropped {
            id: id.to_owned(),
            commit: expected.to_owned(),
            refs,
        });
    }
    match super::find(git, &namespace, id) {
        Ok(now) if now.commit != expected => Err(Error::Changed {
            id: id.to_owned(),
            expected: expected.to_owned(),
            found: Some(now.commit),
        }),
        Err(Error::NotFound(_)) => Err(Error::NotFound(id.to_owned())),
        _ => Err(Error::Git(crate::git::failed(&args, &out))),
    }
}
