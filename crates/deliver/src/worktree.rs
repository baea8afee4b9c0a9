//! The attempt's disposable, detached, linked worktree and its cleanup.
//!
//! Layout: a fresh private (`0700`) directory `satyrn-deliver-<pid>-<n>-<nanos>` under the
//! system temporary directory, verified to lie outside every registered worktree, holding
//! `worktree/` (the checkout) and `owner`, the marker that lets a later `deliver` prune the
//! attempt if this one is killed ([`super::stale`]).
//!
//! The cleanup state becomes *uncertain* before `git worktree add` runs, so an interruption
//! or failure after git registered the worktree still removes it. Cleanup is
//! `git worktree remove --force` (one `--force`: a worktree the command *locked* is not
//! removed, which is `CLEANUP_FAILED`), then `git worktree prune`, then the directory.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use satyrn_git::{self as git, Git, GitError, OnSignal};
use satyrn_os::owned_dir;

/// How long the cleanup's git may take, each step (`worktree remove`, `prune`, `list`): 30 s.
/// An interruption does not stop them: cleaning up is what it asks for.
pub const CLEANUP_LIMIT: Duration = Duration::from_secs(30);

/// Why the worktree could not be created or removed.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    /// The temporary parent could not be created or verified (`GIT_FAILED`).
    #[error("{0}")]
    Parent(String),
    /// A git step failed (`GIT_FAILED`).
    #[error("{0}")]
    Git(#[from] GitError),
    /// Cleanup left something behind (`CLEANUP_FAILED`); exactly what is listed.
    #[error("retained {} ({})", .0.kept(), .0.detail)]
    Retained(Leftovers),
}

/// What a failed cleanup left behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftovers {
    /// The worktree path.
    pub worktree: PathBuf,
    /// The worktree is still registered in the repository.
    pub registered: bool,
    /// Its administrative directory in the repository, when known.
    pub admin: Option<PathBuf>,
    /// The worktree directory (or whatever is at its path) still exists.
    pub worktree_dir: bool,
    /// The temporary parent, which is kept whenever anything is left.
    pub parent: PathBuf,
    /// Why.
    pub detail: String,
}

impl Leftovers {
    /// The worktree to report in `retained_worktree`: when it is registered or present.
    #[must_use]
    pub fn retained_worktree(&self) -> Option<&Path> {
        (self.registered || self.worktree_dir).then_some(self.worktree.as_path())
    }

    /// The list of what is kept, for a message.
    #[must_use]
    pub fn kept(&self) -> String {
        let mut kept = Vec::new();
        if self.registered {
            kept.push(match &self.admin {
                Some(admin) => format!(
                    "the worktree registration of {} (git's administrative directory {})",
                    self.worktree.display(),
                    admin.display()
                ),
                None => format!("the worktree registration of {}", self.worktree.display()),
            });
        }
        if self.worktree_dir {
            kept.push(format!(
                "the worktree directory {}",
                self.worktree.display()
            ));
        }
        kept.push(format!("the temporary directory {}", self.parent.display()));
        kept.join(", ")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// No `worktree add` was attempted.
    Clean,
    /// `worktree add` was started: the worktree may or may not be registered.
    Uncertain,
    /// Removed (or found absent); nothing left to do.
    Done,
}

/// A temporary parent directory and, once added, its detached worktree. Dropping it
/// without [`Attempt::cleanup`] still tries to clean up (errors ignored).
#[derive(Debug)]
pub struct Attempt {
    repo: Git,
    parent: PathBuf,
    worktree: PathBuf,
    git_dir: Option<PathBuf>,
    state: State,
    parent_removed: bool,
    without_git: bool,
}

impl Attempt {
    /// Creates the private temporary parent in the system temporary directory, after
    /// verifying that directory lies outside every worktree registered in `repo`.
    ///
    /// # Errors
    ///
    /// [`WorktreeError::Parent`] when it cannot be created or lies inside a worktree;
    /// [`WorktreeError::Git`] when the worktrees cannot be listed.
    pub fn create(repo: &Git) -> Result<Self, WorktreeError> {
        let base = std::env::temp_dir();
        let base = std::fs::canonicalize(&base).map_err(|e| {
            WorktreeError::Parent(format!(
                "temporary directory {} is unusable: {e}",
                base.display()
            ))
        })?;
        for wt in git::worktree_paths(repo)? {
            // Decided by file-system identity (as everywhere in satyrn), not by prefix.
            if satyrn_os::fsid::is_within(&base, &wt).unwrap_or(false) {
                return Err(WorktreeError::Parent(format!(
                    "temporary directory {} lies inside worktree {}; set TMPDIR elsewhere",
                    base.display(),
                    wt.display()
                )));
            }
        }
        let parent = owned_dir::create(&base, owned_dir::DELIVER).map_err(|e| {
            let what = if e.kind() == std::io::ErrorKind::AlreadyExists {
                "a unique temporary directory"
            } else {
                "a temporary directory"
            };
            WorktreeError::Parent(format!("cannot create {what} in {}: {e}", base.display()))
        })?;
        Ok(Self {
            repo: repo.clone(),
            worktree: parent.join("worktree"),
            parent,
            git_dir: None,
            state: State::Clean,
            parent_removed: false,
            without_git: false,
        })
    }

