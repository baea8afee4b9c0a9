//! Running the delivered command: once, exact argv, no shell, stdin from `/dev/null`, in a
//! new session (and so a new process group), with a timeout.
//!
//! stdout and stderr go to two pipes that `deliver` reads without blocking into bounded
//! spools and forwards to its own stderr without blocking ([`super::spool`]), so neither a
//! stalled reader of our stderr nor a flood of output can hold the deadline or exhaust
//! memory or disk. Nothing waits for the pipes' end of file: a descendant that kept them
//! open is killed with the group.
//!
//! Stopping the group ([`process::stop_group`]): `SIGTERM` to the group, up to
//! [`process::GRACE`] for its
//! members to exit, `SIGKILL` to what remains. It runs on timeout, on interruption, and
//! after a normal exit whenever a descendant is still alive, always *before* the direct
//! child is reaped: the un-reaped leader keeps the group id from being reused.
//!
//! A descendant that leaves the group (`setsid`, `setpgid`) is caught too: `deliver` makes
//! itself a child subreaper before it starts the command, so such a process is reparented
//! to `deliver` once its parent dies, and [`process::stop_strays`] kills and reaps every remaining
//! child after the group is stopped. Only a process that both leaves the group and keeps a
//! living parent outside our descendants could escape, and there is none: every ancestor of
//! a descendant is itself a descendant.
//!
//! If `deliver` itself is killed (`SIGKILL`), none of that can run. The command's first
//! process then gets `SIGKILL` as its parent-death signal, and the [`Watchdog`] kills the
//! command's process group and session (see [`super::watchdog`] for what neither covers).

use std::ffi::OsString;
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags};
use rustix::process::{Pid, Signal};

pub use super::error::CommandError;
use super::output::Output;
use super::spool;
use super::watchdog::Watchdog;
use satyrn_os::{process, signals};

/// The longest wait between two checks of the deadline and of signals: 100 ms.
const TICK: Duration = Duration::from_millis(100);

/// How often exited orphans are reaped while the command runs: every second.
const REAP_EVERY: Duration = Duration::from_secs(1);

/// How long output left after the command stopped may take to forward: 2 s. What our
/// stderr has not accepted by then is dropped.
pub const FLUSH_LIMIT: Duration = Duration::from_secs(2);

/// How the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finished {
    /// The exit status, when it exited.
    pub exit_code: Option<i32>,
    /// The terminating signal, when one ended it.
    pub signal: Option<i32>,
    /// The deadline passed first.
    pub timed_out: bool,
    /// `deliver` received `SIGINT`/`SIGTERM`/`SIGHUP` first.
    pub interrupted: bool,
    /// Bytes of the command's output that were not forwarded (spool overflow, a stalled or
    /// closed stderr).
    pub output_dropped: u64,
}

impl Finished {
    /// Exited with status 0.
    #[must_use]
    pub fn succeeded(&self) -> bool {
        self.exit_code == Some(0)
    }
}

