//! Delivery: one attempt in a disposable detached worktree, at most one candidate ref.
//!
//! [`deliver`] runs the whole sequence and always returns exactly one [`Receipt`]:
//!
//! 1. load the contract; resolve `--repo` (a worktree root); refuse a dirty tree, an invalid
//!    candidate id and an existing candidate ref — before creating anything;
//! 2. capture `HEAD^{commit}`; under the repository's [`admin_lock`], prune the attempts of
//!    killed `deliver`s ([`stale`]), create a private temporary parent outside every
//!    worktree and `git worktree add --detach` there at that commit;
//! 3. run the command once (see [`command`]);
//! 4. classify: `HEAD_MOVED`, `COMMAND_FAILED`, `NO_CHANGE`, or build the candidate commit
//!    and check each path it changes against the contract ([`conformance`]:
//!    `OUTSIDE_CONTRACT`);
//! 5. remove the worktree and prune, *then* publish the ref create-only;
//! 6. a cleanup failure supersedes everything (`CLEANUP_FAILED`) and publishes nothing;
//! 7. the receipt carries reviewer [`warnings`] when there are any.
//!
//! See `docs/delivery.md` for the receipt, the codes and the decisions.

pub mod admin_lock;
pub mod candidate;
pub mod command;
pub mod conformance;
pub mod emit;
pub mod error;
pub mod guard;
pub mod output;
pub mod provenance;
pub mod push;
pub mod receipt;
pub mod scan;
pub mod series;
pub mod spool;
pub mod stale;
pub mod warnings;
pub mod watchdog;
pub mod worktree;

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use satyrn_mutator_core::path::shown;

use candidate::{Change, Published};
use command::CommandError;
use error::PreflightError;
use receipt::{Outcome, Receipt};
use satyrn_code::Code;
use satyrn_contract as contract;
use satyrn_git::root::{dirty_entries, normalize, resolve as resolve_root};
use satyrn_git::{Git, GitError, OnSignal};
use satyrn_os::signals;
use worktree::{Attempt, WorktreeError};

/// The default `--timeout`: 600 s.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// One delivery request, as parsed from the command line.
#[derive(Debug, Clone)]
pub struct Request {
    /// `--repo`, as given.
    pub repo: PathBuf,
    /// The contract path.
    pub contract: PathBuf,
    /// How long the command may run.
    pub timeout: Duration,
    /// The command's argv (non-empty), preserved exactly.
    pub argv: Vec<OsString>,
    /// `--push REMOTE`: after the local candidate exists, publish it there create-only.
    pub push: Option<String>,
    /// `--attempt I`: this is attempt `I` (1–999) of a series; the candidate id is
    /// [`candidate::attempt_id`].
    pub attempt: Option<u16>,
    /// `--attempts N` and `--jobs J` (default: the number of CPUs): run attempts 1 to `N`
    /// as children, at most `J` at once ([`series`]).
    pub series: Option<(u16, u16)>,
}

/// The receipt being built: fields fill in as the attempt progresses.
struct Progress {
    receipt: Receipt,
    started: bool,
    /// The end of the command's `--timeout` budget, once the command is about to start;
    /// the push's deadline derives from it ([`push::deadline`]).
    budget_end: Option<Instant>,
    /// The deadline of the work after the command ([`finish_deadline`]), once it ended.
    finish_deadline: Option<Instant>,
    /// When `deliver` started: an attempt's receipt records the time since.
    began: Instant,
}

impl Progress {
    /// A refusal before the attempt started: `INTERRUPTED` instead when a signal stopped
    /// the git that failed.
    fn refuse(self, code: Code, message: impl Into<String>) -> Receipt {
        match signals::received() {
            Some(s) => self.finish(Code::Interrupted, interrupted_before_start(s)),
            None => self.finish(code, message),
        }
    }

    /// Records, for an attempt of a series, how long it has run.
    fn stamp(&mut self) {
        let elapsed = self.began.elapsed();
        if let Some(run) = &mut self.receipt.attempt {
            run.duration_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
        }
    }