    /// The temporary parent.
    #[must_use]
    pub fn parent(&self) -> &Path {
        &self.parent
    }

    /// The worktree path.
    #[must_use]
    pub fn worktree(&self) -> &Path {
        &self.worktree
    }

    /// The worktree's administrative directory in the repository (after [`Attempt::add`]).
    #[must_use]
    pub fn git_dir(&self) -> Option<&Path> {
        self.git_dir.as_deref()
    }

    /// Makes [`Attempt::cleanup`] remove the worktree and its administrative directory
    /// itself, without git: for a repository where git may block (a FIFO the command left
    /// in the shared `.git`).
    pub fn clean_up_without_git(&mut self) {
        self.without_git = true;
    }

    /// git pinned to the worktree and its administrative directory (after [`Attempt::add`]).
    #[must_use]
    pub fn git(&self) -> Git {
        match &self.git_dir {
            Some(dir) => Git::pinned(&self.worktree, dir),
            None => Git::at(&self.worktree),
        }
    }

    /// `git worktree add --detach <worktree> <commit>`, then pins the worktree's git dir.
    ///
    /// # Errors
    ///
    /// [`WorktreeError::Git`] when git fails (cleanup stays pending).
    pub fn add(&mut self, commit: &str) -> Result<(), WorktreeError> {
        self.state = State::Uncertain;
        let mut args: Vec<std::ffi::OsString> = vec![
            "worktree".into(),
            "add".into(),
            "--detach".into(),
            "--quiet".into(),
        ];
        args.push(self.worktree.clone().into_os_string());
        args.push(commit.into());
        // Killed halfway, it would leave a locked, half-made registration nobody may prune.
        self.repo.outliving_parent().run(&args)?;
        let dir = Git::at(&self.worktree).line(&["rev-parse", "--absolute-git-dir"])?;
        self.git_dir = Some(PathBuf::from(dir));
        Ok(())
    }

    /// Removes the worktree (if one may exist), prunes, and removes the temporary parent;
    /// the worktree steps hold the repository's [`super::admin_lock::AdminLock`].
    ///
    /// `git worktree remove --force` first. When git refuses and the worktree is not locked
    /// (the command removed or rewrote its `.git`, deleted the directory, or git had not
    /// finished registering it), the directory — ours, inside our private parent — is
    /// removed directly and `git worktree prune` drops the registration. A locked worktree
    /// is kept as it is.
    ///
    /// # Errors
    ///
    /// [`WorktreeError::Retained`] naming exactly what is left: the registration, the
    /// worktree directory and the temporary parent (then kept, its owner marker removed, so
    /// no later `deliver` prunes what a receipt reported as retained);
    /// [`WorktreeError::Git`] when git cannot be run to check.
    pub fn cleanup(&mut self) -> Result<(), WorktreeError> {
        if self.state == State::Uncertain {
            self.state = State::Done;
            // The common directory of `<common>/worktrees/<name>`, once known: no git.
            let lock = match self
                .git_dir
                .as_deref()
                .and_then(Path::parent)
                .and_then(Path::parent)
            {
                Some(common) => super::admin_lock::acquire_or_warn_in(common),
                None => super::admin_lock::acquire_or_warn(&self.repo),
            };
            let removed = self.remove_worktree();
            drop(lock);
            if let Err(e) = removed {
                self.parent_removed = true;
                if matches!(e, WorktreeError::Retained(_)) {
                    owned_dir::forget(&self.parent, owned_dir::DELIVER);
                }
                return Err(e);
            }
        }
        self.state = State::Done;
        if !self.parent_removed {
            self.parent_removed = true;
            if let Err(e) = remove_tree(&self.parent) {
                owned_dir::forget(&self.parent, owned_dir::DELIVER);
                return Err(WorktreeError::Retained(Leftovers {
                    worktree: self.worktree.clone(),
                    registered: false,
                    admin: None,
                    worktree_dir: self.worktree.symlink_metadata().is_ok(),
                    parent: self.parent.clone(),
                    detail: format!("cannot remove {}: {e}", self.parent.display()),
                }));
            }
        }
        Ok(())
    }

