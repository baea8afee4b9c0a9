//! The one place that builds git invocations.
//!
//! Every git process satyrn starts gets the same hardening:
//!
//! - `-c core.hooksPath=/dev/null -c core.fsmonitor=false` and `--no-pager`: no repository
//!   hook and no file-system monitor runs, nothing waits on a pager;
//! - `LC_ALL=C`, `GIT_PAGER=cat`, `GIT_TERMINAL_PROMPT=0`: stable messages, no prompt;
//! - `GIT_NO_REPLACE_OBJECTS=1` and `GIT_GRAFT_FILE=/dev/null`: objects are what they are;
//!   `-c advice.graftFileDeprecated=false`: a repository's `info/grafts` does not prepend
//!   eight lines of deprecation hint to every message satyrn quotes from git;
//! - `LD_PRELOAD`, `LD_AUDIT`, `BASH_ENV` and `ENV` removed: nothing runs in git, or in
//!   the filters it starts, that nobody asked for;
//! - `GIT_OPTIONAL_LOCKS=0`: read-only commands (`status`) never rewrite the caller's index;
//! - the variables `git rev-parse --local-env-vars` names (`GIT_DIR`, `GIT_WORK_TREE`,
//!   `GIT_INDEX_FILE`, `GIT_CONFIG_PARAMETERS`, …) and `GIT_NAMESPACE` are removed, so an
//!   inherited environment cannot point git at another repository, index or namespace.
//!
//! Ordinary configuration (user, system, repository), `PATH` and filters are kept: a
//! repository's clean/smudge filter still participates. Outputs are read as bytes;
//! callers parse NUL-delimited (`-z`) forms.

pub mod root;

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output, Stdio};
use std::sync::{OnceLock, mpsc};
use std::time::{Duration, Instant};

/// The configuration overrides given to every git invocation.
pub const HARDENING_CONFIG: [&str; 6] = [
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "advice.graftFileDeprecated=false",
];

/// Removed from every environment in addition to `git rev-parse --local-env-vars`.
const ALSO_REMOVED: [&str; 1] = ["GIT_NAMESPACE"];

/// Removed from the environment of every git satyrn runs itself (not of the delivered
/// command, which is the caller's to run as they choose): what makes git, or the filters
/// and helpers it starts, run code nobody asked it to — the loader's `LD_PRELOAD` and
/// `LD_AUDIT`, and the shells' `BASH_ENV` and `ENV`.
const INJECTING: [&str; 4] = ["LD_PRELOAD", "LD_AUDIT", "BASH_ENV", "ENV"];

/// The repository-locating variables removed before asking git for its own list (so the
/// question itself cannot be redirected). `git rev-parse --local-env-vars` is the authority.
const BOOTSTRAP_REMOVED: [&str; 6] = [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
];

/// Why a git invocation failed.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// git could not be started.
    #[error("cannot run git {args}: {source}")]
    Spawn {
        /// The arguments, for the message.
        args: String,
        /// The operating-system error.
        source: std::io::Error,
    },
    /// git exited unsuccessfully.
    #[error("git {args} failed ({status}): {stderr}")]
    Failed {
        /// The arguments, for the message.
        args: String,
        /// The exit status.
        status: ExitStatus,
        /// git's stderr, lossily decoded and trimmed.
        stderr: String,
    },
    /// git succeeded but its output is not what was expected.
    #[error("git {args}: {detail}")]
    Output {
        /// The arguments, for the message.
        args: String,
        /// What was wrong.
        detail: String,
    },
    /// A [`Git::with_deadline`] git was still running at its deadline; its process group
    /// was stopped and git reaped.
    #[error(
        "git {args} did not finish by its deadline and its process group was stopped{}",
        said(stderr)
    )]
    TimedOut {
        /// The arguments, for the message.
        args: String,
        /// git's stderr up to the stop, lossily decoded and trimmed.
        stderr: String,
    },
    /// A [`Git::with_deadline`] git was stopped because this process received `SIGINT`,
    /// `SIGTERM` or `SIGHUP` ([`satyrn_os::signals`]); its process group was stopped.
    #[error(
        "git {args} was stopped with its process group: {} was received",
        satyrn_os::signals::name(*signal)
    )]
    Interrupted {
        /// The arguments, for the message.
        args: String,
        /// The signal received.
        signal: i32,
    },
}

