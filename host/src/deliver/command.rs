//! Running the delivered command: once, exact argv, no shell, stdin from `/dev/null`, in a
//! new session (and so a new process group), with a timeout.
//!
//! stdout and stderr go to two pipes that `deliver` reads without blocking into bounded
//! spools and forwards to its own stderr without blocking ([`super::spool`]), so neither a
//! stalled reader of our stderr nor a flood of output can hold the deadline or exhaust
//! memory or disk. Nothing waits for the pipes' end of file: a descendant that kept them
//! open is killed with the group.
//!
//! Stopping the group ([`stop_group`]): `SIGTERM` to the group, up to [`GRACE`] for its
//! members to exit, `SIGKILL` to what remains. It runs on timeout, on interruption, and
//! after a normal exit whenever a descendant is still alive, always *before* the direct
//! child is reaped: the un-reaped leader keeps the group id from being reused.
//!
//! A descendant that leaves the group (`setsid`, `setpgid`) is caught too: `deliver` makes
//! itself a child subreaper before it starts the command, so such a process is reparented
//! to `deliver` once its parent dies, and [`stop_strays`] kills and reaps every remaining
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
use rustix::pipe::PipeFlags;
use rustix::process::{Pid, PidfdFlags, Signal};

use super::signals;
use super::spool::{self, Sink, Source};
use super::watchdog::Watchdog;

/// The grace between `SIGTERM` and `SIGKILL`: 5 s.
pub const GRACE: Duration = Duration::from_secs(5);

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

/// Why the command could not be run to an end.
#[derive(Debug)]
pub enum CommandError {
    /// The executable could not be started (`COMMAND_UNAVAILABLE`).
    Unavailable(io::Error),
    /// Spooling or waiting failed (the group was stopped).
    Io(String),
}

