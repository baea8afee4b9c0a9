//! The signal dispositions a publish changes while its temporary exists.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// The termination signals a publish holds.
const HELD: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// The held signals that arrived, one bit per signal number.
static ARRIVED: AtomicU64 = AtomicU64::new(0);

/// One hold at a time in a process: the dispositions are process-wide, so two threads
/// publishing at once must not save and restore each other's handlers.
static HOLD: Mutex<()> = Mutex::new(());

extern "C" fn record_arrival(signal: libc::c_int) {
    if let Ok(bit) = u32::try_from(signal) {
        ARRIVED.fetch_or(1u64 << (bit % 64), Ordering::SeqCst);
    }
}

/// Termination signals held, and `SIGXFSZ` ignored, for the whole process until dropped.
///
/// While held, the disposition of `SIGINT`, `SIGTERM`, `SIGHUP` and `SIGQUIT` is a handler
/// that only records arrivals (a signal mask would not do: it is per thread, and a
/// process-directed signal goes to any thread not blocking it). On drop the previous
/// dispositions come back and every recorded signal is raised again, so the process ends
/// as it would have (or ignores what it ignored), only after the publish is complete.
///
/// `SIGXFSZ` is *ignored* meanwhile (not recorded, so never raised again): a write past
/// `RLIMIT_FSIZE` then fails with `EFBIG`, which the publish reports as a failure with the
/// target unchanged, instead of the signal killing the process with its temporary on
/// disk. Process-global effect: another thread that starts a child during the hold hands
/// it the ignored `SIGXFSZ` (an ignored disposition survives `exec`).
pub(super) struct HeldSignals {
    previous: Vec<(libc::c_int, libc::sigaction)>,
    _one_at_a_time: MutexGuard<'static, ()>,
}

impl HeldSignals {
    pub(super) fn hold() -> Self {
        let guard = HOLD
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        ARRIVED.store(0, Ordering::SeqCst);
        let mut previous = Vec::with_capacity(HELD.len() + 1);
        let record = record_arrival as extern "C" fn(libc::c_int) as libc::sighandler_t;
        for (signal, handler) in HELD
            .iter()
            .map(|s| (*s, record))
            .chain([(libc::SIGXFSZ, libc::SIG_IGN)])
        {
            // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value; the
            // handler only updates an atomic, which is async-signal-safe (or is SIG_IGN).
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = handler;
                action.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&raw mut action.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, &raw const action, &raw mut old) == 0 {
                    previous.push((signal, old));
                }
            }
        }
        Self {
            previous,
            _one_at_a_time: guard,
        }
    }
}

impl Drop for HeldSignals {
    fn drop(&mut self) {
        for (signal, old) in &self.previous {
            // SAFETY: restores the disposition saved by `hold`.
            unsafe {
                libc::sigaction(*signal, old, std::ptr::null_mut());
            }
        }
        let arrived = ARRIVED.swap(0, Ordering::SeqCst);
        for signal in HELD {
            if u32::try_from(signal).is_ok_and(|bit| arrived & (1u64 << (bit % 64)) != 0) {
                // SAFETY: raise(3) with a signal number we held.
                unsafe {
                    libc::raise(signal);
                }
            }
        }
    }
}