/// ` (git said: STDERR)`, or nothing when git said nothing.
fn said(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!(" (git said: {stderr})")
    }
}

fn describe<S: AsRef<OsStr>>(args: &[S]) -> String {
    args.iter()
        .map(|a| a.as_ref().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

static LOCAL_ENV_VARS: OnceLock<Vec<OsString>> = OnceLock::new();

/// The variables `git rev-parse --local-env-vars` names, computed once per process.
///
/// # Errors
///
/// [`GitError`] when git cannot be run or prints nothing.
pub fn local_env_vars() -> Result<&'static [OsString], GitError> {
    if let Some(vars) = LOCAL_ENV_VARS.get() {
        return Ok(vars);
    }
    let args = ["rev-parse", "--local-env-vars"];
    let mut cmd = Command::new("git");
    cmd.args(args)
        .current_dir("/")
        .env("LC_ALL", "C")
        .stdin(Stdio::null());
    for var in BOOTSTRAP_REMOVED {
        cmd.env_remove(var);
    }
    let out = cmd.output().map_err(|source| GitError::Spawn {
        args: describe(&args),
        source,
    })?;
    if !out.status.success() {
        return Err(GitError::Failed {
            args: describe(&args),
            status: out.status,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    let vars: Vec<OsString> = out
        .stdout
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| OsString::from(String::from_utf8_lossy(l).into_owned()))
        .collect();
    if vars.is_empty() {
        return Err(GitError::Output {
            args: describe(&args),
            detail: "no variables listed".to_owned(),
        });
    }
    Ok(LOCAL_ENV_VARS.get_or_init(|| vars))
}

/// Removes the repository-local git variables (see [`local_env_vars`]) and `GIT_NAMESPACE`
/// from `cmd`'s environment. Used for every engine git call and for the delivered command.
///
/// # Errors
///
/// As [`local_env_vars`].
pub fn scrub_env(cmd: &mut Command) -> Result<(), GitError> {
    for var in local_env_vars()? {
        cmd.env_remove(var);
    }
    for var in ALSO_REMOVED {
        cmd.env_remove(var);
    }
    Ok(())
}

/// Where git runs: a working directory, optionally with a pinned git directory and work
/// tree (`--git-dir`/`--work-tree`), so a `.git` file rewritten by a command cannot
/// redirect the engine; and optionally a deadline ([`Git::with_deadline`]) that bounds
/// every git it starts.
#[derive(Debug, Clone)]
pub struct Git {
    cwd: PathBuf,
    pinned: Option<(PathBuf, PathBuf)>,
    deadline: Option<(Instant, OnSignal)>,
    /// A bounded git gets `SIGTERM` when this process dies (default), unless it must finish
    /// what it started ([`Git::outliving_parent`]).
    outlives_parent: bool,
}

/// What a [`Git::with_deadline`] git does when this process receives `SIGINT`, `SIGTERM` or
/// `SIGHUP` ([`satyrn_os::signals`]) while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnSignal {
    /// Stop it with its process group ([`GitError::Interrupted`]).
    Stop,
    /// Let it run to its deadline: for the cleanup that an interruption itself needs.
    Continue,
}

impl Git {
    /// git run with `cwd` as its working directory (repository discovery from there).
    #[must_use]
    pub fn at(cwd: &Path) -> Self {
        Self {
            cwd: cwd.to_path_buf(),
            pinned: None,
            deadline: None,
            outlives_parent: false,
        }
    }

    /// git run in `work_tree` with `--git-dir=git_dir --work-tree=work_tree`.
    #[must_use]
    pub fn pinned(work_tree: &Path, git_dir: &Path) -> Self {
        Self {
            cwd: work_tree.to_path_buf(),
            pinned: Some((git_dir.to_path_buf(), work_tree.to_path_buf())),
            deadline: None,
            outlives_parent: false,
        }
    }

    /// The same git, bounded as [`Git::with_deadline`] says, but whose processes get no
    /// parent-death signal: for a step that must not be cut off halfway when this process
    /// is killed outright (`git worktree add`, which would leave a half-made, locked
    /// registration nobody may prune). While this process lives the deadline still holds.
    #[must_use]
    pub fn outliving_parent(&self) -> Self {
        Self {
            outlives_parent: true,
            ..self.clone()
        }
    }

    /// The same git, every invocation of which is bounded by `deadline`: each runs in a
    /// process group of its own with `SIGTERM` as its parent-death signal, and is stopped
    /// with that group ([`satyrn_os::process::stop_group`]) when the deadline passes
    /// ([`GitError::TimedOut`]) or, with [`OnSignal::Stop`], when this process receives
    /// `SIGINT`/`SIGTERM`/`SIGHUP` ([`GitError::Interrupted`]; only once
    /// [`satyrn_os::signals::install`] ran, and one received before the call counts). A
    /// call made once the deadline passed is started and stopped at once. See
    /// [`Prepare::until`] for how long a stop takes.
    #[must_use]
    pub fn with_deadline(&self, deadline: Instant, on_signal: OnSignal) -> Self {
        Self {
            deadline: Some((deadline, on_signal)),
            ..self.clone()
        }
    }

    /// The working directory.
    #[must_use]
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// A hardened `git` command with `args`, stdin from `/dev/null`, stdout and stderr piped.
    ///
    /// # Errors
    ///
    /// As [`local_env_vars`].
    pub fn command<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<Command, GitError> {
        let mut cmd = Command::new("git");
        cmd.arg("--no-pager").args(HARDENING_CONFIG);
        if let Some((git_dir, work_tree)) = &self.pinned {
            let mut g = OsString::from("--git-dir=");
            g.push(git_dir);
            let mut w = OsString::from("--work-tree=");
            w.push(work_tree);
            cmd.arg(g).arg(w);
        }
        cmd.args(args)
            .current_dir(&self.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        scrub_env(&mut cmd)?;
        for var in INJECTING {
            cmd.env_remove(var);
        }
        cmd.env("LC_ALL", "C")
            .env("GIT_PAGER", "cat")
            .env("PAGER", "cat")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_NO_REPLACE_OBJECTS", "1")
            .env("GIT_GRAFT_FILE", "/dev/null")
            .env("GIT_OPTIONAL_LOCKS", "0");
        Ok(cmd)
    }

    /// One git invocation with `args`, to add environment variables and input to before
    /// running it ([`Prepare`]): the one builder every git call of satyrn goes through.
    pub fn cmd<S: AsRef<OsStr>>(&self, args: &[S]) -> Prepare<'_> {
        Prepare {
            git: self,
            args: args.iter().map(|a| a.as_ref().to_owned()).collect(),
            envs: Vec::new(),
            input: None,
        }
    }

    /// `self.cmd(args).output()`: git's output whatever the exit status.
    ///
    /// # Errors
    ///
    /// As [`Prepare::output`].
    pub fn output<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<Output, GitError> {
        self.cmd(args).output()
    }

    /// `self.cmd(args).run()`: stdout bytes on success.
    ///
    /// # Errors
    ///
    /// As [`Prepare::run`].
    pub fn run<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<Vec<u8>, GitError> {
        self.cmd(args).run()
    }

    /// `self.cmd(args).line()`: stdout as one trimmed UTF-8 line (an object id, a path).
    ///
    /// # Errors
    ///
    /// As [`Prepare::line`].
    pub fn line<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<String, GitError> {
        self.cmd(args).line()
    }
}

/// One git invocation being prepared ([`Git::cmd`]), in the manner of `gix-command`'s
/// `Prepare`: the arguments, then whatever environment and input it needs, then one of
/// the ways to run it. Every way applies the [`Git`]'s hardening and pinning; `output`,
/// `run` and `line` also its deadline, interruption rule and parent-death signal
/// ([`Git::with_deadline`], [`Git::outliving_parent`]), while `until` takes a deadline of
/// its own and always stops on an interruption and ends with this process.
#[derive(Debug)]
#[must_use = "a prepared git runs only when output, run, line or until is called"]
pub struct Prepare<'a> {
    git: &'a Git,
    args: Vec<OsString>,
    envs: Vec<(OsString, OsString)>,
    input: Option<&'a [u8]>,
}

impl<'a> Prepare<'a> {
    /// Adds `key=value` to git's environment (after the hardening, so it may not undo it:
    /// callers add only git's own switches, e.g. `GIT_LITERAL_PATHSPECS`).
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.envs
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// Adds every `(key, value)` of `envs`, as [`Prepare::env`].
    pub fn envs<K: AsRef<OsStr>, V: AsRef<OsStr>>(mut self, envs: &[(K, V)]) -> Self {
        for (k, v) in envs {
            self = self.env(k, v);
        }
        self
    }

    /// Writes `input` to git's stdin (from a thread, so a large input and a large output
    /// cannot block each other); without it stdin is `/dev/null`.
    pub fn stdin(mut self, input: &'a [u8]) -> Self {
        self.input = Some(input);
        self
    }

    /// Runs git and returns its output whatever the exit status; bounded when the [`Git`]
    /// has a deadline ([`Git::with_deadline`]).
    ///
    /// # Errors
    ///
    /// [`GitError::Spawn`] when git cannot be started or its pipes fail;
    /// [`GitError::TimedOut`] or [`GitError::Interrupted`] for a bounded git.
    pub fn output(self) -> Result<Output, GitError> {
        self.git.exec(&self.args, &self.envs, self.input)
    }

    /// Runs git; returns stdout bytes on success.
    ///
    /// # Errors
    ///
    /// As [`Prepare::output`], or [`GitError::Failed`] on a non-zero exit.
    pub fn run(self) -> Result<Vec<u8>, GitError> {
        let out = self.git.exec(&self.args, &self.envs, self.input)?;
        if out.status.success() {
            Ok(out.stdout)
        } else {
            Err(failed(&self.args, &out))
        }
    }

    /// Runs git and returns its stdout as one trimmed UTF-8 line.
    ///
    /// # Errors
    ///
    /// As [`Prepare::run`], or [`GitError::Output`] when the output is not UTF-8.
    pub fn line(self) -> Result<String, GitError> {
        let args = describe(&self.args);
        let out = self.run()?;
        let text = String::from_utf8(out).map_err(|_| GitError::Output {
            args,
            detail: "output is not UTF-8".to_owned(),
        })?;
        Ok(text.trim_end_matches('\n').to_owned())
    }

    /// Runs git in a process group of its own until it exits or `deadline` passes or an
    /// interruption arrives, whatever the [`Git`]'s own deadline, and says which
    /// ([`Bounded`]): then the whole group (git and the helpers it started: `ssh`,
    /// `git-remote-https`, …) is stopped with [`satyrn_os::process::stop_group`]
    /// (`SIGTERM`, up to its grace of 5 s, `SIGKILL`) before git is reaped, so the call
    /// returns at most about 7 s after the deadline; git usually ends on `SIGTERM`. Output is
    /// read by two threads; after a stop, what has not reached end of file within 1 s is
    /// dropped (the thread is left to end with the pipe). Interruptions count only once
    /// [`satyrn_os::signals::install`] ran; one received before the call counts.
    ///
    /// # Process-global effects
    ///
    /// Signals every process of git's group on a timeout or an interruption; empties the
    /// signals' self-pipe ([`satyrn_os::signals::drain`]).
    ///
    /// # Errors
    ///
    /// [`GitError::Spawn`] when git cannot be started or waited for.
    pub fn until(self, deadline: Instant) -> Result<Bounded, GitError> {
        let mut cmd = self.git.command(&self.args)?;
        cmd.envs(self.envs.iter().map(|(k, v)| (k, v)));
        if self.input.is_some() {
            cmd.stdin(Stdio::piped());
        }
        satyrn_os::process::end_with_parent(&mut cmd, rustix::process::Signal::TERM);
        bounded(cmd, self.input, deadline, OnSignal::Stop).map_err(|source| GitError::Spawn {
            args: describe(&self.args),
            source,
        })
    }
}

impl Git {
    /// Runs git with `args` and `envs` (and `input` on its stdin, from a thread, so a large
    /// input and a large output cannot block each other), bounded when this git has a
    /// deadline; returns its output whatever the exit status.
    fn exec(
        &self,
        args: &[OsString],
        envs: &[(OsString, OsString)],
        input: Option<&[u8]>,
    ) -> Result<Output, GitError> {
        let mut cmd = self.command(args)?;
        cmd.envs(envs.iter().map(|(k, v)| (k, v)));
        if input.is_some() {
            cmd.stdin(Stdio::piped());
        }
        let Some((deadline, on_signal)) = self.deadline else {
            return unbounded(cmd, input).map_err(|source| GitError::Spawn {
                args: describe(args),
                source,
            });
        };
        if !self.outlives_parent {
            satyrn_os::process::end_with_parent(&mut cmd, rustix::process::Signal::TERM);
        }
        match bounded(cmd, input, deadline, on_signal).map_err(|source| GitError::Spawn {
            args: describe(args),
            source,
        })? {
            Bounded::Finished(out) => Ok(out),
            Bounded::TimedOut { stderr } => Err(GitError::TimedOut {
                args: describe(args),
                stderr,
            }),
            Bounded::Interrupted { signal, .. } => Err(GitError::Interrupted {
                args: describe(args),
                signal,
            }),
        }
    }
}

/// Runs `cmd` to its end, writing `input` (if any) to its stdin from a scoped thread.
fn unbounded(mut cmd: Command, input: Option<&[u8]>) -> std::io::Result<Output> {
    use std::io::Write;
    let Some(input) = input else {
        return cmd.output();
    };
    let mut child = cmd.spawn()?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| std::io::Error::other("git's stdin was not piped"))?;
    std::thread::scope(|scope| {
        // A git that exits early closes the pipe: its status says why, not EPIPE.
        scope.spawn(move || {
            let _ = stdin.write_all(input);
        });
        child.wait_with_output()
    })
}

