//! Signal dispositions, in the two ways satyrn takes over termination signals:
//!
//! - **Interruptions** ([`install`]): `SIGINT`, `SIGTERM` and `SIGHUP` recorded for the rest
//!   of the process, never fatal, each arrival also waking a self-pipe ([`wake_fd`]) so a
//!   poll loop notices at once. `deliver` and `attempt` use them to stop their child and
//!   clean up before reporting.
//! - **Holds** ([`HeldSignals`]): the termination signals recorded only for a critical
//!   section (a publish), then the previous dispositions restored and every recorded
//!   signal raised again.
//!
//! Handlers are reset to the default by `exec`, so children never inherit them (an
//! *ignored* disposition does survive `exec`: see [`HeldSignals`] and [`ignore`]).
//! rustix has no safe `sigaction`; the two `unsafe` blocks of this module are the only
//! calls of it (`replace` and `restore`).

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use rustix::process::Signal;

/// The signals [`install`] handles: `SIGINT`, `SIGTERM` and `SIGHUP` (a closed terminal
/// or a supervisor's hang-up is an interruption like any other, not a silent death).
pub const HANDLED: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The termination signals a [`HeldSignals`] holds: [`HANDLED`] and `SIGQUIT`.
const HELD: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// The last interruption received, 0 for none.
static RECEIVED: AtomicI32 = AtomicI32::new(0);
/// The self-pipe: written by the handler, read by the poll loops.
static WAKE: OnceLock<(OwnedFd, OwnedFd)> = OnceLock::new();

extern "C" fn on_interruption(signal: libc::c_int) {
    RECEIVED.store(signal, Ordering::SeqCst);
    // `OnceLock::get` is one atomic load once the pipe is set (the handler is installed
    // only after), and write(2) is async-signal-safe. A full pipe (EAGAIN) is fine: a
    // wake-up is already pending.
    if let Some((_, write)) = WAKE.get() {
        let _ = rustix::io::write(write, &[1]);
    }
}

/// Installs the interruption handlers for [`HANDLED`]: from now on each arrival is
/// recorded ([`received`], the last one wins) and wakes [`wake_fd`]. Calling it again
/// installs them again (harmless).
///
/// # Process-global effects
///
/// Replaces the dispositions of `SIGINT`, `SIGTERM` and `SIGHUP` for the whole process,
/// for good: those signals no longer terminate it (its children get the default back at
/// `exec`). Creates one close-on-exec, non-blocking pipe that lives as long as the process.
///
/// # Errors
///
/// The operating-system error when the pipe or a handler cannot be set up.
pub fn install() -> io::Result<()> {
    if WAKE.get().is_none() {
        let pipe = rustix::pipe::pipe_with(
            rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK,
        )?;
        let _ = WAKE.set(pipe);
    }
    for signal in HANDLED {
        replace(signal, handler(on_interruption))?;
    }
    Ok(())
}

/// The interruption received since [`install`], if any.
#[must_use]
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// The read end of the self-pipe, once [`install`]ed: readable after an interruption.
#[must_use]
pub fn wake_fd() -> Option<BorrowedFd<'static>> {
    WAKE.get().map(|(read, _)| read.as_fd())
}