    fn finish(mut self, code: Code, message: impl Into<String>) -> Receipt {
        self.stamp();
        self.receipt.code = code;
        self.receipt.message = message.into();
        self.receipt.outcome = if code == Code::Ok {
            Outcome::CandidateCreated
        } else if self.started {
            Outcome::Discarded
        } else {
            Outcome::Refused
        };
        if code != Code::Ok {
            self.receipt.candidate_ref = None;
            self.receipt.candidate_commit = None;
            self.receipt.paths.clear();
        }
        self.receipt
    }

    /// The receipt of a candidate that exists locally although its push was stopped
    /// (`PUSH_TIMEOUT`, `INTERRUPTED`): outcome `candidate-created`, the candidate's fields
    /// kept.
    fn finish_kept(mut self, code: Code, message: impl Into<String>) -> Receipt {
        self.stamp();
        self.receipt.code = code;
        self.receipt.message = message.into();
        self.receipt.outcome = Outcome::CandidateCreated;
        self.receipt
    }
}

/// A candidate commit waiting for cleanup and publication.
struct Built {
    commit: String,
    paths: Vec<String>,
    warnings: Vec<warnings::Warning>,
}

/// A pending result before cleanup.
struct Pending {
    code: Code,
    message: String,
    candidate: Option<Built>,
}

impl Pending {
    fn fail(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            candidate: None,
        }
    }
}

/// The message of a signal that arrived before the attempt's worktree existed.
fn interrupted_before_start(signal: i32) -> String {
    format!(
        "deliver received {} before the attempt started; nothing was created",
        signals::name(signal)
    )
}

fn interrupted_message(signal: i32) -> String {
    format!(
        "deliver received {}; the attempt was stopped and cleaned up",
        signals::name(signal)
    )
}

/// The variable naming the attempt's index (1-based) in its command's environment, when the
/// delivery is an attempt of a series (`--attempt`, `--attempt-from`, `--attempts`).
pub const ATTEMPT_INDEX_VAR: &str = "SATYRN_ATTEMPT_INDEX";

/// The longest any one git before the command may run (the base, the preflight, the
/// worktree): 120 s. A repository whose configuration makes git hang (a clean filter that
/// never ends) is then `GIT_FAILED` naming the git, or `INTERRUPTED` on a signal, never a
/// hang.
pub const PREPARE_LIMIT: Duration = Duration::from_secs(120);

/// Runs one delivery. Never panics on a handled path; always returns one receipt.
///
/// # Process-global effects
///
/// Makes this process a child subreaper for the rest of its life
/// ([`satyrn_os::process::become_subreaper`]), and before it returns kills and reaps every
/// child left ([`satyrn_os::process::stop_strays`]): a descendant of any git it ran, or of
/// the command, that left its process group ends with the delivery.
#[must_use]
pub fn deliver(request: &Request) -> Receipt {
    satyrn_os::process::become_subreaper();
    let mut receipt = deliver_inner(request);
    if let (Some(remote), Some(index)) = (&request.push, request.attempt) {
        push_result(request, remote, index, &mut receipt);
    }
    satyrn_os::process::stop_strays(None);
    receipt
}