/// Runs `argv` in `cwd` with `timeout` (`None`: no deadline), forwarding its output to our
/// stderr through bounded spools (see [`super::output`]).
///
/// The environment is ours minus [`satyrn_git::scrub_env`]'s variables, plus `env`. The deadline holds
/// whatever our stderr's reader does: forwarding never blocks, and what is left after the
/// command stopped is forwarded for at most [`FLUSH_LIMIT`].
///
/// # Process-global effects
///
/// Makes this process a child subreaper ([`process::become_subreaper`]) and, once the
/// command stopped, kills and reaps every remaining child but the watchdog
/// ([`process::stop_strays`]). The command gets `SIGKILL` as its parent-death signal, and a
/// [`Watchdog`] process runs for the duration of the call, so the command's session dies
/// even if this process is killed. The watchdog is this executable (`/proc/self/exe`) run
/// again with [`super::watchdog::ARG`]: call this only from `satyrn-host`.
///
/// # Errors
///
/// [`CommandError::Unavailable`] when the program cannot be executed;
/// [`CommandError::Io`] when the pipes cannot be set up or waiting fails (the group is
/// stopped first).
pub fn run(
    argv: &[OsString],
    cwd: &Path,
    timeout: Option<Duration>,
    env: &[(&str, &std::ffi::OsStr)],
) -> Result<Finished, CommandError> {
    let Some((program, args)) = argv.split_first() else {
        return Err(CommandError::Unavailable(io::Error::new(
            io::ErrorKind::InvalidInput,
            "empty command",
        )));
    };
    let stderr = io::stderr();
    let (output, ends) =
        Output::new(stderr.as_fd()).map_err(|(what, e)| CommandError::Io(what, e))?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(ends.stdout))
        .stderr(Stdio::from(ends.stderr));
    satyrn_git::scrub_env(&mut cmd).map_err(CommandError::Environment)?;
    cmd.envs(env.iter().copied());
    process::become_subreaper();
    // Best effort: without it only the parent-death signal stands in for deliver's death.
    let mut watchdog = match Watchdog::start() {
        Ok(w) => Some(w),
        Err(e) => {
            let _ = writeln!(
                io::stderr(),
                "satyrn-host deliver: cannot start the watchdog ({e}); if deliver is killed, only the command's first process dies with it"
            );
            None
        }
    };
    let arm = watchdog.as_ref().and_then(Watchdog::arm_end);
    // Three steps between fork and exec, run in this order: a session of its own; death
    // with deliver (with this thread, the only one: deliver is single-threaded; a deliver
    // already gone fails the spawn); then the watchdog armed with the pid, before the
    // command runs a single instruction of its own.
    // SAFETY: setsid(2) is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::setsid()?;
            Ok(())
        });
    }
    process::end_with_parent(&mut cmd, Signal::KILL);
    if let Some(arm) = arm {
        // SAFETY: getpid(2) and send(2) on a descriptor this closure owns (close-on-exec);
        // nothing allocates between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                super::watchdog::arm_from_child(&arm);
                Ok(())
            });
        }
    }
    let spare = watchdog.as_ref().map(Watchdog::pid);
    let started = Instant::now();
    let spawned = cmd.spawn();
    // Our copies of the write ends must close now, or the pipes never reach end of file.
    drop(cmd);
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            if let Some(w) = watchdog {
                w.finish();
            }
            return Err(CommandError::Unavailable(e));
        }
    };
    if let Some(w) = watchdog.as_mut() {
        w.arm(child.id());
    }
    let deadline = timeout.and_then(|t| started.checked_add(t));
    let mut output = output;
    let result = wait(&mut child, deadline, &mut output, spare);
    // Whatever happened, no member of the group outlives this call.
    if let Ok(pgid) = process::pid_of(&child) {
        process::stop_group(pgid);
    }
    // Disarmed while the leader is still un-reaped: its pid, the group and session id the
    // watchdog would signal, cannot have been reused while it was armed.
    if let Some(w) = watchdog.as_mut() {
        w.disarm();
    }
    let status = child.wait();
    process::stop_strays(spare);
    if let Some(w) = watchdog {
        w.finish();
    }
    let dropped = output.finish(FLUSH_LIMIT);
    let mut finished = result.map_err(|e| CommandError::Io("cannot wait for the command", e))?;
    let status = status.map_err(|e| CommandError::Io("cannot reap the command", e))?;
    finished.exit_code = status.code();
    finished.signal = status.signal();
    finished.output_dropped = dropped;
    Ok(finished)
}

/// Waits until the child exits (left un-reaped), the deadline passes or a signal arrives,
/// reading the command's output and forwarding it as the sink accepts it.
fn wait(
    child: &mut Child,
    deadline: Option<Instant>,
    output: &mut Output<'_>,
    spare: Option<u32>,
) -> io::Result<Finished> {
    let mut finished = Finished {
        exit_code: None,
        signal: None,
        timed_out: false,
        interrupted: false,
        output_dropped: 0,
    };
    let pidfd = process::pidfd_of(child)?;
    let keep: Vec<Pid> = [
        Some(process::pid_of(child)?),
        spare
            .and_then(|p| i32::try_from(p).ok())
            .and_then(Pid::from_raw),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut next_reap = Instant::now() + REAP_EVERY;
    loop {
        if signals::received().is_some() {
            finished.interrupted = true;
            return Ok(finished);
        }
        let now = Instant::now();
        let mut tick = TICK;
        if let Some(deadline) = deadline {
            if now >= deadline {
                finished.timed_out = true;
                return Ok(finished);
            }
            tick = tick.min(deadline - now);
        }
        let (exited, stream_ready) = {
            let mut fds = Vec::with_capacity(5);
            fds.push(PollFd::new(&pidfd, PollFlags::IN));
            let wake = signals::wake_fd();
            if let Some(wake) = wake {
                fds.push(PollFd::from_borrowed_fd(wake, PollFlags::IN));
            }
            output.poll_fds(&mut fds);
            match rustix::event::poll(&mut fds, Some(&spool::timespec(tick))) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
            let first_stream = 1 + usize::from(wake.is_some());
            (
                !fds[0].revents().is_empty(),
                fds[first_stream..].iter().any(|f| !f.revents().is_empty()),
            )
        };
        signals::drain();
        if stream_ready {
            output.pump();
        }
        if Instant::now() >= next_reap {
            // Never the direct child or the watchdog: their `Child` reaps them.
            process::reap_exited_children(&keep);
            next_reap = Instant::now() + REAP_EVERY;
        }
        if exited {
            return Ok(finished);
        }
    }
}
