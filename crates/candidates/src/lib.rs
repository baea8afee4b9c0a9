//! Reviewing candidates: `satyrn-host candidates list|show|diff|apply|drop`.
//!
//! A candidate is what `deliver` published under `refs/satyrn/candidates/<id>/`: the `head`
//! ref (the candidate commit, whose only parent is its base) and, beside it, the `receipt`
//! ref (an annotated tag of that commit whose tagger date is the publication time and whose
//! message is the receipt). Everything here reads and writes through [`satyrn_git`].
//!
//! - [`list`]: every candidate with its base, how far `HEAD` moved since, and its files;
//! - [`show`]: one candidate and its receipt;
//! - [`diff`]: the patch of a candidate against its own base;
//! - [`apply`]: the candidate's changes into a clean checkout (3-way when `HEAD` moved);
//! - [`drop`]: compare-and-delete of the candidate's refs;
//! - [`remote`]: candidates gathered on a shared remote, mirrored locally to be read.
//!
//! See `docs/candidates.md`.

pub mod apply;
pub mod diff;
pub mod drop;
pub mod list;
pub mod remote;
pub mod series;
pub mod show;

use satyrn_code::Code;
use satyrn_deliver::candidate::REF_PREFIX;
use satyrn_git::{Git, GitError, root};

/// The leaf of a candidate's commit ref.
pub const HEAD_LEAF: &str = "/head";
/// The leaf of a candidate's receipt ref.
pub const RECEIPT_LEAF: &str = "/receipt";

/// Why a `candidates` operation was refused; the repository is unchanged.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `--repo` is not a worktree root (`REPO_UNAVAILABLE`).
    #[error("{0}")]
    RepoUnavailable(String),
    /// No candidate has this id (`CANDIDATE_NOT_FOUND`).
    #[error("no candidate {0:?}")]
    NotFound(String),
    /// The candidate's ref no longer names the expected commit (`CANDIDATE_CHANGED`).
    #[error("{}", changed(id, expected, found.as_deref()))]
    Changed {
        /// The candidate id.
        id: String,
        /// The commit the caller expected.
        expected: String,
        /// What the ref names now (`None`: it is gone).
        found: Option<String>,
    },
    /// The checkout has changes or untracked files (`REPO_DIRTY`).
    #[error("the checkout has uncommitted changes or untracked files: {0:?}")]
    Dirty(Vec<String>),
    /// The candidate does not merge cleanly onto `HEAD` (`APPLY_CONFLICT`).
    #[error("candidate {id:?} conflicts with HEAD in {paths:?}; nothing was applied")]
    Conflict {
        /// The candidate id.
        id: String,
        /// The conflicted paths, sorted by bytes.
        paths: Vec<String>,
    },
    /// Applying would overwrite files in the checkout that git does not track — ignored
    /// ones, since the checkout is clean (`APPLY_CONFLICT`).
    #[error(
        "candidate {id:?} would overwrite files git does not track (ignored) in {paths:?}; nothing was applied"
    )]
    Overwrite {
        /// The candidate id.
        id: String,
        /// The paths in the way, sorted by bytes.
        paths: Vec<String>,
    },
    /// A git step failed (`GIT_FAILED`).
    #[error("{0}")]
    Git(#[from] GitError),
    /// git answered something this module cannot read (`GIT_FAILED`).
    #[error("{0}")]
    Unexpected(String),
}

impl Error {
    /// The result code.
    #[must_use]
    pub fn code(&self) -> Code {
        match self {
            Self::RepoUnavailable(_) => Code::RepoUnavailable,
            Self::NotFound(_) => Code::CandidateNotFound,
            Self::Changed { .. } => Code::CandidateChanged,
            Self::Dirty(_) => Code::RepoDirty,
            Self::Conflict { .. } | Self::Overwrite { .. } => Code::ApplyConflict,
            Self::Git(_) | Self::Unexpected(_) => Code::GitFailed,
        }
    }
}

/// The message of [`Error::Changed`].
fn changed(id: &str, expected: &str, found: Option<&str>) -> String {
    match found {
        Some(found) => format!(
            "candidate {id:?} names {found}, not the expected {expected}; nothing was changed"
        ),
        None => format!(
            "candidate {id:?} (expected at {expected}) no longer exists; nothing was changed"
        ),
    }
}

