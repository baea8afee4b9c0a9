//! Real operating-system failures on demand, for the paths no healthy machine takes.
//!
//! [`inject`] installs a seccomp filter in a child between fork and exec: from its `exec`
//! on, the chosen system calls of that child (and of everything it starts) fail with the
//! chosen `errno`, returned by the kernel itself. The code under test sees exactly what a
//! failing disk (`EIO` from `fsync`), an old kernel (`ENOSYS`) or a file system without a
//! feature (`EINVAL` from `renameat2(RENAME_EXCHANGE)`) would give it; nothing in the binary
//! under test knows. Every test that uses it also runs the same request without the filter
//! (its real sibling).

use std::os::unix::process::CommandExt;
use std::process::Command;

/// One system call to fail: `syscall` (a `libc::SYS_*` number) fails with `errno`, and
/// with `flags` set, only when its argument `arg` has one of those bits.
#[derive(Debug, Clone, Copy)]
pub struct Fault {
    pub syscall: libc::c_long,
    pub errno: i32,
    pub when: Option<(usize, u32)>,
}

impl Fault {
    /// Every call of `syscall` fails with `errno`.
    pub fn always(syscall: libc::c_long, errno: i32) -> Self {
        Self {
            syscall,
            errno,
            when: None,
        }
    }

    /// Calls of `syscall` whose argument `arg` (0-based) has a bit of `flags` fail with
    /// `errno` (the low 32 bits of the argument are compared).
    pub fn with_flags(syscall: libc::c_long, arg: usize, flags: u32, errno: i32) -> Self {
        Self {
            syscall,
            errno,
            when: Some((arg, flags)),
        }
    }
}

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
compile_error!("tests/it/faults.rs knows the seccomp architecture of x86_64 and aarch64 only");

const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;
const OFFSET_ARGS: u32 = 16;

fn stmt(code: u32, k: u32) -> libc::sock_filter {
    jump(code, k, 0, 0)
}

fn jump(code: u32, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: u16::try_from(code).expect("a BPF opcode"),
        jt,
        jf,
        k,
    }
}

/// The filter program: calls of another architecture and unlisted calls are allowed.
fn program(faults: &[Fault]) -> Vec<libc::sock_filter> {
    use libc::{BPF_ABS, BPF_JEQ, BPF_JMP, BPF_JSET, BPF_K, BPF_LD, BPF_RET, BPF_W};
    let load = |offset| stmt(BPF_LD | BPF_W | BPF_ABS, offset);
    let errno = |e: i32| {
        stmt(
            BPF_RET | BPF_K,
            libc::SECCOMP_RET_ERRNO | (u32::try_from(e).expect("errno") & libc::SECCOMP_RET_DATA),
        )
    };
    let allow = stmt(BPF_RET | BPF_K, libc::SECCOMP_RET_ALLOW);
    let mut prog = vec![
        load(OFFSET_ARCH),
        jump(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH, 1, 0),
        allow,
        load(OFFSET_NR),
    ];
    for fault in faults {
        let nr = u32::try_from(fault.syscall).expect("a system call number");
        match fault.when {
            None => {
                prog.push(jump(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1));
                prog.push(errno(fault.errno));
            }
            Some((arg, flags)) => {
                let offset = OFFSET_ARGS + 8 * u32::try_from(arg).expect("argument index");
                prog.push(jump(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 4));
                prog.push(load(offset));
                prog.push(jump(BPF_JMP | BPF_JSET | BPF_K, flags, 0, 1));
                prog.push(errno(fault.errno));
                prog.push(load(OFFSET_NR));
            }
        }
    }
    prog.push(allow);
    prog
}

/// The system call `rmdir(2)` makes: `rmdir` on x86_64; aarch64 has only
/// `unlinkat(AT_REMOVEDIR)`.
#[cfg(target_arch = "x86_64")]
pub fn rmdir(errno: i32) -> Fault {
    Fault::always(libc::SYS_rmdir, errno)
}
#[cfg(target_arch = "aarch64")]
pub fn rmdir(errno: i32) -> Fault {
    Fault::with_flags(libc::SYS_unlinkat, 2, 0x200, errno)
}

/// The system call `mkdir(2)` makes: `mkdir` on x86_64, `mkdirat` on aarch64.
#[cfg(target_arch = "x86_64")]
pub fn mkdir(errno: i32) -> Fault {
    Fault::always(libc::SYS_mkdir, errno)
}
#[cfg(target_arch = "aarch64")]
pub fn mkdir(errno: i32) -> Fault {
    Fault::always(libc::SYS_mkdirat, errno)
}