impl std::fmt::Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unavailable(e) => write!(f, "cannot start the command: {e}"),
            Self::Io(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for CommandError {}

/// Runs `argv` in `cwd` with `timeout` (`None`: no deadline), forwarding its output to our
/// stderr through bounded spools (see [`super::spool`]).
///
/// The environment is ours minus [`crate::git::scrub_env`]'s variables. The deadline holds
/// whatever our stderr's reader does: forwarding never blocks, and what is left after the
/// command stopped is forwarded for at most [`FLUSH_LIMIT`].
///
/// Process-global effects: makes this process a child subreaper (see [`stop_strays`]). The
/// command gets `SIGKILL` as its parent-death signal, and a [`Watchdog`] process runs for
/// the duration of the call, so the command's session dies even if this process is killed.
/// The watchdog is this executable (`/proc/self/exe`) run again with
/// [`super::watchdog::ARG`]: call this only from `satyrn-host`.
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
) -> Result<Finished, CommandError> {
    let Some((program, args)) = argv.split_first() else {
        return Err(CommandError::Unavailable(io::Error::new(
            io::ErrorKind::InvalidInput,
            "empty command",
        )));
    };
    let io_err = |what: &str, e: io::Error| CommandError::Io(format!("{what}: {e}"));
    let pipe = || rustix::pipe::pipe_with(PipeFlags::CLOEXEC).map_err(io::Error::from);
    let (out_read, out_write) = pipe().map_err(|e| io_err("cannot create the stdout pipe", e))?;
    let (err_read, err_write) = pipe().map_err(|e| io_err("cannot create the stderr pipe", e))?;
    let mut sources = [
        Source::new("stdout", out_read).map_err(|e| io_err("cannot set up the stdout pipe", e))?,
        Source::new("stderr", err_read).map_err(|e| io_err("cannot set up the stderr pipe", e))?,
    ];

    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out_write))
        .stderr(Stdio::from(err_write));
    crate::git::scrub_env(&mut cmd).map_err(|e| CommandError::Io(e.to_string()))?;
    become_subreaper();
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
    let arm_fd = watchdog.as_ref().and_then(Watchdog::arm_fd);
    let parent = rustix::process::getpid();
    // SAFETY: the closure makes only raw, async-signal-safe system calls (setsid(2),
    // prctl(2), getppid(2), getpid(2), signal(2), write(2)) that touch no memory of the
    // parent; `parent` and `arm_fd` are copied integers, the descriptor still open in the
    // child (close-on-exec); errors are raw OS errors, so nothing allocates between fork
    // and exec.
    unsafe {
        cmd.pre_exec(move || {
            rustix::process::setsid()?;
            // The direct child dies with this thread (the only one: deliver is
            // single-threaded). Checked afterwards: deliver may have died before the prctl.
            rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
            if rustix::process::getppid() != Some(parent) {
                // deliver ended before the command started (no allocation after fork).
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            // Armed from here, before the command runs a single instruction of its own:
            // if deliver dies from now on, the watchdog has the pid.
            if let Some(fd) = arm_fd {
                arm_from_child(fd);
            }
            Ok(())
        });
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
    let stderr = io::stderr();
    let mut sink = Sink::new(stderr.as_fd());
    let result = wait(&mut child, deadline, &mut sources, &mut sink, spare);
    // Whatever happened, no member of the group outlives this call.
    let pgid = child_pid(&child);
    stop_group(pgid);
    // Disarmed while the leader is still un-reaped: its pid, the group and session id the
    // watchdog would signal, cannot have been reused while it was armed.
    if let Some(w) = watchdog.as_mut() {
        w.disarm();
    }
    let status = child.wait();
    stop_strays(spare);
    if let Some(w) = watchdog {
        w.finish();
    }
    let dropped = spool::finish(&mut sources, &mut sink, FLUSH_LIMIT);
    let mut finished = result.map_err(|e| io_err("cannot wait for the command", e))?;
    let status = status.map_err(|e| io_err("cannot reap the command", e))?;
    finished.exit_code = status.code();
    finished.signal = status.signal();
    finished.output_dropped = dropped;
    Ok(finished)
}

/// Writes `arm <our pid>` to the watchdog pipe `fd`, between fork and exec: no allocation,
/// `SIGPIPE` ignored for the write (a watchdog that died must not kill the command).
fn arm_from_child(fd: std::os::fd::RawFd) {
    let mut line = [0u8; 32];
    line[..4].copy_from_slice(b"arm ");
    let mut digits = [0u8; 12];
    let mut n = rustix::process::getpid()
        .as_raw_nonzero()
        .get()
        .unsigned_abs();
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..len {
        line[4 + i] = digits[len - 1 - i];
    }
    line[4 + len] = b'\n';
    // SAFETY: signal(2) and write(2) are async-signal-safe; `fd` is the watchdog pipe's
    // write end, open in this child until exec; `line` is a live local buffer.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        let _ = rustix::io::write(std::os::fd::BorrowedFd::borrow_raw(fd), &line[..5 + len]);
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn child_pid(child: &Child) -> Option<Pid> {
    i32::try_from(child.id()).ok().and_then(Pid::from_raw)
}

/// Waits until the child exits (left un-reaped), the deadline passes or a signal arrives,
/// reading the command's output and forwarding it as the sink accepts it.
fn wait(
    child: &mut Child,
    deadline: Option<Instant>,
    sources: &mut [Source; 2],
    sink: &mut Sink<'_>,
    spare: Option<u32>,
) -> io::Result<Finished> {
    let mut finished = Finished {
        exit_code: None,
        signal: None,
        timed_out: false,
        interrupted: false,
        output_dropped: 0,
    };
    let pid = child_pid(child).ok_or_else(|| io::Error::other("child pid out of range"))?;
    let pidfd = rustix::process::pidfd_open(pid, PidfdFlags::empty())?;
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
            for source in sources.iter() {
                if let Some(fd) = source.fd() {
                    fds.push(PollFd::from_borrowed_fd(fd, PollFlags::IN));
                }
            }
            if spool::pending(sources, sink) {
                fds.push(PollFd::from_borrowed_fd(sink.fd(), PollFlags::OUT));
            }
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
            for source in sources.iter_mut() {
                // A read error closes that pipe; the command then gets EPIPE, as it would
                // writing to any closed pipe.
                let _ = source.fill();
            }
            spool::forward(sources, sink);
        }
        if Instant::now() >= next_reap {
            reap_orphans(pid, spare);
            next_reap = Instant::now() + REAP_EVERY;
        }
        if exited {
            return Ok(finished);
        }
    }
}