/// An attempt of a series whose command ran but made no candidate still leaves its receipt
/// on the remote, create-only, under the candidate's receipt ref (a tag on the base commit):
/// the series view then tells "ran, no change" from "never ran", and a rerun of the index
/// finds it (`published.pushed` false, nothing overwritten). Not when the command never ran
/// (a node's fault must not use the index up), not after an interruption (a requeued index
/// must still be able to run: `published` says so when one arrives before the push), nor
/// when the attempt found its candidate existing, nor when a push already ran.
fn push_result(request: &Request, remote: &str, index: u16, receipt: &mut Receipt) {
    let ran = receipt.exit_code.is_some() || receipt.signal.is_some();
    if matches!(
        receipt.code,
        Code::Ok | Code::Interrupted | Code::CandidateExists | Code::PushTimeout
    ) || receipt.published.is_some()
        || !ran
    {
        return;
    }
    let (Some(base), Some(contract_id)) =
        (receipt.base_commit.clone(), receipt.contract_id.clone())
    else {
        return;
    };
    if let Some(signal) = signals::received() {
        receipt.published = Some(push::Publication {
            remote: remote.to_owned(),
            pushed: false,
            message: format!(
                "deliver received {} before the attempt's receipt was pushed; not pushed, so a requeue of the index can run",
                signals::name(signal)
            ),
        });
        return;
    }
    let id = candidate::attempt_id(&contract_id, Some(index));
    let name = candidate::receipt_ref_name(&id);
    let repo = match resolve_root(&normalize(&request.repo)) {
        Ok(git) => git.with_deadline(Instant::now() + push::PUSH_FLOOR, OnSignal::Stop),
        Err(e) => {
            receipt.published = Some(push::Publication {
                remote: remote.to_owned(),
                pushed: false,
                message: format!("the attempt's receipt was not pushed: {e}"),
            });
            return;
        }
    };
    let published =
        candidate::write_receipt_tag(&repo, &id, &base, now_seconds(), &receipt.to_json())
            .map_err(|e| format!("cannot write the attempt's receipt tag: {e}"))
            .and_then(|tag| {
                push::push(
                    &repo,
                    remote,
                    &[(name.as_str(), tag.as_str())],
                    Instant::now() + push::PUSH_FLOOR,
                )
                .map_err(|e| format!("cannot push the attempt's receipt: {e}"))
            });
    let (pushed, message) = match published {
        Ok(push::Pushed::Created) => (true, String::new()),
        Ok(push::Pushed::Exists) => (
            false,
            format!(
                "{remote} already has {name} (this attempt ran before); nothing there was overwritten"
            ),
        ),
        Ok(push::Pushed::Failed(e)) => (
            false,
            format!("cannot push the attempt's receipt to {remote}: {e}"),
        ),
        Ok(push::Pushed::TimedOut(_)) => (
            false,
            format!(
                "pushing the attempt's receipt to {remote} did not finish within {} s; whether {remote} has it is unknown",
                push::PUSH_FLOOR.as_secs()
            ),
        ),
        Ok(push::Pushed::Interrupted(signal)) => (
            false,
            format!(
                "deliver received {} while pushing the attempt's receipt; whether {remote} has it is unknown",
                signals::name(signal)
            ),
        ),
        Err(message) => (false, message),
    };
    receipt.published = Some(push::Publication {
        remote: remote.to_owned(),
        pushed,
        message,
    });
}

