//! `SIGINT`/`SIGTERM`/`SIGHUP` to `deliver` itself: recorded, never fatal.
//!
//! [`install`] replaces the default (terminating) action with a handler that records the
//! signal and writes one byte to a non-blocking self-pipe, so the command wait loop wakes at
//! once; every other step checks [`received`] between git calls. `deliver` then stops the
//! command's process group, cleans up and prints an `INTERRUPTED` receipt. Handlers are
//! reset to the default by `exec`, so the command and git never inherit them.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, Ordering};

static RECEIVED: AtomicI32 = AtomicI32::new(0);
static WAKE_WRITE: AtomicI32 = AtomicI32::new(-1);
static WAKE_READ: OnceLock<OwnedFd> = OnceLock::new();
static WAKE_WRITE_FD: OnceLock<OwnedFd> = OnceLock::new();

extern "C" fn on_signal(signal: libc::c_int) {
    RECEIVED.store(signal, Ordering::SeqCst);
    let fd = WAKE_WRITE.load(Ordering::SeqCst);
    if fd >= 0 {
        let byte = 1u8;
        // SAFETY: write(2) is async-signal-safe; the buffer is a live local byte. A full
        // pipe (EAGAIN) is fine: a wake-up is already pending.
        unsafe {
            libc::write(fd, (&raw const byte).cast(), 1);
        }
    }
}

/// The signals [`install`] handles: `SIGINT`, `SIGTERM` and `SIGHUP` (a closed terminal
/// or a supervisor's hang-up is an interruption like any other, not a silent death).
pub const HANDLED: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Installs the handlers for [`HANDLED`] (once per process).
///
/// Process-global: replaces those signals' dispositions for the whole process (`exec`
/// resets them to the default for children).
///
/// # Errors
///
/// The operating-system error when the pipe or a handler cannot be set up.
pub fn install() -> io::Result<()> {
    if WAKE_READ.get().is_none() {
        let (read, write) = rustix::pipe::pipe_with(
            rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK,
        )?;
        WAKE_WRITE.store(write.as_raw_fd(), Ordering::SeqCst);
        let _ = WAKE_WRITE_FD.set(write);
        let _ = WAKE_READ.set(read);
    }
    for signal in HANDLED {
        // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value; the handler
        // only touches atomics and write(2), both async-signal-safe.
        let rc = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&raw mut action.sa_mask);
            libc::sigaction(signal, &raw const action, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The signal received since [`install`], if any.
#[must_use]
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// The read end of the self-pipe, once installed: readable after a signal.
#[must_use]
pub fn wake_fd() -> Option<BorrowedFd<'static>> {
    use std::os::fd::AsFd;
    WAKE_READ.get().map(AsFd::as_fd)
}

/// Empties the self-pipe (its bytes only wake; [`received`] is the truth).
pub fn drain() {
    if let Some(fd) = wake_fd() {
        let mut buf = [0u8; 64];
        while matches!(rustix::io::read(fd, &mut buf), Ok(n) if n > 0) {}
    }
}

/// The conventional name of a held termination signal, for messages (`"a signal"` for any
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
