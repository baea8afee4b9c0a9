//! The typed errors of delivery, each keeping its source, and the one place where each
//! becomes a result [`Code`] (`code`). The messages are the receipt's and stderr's.

use std::io;

use satyrn_code::Code;
use satyrn_git::GitError;

pub use satyrn_git::root::RootError;

/// Why a contract id cannot name a candidate ref.
#[derive(Debug, thiserror::Error)]
pub enum IdError {
    /// It contains `/`.
    #[error("candidate id {0:?} contains '/'; it must be a single ref component")]
    Slash(String),
    /// It contains NUL.
    #[error("candidate id {0:?} contains NUL")]
    Nul(String),
    /// It is longer than [`super::candidate::MAX_ID_BYTES`].
    #[error(
        "candidate id {:?}… is {len} bytes, over the {} a candidate id may have",
        id.chars().take(40).collect::<String>(),
        super::candidate::MAX_ID_BYTES
    )]
    TooLong {
        /// The id.
        id: String,
        /// Its length in bytes.
        len: usize,
    },
    /// It contains a character a reviewer could not read as it is.
    #[error(
        "candidate id {id:?} contains {what} U+{:04X}; a reviewer could not read the id as it is",
        u32::from(*character)
    )]
    Deceptive {
        /// The id.
        id: String,
        /// The character.
        character: char,
        /// What kind of character it is.
        what: &'static str,
    },
    /// It starts with `-`, so every command line that names it reads it as an option.
    #[error("candidate id {0:?} starts with `-`, which every command line would read as an option")]
    LeadingDash(String),
    /// `git check-ref-format` refuses the ref it names.
    #[error("candidate id {id:?} does not give a valid ref name ({name})")]
    NotRefName {
        /// The id.
        id: String,
        /// The ref it would name.
        name: String,
    },
    /// git itself could not be run.
    #[error("{0}")]
    Git(#[source] GitError),
}

impl IdError {
    /// `INVALID_CANDIDATE_ID`, or `GIT_FAILED` when git could not be run.
    #[must_use]
    pub fn code(&self) -> Code {
        match self {
            Self::Git(_) => Code::GitFailed,
            _ => Code::InvalidCandidateId,
        }
    }
}