    fn remove_worktree(&mut self) -> Result<(), WorktreeError> {
        if self.without_git
            && let Some(admin) = self.git_dir.clone()
        {
            return self.remove_directly(&admin);
        }
        match self.remove_with_git() {
            // git hangs in this repository (a FIFO where it reads): as without git.
            Err(WorktreeError::Git(GitError::TimedOut { .. })) if self.git_dir.is_some() => {
                let admin = self.git_dir.clone().unwrap_or_default();
                self.remove_directly(&admin)
            }
            other => other,
        }
    }

    fn remove_with_git(&mut self) -> Result<(), WorktreeError> {
        let repo = self
            .repo
            .with_deadline(Instant::now() + CLEANUP_LIMIT, OnSignal::Continue);
        let mut args: Vec<std::ffi::OsString> =
            vec!["worktree".into(), "remove".into(), "--force".into()];
        args.push(self.worktree.clone().into_os_string());
        let removed = repo.output(&args);
        if let Err(e @ GitError::TimedOut { .. }) = removed {
            return Err(WorktreeError::Git(e));
        }
        let repo = self
            .repo
            .with_deadline(Instant::now() + CLEANUP_LIMIT, OnSignal::Continue);
        if matches!(&removed, Ok(out) if out.status.success()) {
            repo.run(&["worktree", "prune"])?;
            return Ok(());
        }
        let mut detail = match removed {
            Ok(out) => git::failed(&args, &out).to_string(),
            Err(e) => e.to_string(),
        };
        // Known by its administrative directory once added: no `git worktree list`, which
        // reads every worktree's HEAD and so the refs a command may have broken.
        let locked = match &self.git_dir {
            Some(d) => d.join("locked").symlink_metadata().is_ok(),
            None => self.entry(&repo)?.is_some_and(|e| e.locked),
        };
        if !locked {
            if let Err(e) = remove_tree(&self.worktree) {
                detail = format!("{detail}; cannot remove {}: {e}", self.worktree.display());
            }
            repo.run(&["worktree", "prune"])?;
        }
        // Ours by the administrative directory git gave it (the command may have pointed the
        // registration elsewhere), or by path before git named one.
        let registered = match &self.git_dir {
            Some(d) => d.symlink_metadata().is_ok(),
            None => self.entry(&repo)?.is_some(),
        };
        let worktree_dir = self.worktree.symlink_metadata().is_ok();
        if registered || worktree_dir {
            return Err(WorktreeError::Retained(Leftovers {
                worktree: self.worktree.clone(),
                registered,
                admin: self.git_dir.clone(),
                worktree_dir,
                parent: self.parent.clone(),
                detail: if locked {
                    format!("{detail}; the worktree is locked")
                } else {
                    detail
                },
            }));
        }
        Ok(())
    }

    /// What `git worktree remove --force` does, without git: the worktree directory (ours,
    /// inside our private parent), then its administrative directory `admin` (git's
    /// registration of it); a locked worktree is kept as it is.
    fn remove_directly(&self, admin: &Path) -> Result<(), WorktreeError> {
        let locked = admin.join("locked").symlink_metadata().is_ok();
        let mut detail = Vec::new();
        if !locked {
            for dir in [self.worktree.as_path(), admin] {
                if let Err(e) = remove_tree(dir) {
                    detail.push(format!("cannot remove {}: {e}", dir.display()));
                }
            }
        }
        let registered = admin.symlink_metadata().is_ok();
        let worktree_dir = self.worktree.symlink_metadata().is_ok();
        if registered || worktree_dir {
            if locked {
                detail.push("the worktree is locked".to_owned());
            }
            return Err(WorktreeError::Retained(Leftovers {
                worktree: self.worktree.clone(),
                registered,
                admin: Some(admin.to_path_buf()),
                worktree_dir,
                parent: self.parent.clone(),
                detail: detail.join("; "),
            }));
        }
        Ok(())
    }

    /// Our worktree's entry in `git worktree list`, if it is registered.
    fn entry(&self, repo: &Git) -> Result<Option<git::WorktreeEntry>, WorktreeError> {
        let ours = std::fs::canonicalize(&self.worktree).unwrap_or_else(|_| self.worktree.clone());
        Ok(git::worktree_entries(repo)?
            .into_iter()
            .find(|e| e.path == self.worktree || e.path == ours))
    }
}

fn remove_tree(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

impl Drop for Attempt {
    fn drop(&mut self) {
        if self.state != State::Done || !self.parent_removed {
            let _ = self.cleanup();
        }
    }
}
