//! The candidate: id validation, the ref, the commit, its paths and its publication.

use super::error::IdError;
use satyrn_git::{self as git, Git, GitError};
pub use satyrn_mutator_core::path::deceptive;

/// The namespace of candidate refs: `refs/satyrn/candidates/<id>/head`.
pub const REF_PREFIX: &str = "refs/satyrn/candidates/";

/// The fixed identity of every candidate commit (author and committer).
pub const IDENTITY_NAME: &str = "satyrn";
/// The fixed e-mail of every candidate commit.
pub const IDENTITY_EMAIL: &str = "satyrn@satyrn.invalid";
/// The fixed date of every candidate commit (2000-01-01T00:00:00Z, git internal format), so
/// the same change on the same base gives the same commit.
pub const FIXED_DATE: &str = "946684800 +0000";

/// The candidate ref of `id`.
#[must_use]
pub fn ref_name(id: &str) -> String {
    format!("{REF_PREFIX}{id}/head")
}

/// The largest attempt index of a series (`--attempt`, `--attempts`).
pub const MAX_ATTEMPTS: u16 = 999;

/// The candidate id of attempt `index` of contract `id`: `<id>/<index as 3 digits>`
/// (`feature-1/007`), or `id` itself for a single attempt. A contract id never contains `/`,
/// so an attempt's candidate never collides with a single-attempt one; the fixed width sorts
/// the attempts by index; `refs/satyrn/candidates/<id>/head` and
/// `refs/satyrn/candidates/<id>/007/head` can exist side by side (neither is a prefix
/// directory of the other's ref file).
#[must_use]
pub fn attempt_id(id: &str, index: Option<u16>) -> String {
    match index {
        Some(i) => format!("{id}/{i:03}"),
        None => id.to_owned(),
    }
}

/// `Ok` when `id` is one valid ref component without a [`deceptive`] character. Never
/// normalized.
///
/// # Errors
///
/// [`IdError`] naming the problem (`INVALID_CANDIDATE_ID`), [`IdError::Git`] when git
/// cannot be run.
pub fn check_id(git: &Git, id: &str) -> Result<(), IdError> {
    if id.contains('/') {
        return Err(IdError::Slash(id.to_owned()));
    }
    if id.contains('\0') {
        return Err(IdError::Nul(id.to_owned()));
    }
    if id.len() > MAX_ID_BYTES {
        return Err(IdError::TooLong {
            id: id.to_owned(),
            len: id.len(),
        });
    }
    if id.starts_with('-') {
        return Err(IdError::LeadingDash(id.to_owned()));
    }
    if let Some((character, what)) = id.chars().find_map(|c| deceptive(c).map(|w| (c, w))) {
        return Err(IdError::Deceptive {
            id: id.to_owned(),
            character,
            what,
        });
    }
    // Every name publication will give it: the head ref (the receipt's shares its
    // component) and the receipt tag's own name, which `git mktag` checks as a tag.
    for name in [ref_name(id), format!("refs/tags/satyrn-candidate-{id}")] {
        let out = git
            .output(&["check-ref-format", &name])
            .map_err(IdError::Git)?;
        if !out.status.success() {
            return Err(IdError::NotRefName {
                id: id.to_owned(),
                name,
            });
        }
    }
    Ok(())
}

/// The longest candidate id: 200 bytes, so every ref it names (and a series' `/<n>` below
/// it) stays a file name a file system takes (255 bytes).
pub const MAX_ID_BYTES: usize = 200;

/// Whether `name` exists as a ref: ordinary, symbolic, or dangling symbolic.
///
/// # Errors
///
/// [`GitError`] when git cannot answer.
pub fn ref_exists(git: &Git, name: &str) -> Result<bool, GitError> {
    let sym = git.output(&["symbolic-ref", "-q", name])?;
    match sym.status.code() {
        Some(0) => return Ok(true),
        Some(1) => {}
        _ => return Err(git::failed(&["symbolic-ref", "-q", name], &sym)),
    }
    let verify = git.output(&["rev-parse", "-q", "--verify", "--end-of-options", name])?;
    Ok(verify.status.success())
}