/// How a git invocation with a deadline ended ([`Prepare::until`]).
#[derive(Debug)]
pub enum Bounded {
    /// git ended before the deadline: its output, whatever its exit status.
    Finished(Output),
    /// The deadline passed first; git's process group was stopped and git reaped. What it
    /// wrote to stderr by then (lossy, trimmed).
    TimedOut {
        /// git's stderr up to the stop.
        stderr: String,
    },
    /// An interruption ([`satyrn_os::signals`], once installed) arrived first; git's process
    /// group was stopped and git reaped.
    Interrupted {
        /// The signal received.
        signal: i32,
        /// git's stderr up to the stop.
        stderr: String,
    },
}

/// How waiting for a bounded git ended.
enum Waited {
    Exited,
    Deadline,
    Signal(i32),
}

/// How long the output of a git stopped at its deadline is waited for once git is reaped:
/// a process that left its group could hold the pipes open.
const STOPPED_OUTPUT_WAIT: Duration = Duration::from_secs(1);

/// Runs `cmd` (given its parent-death signal by the caller, if any) in a process group of
/// its own until it exits, `deadline` passes or an interruption arrives (see [`Prepare::until`]).
fn bounded(
    mut cmd: Command,
    input: Option<&[u8]>,
    deadline: Instant,
    on_signal: OnSignal,
) -> std::io::Result<Bounded> {
    use std::io::Write;
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
    let mut child = cmd.spawn()?;
    if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
        let input = input.to_vec();
        // Ends with the pipe: git exiting or stopped closes it (EPIPE, not SIGPIPE).
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
    }
    let stdout = read_in_thread(child.stdout.take());
    let stderr = read_in_thread(child.stderr.take());
    let waited = wait_until(&child, deadline, on_signal);
    let stopped = !matches!(waited, Ok(Waited::Exited));
    if stopped && let Ok(pgid) = satyrn_os::process::pid_of(&child) {
        satyrn_os::process::stop_group(pgid);
    }
    let status = child.wait()?;
    let waited = waited?;
    if stopped {
        let stderr = stderr.recv_timeout(STOPPED_OUTPUT_WAIT).unwrap_or_default();
        let stderr = String::from_utf8_lossy(&stderr).trim().to_owned();
        return Ok(match waited {
            Waited::Signal(signal) => Bounded::Interrupted { signal, stderr },
            Waited::Exited | Waited::Deadline => Bounded::TimedOut { stderr },
        });
    }
    Ok(Bounded::Finished(Output {
        status,
        stdout: stdout.recv().unwrap_or_default(),
        stderr: stderr.recv().unwrap_or_default(),
    }))
}