/// One candidate as its refs describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The id: the ref name between the namespace and `/head`.
    pub id: String,
    /// The commit ref (`…/<id>/head`).
    pub head_ref: String,
    /// The candidate commit.
    pub commit: String,
    /// Its first parent: the base it was made against (`None` for a root commit).
    pub base: Option<String>,
    /// The receipt tag object, when the receipt ref exists and is a tag of `commit`.
    pub receipt_tag: Option<String>,
    /// The publication time from the receipt tag's tagger date, RFC 3339 in UTC
    /// (`2026-12-01T11:43:00Z`).
    pub created: Option<String>,
}

/// Where candidates are read: a ref namespace ending in `/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Namespace(pub String);

impl Namespace {
    /// The local candidates, `refs/satyrn/candidates/`.
    #[must_use]
    pub fn local() -> Self {
        Self(REF_PREFIX.to_owned())
    }

    /// The head ref of `id` in this namespace.
    #[must_use]
    pub fn head_ref(&self, id: &str) -> String {
        format!("{}{id}{HEAD_LEAF}", self.0)
    }

    /// The receipt ref of `id` in this namespace.
    #[must_use]
    pub fn receipt_ref(&self, id: &str) -> String {
        format!("{}{id}{RECEIPT_LEAF}", self.0)
    }
}

/// Every candidate under `namespace`, sorted by id (bytes), from one `git for-each-ref`.
/// Refs of other shapes in the namespace are ignored; a receipt ref whose tag does not
/// point at the head's commit is not the candidate's receipt.
///
/// # Errors
///
/// [`Error::Git`] when git fails.
pub fn load(git: &Git, namespace: &Namespace) -> Result<Vec<Candidate>, Error> {
    let format = "--format=%(refname)%00%(objecttype)%00%(objectname)%00%(parent)%00%(*objectname)%00%(taggerdate:iso-strict)";
    let out = git.run(&["for-each-ref", format, &namespace.0])?;
    let text = String::from_utf8_lossy(&out);
    let mut heads: Vec<Candidate> = Vec::new();
    let mut receipts: Vec<(String, String, String, Option<String>)> = Vec::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split('\0').collect();
        let [name, kind, object, parent, peeled, date] = fields[..] else {
            continue;
        };
        let Some(rest) = name.strip_prefix(namespace.0.as_str()) else {
            continue;
        };
        if let Some(id) = rest.strip_suffix(HEAD_LEAF) {
            if kind != "commit" || id.is_empty() {
                continue;
            }
            heads.push(Candidate {
                id: id.to_owned(),
                head_ref: name.to_owned(),
                commit: object.to_owned(),
                base: parent
                    .split(' ')
                    .next()
                    .filter(|p| !p.is_empty())
                    .map(str::to_owned),
                receipt_tag: None,
                created: None,
            });
        } else if let Some(id) = rest.strip_suffix(RECEIPT_LEAF)
            && kind == "tag"
        {
            receipts.push((
                id.to_owned(),
                object.to_owned(),
                peeled.to_owned(),
                Some(date.to_owned()).filter(|d| !d.is_empty()),
            ));
        }
    }
    heads.sort_by(|a, b| a.id.as_bytes().cmp(b.id.as_bytes()));
    for (id, tag, peeled, created) in receipts {
        if let Ok(at) = heads.binary_search_by(|c| c.id.as_bytes().cmp(id.as_bytes()))
            && heads[at].commit == peeled
        {
            heads[at].receipt_tag = Some(tag);
            heads[at].created = created;
        }
    }
    Ok(heads)
}

/// The candidate `id` under `namespace`.
///
/// # Errors
///
/// [`Error::NotFound`] when there is none; [`Error::Git`] when git fails.
pub fn find(git: &Git, namespace: &Namespace, id: &str) -> Result<Candidate, Error> {
    load(git, namespace)?
        .into_iter()
        .find(|c| c.id == id)
        .ok_or_else(|| Error::NotFound(id.to_owned()))
}

/// The worktree root `repo`, as `deliver` resolves it.
///
/// # Errors
///
/// [`Error::RepoUnavailable`] when it is not a worktree root; [`Error::Git`] when git
/// cannot be run.
pub fn open(repo: &std::path::Path) -> Result<Git, Error> {
    root::resolve(&root::normalize(repo)).map_err(|e| match e {
        root::RootError::Git(g) => Error::Git(g),
        other => Error::RepoUnavailable(other.to_string()),
    })
}

/// `HEAD^{commit}` of `git`, or `None` when `HEAD` is unborn.
///
/// # Errors
///
/// [`Error::Git`] when git cannot be run.
pub fn head_commit(git: &Git) -> Result<Option<String>, Error> {
    let out = git.output(&[
        "rev-parse",
        "-q",
        "--verify",
        "--end-of-options",
        "HEAD^{commit}",
    ])?;
    Ok(out
        .status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned()))
}