fn deliver_inner(request: &Request) -> Receipt {
    let repo_path = normalize(&request.repo);
    let mut progress = Progress {
        receipt: Receipt::new(
            Outcome::Refused,
            Code::InternalError,
            "",
            &repo_path.to_string_lossy(),
        ),
        started: false,
        budget_end: None,
        finish_deadline: None,
        began: Instant::now(),
    };
    progress.receipt.attempt = request.attempt.map(receipt::AttemptRun::starting);

    // 1. Contract first, then the repository.
    let contract = match contract::load(&request.contract) {
        Ok(c) => c,
        Err(e) => {
            let code = e.code();
            return progress.finish(code, e.to_string());
        }
    };
    progress.receipt.contract_id = Some(contract.id.clone());
    let id = candidate::attempt_id(&contract.id, request.attempt);
    if let Some((path, kind)) = guard::special_user_file() {
        return progress.refuse(
            Code::GitFailed,
            format!(
                "{} is {kind}, which every git reading it waits on for ever; remove it (a command of an earlier delivery may have left it)",
                shown(&path.to_string_lossy())
            ),
        );
    }
    let repo = match resolve_root(&repo_path) {
        Ok(git) => git.with_deadline(Instant::now() + PREPARE_LIMIT, OnSignal::Stop),
        Err(e) => return progress.refuse(e.code(), e.to_string()),
    };
    if let Err(e) = preflight(&repo, &contract.id, &id) {
        return progress.refuse(e.code(), e.to_string());
    }
    if let Some(s) = signals::received() {
        return progress.finish(Code::Interrupted, interrupted_before_start(s));
    }

    // 2. The pinned base and the worktree.
    let base = match repo.line(&["rev-parse", "--verify", "--end-of-options", "HEAD^{commit}"]) {
        Ok(b) => b,
        Err(e) => {
            return progress.refuse(Code::GitFailed, format!("HEAD does not name a commit: {e}"));
        }
    };
    progress.receipt.base_commit = Some(base.clone());
    // Held from the stale pruning to the worktree's registration (see `admin_lock`).
    let lock = admin_lock::acquire_or_warn(&repo);
    if let Some(s) = signals::received() {
        return progress.finish(Code::Interrupted, interrupted_before_start(s));
    }
    for note in stale::prune(&repo) {
        let _ = writeln!(std::io::stderr(), "satyrn-host deliver: {note}");
    }
    let mut attempt = match Attempt::create(&repo) {
        Ok(a) => a,
        Err(e) => return progress.refuse(Code::GitFailed, e.to_string()),
    };
    progress.started = true;
    let pending = run_attempt(
        request,
        (&repo, &id, &base),
        &contract,
        &mut attempt,
        &mut progress,
        lock,
    );
    // A descendant of the work after the command that left git's process group (a
    // filter's `setsid` child) was reparented to this subreaper: it ends here.
    satyrn_os::process::stop_strays(None);

    // 5. Cleanup before publishing; its failure supersedes.
    match attempt.cleanup() {
        Ok(()) => {}
        Err(WorktreeError::Retained(left)) => {
            progress.receipt.retained_worktree = left
                .retained_worktree()
                .map(|p| p.to_string_lossy().into_owned());
            return progress.finish(
                Code::CleanupFailed,
                format!(
                    "the attempt could not be cleaned up; retained: {}; nothing was published ({}); pending result was {}",
                    left.kept(),
                    left.detail,
                    pending.code
                ),
            );
        }
        Err(e) => {
            return progress.finish(
                Code::CleanupFailed,
                format!("cleanup failed: {e}; nothing was published"),
            );
        }
    }
    let Some(Built {
        commit,
        paths,
        warnings,
    }) = pending.candidate
    else {
        return progress.finish(pending.code, pending.message);
    };
    if let Some(s) = signals::received() {
        return progress.finish(Code::Interrupted, interrupted_message(s));
    }
    let name = candidate::ref_name(&id);
    progress.receipt.candidate_ref = Some(name.clone());
    progress.receipt.candidate_commit = Some(commit.clone());
    progress.receipt.paths = paths;
    progress.receipt.warnings.extend(warnings);
    progress.receipt.warnings.sort();
    progress.stamp();
    let mut published = progress.receipt.clone();
    published.code = Code::Ok;
    published.outcome = Outcome::CandidateCreated;
    let receipt_name = candidate::receipt_ref_name(&id);
    let repo = repo.with_deadline(
        finish_deadline(progress.finish_deadline, Instant::now()),
        OnSignal::Continue,
    );
    let tag = match candidate::write_receipt_tag(
        &repo,
        &id,
        &commit,
        now_seconds(),
        &published.to_json(),
    ) {
        Ok(tag) => tag,
        Err(e) => {
            return progress.finish(
                Code::GitFailed,
                format!("cannot write the receipt of {name}: {e}"),
            );
        }
    };
    match candidate::publish(&repo, &name, &commit, Some((&receipt_name, &tag))) {
        Ok(Published::Created) => match &request.push {
            None => progress.finish(Code::Ok, ""),
            Some(remote) => {
                let refs = (
                    (name.as_str(), commit.as_str()),
                    (receipt_name.as_str(), tag.as_str()),
                );
                publish_remote(&repo, remote, refs, progress)
            }
        },
        Ok(Published::Exists) => progress.finish(
            Code::CandidateExists,
            format!("candidate ref {name} already exists; nothing was published"),
        ),
        Ok(Published::Failed(e)) => {
            progress.finish(Code::GitFailed, format!("cannot publish {name}: {e}"))
        }
        Err(e) => progress.finish(Code::GitFailed, format!("cannot publish {name}: {e}")),
    }
}

