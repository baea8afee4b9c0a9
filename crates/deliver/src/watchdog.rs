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
//! - its stdin is one end of a Unix stream socket pair whose other end only `deliver` holds
//!   (close-on-exec, so neither the command nor git keeps it). The command's first process writes
//!   `arm <its pid>` itself, between fork and exec (after `setsid`), so the watchdog is armed
//!   before the command runs any code of its own; `deliver` writes the same line again after
//!   the spawn, and `disarm` once the command's group is stopped, before it reaps the
//!   command's first process.
//! - At end of file (every descriptor of `deliver`'s end closed: `deliver` ended, however it ended), an armed
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
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use rustix::net::SendFlags;
use rustix::process::Pid;

use satyrn_os::{process, signals};

/// The hidden first argument that runs the watchdog: `satyrn-host __deliver-watchdog PID`,
/// `PID` being the `deliver` it watches.
pub const ARG: &str = "__deliver-watchdog";

/// `deliver`'s end of a running watchdog.
#[derive(Debug)]
pub struct Watchdog {
    child: Child,
    channel: Option<UnixStream>,
}

impl Watchdog {
    /// Starts the watchdog: this executable (`/proc/self/exe`) with [`ARG`], its stdin one
    /// end of a Unix stream socket pair (close-on-exec) whose other end only `deliver`
    /// holds. A socket rather than a pipe so the command's first process can write its
    /// `arm` line without `SIGPIPE` ([`arm_from_child`]).
    ///
    /// # Errors
    ///
    /// The operating-system error when the socket pair or the process cannot be created.
    pub fn start() -> io::Result<Self> {
        let (ours, theirs) = UnixStream::pair()?;
        let child = Command::new("/proc/self/exe")
            .arg(ARG)
            .arg(std::process::id().to_string())
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .current_dir("/")
            .process_group(0)
            .spawn()?;
        Ok(Self {
            child,
            channel: Some(ours),
        })
    }

    /// The watchdog's pid (it is our child: [`process::stop_strays`] spares it).
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A second descriptor of our end of the channel, for the command's own `arm` between
    /// fork and exec ([`arm_from_child`]; close-on-exec: the command never keeps it). `None`
    /// when it cannot be duplicated.
    #[must_use]
    pub fn arm_end(&self) -> Option<OwnedFd> {
        let channel = self.channel.as_ref()?;
        channel.try_clone().ok().map(OwnedFd::from)
    }

    /// Arms it for the command `pid` (a session and group leader).
    pub fn arm(&mut self, pid: u32) {
        self.send(&format!("arm {pid}\n"));
    }

    /// Disarms it: from now on it exits without killing anything.
    pub fn disarm(&mut self) {
        self.send("disarm\n");
    }

    /// Disarms it, closes the channel and waits for it to exit.
    pub fn finish(mut self) {
        self.disarm();
        self.channel = None;
        let _ = self.child.wait();
    }

    fn send(&mut self, line: &str) {
        if let Some(channel) = self.channel.as_mut() {
            // A watchdog that died cannot be helped (and SIGPIPE is ignored in satyrn-host).
            let _ = channel.write_all(line.as_bytes());
        }
    }
}

/// Writes `arm <our pid>` to the watchdog channel `end`, between fork and exec: no
/// allocation, and `MSG_NOSIGNAL`, so a watchdog that died cannot kill the command with
/// `SIGPIPE`.
pub fn arm_from_child(end: &OwnedFd) {
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
    let _ = rustix::net::send(end, &line[..5 + len], SendFlags::NOSIGNAL);
}

/// The watchdog process itself (`satyrn-host __deliver-watchdog DELIVER_PID`, the command
/// line checking that `DELIVER_PID` is greater than 1); returns its exit status, `OK`'s (0).
///
/// `arm <pid>` is honoured only for a session leader other than init that is a child of
/// `DELIVER_PID` while that process is still our parent — or, once it is not (`deliver`
/// died before we read the line), for a `pid` that is such a session leader no longer or
/// not at all (see `armable`). So the watchdog only ever kills the session `deliver` started.
///
/// # Process-global effects
///
/// Ignores `SIGINT`, `SIGTERM`, `SIGHUP` and `SIGQUIT` for good; once armed and at end of
/// file, kills the command's group and session ([`process::kill_group_and_session`]).
#[must_use]
pub fn main(deliver: i32) -> u8 {
    signals::ignore(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT]);
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
    if let Some(leader) = armed.and_then(Pid::from_raw) {
        process::kill_group_and_session(leader);
    }
    satyrn_code::Code::Ok.exit_status()
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
    match Pid::from_raw(pid).and_then(process::Stat::of) {
        Some(stat) => stat.session == pid && (stat.ppid == deliver || !deliver_alive),
        None => !deliver_alive,
    }
}
