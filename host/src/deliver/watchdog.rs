//! The watchdog: a small process that kills the command's session if `deliver` dies
//! without stopping it (`SIGKILL`, a crash), when no handler of `deliver` can run.
//!
//! `deliver` cannot outlive its own `SIGKILL`, and the parent-death signal it gives the
//! command (see [`super::command`]) reaches the direct child only — not the rest of its
//! group, and not at all once the command `exec`s a set-user-ID, set-group-ID or
//! file-capability binary (the kernel clears it then). So before the command starts,
//! `deliver` starts this same executable again as `satyrn-host __deliver-watchdog <its pid>`:
//!
//! - in its own process group (terminal signals meant for `deliver` do not reach it), with
//!   `SIGINT`, `SIGTERM`, `SIGHUP` and `SIGQUIT` ignored, stdout and stderr on `/dev/null`;
//! - its stdin is the read end of a pipe whose only write end `deliver` holds (close-on-exec,
//!   so neither the command nor git keeps it). The command's first process writes
//!   `arm <its pid>` itself, between fork and exec (after `setsid`), so the watchdog is armed
//!   before the command runs any code of its own; `deliver` writes the same line again after
//!   the spawn, and `disarm` once the command's group is stopped, before it reaps the
//!   command's first process.
//! - At end of file (every write end closed: `deliver` ended, however it ended), an armed
//!   watchdog sends `SIGKILL` to the command's process group and to every process of the
//!   command's session (the command is a session leader, so both ids are its pid), round after
//!   round until none is left (bounded), then exits. A disarmed one exits at once.
//!
//! Not covered: a descendant that started a session of its own (`setsid`) and is still
//! running when `deliver` is killed — while `deliver` lives it is caught as a reparented
//! stray, but after `deliver`'s death it has no identifying tie left.
//!
//! Pid reuse: Linux keeps a pid allocated while it names a process, a zombie, a group or a
//! session. While `deliver` lives and the watchdog is armed, the command's first process is
//! never reaped, so the ids cannot be reused. After `deliver`'s death, they stay allocated as
//! long as any process of the group or session lives — exactly the processes the watchdog is
//! after; it could only hit a stranger if every member were already gone *and* the pid
//! space wrapped around in the milliseconds since.

use std::io::{self, BufRead, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The hidden first argument that runs the watchdog: `satyrn-host __deliver-watchdog PID`,
/// `PID` being the `deliver` it watches.
pub const ARG: &str = "__deliver-watchdog";

/// `deliver`'s end of a running watchdog.
#[derive(Debug)]
pub struct Watchdog {
    child: Child,
    pipe: Option<std::fs::File>,
}

impl Watchdog {
    /// Starts the watchdog: this executable (`/proc/self/exe`) with [`ARG`].
    ///
    /// # Errors
    ///
    /// The operating-system error when the pipe or the process cannot be created.
    pub fn start() -> io::Result<Self> {
        let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        let child = Command::new("/proc/self/exe")
            .arg(ARG)
            .arg(std::process::id().to_string())
            .stdin(Stdio::from(read))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .current_dir("/")
            .process_group(0)
            .spawn()?;
        Ok(Self {
            child,
            pipe: Some(std::fs::File::from(write)),
        })
    }

    /// The watchdog's pid (it is our child: [`super::command::stop_strays`] spares it).
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The raw write end of its pipe, for the command's own `arm` between fork and exec
    /// (close-on-exec: the command never keeps it).
    #[must_use]
    pub fn arm_fd(&self) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        self.pipe.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// Arms it for the command `pid` (a session and group leader).
    pub fn arm(&mut self, pid: u32) {
        self.send(&format!("arm {pid}\n"));
    }

    /// Disarms it: from now on it exits without killing anything.
    pub fn disarm(&mut self) {
        self.send("disarm\n");
    }

    /// Disarms it, closes the pipe and waits for it to exit.
    pub fn finish(mut self) {
        self.disarm();
        self.pipe = None;
        let _ = self.child.wait();
    }

    fn send(&mut self, line: &str) {
        if let Some(pipe) = self.pipe.as_mut() {
            // One short line is one atomic pipe write; a watchdog that died cannot be helped.
            let _ = pipe.write_all(line.as_bytes());
        }
    }
}

/// The watchdog process itself (`satyrn-host __deliver-watchdog DELIVER_PID`, the command
/// line checking that `DELIVER_PID` is greater than 1); returns its exit status, `OK`'s (0).
///
/// `arm <pid>` is honoured only for a session leader other than init that is a child of
/// `DELIVER_PID` while that process is still our parent — or, once it is not (`deliver`
/// died before we read the line), for a `pid` that is such a session leader no longer or
/// not at all (see `armable`). So the watchdog only ever kills the session `deliver` started.
///
/// Process-global: ignores `SIGINT`, `SIGTERM`, `SIGHUP` and `SIGQUIT`.
#[must_use]
pub fn main(deliver: i32) -> u8 {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
        // SAFETY: SIG_IGN installs no handler; nothing runs on the signal's arrival.
        unsafe {
            libc::signal(signal, libc::SIG_IGN);
        }
    }
    let mut armed: Option<i32> = None;
    let stdin = io::stdin();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if let Some(pid) = line.strip_prefix("arm ") {
            armed = pid.trim().parse().ok().filter(|p| armable(*p, deliver));
        } else if line == "disarm" {
            armed = None;
        }
    }
    if let Some(leader) = armed {
        kill_session(leader);
    }
    crate::code::Code::Ok.exit_status()
}

/// Whether `arm pid` may be honoured (see [`main`]). While `deliver` is our parent, `pid`
/// must be a session leader and `deliver`'s child. Once `deliver` is gone, its command has
/// been reparented (or has died and been reaped): a `pid` that still leads its own session
/// or is gone is accepted — killing a gone session's group and members is what is wanted,
/// and finds nothing when there are none.
fn armable(pid: i32, deliver: i32) -> bool {
    if pid <= 1 {
        return false;
    }
    let deliver_alive =
        rustix::process::getppid().map(|p| p.as_raw_nonzero().get()) == Some(deliver);
    match parent_and_session(pid) {
        Some((ppid, session)) => session == pid && (ppid == deliver || !deliver_alive),
        None => !deliver_alive,
    }
}

/// `(ppid, session)` of `pid` from `/proc`, `None` when it does not exist.
fn parent_and_session(pid: i32) -> Option<(i32, i32)> {
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    let close = stat.iter().rposition(|b| *b == b')')?;
    let rest = String::from_utf8_lossy(&stat[close + 1..]).into_owned();
    // state ppid pgrp session
    let fields: Vec<&str> = rest.split_ascii_whitespace().take(4).collect();
    match fields.as_slice() {
        [_, ppid, _, session] => Some((ppid.parse().ok()?, session.parse().ok()?)),
        _ => None,
    }
}

/// `SIGKILL` to group `leader` and to every process of session `leader`, until none is left
/// (at most 100 rounds, 10 ms apart).
fn kill_session(leader: i32) {
    let Some(pgid) = rustix::process::Pid::from_raw(leader) else {
        return;
    };
    for _ in 0..100 {
        let members = super::command::session_members(leader);
        let group = super::command::group_alive(pgid);
        if members.is_empty() && !group {
            return;
        }
        if group {
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
        }
        for pid in members
            .into_iter()
            .filter_map(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