/// Step 5 of `--push`: the local candidate exists; push it create-only, by the deadline
/// [`push::deadline`] gives. A refused or failed push withdraws the local refs, so the
/// receipt's "nothing published" holds everywhere; a push stopped at its deadline
/// (`PUSH_TIMEOUT`) or by an interruption (`INTERRUPTED`) keeps them: the remote may have
/// applied it.
fn publish_remote(
    repo: &Git,
    remote: &str,
    (head, receipt): ((&str, &str), (&str, &str)),
    mut progress: Progress,
) -> Receipt {
    let started = Instant::now();
    let deadline = push::deadline(progress.budget_end.unwrap_or(started), started);
    let (code, message) = match push::push(repo, remote, &[head, receipt], deadline) {
        Ok(push::Pushed::Created) => (Code::Ok, String::new()),
        Ok(push::Pushed::Exists) => (
            Code::CandidateExists,
            format!(
                "{remote} already has {} or {} (this candidate, or this attempt's result, from an earlier run); nothing there was overwritten",
                head.0, receipt.0
            ),
        ),
        Ok(push::Pushed::Failed(e)) => (Code::GitFailed, format!("cannot push to {remote}: {e}")),
        Ok(push::Pushed::TimedOut(stderr)) => (
            Code::PushTimeout,
            format!(
                "git push to {remote} did not finish within {:.1} s (what was left of --timeout, at least {} s) and its process group was stopped; whether {remote} has the candidate is unknown{}",
                deadline.saturating_duration_since(started).as_secs_f64(),
                push::PUSH_FLOOR.as_secs(),
                if stderr.is_empty() {
                    String::new()
                } else {
                    format!(" (git said: {stderr})")
                }
            ),
        ),
        Ok(push::Pushed::Interrupted(signal)) => (
            Code::Interrupted,
            format!(
                "deliver received {} during git push to {remote}; the push's process group was stopped; whether {remote} has the candidate is unknown",
                signals::name(signal)
            ),
        ),
        Err(e) => (Code::GitFailed, format!("cannot push to {remote}: {e}")),
    };
    progress.receipt.published = Some(push::Publication {
        remote: remote.to_owned(),
        pushed: code == Code::Ok,
        message: message.clone(),
    });
    match code {
        Code::Ok => return progress.finish(Code::Ok, ""),
        Code::PushTimeout | Code::Interrupted => {
            return progress.finish_kept(
                code,
                format!("{message}; the local candidate {} is kept", head.0),
            );
        }
        _ => {}
    }
    let kept = match push::withdraw(repo, head, receipt) {
        Ok(()) => "the local candidate refs were withdrawn".to_owned(),
        Err(e) => format!("the local candidate refs could not be withdrawn ({e})"),
    };
    progress.finish(
        code,
        format!(
            "{message}; candidate commit {} was not published; {kept}",
            head.1
        ),
    )
}

