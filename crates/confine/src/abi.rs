//! The running kernel's Landlock ABI, asked for directly.
//!
//! `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)` returns the highest
//! ABI the kernel implements, or fails with `EOPNOTSUPP` (built in, disabled at boot) or
//! `ENOSYS` (not built in, or a seccomp filter that refuses it). `confine` needs
//! [`MIN_ABI`] and refuses to run anything below it.

use std::fmt;

/// The least ABI `confine` runs on: 3, the first to cover `truncate`.
pub const MIN_ABI: i32 = 3;

/// What the kernel said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// Landlock is implemented and enabled, at this ABI.
    Available(i32),
    /// Built in but not enabled (`EOPNOTSUPP`: `lsm=` at boot leaves it out).
    NotEnabled,
    /// Not implemented (`ENOSYS`), or refused by a seccomp filter the same way.
    NotImplemented,
}

impl fmt::Display for Probe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Available(abi) => write!(f, "Landlock ABI {abi}"),
            Self::NotEnabled => f.write_str("Landlock is built into this kernel but not enabled (EOPNOTSUPP; add `landlock` to the `lsm=` boot parameter)"),
            Self::NotImplemented => f.write_str("this kernel has no Landlock (landlock_create_ruleset: ENOSYS)"),
        }
    }
}

/// Asks the running kernel. No process-global effect.
#[must_use]
pub fn probe() -> Probe {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the documented version query: a null attribute, size 0 and the version flag;
    // the kernel reads and writes no memory of ours.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if v >= 0 {
        return Probe::Available(i32::try_from(v).unwrap_or(i32::MAX));
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::EOPNOTSUPP) => Probe::NotEnabled,
        _ => Probe::NotImplemented,
    }
}
