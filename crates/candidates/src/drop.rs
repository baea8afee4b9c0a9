//! `candidates drop ID --expect COMMIT`: compare-and-delete. The candidate's refs are
//! deleted only if the head ref still names the commit the caller listed, in one
//! `git update-ref --stdin` transaction (head and receipt together, each against the value
//! read), so a candidate re-published meanwhile under the same id is never lost.
//!
//! With `--remote REMOTE` ([`drop_remote`]) the same compare-and-delete happens on the
//! remote: one `git push --atomic` deleting the head (and receipt) ref there, each under a
//! lease naming the value read (`--force-with-lease=<ref>:<expected>`), so the remote applies
//! the deletion only if the ref still names it under its lock.

use serde::Serialize;

use super::{Error, Namespace};
use satyrn_git::Git;

/// What was deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Dropped {
    /// The candidate id.
    pub id: String,
    /// The commit the head ref named.
    pub commit: String,
    /// The refs deleted (head, then receipt when there was one), as named where they were.
    pub refs: Vec<String>,
    /// The remote they were deleted on, as given; `None` for local refs.
    pub remote: Option<String>,
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
    let args = satyrn_git::ref_transaction_args("satyrn candidates drop");
    let out = git.cmd(&args).stdin(&input).output()?;
    if out.status.success() {
        return Ok(Dropped {
            id: id.to_owned(),
            commit: expected.to_owned(),
            refs,
            remote: None,
        });
    }
    Err(refused(
        super::find(git, &namespace, id),
        id,
        expected,
        &args,
        &out,
    ))
}

/// Deletes candidate `id` on `remote` if its head ref there names `expected`: the remote's
/// candidates are fetched into their mirror ([`super::remote::mirror`]), checked, then
/// deleted by one atomic push whose leases expect exactly what was fetched; the mirror is
/// fetched again afterwards, so it shows the remote as it is now.
///
/// # Errors
///
/// As [`drop`]: [`Error::NotFound`], [`Error::Changed`] (also when the remote changed between
/// the fetch and the push: the lease refuses it), [`Error::Git`] for a failed fetch or push.
/// Nothing is deleted then.
pub fn drop_remote(git: &Git, remote: &str, id: &str, expected: &str) -> Result<Dropped, Error> {
    let mirror = super::remote::mirror(git, remote)?;
    let candidate = super::find(git, &mirror, id)?;
    if candidate.commit != expected {
        return Err(Error::Changed {
            id: id.to_owned(),
            expected: expected.to_owned(),
            found: Some(candidate.commit),
        });
    }
    let there = Namespace::local();
    let mut leased = vec![(there.head_ref(id), expected.to_owned())];
    if let Some(tag) = &candidate.receipt_tag {
        leased.push((there.receipt_ref(id), tag.clone()));
    }
    let deletions: Vec<String> = leased.iter().map(|(name, _)| format!(":{name}")).collect();
    let args = satyrn_git::atomic_push_args(&leased, remote, &deletions);
    let out = git.output(&args)?;
    let now = super::remote::mirror(git, remote).and_then(|m| super::find(git, &m, id));
    if out.status.success() {
        return Ok(Dropped {
            id: id.to_owned(),
            commit: expected.to_owned(),
            refs: leased.into_iter().map(|(name, _)| name).collect(),
            remote: Some(remote.to_owned()),
        });
    }
    Err(refused(now, id, expected, &args, &out))
}

/// Why a deletion git refused did not happen, from what the candidate is `now`: it names
/// another commit (`Changed`), it is gone (`NotFound`), or git failed for another reason.
fn refused<S: AsRef<std::ffi::OsStr>>(
    now: Result<super::Candidate, Error>,
    id: &str,
    expected: &str,
    args: &[S],
    out: &std::process::Output,
) -> Error {
    match now {
        Ok(now) if now.commit != expected => Error::Changed {
            id: id.to_owned(),
            expected: expected.to_owned(),
            found: Some(now.commit),
        },
        Err(Error::NotFound(_)) => Error::NotFound(id.to_owned()),
        _ => Error::Git(satyrn_git::failed(args, out)),
    }
}