/// Seconds since the epoch now (0 for a clock before it).
fn now_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Steps 2–4 inside the worktree; returns the pending result (cleanup still to do).
fn run_attempt(
    request: &Request,
    (repo, id, base): (&Git, &str, &str),
    contract: &contract::Contract,
    attempt: &mut Attempt,
    progress: &mut Progress,
    lock: Option<admin_lock::AdminLock>,
) -> Pending {
    let added = attempt.add(base);
    drop(lock);
    if let Err(e) = added {
        if let Some(s) = signals::received() {
            return Pending::fail(Code::Interrupted, interrupted_message(s));
        }
        return Pending::fail(Code::GitFailed, format!("cannot create the worktree: {e}"));
    }
    if let Some(s) = signals::received() {
        return Pending::fail(Code::Interrupted, interrupted_message(s));
    }
    let layout = match layout_of(repo, attempt) {
        Ok(l) => l,
        Err(e) => return Pending::fail(Code::GitFailed, e.to_string()),
    };
    let before = match guard::Snapshot::take(repo, &layout) {
        Ok(s) => s,
        Err(e) => {
            return Pending::fail(
                Code::GitFailed,
                format!("cannot record the repository before the command: {e}"),
            );
        }
    };

    // 3. The command.
    progress.budget_end = Instant::now().checked_add(request.timeout);
    let run = provenance::run_of(&request.argv);
    let ledger = match run {
        provenance::Run::Confined => match provenance::create_ledger(attempt.parent()) {
            Ok(path) => Some(path),
            Err(e) => {
                return Pending::fail(
                    Code::GitFailed,
                    format!("cannot create the broker's ledger: {e}"),
                );
            }
        },
        provenance::Run::Plain | provenance::Run::Unconfined => None,
    };
    let index = request.attempt.map(|i| OsString::from(i.to_string()));
    let env: Vec<(&str, &std::ffi::OsStr)> = ledger
        .iter()
        .map(|p| (satyrn_publish::ledger::VAR, p.as_os_str()))
        .chain(index.as_deref().map(|i| (ATTEMPT_INDEX_VAR, i)))
        .collect();
    let finished = match command::run(
        &request.argv,
        attempt.worktree(),
        Some(request.timeout),
        &env,
    ) {
        Ok(f) => f,
        Err(e) => {
            let message = match &e {
                CommandError::Unavailable(source) => format!(
                    "cannot start {:?}: {source}",
                    request
                        .argv
                        .first()
                        .map(|a| a.to_string_lossy().into_owned())
                        .unwrap_or_default()
                ),
                other => other.to_string(),
            };
            return Pending::fail(e.code(), message);
        }
    };
    // Complete now: the broker stopped with the command.
    let record = match ledger
        .as_deref()
        .map(satyrn_publish::ledger::read)
        .transpose()
    {
        Ok(record) => record,
        Err(e) => {
            return Pending::fail(
                Code::GitFailed,
                format!("cannot read the broker's ledger: {e}"),
            );
        }
    };
    progress.receipt.confinement = provenance::confinement(run, record.as_ref());
    progress.receipt.exit_code = finished.exit_code;
    progress.receipt.signal = finished.signal;
    // Everything after the command, git included, ends by this deadline.
    let deadline = finish_deadline(progress.budget_end, Instant::now());
    progress.finish_deadline = Some(deadline);

    // The caller's repository, first by its files (no git runs before they are known to
    // be what they were), then by its refs.
    let settled = deadline.min(Instant::now() + guard::LOCK_SETTLE);
    let changed = guard::settle_locks(
        before.file_changes(&guard::Snapshot::files_only(&layout)),
        settled,
    );
    if !changed.is_empty() {
        // Its configuration may now include a FIFO, its refs be one: git there may block.
        attempt.clean_up_without_git();
        return repository_changed(&changed);
    }
    if let Some(scan::Found::Special { path, kind }) = scan::special_in_registration(&layout.own) {
        attempt.clean_up_without_git();
        return special_file(&path, kind);
    }
    if finished.interrupted {
        let s = signals::received().unwrap_or(libc::SIGTERM);
        return Pending::fail(Code::Interrupted, interrupted_message(s));
    }
    let bounded_repo = repo.with_deadline(deadline, OnSignal::Stop);
    match guard::Snapshot::take(&bounded_repo, &layout) {
        Ok(after) => {
            let mut changed = guard::settle_locks(before.changes(&after), settled);
            match before.rewritten_objects(&after, &bounded_repo) {
                Ok(rewritten) => changed.extend(rewritten),
                Err(e) => return git_failure(&e, "cannot check the object store"),
            }
            if !changed.is_empty() {
                return repository_changed(&changed);
            }
        }
        Err(e) => return git_failure(&e, "cannot compare the repository after the command"),
    }
    if finished.timed_out {
        return Pending::fail(
            Code::CommandTimeout,
            format!(
                "the command did not finish within {} s; its process group was stopped",
                request.timeout.as_secs_f64()
            ),
        );
    }

    // 4. Classify.
    let wt = attempt.git().with_deadline(deadline, OnSignal::Stop);
    match head_moved(&wt, base) {
        Ok(None) => {}
        Ok(Some(m)) => return Pending::fail(Code::HeadMoved, m),
        Err(e) => return git_failure(&e, "cannot read HEAD"),
    }
    if !finished.succeeded() {
        let how = match (finished.exit_code, finished.signal) {
            (Some(c), _) => format!("exited with status {c}"),
            (None, Some(s)) => format!("was killed by signal {s}"),
            (None, None) => "ended abnormally".to_owned(),
        };
        return Pending::fail(Code::CommandFailed, format!("the command {how}"));
    }
    // Every process of the command is gone: a change set a killed publish left is settled
    // (rolled back or forward) before anything of the worktree is looked at, so a candidate
    // never holds half of one. Under the worktree lock, as every publish is: a satyrn-host
    // outside the command's tree may still be publishing there.
    if let Ok(root) = rustix::fs::open(
        attempt.worktree(),
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    ) {
        let boundary = satyrn_publish::Boundary {
            writable_paths: &contract.writable_paths,
            private_paths: &contract.private_paths,
        };
        let recovered = match satyrn_os::lock::WorktreeLock::acquire(&root) {
            Ok(_lock) => satyrn_publish::recover_with_git_dir(&root, &layout.own, boundary),
            Err(e) => {
                return Pending::fail(
                    Code::MutationFailed,
                    format!(
                        "cannot lock the attempt's worktree to settle its change sets: {e}; no candidate was made"
                    ),
                );
            }
        };
        if recovered.kept > 0 {
            return Pending::fail(
                Code::MutationFailed,
                format!(
                    "a change set left in the attempt's worktree could not be settled ({}); the worktree may hold part of it, so no candidate was made",
                    recovered.said.join("; ")
                ),
            );
        }
    }
    match scan::scan(&wt, attempt.worktree(), base, deadline) {
        Ok(None) => {}
        Ok(Some(scan::Found::Special { path, kind })) => return special_file(&path, kind),
        Ok(Some(scan::Found::TooLarge { path, size })) => {
            return Pending::fail(
                Code::CandidateTooLarge,
                format!(
                    "{} is {size} bytes, over the {} bytes a candidate's new or changed file may have; it was not staged",
                    shown(&path),
                    scan::FILE_MAX
                ),
            );
        }
        Err(scan::ScanError::TimedOut) => return finish_timeout("looking at the worktree"),
        Err(scan::ScanError::Git(e)) => return git_failure(&e, "cannot classify a large file"),
    }
    // Every process of the command is gone: no publish is in flight.
    if let Ok(root) = rustix::fs::open(
        attempt.worktree(),
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    ) {
        satyrn_publish::sweep_with_git_dir(&root, &layout.own);
    }
    match warnings::dropped_submodule_writes(&wt, attempt.worktree()) {
        Ok(w) => progress.receipt.warnings.extend(w),
        Err(e) => return git_failure(&e, "cannot list submodules"),
    }
    match candidate::build(&wt, id, base) {
        Ok(Change::None) => Pending::fail(Code::NoChange, "the command changed nothing"),
        Ok(Change::Commit { commit, paths }) => {
            match guard::stash_in_candidate(&wt, before.stash(), base, &commit) {
                Ok(held) if held.is_empty() => {}
                Ok(held) => return repository_changed(&held),
                Err(e) => return git_failure(&e, "cannot compare the candidate with the stash"),
            }
            match outside(&wt, &commit, contract, record.as_ref()) {
                Ok(breaches) if breaches.is_empty() => {}
                Ok(breaches) => {
                    let pending = outside_contract(&breaches);
                    progress.receipt.outside_contract = breaches;
                    return pending;
                }
                Err(e) => return git_failure(&e, "cannot check the candidate's changes"),
            }
            match warnings::in_candidate(&wt, attempt.worktree(), &commit) {
                Ok(warnings) => Pending {
                    code: Code::Ok,
                    message: String::new(),
                    candidate: Some(Built {
                        commit,
                        paths,
                        warnings,
                    }),
                },
                Err(e) => git_failure(&e, "cannot review the candidate"),
            }
        }
        Err(candidate::CandidateError::Git(e)) => git_failure(&e, "cannot build the candidate"),
        Err(e) => Pending::fail(Code::GitFailed, format!("cannot build the candidate: {e}")),
    }
}

