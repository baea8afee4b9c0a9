//! Descriptors a process hands to the programs it starts.

/// Marks every descriptor above standard error close-on-exec (`close_range(3, ~0,
/// CLOSE_RANGE_CLOEXEC)`, Linux 5.11), so the program about to be executed inherits only
/// its standard input, output and error: a descriptor the caller opened without
/// close-on-exec (a file of the worktree opened for writing) would otherwise carry its
/// access past any restriction decided by path. One raw system call: safe between `fork`
/// and `exec`.
///
/// # Errors
///
/// The system call's error (`ENOSYS` before Linux 5.11, `EINVAL` before 5.11's flag).
///
/// # Process-global effects
///
/// Changes the close-on-exec flag of the calling process's descriptors.
pub fn close_inherited_on_exec() -> std::io::Result<()> {
    const CLOSE_RANGE_CLOEXEC: u32 = 1 << 2;
    // SAFETY: close_range(2) takes integers only and touches no memory.
    let r = unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, CLOSE_RANGE_CLOEXEC) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
