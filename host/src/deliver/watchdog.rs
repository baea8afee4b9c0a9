//! The watchdog: a small process that kills the command's session if `deliver` dies
//! without stopping it (`SIGKILL`, a crash), when no handler of `deliver` can run.
//!
//! `deliver` cannot outlive its own `SIGKILL`, and the parent-death signal it gives the
//! command (see [`super::command`]) reaches the direct child only — not the rest of its
//! group, and not at all once the command `exec`s a set-user-ID, set-group-ID or
//! file-capability binary (the kernel clears it then). So before the command starts,
//! `deliver` starts this same executable again as `satyrn-host __deliver-watchdog`:
//!
//! - in its own process group (terminal signals meant for `deliver` do not reach it), with
//!   `SIGINT`, `SIGTERM`, `SIGHUP` and `SIGQUIT` ignored, stdout and stderr on `/dev/null`;
//! - its stdin is the read end of a pipe whose only write end `deliver` holds (close-on-exec,
//!   so neither the command nor git inherits it). `deliver` writes `arm <pid>` once the
//!   command runs and `disarm` once the command's group is stopped, before it reaps the
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

/// The hidden first argument that runs the watchdog: `satyrn-host __deliver-watchdog`.
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

/// The watchdog process itself (`satyrn-host __deliver-watchdog`); returns its exit status
/// (always `OK`'s, 0: it has nothing to report to anyone).
///
/// `arm <pid>` is honoured only for a session leader that is a child of the watchdog's own
/// parent (see `is_siblings_session`).
///
/// Process-global: ignores `SIGINT`, `SIGTERM`, `SIGHUP` and `SIGQUIT`.
#[must_use]
pub fn main() -> u8 {
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
            armed = pid.trim().parse().ok().filter(|p| is_siblings_session(*p));
        } else if line == "disarm" {
            armed = None;
        }
    }
    if let Some(leader) = armed {
        kill_session(leader);
    }
    crate::code::Code::Ok.exit_status()
}

/// Whether `pid` (not init) leads its own session and is a child of our parent (`deliver`):
/// anything else named by `arm` is ignored, so the watchdog can only ever kill the session
/// `deliver` started.
fn is_siblings_session(pid: i32) -> bool {
    if pid <= 1 {
        return false;
    }
    let Ok(stat) = std::fs::read(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let Some(close) = stat.iter().rposition(|b| *b == b')') else {
        return false;
    };
    let rest = String::from_utf8_lossy(&stat[close + 1..]).into_owned();
    // state ppid pgrp session
    let fields: Vec<&str> = rest.split_ascii_whitespace().take(4).collect();
    let parent = rustix::process::getppid().map(|p| p.as_raw_nonzero().get());
    matches!(fields.as_slice(), [_, ppid, _, session]
        if ppid.parse::<i32>().ok() == parent && session.parse::<i32>().ok() == Some(pid))
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