/// The least time the work after the command gets, however much of `--timeout` the
/// command used: 10 s (as a push's).
pub const FINISH_FLOOR: Duration = push::PUSH_FLOOR;

/// When the work after the command must end: the end of the command's budget, or
/// [`FINISH_FLOOR`] after `now`, whichever is later.
fn finish_deadline(budget_end: Option<Instant>, now: Instant) -> Instant {
    push::deadline(budget_end.unwrap_or(now), now)
}

/// Where the repository's shared state and this attempt's registration live.
fn layout_of(repo: &Git, attempt: &Attempt) -> Result<guard::Layout, GitError> {
    let common = repo.line(&["rev-parse", "--path-format=absolute", "--git-common-dir"])?;
    let own = attempt.git_dir().map(Path::to_path_buf).unwrap_or_default();
    Ok(guard::Layout {
        common: PathBuf::from(common),
        own,
    })
}

/// The most changes or paths a `REPOSITORY_CHANGED` or `OUTSIDE_CONTRACT` message names;
/// the rest are counted.
const CHANGES_SHOWN: usize = 20;

/// The first [`CHANGES_SHOWN`] of `items`, `; `-separated, and how many more there are.
fn listed<T: std::fmt::Display>(items: &[T]) -> String {
    let mut shown: Vec<String> = items
        .iter()
        .take(CHANGES_SHOWN)
        .map(ToString::to_string)
        .collect();
    if items.len() > CHANGES_SHOWN {
        shown.push(format!("and {} more", items.len() - CHANGES_SHOWN));
    }
    shown.join("; ")
}