/// Reads `pipe` to its end in a thread of its own; the bytes arrive on the channel.
fn read_in_thread<R: Read + Send + 'static>(pipe: Option<R>) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        let _ = tx.send(bytes);
    });
    rx
}

/// Whether `child` exited (left un-reaped) before `deadline` or an interruption, watched
/// through a pidfd and the signals' self-pipe — or, on a kernel without `pidfd_open`, by
/// asking every 10 ms (`waitid` with `WNOWAIT`, so the child stays un-reaped).
fn wait_until(
    child: &std::process::Child,
    deadline: Instant,
    on_signal: OnSignal,
) -> std::io::Result<Waited> {
    use rustix::event::{PollFd, PollFlags, Timespec};
    use satyrn_os::signals;
    let pidfd = satyrn_os::process::pidfd_of(child).ok();
    loop {
        if on_signal == OnSignal::Stop
            && let Some(signal) = signals::received()
        {
            return Ok(Waited::Signal(signal));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(Waited::Deadline);
        }
        let Some(pidfd) = &pidfd else {
            if exited_unreaped(child)? {
                return Ok(Waited::Exited);
            }
            std::thread::sleep(left.min(Duration::from_millis(10)));
            continue;
        };
        let timeout = Timespec {
            tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(left.subsec_nanos()),
        };
        let mut fds = vec![PollFd::new(pidfd, PollFlags::IN)];
        if on_signal == OnSignal::Stop
            && let Some(wake) = signals::wake_fd()
        {
            fds.push(PollFd::from_borrowed_fd(wake, PollFlags::IN));
        }
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
        let exited = !fds[0].revents().is_empty();
        drop(fds);
        signals::drain();
        if exited {
            return Ok(Waited::Exited);
        }
    }
}

