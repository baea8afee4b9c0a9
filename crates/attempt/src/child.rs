//! Waiting for the Pi child while staying stoppable by PID.
//!
//! `attempt` holds `SIGINT`/`SIGTERM`/`SIGHUP` for its whole run (see
//! [`satyrn_os::signals::install`]) so it can always remove its private directory. Holding alone
//! would make it unstoppable: [`wait`] therefore forwards the first signal that arrives to
//! Pi, waits up to [`GRACE`] for Pi to exit, then sends `SIGKILL`. The caller publishes what
//! Pi produced and reports the interruption.

use std::io;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::process::Signal;

use satyrn_os::{process, signals};

/// How long Pi gets to exit after a forwarded signal before `SIGKILL`: 5 s.
pub const GRACE: Duration = Duration::from_secs(5);

/// How Pi ended.
#[derive(Debug, Clone, Copy)]
pub struct Ended {
    /// Pi's exit status (reaped).
    pub status: ExitStatus,
    /// The signal the attempt received and forwarded, if any.
    pub interrupted: Option<i32>,
}

/// Waits for `child` to exit and reaps it. The first held termination signal that reaches
/// the attempt meanwhile is sent to `child` (through a pidfd, so never to a reused PID);
/// when `child` has not exited [`GRACE`] later it is killed.
///
/// # Process-global effects
///
/// None of its own: it reads what [`signals::install`] records (the caller installs it).
///
/// # Errors
///
/// The operating-system error of `pidfd_open`, `poll` or `wait`; `child` is killed and
/// reaped first.
pub fn wait(child: &mut Child) -> io::Result<Ended> {
    match wait_inner(child) {
        Ok(ended) => Ok(ended),
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(e)
        }
    }
}

fn wait_inner(child: &mut Child) -> io::Result<Ended> {
    let pidfd = process::pidfd_of(child)?;
    let mut forwarded: Option<(i32, Instant)> = None;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Ended {
                status,
                interrupted: forwarded.map(|(signal, _)| signal),
            });
        }
        if forwarded.is_none()
            && let Some(raw) = signals::received()
        {
            if let Some(signal) = Signal::from_named_raw(raw) {
                // ESRCH: it exited meanwhile; try_wait reaps it next.
                let _ = rustix::process::pidfd_send_signal(&pidfd, signal);
            }
            forwarded = Some((raw, Instant::now()));
        }
        let mut timeout = Duration::from_millis(500);
        if let Some((_, at)) = forwarded {
            let elapsed = at.elapsed();
            if elapsed >= GRACE {
                let _ = rustix::process::pidfd_send_signal(&pidfd, Signal::KILL);
                return Ok(Ended {
                    status: child.wait()?,
                    interrupted: forwarded.map(|(signal, _)| signal),
                });
            }
            timeout = timeout.min(GRACE - elapsed);
        }
        let timespec = Timespec {
            tv_sec: 0,
            tv_nsec: i64::from(timeout.subsec_nanos()).max(1_000_000),
        };
        let mut fds = vec![PollFd::new(&pidfd, PollFlags::IN)];
        if forwarded.is_none()
            && let Some(wake) = signals::wake_fd()
        {
            fds.push(PollFd::from_borrowed_fd(wake, PollFlags::IN));
        }
        match rustix::event::poll(&mut fds, Some(&timespec)) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
        signals::drain();
    }
}