/// Every way a process starts another: `clone3` (refused as on an old kernel, so the C
/// library falls back), `clone` and, where they exist, `fork` and `vfork`.
pub fn no_new_process(errno: i32) -> Vec<Fault> {
    let mut faults = vec![
        Fault::always(libc::SYS_clone3, libc::ENOSYS),
        Fault::always(libc::SYS_clone, errno),
    ];
    #[cfg(target_arch = "x86_64")]
    faults.extend([
        Fault::always(libc::SYS_fork, errno),
        Fault::always(libc::SYS_vfork, errno),
    ]);
    faults
}

/// Makes `cmd`'s process fail the `faults` from its `exec` on (see the module's docs).
pub fn inject(cmd: &mut Command, faults: &[Fault]) {
    let filter = program(faults);
    let len = u16::try_from(filter.len()).expect("a short program");
    // SAFETY: between fork and exec the closure makes only the two prctl(2) calls, on a
    // program built (and so allocated) before the fork and alive for the closure's life.
    unsafe {
        cmd.pre_exec(move || {
            let prog = libc::sock_fprog {
                len,
                filter: filter.as_ptr().cast_mut(),
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    &raw const prog,
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// The filter fails exactly the chosen call: `dd conv=fsync` fails with the injected `EIO`
/// of `fsync`, succeeds when only `fdatasync` is failed, and fails to open its output when
/// opens with `O_TRUNC` fail.
#[test]
fn an_injected_fault_fails_exactly_the_chosen_call() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let dd = |faults: &[Fault]| {
        let mut cmd = Command::new("dd");
        cmd.arg("if=/dev/zero")
            .arg(format!("of={}", out.display()))
            .args(["bs=1k", "count=1", "conv=fsync", "status=none"]);
        inject(&mut cmd, faults);
        cmd.output().expect("run dd")
    };
    let failed = dd(&[Fault::always(libc::SYS_fsync, libc::EIO)]);
    assert!(!failed.status.success());
    let said = String::from_utf8_lossy(&failed.stderr);
    assert!(said.contains("Input/output error"), "{said}");
    let ok = dd(&[Fault::always(libc::SYS_fdatasync, libc::EIO)]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert_eq!(std::fs::read(&out).expect("written").len(), 1024);
    let flagged = dd(&[Fault::with_flags(
        libc::SYS_openat,
        2,
        u32::try_from(libc::O_TRUNC).expect("flag"),
        libc::ENOSPC,
    )]);
    let said = String::from_utf8_lossy(&flagged.stderr);
    assert!(said.contains("No space left"), "{said}");
}

/// Makes `cmd`'s process see, at `at` (an existing directory), a file system of its own
/// that holds at most `bytes`: a `tmpfs` mounted in a private mount namespace, made between
/// fork and exec, so nothing else on the machine sees it and it is gone with the process.
/// Writing past it gives the real `ENOSPC`. Needs `CAP_SYS_ADMIN` (root, as on this
/// project's machines and CI): without it the spawn fails with `EPERM`.
pub fn small_disk(cmd: &mut Command, at: &std::path::Path, bytes: u64) {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let target = CString::new(at.as_os_str().as_bytes()).expect("a path without NUL");
    let options = CString::new(format!("size={bytes},mode=0777")).expect("options");
    // SAFETY: between fork and exec the closure makes only unshare(2) and mount(2) calls, on
    // strings allocated before the fork and alive for the closure's life.
    unsafe {
        cmd.pre_exec(move || {
            let none = c"none".as_ptr();
            let tmpfs = c"tmpfs".as_ptr();
            if libc::unshare(libc::CLONE_NEWNS) != 0
                || libc::mount(
                    none,
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ) != 0
                || libc::mount(tmpfs, target.as_ptr(), tmpfs, 0, options.as_ptr().cast()) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// The small disk is real: `dd` of 64 KiB into a 16 KiB one fails with `ENOSPC`, and 8 KiB
/// fits; outside the process the directory stays empty.
#[test]
fn a_small_disk_fills_up_for_real() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dd = |count: u32| {
        let mut cmd = Command::new("dd");
        cmd.arg("if=/dev/zero")
            .arg(format!("of={}", dir.path().join("f").display()))
            .args(["bs=1k", &format!("count={count}"), "status=none"]);
        small_disk(&mut cmd, dir.path(), 16 * 1024);
        cmd.output().expect("run dd")
    };
    let full = dd(64);
    assert!(!full.status.success());
    let said = String::from_utf8_lossy(&full.stderr);
    assert!(said.contains("No space left on device"), "{said}");
    let fits = dd(8);
    assert!(
        fits.status.success(),
        "{}",
        String::from_utf8_lossy(&fits.stderr)
    );
    assert!(
        std::fs::read_dir(dir.path())
            .expect("read_dir")
            .next()
            .is_none()
    );
}