/// Whether `child` has exited, leaving it un-reaped.
fn exited_unreaped(child: &std::process::Child) -> std::io::Result<bool> {
    use rustix::process::{WaitId, WaitIdOptions, waitid};
    let pid = satyrn_os::process::pid_of(child)?;
    let status = waitid(
        WaitId::Pid(pid),
        WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT,
    )?;
    Ok(status.is_some())
}

/// The arguments of one ref transaction: `git update-ref --no-deref --stdin -z` with
/// `message` in the reflog, waiting up to 2 s for a ref lock another git holds
/// (`core.filesRefLockTimeout`); its commands (`create`, `delete`, … NUL-separated) go on
/// stdin. Every or none of them applies.
#[must_use]
pub fn ref_transaction_args(message: &str) -> [&str; 8] {
    [
        "-c",
        "core.filesRefLockTimeout=2000",
        "update-ref",
        "--no-deref",
        "-m",
        message,
        "--stdin",
        "-z",
    ]
}

/// The arguments of an atomic, lease-guarded `git push` to `remote`: each `(ref, expected)`
/// lease is `--force-with-lease=REF:EXPECTED` (an empty `expected` expects the ref to be
/// absent), then `refspecs`; hooks, signing and submodule pushes off, porcelain output, and
/// `--end-of-options` before the remote so no name is read as an option. `deliver --push`
/// and `candidates drop --remote` both push with these.
#[must_use]
pub fn atomic_push_args(
    leases: &[(String, String)],
    remote: &str,
    refspecs: &[String],
) -> Vec<String> {
    let mut args: Vec<String> = [
        "push",
        "--quiet",
        "--porcelain",
        "--atomic",
        "--no-verify",
        "--no-signed",
        "--recurse-submodules=no",
    ]
    .map(str::to_owned)
    .to_vec();
    args.extend(
        leases
            .iter()
            .map(|(name, expected)| format!("--force-with-lease={name}:{expected}")),
    );
    args.push("--end-of-options".to_owned());
    args.push(remote.to_owned());
    args.extend(refspecs.iter().cloned());
    args
}

