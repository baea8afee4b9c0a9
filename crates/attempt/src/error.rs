//! Why an attempt failed: one variant per kind of step, each keeping the error it came
//! from, mapped to its result code in one place ([`AttemptError::code`]): the contract's
//! and the repository's refusals keep their own codes, everything else is
//! `ATTEMPT_FAILED` (exit 10).

use std::io;
use std::path::PathBuf;

use super::artifacts::ArtifactError;
use super::context::ContextError;
use super::prompt::PromptError;
use super::{PATCH_VAR, TRANSCRIPT_VAR};
use satyrn_code::{Code, Failure};
use satyrn_git::GitError;
use satyrn_os::signals;

/// Why an attempt failed.
#[derive(Debug, thiserror::Error)]
pub enum AttemptError {
    /// The contract or the repository was refused, with its own code.
    #[error("{}", .0.message)]
    Refused(Failure),
    /// A file-system step failed: what it was (`cannot freeze the contract`), and why.
    #[error("{what}: {source}")]
    Io {
        /// The step, as the message says it.
        what: &'static str,
        /// The operating system's error.
        source: io::Error,
    },
    /// A git step failed: what it was (`HEAD is not a readable commit`), and why.
    #[error("{what}: {source}")]
    Git {
        /// The step, as the message says it.
        what: &'static str,
        /// git's error.
        source: GitError,
    },
    /// git located its directories with output of an unexpected shape.
    #[error("locating git's directories and HEAD failed: unexpected output {0:?}")]
    Located(String),
    /// An artifact destination was refused.
    #[error("{0}")]
    Artifact(#[source] ArtifactError),
    /// The transcript and the patch would be one file.
    #[error("{TRANSCRIPT_VAR} and {PATCH_VAR} name the same file ({}); give each its own", .0.display())]
    SameArtifact(PathBuf),
    /// The private directory was made inside the worktree (`TMPDIR` points into it).
    #[error("the temporary directory {} lies inside the worktree; set TMPDIR elsewhere", .0.display())]
    PrivateInside(PathBuf),
    /// The revision map could not be built.
    #[error("{0}")]
    Revisions(String),
    /// The contract declares no tracked file of this worktree.
    #[error("{0}")]
    NothingWritable(String),
    /// The prompt is over its limit.
    #[error("{0}")]
    Prompt(#[source] PromptError),
    /// The mutation context is over its limit or could not be written.
    #[error("{0}")]
    Context(#[source] ContextError),
    /// Pi could not be found, or its private home prepared.
    #[error("{0}")]
    Pi(String),
    /// A termination signal arrived before Pi started.
    #[error("interrupted by {} before pi started", signals::name(*.0))]
    Interrupted(i32),
    /// Pi could not be started.
    #[error("cannot start pi ({}): {source}", program.display())]
    Spawn {
        /// The program.
        program: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// What failed once Pi had run (every step was still tried), in order.
    #[error("{}", .0.join("; "))]
    After(Vec<String>),
    /// The private directory could not be removed.
    #[error("cleanup failed, retained {}: {source}", dir.display())]
    Cleanup {
        /// The directory, retained.
        dir: PathBuf,
        /// Why.
        source: io::Error,
    },
}

impl AttemptError {
    /// The result code: the refusal's own, else `ATTEMPT_FAILED`.
    #[must_use]
    pub fn code(&self) -> Code {
        match self {
            Self::Refused(failure) => failure.code,
            _ => Code::AttemptFailed,
        }
    }

    /// A maker of [`AttemptError::Io`] for `map_err`.
    pub(super) fn io(what: &'static str) -> impl FnOnce(io::Error) -> Self {
        move |source| Self::Io { what, source }
    }

    /// A maker of [`AttemptError::Git`] for `map_err`.
    pub(super) fn git(what: &'static str) -> impl FnOnce(GitError) -> Self {
        move |source| Self::Git { what, source }
    }
}

impl From<Failure> for AttemptError {
    fn from(failure: Failure) -> Self {
        Self::Refused(failure)
    }
}

impl From<satyrn_contract::ContractError> for AttemptError {
    fn from(e: satyrn_contract::ContractError) -> Self {
        Self::Refused(e.into())
    }
}

impl From<AttemptError> for Failure {
    fn from(e: AttemptError) -> Self {
        Failure::new(e.code(), e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    fn os() -> io::Error {
        io::Error::from_raw_os_error(libc::ENOSPC)
    }

    const NOSPC: &str = "No space left on device (os error 28)";

    /// Every variant: its code, its message, and whether it keeps its source.
    #[test]
    fn every_attempt_error_has_its_code_message_and_source() {
        let git = GitError::Output {
            args: "rev-parse".to_string(),
            detail: "no HEAD".to_string(),
        };
        let git_message = git.to_string();
        let cases: Vec<(AttemptError, Code, String, bool)> = vec![
            (
                AttemptError::Refused(Failure::new(Code::ContractInvalid, "bad")),
                Code::ContractInvalid,
                "bad".to_string(),
                false,
            ),
            (
                AttemptError::io("cannot write the prompt")(os()),
                Code::AttemptFailed,
                format!("cannot write the prompt: {NOSPC}"),
                true,
            ),
            (
                AttemptError::git("HEAD is not a readable commit")(git),
                Code::AttemptFailed,
                format!("HEAD is not a readable commit: {git_message}"),
                true,
            ),
            (
                AttemptError::Located("x".to_string()),
                Code::AttemptFailed,
                "locating git's directories and HEAD failed: unexpected output \"x\"".to_string(),
                false,
            ),
            (
                AttemptError::Artifact(ArtifactError("refused".to_string())),
                Code::AttemptFailed,
                "refused".to_string(),
                true,
            ),
            (
                AttemptError::SameArtifact(PathBuf::from("/o/a")),
                Code::AttemptFailed,
                format!(
                    "{TRANSCRIPT_VAR} and {PATCH_VAR} name the same file (/o/a); give each its own"
                ),
                false,
            ),
            (
                AttemptError::PrivateInside(PathBuf::from("/r/t")),
                Code::AttemptFailed,
                "the temporary directory /r/t lies inside the worktree; set TMPDIR elsewhere"
                    .to_string(),
                false,
            ),
            (
                AttemptError::Revisions("r".to_string()),
                Code::AttemptFailed,
                "r".to_string(),
                false,
            ),
            (
                AttemptError::Prompt(PromptError { task_bytes: 1 }),
                Code::AttemptFailed,
                PromptError { task_bytes: 1 }.to_string(),
                true,
            ),
            (
                AttemptError::Context(ContextError::Io(os())),
                Code::AttemptFailed,
                format!("cannot write the mutation context: {NOSPC}"),
                true,
            ),
            (
                AttemptError::Interrupted(libc::SIGTERM),
                Code::AttemptFailed,
                "interrupted by SIGTERM before pi started".to_string(),
                false,
            ),
            (
                AttemptError::Spawn {
                    program: PathBuf::from("/bin/pi"),
                    source: os(),
                },
                Code::AttemptFailed,
                format!("cannot start pi (/bin/pi): {NOSPC}"),
                true,
            ),
            (
                AttemptError::After(vec!["a".to_string(), "b".to_string()]),
                Code::AttemptFailed,
                "a; b".to_string(),
                false,
            ),
            (
                AttemptError::Cleanup {
                    dir: PathBuf::from("/t/p"),
                    source: os(),
                },
                Code::AttemptFailed,
                format!("cleanup failed, retained /t/p: {NOSPC}"),
                true,
            ),
        ];
        for (error, code, message, has_source) in cases {
            assert_eq!(error.code(), code, "{message}");
            assert_eq!(error.to_string(), message);
            assert_eq!(error.source().is_some(), has_source, "{message}");
        }
    }
}