/// Why a delivery is refused before anything is created.
#[derive(Debug, thiserror::Error)]
pub enum PreflightError {
    /// The worktree has tracked changes, deletions or untracked files (the first five).
    #[error("the worktree has uncommitted changes or untracked files: {shown:?}")]
    Dirty {
        /// The first entries of `git status`, as git spells them.
        shown: Vec<String>,
    },
    /// The contract id cannot name a candidate ref.
    #[error("{0}")]
    Id(#[source] IdError),
    /// The candidate ref already exists.
    #[error("candidate ref {name} already exists")]
    Exists {
        /// The ref.
        name: String,
    },
    /// git itself could not be run.
    #[error("{0}")]
    Git(#[source] GitError),
}

impl PreflightError {
    /// `REPO_DIRTY`, the id's code, `CANDIDATE_EXISTS`, or `GIT_FAILED`.
    #[must_use]
    pub fn code(&self) -> Code {
        match self {
            Self::Dirty { .. } => Code::RepoDirty,
            Self::Id(e) => e.code(),
            Self::Exists { .. } => Code::CandidateExists,
            Self::Git(_) => Code::GitFailed,
        }
    }
}

/// Why the command could not be run to an end.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The executable could not be started.
    #[error("cannot start the command: {0}")]
    Unavailable(#[source] io::Error),
    /// Setting up, spooling or waiting failed (the group was stopped): what failed, and
    /// the operating-system error.
    #[error("{0}: {1}")]
    Io(&'static str, #[source] io::Error),
    /// The repository's local git variables could not be listed to scrub them.
    #[error("{0}")]
    Environment(#[source] GitError),
}

impl CommandError {
    /// `COMMAND_UNAVAILABLE` for a command that could not start, else `GIT_FAILED`.
    #[must_use]
    pub fn code(&self) -> Code {
        match self {
            Self::Unavailable(_) => Code::CommandUnavailable,
            Self::Io(..) | Self::Environment(_) => Code::GitFailed,
        }
    }
}

/// Why the worktree administration lock is not held (delivery goes on without it).
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The repository's common directory cannot be found.
    #[error("{0}")]
    CommonDir(#[source] GitError),
    /// It cannot be opened.
    #[error("cannot open {dir}: {source}")]
    Open {
        /// The common directory.
        dir: String,
        /// The operating-system error.
        source: io::Error,
    },
    /// `flock` failed on it.
    #[error("cannot lock {dir}: {source}")]
    Lock {
        /// The common directory.
        dir: String,
        /// The operating-system error.
        source: io::Error,
    },
    /// A signal arrived while waiting.
    #[error("interrupted while waiting for the worktree lock")]
    Interrupted,
    /// Another `deliver` held it for the whole wait.
    #[error("{dir} stayed locked by another deliver for {seconds} s")]
    Busy {
        /// The common directory.
        dir: String,
        /// How long it was waited for, in seconds.
        seconds: u64,
    },
}

/// Why a stale attempt could not be removed (reported on stderr, never fatal).
#[derive(Debug, thiserror::Error)]
pub enum RemoveError {
    /// A directory could not be removed.
    #[error("{0}")]
    Io(#[source] io::Error),
    /// `git worktree prune` failed.
    #[error("{0}")]
    Git(#[source] GitError),
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn git() -> GitError {
        GitError::Spawn {
            args: "worktree list".to_string(),
            source: io::Error::from_raw_os_error(libc::ENOENT),
        }
    }

    fn os() -> io::Error {
        io::Error::from_raw_os_error(libc::EIO)
    }

    /// Each error's message, and whether it keeps a source (the chain a caller can walk).
    fn check(error: &dyn std::error::Error, message: &str, has_source: bool) {
        assert_eq!(error.to_string(), message);
        assert_eq!(error.source().is_some(), has_source, "{message}");
    }

    const GIT: &str = "cannot run git worktree list: No such file or directory (os error 2)";
    const EIO: &str = "Input/output error (os error 5)";

    #[test]
    fn every_root_error_has_its_code_message_and_source() {
        let path = PathBuf::from("/r");
        let cases = [
            (
                RootError::Inaccessible {
                    path: path.clone(),
                    source: os(),
                },
                Code::RepoUnavailable,
                format!("repository /r is not accessible: {EIO}"),
                true,
            ),
            (
                RootError::NotADirectory { path: path.clone() },
                Code::RepoUnavailable,
                "repository /r is not a directory".to_string(),
                false,
            ),
            (
                RootError::NotInWorktree {
                    path: path.clone(),
                    stderr: "fatal".to_string(),
                },
                Code::RepoUnavailable,
                "/r is not inside a git worktree: fatal".to_string(),
                false,
            ),
            (
                RootError::NotRoot {
                    path,
                    top: PathBuf::from("/"),
                },
                Code::RepoUnavailable,
                "/r is not a worktree root; the root of its worktree is /".to_string(),
                false,
            ),
            (
                RootError::Git(git()),
                Code::GitFailed,
                GIT.to_string(),
                true,
            ),
            // A git error without a source of its own is still this error's source.
            (
                RootError::Git(GitError::Output {
                    args: "rev-parse".to_string(),
                    detail: "no output".to_string(),
                }),
                Code::GitFailed,
                "git rev-parse: no output".to_string(),
                true,
            ),
        ];
        for (error, code, message, has_source) in cases {
            assert_eq!(error.code(), code, "{message}");
            check(&error, &message, has_source);
        }
    }

    #[test]
    fn every_id_and_preflight_error_has_its_code_message_and_source() {
        let ids = [
            (
                IdError::Slash("a/b".to_string()),
                "candidate id \"a/b\" contains '/'; it must be a single ref component",
            ),
            (
                IdError::Nul("a\0".to_string()),
                "candidate id \"a\\0\" contains NUL",
            ),
            (
                IdError::Deceptive {
                    id: "a".to_string(),
                    character: '\u{202e}',
                    what: "a bidirectional override",
                },
                "candidate id \"a\" contains a bidirectional override U+202E; a reviewer could not read the id as it is",
            ),
            (
                IdError::NotRefName {
                    id: "a..b".to_string(),
                    name: "refs/x".to_string(),
                },
                "candidate id \"a..b\" does not give a valid ref name (refs/x)",
            ),
        ];
        for (error, message) in ids {
            assert_eq!(error.code(), Code::InvalidCandidateId);
            check(&error, message, false);
        }
        let error = IdError::Git(git());
        assert_eq!(error.code(), Code::GitFailed);
        check(&error, GIT, true);

        let cases = [
            (
                PreflightError::Dirty {
                    shown: vec!["?? x".to_string()],
                },
                Code::RepoDirty,
                "the worktree has uncommitted changes or untracked files: [\"?? x\"]".to_string(),
                false,
            ),
            (
                PreflightError::Id(IdError::Nul("n\0".to_string())),
                Code::InvalidCandidateId,
                "candidate id \"n\\0\" contains NUL".to_string(),
                true,
            ),
            (
                PreflightError::Exists {
                    name: "refs/satyrn/candidates/x/head".to_string(),
                },
                Code::CandidateExists,
                "candidate ref refs/satyrn/candidates/x/head already exists".to_string(),
                false,
            ),
            (
                PreflightError::Git(git()),
                Code::GitFailed,
                GIT.to_string(),
                true,
            ),
        ];
        for (error, code, message, has_source) in cases {
            assert_eq!(error.code(), code, "{message}");
            check(&error, &message, has_source);
        }
    }

    #[test]
    fn every_command_lock_and_remove_error_has_its_message_and_source() {
        let commands = [
            (
                CommandError::Unavailable(os()),
                Code::CommandUnavailable,
                format!("cannot start the command: {EIO}"),
            ),
            (
                CommandError::Io("cannot wait for the command", os()),
                Code::GitFailed,
                format!("cannot wait for the command: {EIO}"),
            ),
            (
                CommandError::Environment(git()),
                Code::GitFailed,
                GIT.to_string(),
            ),
        ];
        for (error, code, message) in commands {
            assert_eq!(error.code(), code, "{message}");
            check(&error, &message, true);
        }
        let dir = "/r/.git".to_string();
        let locks = [
            (LockError::CommonDir(git()), GIT.to_string(), true),
            (
                LockError::Open {
                    dir: dir.clone(),
                    source: os(),
                },
                format!("cannot open /r/.git: {EIO}"),
                true,
            ),
            (
                LockError::Lock {
                    dir: dir.clone(),
                    source: os(),
                },
                format!("cannot lock /r/.git: {EIO}"),
                true,
            ),
            (
                LockError::Interrupted,
                "interrupted while waiting for the worktree lock".to_string(),
                false,
            ),
            (
                LockError::Busy { dir, seconds: 60 },
                "/r/.git stayed locked by another deliver for 60 s".to_string(),
                false,
            ),
        ];
        for (error, message, has_source) in locks {
            check(&error, &message, has_source);
        }
        check(&RemoveError::Io(os()), EIO, true);
        check(&RemoveError::Git(git()), GIT, true);
    }
}