/// The last interruption received since the previous call, cleared: for a process that
/// passes each one on (`confine`) rather than stopping at the first. `None` when none came.
#[must_use]
pub fn take() -> Option<i32> {
    match RECEIVED.swap(0, Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Empties the self-pipe (its bytes only wake; [`received`] is the truth).
pub fn drain() {
    if let Some(fd) = wake_fd() {
        let mut buf = [0u8; 64];
        while matches!(rustix::io::read(fd, &mut buf), Ok(n) if n > 0) {}
    }
}

/// The conventional name of an interruption signal, for messages (`"a signal"` for any
/// other number).
#[must_use]
pub fn name(signal: i32) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// Ignores `signals` for the rest of the process. Best effort: a signal whose disposition
/// cannot be changed keeps its own.
///
/// # Process-global effects
///
/// Sets the dispositions of `signals` to "ignore" for the whole process; unlike a handler,
/// that survives `exec`, so every child started afterwards ignores them too.
pub fn ignore(signals: &[libc::c_int]) {
    for &signal in signals {
        let _ = replace(signal, libc::SIG_IGN);
    }
}

/// The held signals that arrived, one bit per signal number.
static ARRIVED: AtomicU64 = AtomicU64::new(0);

/// One hold at a time in a process: the dispositions are process-wide, so two threads
/// holding at once must not save and restore each other's handlers.
static HOLD: Mutex<()> = Mutex::new(());

extern "C" fn record_arrival(signal: libc::c_int) {
    if let Ok(bit) = u32::try_from(signal) {
        ARRIVED.fetch_or(1u64 << (bit % 64), Ordering::SeqCst);
    }
}

/// Termination signals held, and `SIGXFSZ` ignored, for the whole process until dropped.
///
/// While held, the disposition of `SIGINT`, `SIGTERM`, `SIGHUP` and `SIGQUIT` is a handler
/// that records every arrival (a signal mask would not do: it is per thread, and a
/// process-directed signal goes to any thread not blocking it). On drop the previous
/// dispositions come back and every recorded signal is sent again to the process, so it
/// ends as it would have (or ignores what it ignored, or runs the handler it had), only
/// after the critical section is complete.
///
/// `SIGXFSZ` is *ignored* meanwhile (not recorded, so never sent again): a write past
/// `RLIMIT_FSIZE` then fails with `EFBIG`, which the caller can report, instead of the
/// signal killing the process half way.
///
/// # Process-global effects
///
/// Replaces five signal dispositions of the whole process for the life of the value (one
/// hold at a time: a second [`HeldSignals::hold`] waits for the first to drop). Another
/// thread that starts a child during the hold hands it the ignored `SIGXFSZ` (an ignored
/// disposition survives `exec`). On drop, sends each recorded signal to this process.
#[derive(Debug)]
pub struct HeldSignals {
    previous: Vec<Saved>,
    _one_at_a_time: MutexGuard<'static, ()>,
}

impl HeldSignals {
    /// Starts holding (see [`HeldSignals`]). A disposition that cannot be changed is left as
    /// it is (and not restored).
    #[must_use]
    pub fn hold() -> Self {
        let guard = HOLD
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        ARRIVED.store(0, Ordering::SeqCst);
        let record = handler(record_arrival);
        let previous = HELD
            .iter()
            .map(|s| (*s, record))
            .chain([(libc::SIGXFSZ, libc::SIG_IGN)])
            .filter_map(|(signal, action)| replace(signal, action).ok())
            .collect();
        Self {
            previous,
            _one_at_a_time: guard,
        }
    }
}

impl Drop for HeldSignals {
    fn drop(&mut self) {
        for saved in &self.previous {
            restore(saved);
        }
        let arrived = ARRIVED.swap(0, Ordering::SeqCst);
        let me = rustix::process::getpid();
        for signal in HELD {
            let held = u32::try_from(signal).is_ok_and(|bit| arrived & (1u64 << (bit % 64)) != 0);
            if held && let Some(signal) = Signal::from_named_raw(signal) {
                let _ = rustix::process::kill_process(me, signal);
            }
        }
    }
}

/// A signal's previous disposition, as [`replace`] saved it.
struct Saved {
    signal: libc::c_int,
    action: libc::sigaction,
}

impl std::fmt::Debug for Saved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Saved")
            .field("signal", &self.signal)
            .finish()
    }
}

fn handler(f: extern "C" fn(libc::c_int)) -> libc::sighandler_t {
    f as libc::sighandler_t
}

/// Sets `signal`'s disposition to `action` (a handler, `SIG_IGN` or `SIG_DFL`) with
/// `SA_RESTART` and an empty mask; returns the previous one.
fn replace(signal: libc::c_int, action: libc::sighandler_t) -> io::Result<Saved> {
    // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value, and both
    // structures are live locals. `action` is SIG_IGN, SIG_DFL or one of this module's
    // handlers, which touch only atomics and write(2), all async-signal-safe.
    let (rc, old) = unsafe {
        let mut new: libc::sigaction = std::mem::zeroed();
        new.sa_sigaction = action;
        new.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&raw mut new.sa_mask);
        let mut old: libc::sigaction = std::mem::zeroed();
        (libc::sigaction(signal, &raw const new, &raw mut old), old)
    };
    if rc == 0 {
        Ok(Saved {
            signal,
            action: old,
        })
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Puts back the disposition [`replace`] saved.
fn restore(saved: &Saved) {
    // SAFETY: `saved.action` is the disposition sigaction(2) itself returned.
    unsafe {
        libc::sigaction(saved.signal, &raw const saved.action, std::ptr::null_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// Polls `cond` up to 10 s.
    fn eventually(cond: impl Fn() -> bool) -> bool {
        let end = Instant::now() + Duration::from_secs(10);
        while !cond() {
            if Instant::now() >= end {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }

    #[test]
    fn a_signal_held_during_a_hold_is_recorded_then_sent_again_after_it() {
        // Process-global for this test binary: SIGHUP is recorded instead of fatal.
        install().expect("install");
        let me = rustix::process::getpid();
        let bit = 1u64 << libc::SIGHUP;
        {
            let _held = HeldSignals::hold();
            rustix::process::kill_process(me, Signal::HUP).expect("kill");
            assert!(eventually(|| ARRIVED.load(Ordering::SeqCst) & bit != 0));
            assert_ne!(received(), Some(libc::SIGHUP), "held, not yet handled");
        }
        assert!(
            eventually(|| received() == Some(libc::SIGHUP)),
            "sent again to the restored handler after the hold"
        );
        assert_eq!(name(libc::SIGHUP), "SIGHUP");
        assert!(wake_fd().is_some());
        drain();
    }
}