/// What the command left in the worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The staged tree equals the base tree.
    None,
    /// A commit whose only parent is the base, and its changed paths sorted by bytes.
    Commit {
        /// The new commit.
        commit: String,
        /// The changed paths.
        paths: Vec<String>,
    },
}

/// Why the candidate could not be built (`GIT_FAILED`).
#[derive(Debug, thiserror::Error)]
pub enum CandidateError {
    /// A git step failed.
    #[error("{0}")]
    Git(#[from] GitError),
    /// A changed path is not UTF-8 (lossy spelling in the message).
    #[error("changed path {0:?} is not UTF-8")]
    NonUtf8Path(String),
}

/// Stages everything in the worktree (`add -A`; `deliver` swept the publish temporaries a
/// killed `satyrn-host` provably left first: [`satyrn_publish::sweep`]), writes the tree
/// and, when it differs from the base's, commits it with exactly `base` as parent, the fixed identity and date and no
/// signature; the paths come from `diff-tree -z` of that commit.
///
/// # Errors
///
/// [`CandidateError`] when a git step fails or a changed path is not UTF-8.
pub fn build(wt: &Git, id: &str, base: &str) -> Result<Change, CandidateError> {
    wt.run(&["add", "-A", "--", "."])?;
    let tree = wt.line(&["write-tree"])?;
    let base_tree = wt.line(&["rev-parse", "--verify", &format!("{base}^{{tree}}")])?;
    if tree == base_tree {
        return Ok(Change::None);
    }
    let message = format!("satyrn candidate {id}\n\nBase: {base}\n");
    let envs = [
        ("GIT_AUTHOR_NAME", IDENTITY_NAME),
        ("GIT_AUTHOR_EMAIL", IDENTITY_EMAIL),
        ("GIT_AUTHOR_DATE", FIXED_DATE),
        ("GIT_COMMITTER_NAME", IDENTITY_NAME),
        ("GIT_COMMITTER_EMAIL", IDENTITY_EMAIL),
        ("GIT_COMMITTER_DATE", FIXED_DATE),
    ];
    let args = [
        "-c",
        "i18n.commitEncoding=UTF-8",
        "commit-tree",
        "--no-gpg-sign",
        &tree,
        "-p",
        base,
        "-m",
        &message,
    ];
    let out = wt.cmd(&args).envs(&envs).run()?;
    let commit = String::from_utf8_lossy(&out).trim().to_owned();
    let listed = wt.run(&[
        "diff-tree",
        "-r",
        "-z",
        "--no-renames",
        "--no-ext-diff",
        "--no-commit-id",
        "--name-only",
        "--ignore-submodules=none",
        &commit,
    ])?;
    let mut paths = Vec::new();
    for raw in git::split_z(&listed) {
        match std::str::from_utf8(raw) {
            Ok(p) => paths.push(p.to_owned()),
            Err(_) => {
                return Err(CandidateError::NonUtf8Path(
                    String::from_utf8_lossy(raw).into_owned(),
                ));
            }
        }
    }
    // String order is raw UTF-8 byte order.
    paths.sort();
    Ok(Change::Commit { commit, paths })
}

/// One path the candidate `commit` changes against its parent, from `diff-tree --raw`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawChange {
    /// The mode before (`000000` when added), as git spells it.
    pub old_mode: String,
    /// The mode after (`000000` when deleted).
    pub new_mode: String,
    /// The object before (all zeros when added).
    pub old_sha: String,
    /// The object after (all zeros when deleted).
    pub new_sha: String,
    /// git's status letter: `A`, `D`, `M` or `T` (type changed).
    pub status: u8,
    /// The repository path, raw bytes.
    pub path: Vec<u8>,
}