fn repository_changed(changes: &[guard::Change]) -> Pending {
    Pending::fail(
        Code::RepositoryChanged,
        format!(
            "the command changed the caller's repository, which its worktree shares (only `satyrn-host confine` prevents this): {}; nothing was published",
            listed(changes)
        ),
    )
}

/// Every change of the candidate `commit` outside the `contract` ([`conformance`]); when
/// there is none and the command ran confined, every change the broker did not make
/// ([`provenance`], with its ledger `record`).
fn outside(
    wt: &Git,
    commit: &str,
    contract: &contract::Contract,
    record: Option<&satyrn_publish::ledger::Record>,
) -> Result<Vec<conformance::Breach>, GitError> {
    let changes = candidate::changes(wt, commit)?;
    let breaches = conformance::check(&changes, contract);
    match record {
        Some(record) if breaches.is_empty() => provenance::check(wt, &changes, &record.published),
        _ => Ok(breaches),
    }
}

fn outside_contract(breaches: &[conformance::Breach]) -> Pending {
    Pending::fail(
        Code::OutsideContract,
        format!(
            "the candidate changes {} the contract does not allow: {}; nothing was published",
            if breaches.len() == 1 {
                "a path".to_owned()
            } else {
                format!("{} paths", breaches.len())
            },
            listed(breaches)
        ),
    )
}

fn special_file(path: &str, kind: &str) -> Pending {
    Pending::fail(
        Code::SpecialFile,
        format!(
            "the command left {kind} at {}, where git would open it; nothing was published",
            shown(path)
        ),
    )
}

fn finish_timeout(doing: &str) -> Pending {
    Pending::fail(
        Code::FinishTimeout,
        format!(
            "the work after the command did not finish by the attempt's deadline (what was left of --timeout, at least {} s) while {doing}; nothing was published",
            FINISH_FLOOR.as_secs()
        ),
    )
}

/// The pending result of a failed git step after the command: `FINISH_TIMEOUT` when it was
/// stopped at the deadline, `INTERRUPTED` when a signal stopped it, else `GIT_FAILED`.
fn git_failure(e: &GitError, what: &str) -> Pending {
    match e {
        GitError::TimedOut { args, .. } => finish_timeout(&format!("git {args} ran")),
        GitError::Interrupted { signal, .. } => {
            Pending::fail(Code::Interrupted, interrupted_message(*signal))
        }
        _ => Pending::fail(Code::GitFailed, format!("{what}: {e}")),
    }
}

/// `None` when the worktree's `HEAD` is still detached at `base`, else why not.
fn head_moved(wt: &Git, base: &str) -> Result<Option<String>, GitError> {
    let sym = wt.output(&["symbolic-ref", "-q", "HEAD"])?;
    if sym.status.success() {
        return Ok(Some(format!(
            "the command attached HEAD to {}",
            String::from_utf8_lossy(&sym.stdout).trim()
        )));
    }
    let head = wt.output(&["rev-parse", "-q", "--verify", "HEAD^{commit}"])?;
    let now = String::from_utf8_lossy(&head.stdout).trim().to_owned();
    if !head.status.success() || now != base {
        return Ok(Some(format!(
            "the command moved HEAD from {base} to {}",
            if now.is_empty() { "nothing" } else { &now }
        )));
    }
    Ok(None)
}

/// The refusals that need nothing created: dirty tree, invalid contract id, existing
/// candidate `id` (the contract id, or an attempt's id below it).
///
/// # Errors
///
/// [`PreflightError`]: the refusal, or `GIT_FAILED` when git cannot be run.
fn preflight(repo: &Git, contract_id: &str, id: &str) -> Result<(), PreflightError> {
    if let Some(shown) = dirty_entries(repo).map_err(PreflightError::Git)? {
        return Err(PreflightError::Dirty { shown });
    }
    candidate::check_id(repo, contract_id).map_err(PreflightError::Id)?;
    let name = candidate::ref_name(id);
    if candidate::ref_exists(repo, &name).map_err(PreflightError::Git)? {
        return Err(PreflightError::Exists { name });
    }
    Ok(())
}
