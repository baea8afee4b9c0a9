//! `deliver --push REMOTE`: after the local candidate exists, publish it to a shared remote
//! **create-only**, so machines racing for one candidate name produce exactly one remote ref.
//!
//! One `git push --atomic` sends the head and receipt refs, each with a lease that expects
//! absence (`--force-with-lease=<ref>:` with an empty expected value): git refuses the push
//! when the remote has the ref (client side, from the advertisement) and the server applies
//! the update only if the ref is still absent under its lock (the old value sent is zero),
//! so a rival that created it between the two is refused too. After a refusal the remote is
//! asked (`git ls-remote`) whether any of the refs exists there now: `CANDIDATE_EXISTS`,
//! else `GIT_FAILED`. An attempt of a series that made no candidate pushes its receipt ref
//! alone, the same way ([`push`] with one ref), so "ran, no change" is on the remote too.
//! Transport and credentials are git's own.
//!
//! Both git calls end at a deadline ([`deadline`]: what is left of `--timeout`, at least
//! [`PUSH_FLOOR`]); a push still running then is stopped with its process group and is
//! [`Pushed::TimedOut`] (`PUSH_TIMEOUT`): whether the remote applied it is unknown.

use std::time::{Duration, Instant};

use serde::Serialize;

use satyrn_git::{Bounded, Git, GitError};

/// The least time a push gets, however much of `--timeout` the command used: 10 s.
pub const PUSH_FLOOR: Duration = Duration::from_secs(10);

/// When the push must end: the end of the command's budget (`budget_end`, the command's
/// start plus `--timeout`), or [`PUSH_FLOOR`] after `now`, whichever is later.
#[must_use]
pub fn deadline(budget_end: Instant, now: Instant) -> Instant {
    budget_end.max(now + PUSH_FLOOR)
}

/// Where the candidate was pushed, in the receipt (`published`, present only with
/// `--push`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, PartialOrd, Ord)]
pub struct Publication {
    /// The remote as given to `--push`.
    pub remote: String,
    /// Whether both refs were created there.
    pub pushed: bool,
    /// Empty when pushed, otherwise why not.
    pub message: String,
}

/// How a push ended.
#[derive(Debug)]
pub enum Pushed {
    /// Both refs were created on the remote.
    Created,
    /// The remote has one of the refs already (`CANDIDATE_EXISTS`): for an attempt of a
    /// series, its index ran before.
    Exists,
    /// The push failed otherwise (`GIT_FAILED`); git's message.
    Failed(GitError),
    /// The push did not end by the deadline and its process group was stopped
    /// (`PUSH_TIMEOUT`): the remote may or may not have applied it. git's stderr so far.
    TimedOut(String),
    /// `deliver` received this interruption during the push, whose process group was
    /// stopped (`INTERRUPTED`): the remote may or may not have applied it.
    Interrupted(i32),
}

/// Pushes each object to its ref on `remote` (`refs`: the candidate's head and receipt, or an
/// attempt's receipt alone), all create-only, atomically (a remote without atomic-push
/// support refuses: `Failed`), ending by `deadline` (a push still running then is
/// `TimedOut`, one interrupted `Interrupted`; an `ls-remote` after a refusal stopped either
/// way makes the refusal `Failed`). A refusal after which the remote has any of the refs is
/// `Exists`.
///
/// # Process-global effects
///
/// Signals git's process group when the deadline passes or an interruption arrives
/// ([`satyrn_git::Prepare::until`]).
///
/// # Errors
///
/// [`GitError`] when git cannot be run at all.
pub fn push(
    repo: &Git,
    remote: &str,
    refs: &[(&str, &str)],
    deadline: Instant,
) -> Result<Pushed, GitError> {
    let leases: Vec<(String, String)> = refs
        .iter()
        .map(|(name, _)| ((*name).to_owned(), String::new()))
        .collect();
    let specs: Vec<String> = refs
        .iter()
        .map(|(name, object)| format!("{object}:{name}"))
        .collect();
    let args = satyrn_git::atomic_push_args(&leases, remote, &specs);
    let out = match repo.cmd(&args).until(deadline)? {
        Bounded::Finished(out) => out,
        Bounded::TimedOut { stderr } => return Ok(Pushed::TimedOut(stderr)),
        Bounded::Interrupted { signal, .. } => return Ok(Pushed::Interrupted(signal)),
    };
    if out.status.success() {
        return Ok(Pushed::Created);
    }
    let mut ask = vec!["ls-remote", "--refs", "--end-of-options", remote];
    ask.extend(refs.iter().map(|(name, _)| *name));
    let listed = repo.cmd(&ask).until(deadline)?;
    // ls-remote matches a pattern against ref names' tails: only an exact name counts.
    let exact = |stdout: &[u8]| {
        String::from_utf8_lossy(stdout).lines().any(|line| {
            line.split_once('\t')
                .is_some_and(|(_, name)| refs.iter().any(|(r, _)| *r == name))
        })
    };
    match listed {
        Bounded::Finished(listed) if listed.status.success() && exact(&listed.stdout) => {
            Ok(Pushed::Exists)
        }
        _ => Ok(Pushed::Failed(satyrn_git::failed(&args, &out))),
    }
}

/// Deletes the local refs just published when the push failed, each only if it still names
/// what was written (one `update-ref --stdin` transaction), so the local repository says what
/// the receipt says: nothing published.
///
/// # Errors
///
/// [`GitError`] when the deletion fails (a concurrent change kept them).
pub fn withdraw(
    repo: &Git,
    (head_ref, commit): (&str, &str),
    (receipt_ref, tag): (&str, &str),
) -> Result<(), GitError> {
    let input = format!("delete {head_ref}\0{commit}\0delete {receipt_ref}\0{tag}\0");
    repo.cmd(&satyrn_git::ref_transaction_args(
        "satyrn deliver --push: not published",
    ))
    .stdin(input.as_bytes())
    .run()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_push_gets_what_is_left_of_the_budget_but_never_less_than_the_floor() {
        let now = Instant::now();
        let later = now + Duration::from_secs(300);
        assert_eq!(deadline(later, now), later, "budget left: it is used");
        assert_eq!(
            deadline(now, now),
            now + PUSH_FLOOR,
            "budget spent: the floor"
        );
        let nearly = now + Duration::from_secs(3);
        assert_eq!(
            deadline(nearly, now),
            now + PUSH_FLOOR,
            "less than the floor left"
        );
    }
}