/// The [`GitError::Failed`] for a finished git process.
#[must_use]
pub fn failed<S: AsRef<OsStr>>(args: &[S], out: &Output) -> GitError {
    GitError::Failed {
        args: describe(args),
        status: out.status,
        stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
    }
}

/// Splits NUL-terminated (`-z`) output into its records (a trailing NUL is optional).
#[must_use]
pub fn split_z(bytes: &[u8]) -> Vec<&[u8]> {
    let body = bytes.strip_suffix(b"\0").unwrap_or(bytes);
    if body.is_empty() {
        return Vec::new();
    }
    body.split(|b| *b == 0).collect()
}

/// The worktree paths of `git worktree list --porcelain -z`, as given by git.
///
/// # Errors
///
/// As [`Git::run`].
pub fn worktree_paths(git: &Git) -> Result<Vec<PathBuf>, GitError> {
    use std::os::unix::ffi::OsStrExt;
    let out = git.run(&["worktree", "list", "--porcelain", "-z"])?;
    Ok(split_z(&out)
        .into_iter()
        .filter_map(|rec| rec.strip_prefix(b"worktree "))
        .map(|p| PathBuf::from(OsStr::from_bytes(p)))
        .collect())
}

/// One record of `git worktree list --porcelain -z`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreeEntry {
    /// The worktree path, as given by git.
    pub path: PathBuf,
    /// It is locked (`git worktree lock`), with or without a reason.
    pub locked: bool,
}