/// Stops the process group `pgid`: nothing to do when no member is alive; otherwise
/// `SIGTERM`, up to [`GRACE`], then `SIGKILL`, then a bounded wait for the members to die.
pub fn stop_group(pgid: Option<Pid>) {
    let Some(pgid) = pgid else { return };
    if !group_alive(pgid) {
        return;
    }
    let _ = rustix::process::kill_process_group(pgid, Signal::TERM);
    let grace_end = Instant::now() + GRACE;
    while Instant::now() < grace_end {
        std::thread::sleep(Duration::from_millis(20));
        if !group_alive(pgid) {
            return;
        }
    }
    let _ = rustix::process::kill_process_group(pgid, Signal::KILL);
    let kill_end = Instant::now() + Duration::from_secs(2);
    while group_alive(pgid) && Instant::now() < kill_end {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Makes this process a child subreaper (Linux `PR_SET_CHILD_SUBREAPER`): orphaned
/// descendants are reparented to it instead of to init. Best effort: without it, a
/// descendant that leaves the group can escape, as documented.
fn become_subreaper() {
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
}

/// Kills and reaps every remaining child of this process but `spare` (the watchdog): the
/// descendants that left the command's group and were reparented to us (see
/// `become_subreaper`). They had no part in the group's `SIGTERM` grace and get `SIGKILL`
/// at once. Bounded: a process that keeps forking is outrun after a few rounds of killing
/// its whole reparented generation.
pub fn stop_strays(spare: Option<u32>) {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let spare = spare.and_then(|p| i32::try_from(p).ok());
    for _ in 0..64 {
        let children = processes(|p| p.ppid == me && Some(p.pid) != spare);
        for &(pid, zombie) in &children {
            if !zombie && let Some(pid) = Pid::from_raw(pid) {
                // At worst it names a process that already exited (ESRCH), which is harmless.
                let _ = rustix::process::kill_process(pid, Signal::KILL);
            }
        }
        // Reap whatever has exited (the watchdog excepted: its `Child` reaps it).
        for &(pid, zombie) in &children {
            if zombie {
                reap(pid);
            }
        }
        if children.is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Reaps the descendants reparented to us (a subreaper) that have already exited, so a
/// long command that orphans processes does not pile up zombies under `deliver`. Never
/// `waitpid(-1)`: the direct child `direct` and the watchdog `spare` belong to their
/// `std::process::Child`.
fn reap_orphans(direct: Pid, spare: Option<u32>) {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let direct = direct.as_raw_nonzero().get();
    let spare = spare.and_then(|p| i32::try_from(p).ok());
    for (pid, _) in
        processes(|p| p.ppid == me && p.pid != direct && Some(p.pid) != spare && p.state == "Z")
    {
        reap(pid);
    }
}

/// Reaps our exited child `pid` without waiting.
fn reap(pid: i32) {
    if let Some(pid) = Pid::from_raw(pid) {
        let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG);
    }
}

/// One process as `/proc/PID/stat` describes it.
struct Stat<'a> {
    pid: i32,
    ppid: i32,
    pgrp: i32,
    session: i32,
    state: &'a str,
}

/// `(pid, is_zombie)` of every process whose `/proc/PID/stat` satisfies `keep`.
fn processes(keep: impl Fn(&Stat<'_>) -> bool) -> Vec<(i32, bool)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read(entry.path().join("stat")) else {
            continue;
        };
        // "pid (comm) state ppid pgrp ...": comm may contain anything, so split after the
        // last ')'.
        let Some(close) = stat.iter().rposition(|b| *b == b')') else {
            continue;
        };
        let rest = String::from_utf8_lossy(&stat[close + 1..]);
        let mut fields = rest.split_ascii_whitespace();
        let (Some(state), Some(ppid), Some(pgrp), Some(session)) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let (Ok(ppid), Ok(pgrp), Ok(session)) = (
            ppid.parse::<i32>(),
            pgrp.parse::<i32>(),
            session.parse::<i32>(),
        ) else {
            continue;
        };
        let stat = Stat {
            pid,
            ppid,
            pgrp,
            session,
            state,
        };
        if keep(&stat) {
            found.push((pid, state == "Z" || state == "X"));
        }
    }
    found
}

/// Whether any member of the group is alive (zombies excluded), read from `/proc`. Without
/// `/proc`, whether the group exists at all.
#[must_use]
pub fn group_alive(pgid: Pid) -> bool {
    if std::fs::metadata("/proc/self/stat").is_err() {
        return rustix::process::test_kill_process_group(pgid).is_ok();
    }
    let want = pgid.as_raw_nonzero().get();
    processes(|p| p.pgrp == want && !dead(p.state))
        .into_iter()
        .next()
        .is_some()
}

/// The live (not zombie) processes of session `sid`, read from `/proc`.
#[must_use]
pub fn session_members(sid: i32) -> Vec<i32> {
    processes(|p| p.session == sid && !dead(p.state))
        .into_iter()
        .map(|(pid, _)| pid)
        .collect()
}

fn dead(state: &str) -> bool {
    state == "Z" || state == "X"
}