/// Every path `commit` changes against its only parent (`diff-tree -r -z --raw
/// --no-renames`, submodules included), in git's order.
///
/// # Errors
///
/// [`GitError`] when git cannot list the changes.
pub fn changes(wt: &Git, commit: &str) -> Result<Vec<RawChange>, GitError> {
    let raw = wt.run(&[
        "diff-tree",
        "-r",
        "-z",
        "--raw",
        "--no-renames",
        "--no-ext-diff",
        "--no-commit-id",
        "--ignore-submodules=none",
        commit,
    ])?;
    let mut out = Vec::new();
    for pair in git::split_z(&raw).chunks(2) {
        let [header, path] = pair else { continue };
        // ":<old mode> <new mode> <old sha> <new sha> <status>"
        let header = String::from_utf8_lossy(header.strip_prefix(b":").unwrap_or(header));
        let fields: Vec<&str> = header.split(' ').collect();
        let [old_mode, new_mode, old_sha, new_sha, status] = fields.as_slice() else {
            continue;
        };
        out.push(RawChange {
            old_mode: (*old_mode).to_owned(),
            new_mode: (*new_mode).to_owned(),
            old_sha: (*old_sha).to_owned(),
            new_sha: (*new_sha).to_owned(),
            status: status.bytes().next().unwrap_or(b'M'),
            path: path.to_vec(),
        });
    }
    Ok(out)
}

/// The receipt ref of `id`: an annotated tag object, beside the head ref, pointing at the
/// candidate commit. Its tagger date is when the candidate was published (the commit's own
/// date is fixed) and its message the receipt as `deliver` printed it.
#[must_use]
pub fn receipt_ref_name(id: &str) -> String {
    format!("{REF_PREFIX}{id}/receipt")
}

/// How a publish ended.
#[derive(Debug)]
pub enum Published {
    /// The ref now names the commit.
    Created,
    /// The ref already existed (`CANDIDATE_EXISTS`).
    Exists,
    /// The ref could not be created and does not exist (`GIT_FAILED`).
    Failed(GitError),
}

/// Writes the receipt tag of the candidate `commit` (`git mktag`): tagger the fixed
/// identity at `created` (seconds since the epoch, UTC), message `receipt_json`.
///
/// # Errors
///
/// [`GitError`] when `mktag` fails.
pub fn write_receipt_tag(
    repo: &Git,
    id: &str,
    commit: &str,
    created: u64,
    receipt_json: &str,
) -> Result<String, GitError> {
    let body = format!(
        "object {commit}\ntype commit\ntag satyrn-candidate-{id}\ntagger {IDENTITY_NAME} <{IDENTITY_EMAIL}> {created} +0000\n\n{receipt_json}\n"
    );
    let out = repo.cmd(&["mktag"]).stdin(body.as_bytes()).run()?;
    Ok(String::from_utf8_lossy(&out).trim().to_owned())
}

/// Creates `name` at `commit` and, when given, the receipt ref at its tag, in one
/// `git update-ref --stdin` transaction: both only if absent, both or neither. After a
/// failure, re-reads `name`.
///
/// # Errors
///
/// [`GitError`] when git cannot be run at all.
pub fn publish(
    repo: &Git,
    name: &str,
    commit: &str,
    receipt: Option<(&str, &str)>,
) -> Result<Published, GitError> {
    let args = git::ref_transaction_args("satyrn deliver");
    let mut input = format!("create {name}\0{commit}\0").into_bytes();
    if let Some((receipt_name, tag)) = receipt {
        input.extend_from_slice(format!("create {receipt_name}\0{tag}\0").as_bytes());
    }
    let out = repo.cmd(&args).stdin(&input).output()?;
    if out.status.success() {
        return Ok(Published::Created);
    }
    if ref_exists(repo, name)? {
        Ok(Published::Exists)
    } else {
        Ok(Published::Failed(git::failed(&args, &out)))
    }
}