/// The records of `git worktree list --porcelain -z`.
///
/// # Errors
///
/// As [`Git::run`].
pub fn worktree_entries(git: &Git) -> Result<Vec<WorktreeEntry>, GitError> {
    use std::os::unix::ffi::OsStrExt;
    let out = git.run(&["worktree", "list", "--porcelain", "-z"])?;
    let mut found: Vec<WorktreeEntry> = Vec::new();
    for attr in split_z(&out) {
        if let Some(path) = attr.strip_prefix(b"worktree ") {
            found.push(WorktreeEntry {
                path: PathBuf::from(OsStr::from_bytes(path)),
                locked: false,
            });
        } else if (attr == b"locked" || attr.starts_with(b"locked "))
            && let Some(last) = found.last_mut()
        {
            last.locked = true;
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_z_handles_trailing_and_empty() {
        assert!(split_z(b"").is_empty());
        assert!(split_z(b"\0").is_empty());
        assert_eq!(split_z(b"a\0b c\0"), vec![&b"a"[..], &b"b c"[..]]);
        assert_eq!(split_z(b"a\0b"), vec![&b"a"[..], &b"b"[..]]);
    }

    #[test]
    fn local_env_vars_name_the_repository_locators() {
        let vars = local_env_vars().expect("git runs");
        for v in [
            "GIT_DIR",
            "GIT_WORK_TREE",
            "GIT_INDEX_FILE",
            "GIT_OBJECT_DIRECTORY",
        ] {
            assert!(vars.iter().any(|x| x == v), "{v} missing from {vars:?}");
        }
    }

    /// A repository's deprecated `info/grafts` makes git print eight `hint:` lines before
    /// its messages; satyrn quotes git's messages, so it turns that advice off (the
    /// sibling: the same command without the override prints the hint).
    #[test]
    fn a_grafts_file_adds_no_hint_to_git_messages() {
        let dir = tempfile::tempdir().expect("tempdir");
        let git = Git::at(dir.path());
        git.run(&["init", "-q", "."]).expect("init");
        std::fs::write(dir.path().join(".git/info/grafts"), "").expect("grafts");
        let commit = [
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "a",
        ];
        let ours = git.output(&commit).expect("commit");
        assert!(ours.status.success(), "{ours:?}");
        let stderr = String::from_utf8_lossy(&ours.stderr);
        assert!(!stderr.contains("hint:"), "{stderr}");
        let plain = Command::new("git")
            .current_dir(dir.path())
            .args(commit)
            .output()
            .expect("git");
        let stderr = String::from_utf8_lossy(&plain.stderr);
        assert!(stderr.contains("grafts is deprecated"), "{stderr}");
    }
}
