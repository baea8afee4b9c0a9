//! The one system call Landlock cannot see that would let a confined command act outside
//! its run: `ioctl(TIOCSTI)` (and the console's `TIOCLINUX`), which pushes bytes into a
//! terminal's input queue. On a kernel where `dev.tty.legacy_tiocsti` is 1 (the upstream
//! default), a process may do it on its own controlling terminal without any capability:
//! the bytes are then read and run by the caller's shell after `confine` exits,
//! unconfined. Landlock's device-`ioctl` right cannot tell one request from another, and
//! the terminal must stay usable (an interactive agent draws on it), so a seccomp filter
//! refuses exactly these two requests with `EPERM`; every other system call and every
//! other `ioctl` is allowed.
//!
//! The filter is classic BPF over `struct seccomp_data`, checked against the architecture
//! the call was made in: the native one, and the 32-bit one a 64-bit process can still
//! enter (`int 0x80` on x86-64, AArch32 on AArch64), each with its own `ioctl` number.
//! Only the low 32 bits of the request are compared, as the kernel's `ioctl` reads them.

/// `EPERM`: what the refused `ioctl` returns.
const EPERM: u32 = 1;
const TIOCSTI: u32 = 0x5412;
const TIOCLINUX: u32 = 0x541C;

/// `BPF_LD | BPF_W | BPF_ABS` (0x00 | 0x00 | 0x20).
const BPF_LD_W_ABS: u16 = 0x20;
/// `BPF_JMP | BPF_JEQ | BPF_K` (0x05 | 0x10 | 0x00).
const BPF_JEQ_K: u16 = 0x15;
/// `BPF_RET | BPF_K`.
const BPF_RET_K: u16 = 0x06;
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;

/// `struct seccomp_data`: `nr` at 0, `arch` at 4, `args[1]`'s low half at 24 (little-endian).
const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;
const OFFSET_ARG1_LOW: u32 = 24;

#[cfg(target_arch = "x86_64")]
mod arch {
    pub const NATIVE: u32 = 0xC000_003E; // AUDIT_ARCH_X86_64
    pub const NATIVE_IOCTL: u32 = 16;
    /// The x32 ABI's `ioctl` (`__X32_SYSCALL_BIT | 514`), reported with the native arch.
    pub const NATIVE_IOCTL_ALT: u32 = 0x4000_0000 | 514;
    pub const COMPAT: u32 = 0x4000_0003; // AUDIT_ARCH_I386
    pub const COMPAT_IOCTL: u32 = 54;
}

#[cfg(target_arch = "aarch64")]
mod arch {
    pub const NATIVE: u32 = 0xC000_00B7; // AUDIT_ARCH_AARCH64
    pub const NATIVE_IOCTL: u32 = 29;
    /// AArch64 has one `ioctl` number; the same again keeps one program shape.
    pub const NATIVE_IOCTL_ALT: u32 = 29;
    pub const COMPAT: u32 = 0x4000_0028; // AUDIT_ARCH_ARM
    pub const COMPAT_IOCTL: u32 = 54;
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct SockFilter {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

#[repr(C)]
struct SockFprog {
    len: u16,
    filter: *const SockFilter,
}

const fn stmt(code: u16, k: u32) -> SockFilter {
    SockFilter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

const fn jump(k: u32, jt: u8, jf: u8) -> SockFilter {
    SockFilter {
        code: BPF_JEQ_K,
        jt,
        jf,
        k,
    }
}

/// The program; each jump counts the instructions it skips.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
static FILTER: [SockFilter; 13] = [
    /* 0 */ stmt(BPF_LD_W_ABS, OFFSET_ARCH),
    /* 1 */ jump(arch::NATIVE, 0, 4), // native: 2; else 6
    /* 2 */ stmt(BPF_LD_W_ABS, OFFSET_NR),
    /* 3 */ jump(arch::NATIVE_IOCTL, 5, 0), // ioctl: 9
    /* 4 */ jump(arch::NATIVE_IOCTL_ALT, 4, 0), // ioctl: 9
    /* 5 */ stmt(BPF_RET_K, SECCOMP_RET_ALLOW),
    /* 6 */ jump(arch::COMPAT, 0, 5), // compat: 7; else 12 (allow)
    /* 7 */ stmt(BPF_LD_W_ABS, OFFSET_NR),
    /* 8 */ jump(arch::COMPAT_IOCTL, 0, 3), // ioctl: 9; else 12 (allow)
    /* 9 */ stmt(BPF_LD_W_ABS, OFFSET_ARG1_LOW),
    /* 10 */ jump(TIOCSTI, 2, 0), // refused: 13
    /* 11 */ jump(TIOCLINUX, 1, 0), // refused: 13
    /* 12 */ stmt(BPF_RET_K, SECCOMP_RET_ALLOW),
];

/// The refusal, after the program (a jump of `k` from instruction `i` lands at `i + 1 + k`).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
static REFUSE: SockFilter = stmt(BPF_RET_K, SECCOMP_RET_ERRNO | EPERM);

/// The program and its refusal, contiguous.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
static PROGRAM: [SockFilter; 14] = {
    let mut all = [REFUSE; 14];
    let mut i = 0;
    while i < FILTER.len() {
        all[i] = FILTER[i];
        i += 1;
    }
    all
};

/// Whether this build can refuse terminal injection (x86-64 and AArch64).
pub const SUPPORTED: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

/// Installs the filter on the calling thread (and everything it starts): `TIOCSTI` and
/// `TIOCLINUX` fail with `EPERM`. Needs `no_new_privs` set first. Only one raw system call,
/// so it is safe between `fork` and `exec`.
///
/// # Errors
///
/// The error of `seccomp(2)`; `Unsupported` on an architecture without a program.
///
/// # Process-global effects
///
/// The filter stays for the life of the calling thread and of every process it starts.
pub fn refuse_terminal_injection() -> std::io::Result<()> {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    {
        const SECCOMP_SET_MODE_FILTER: u32 = 1;
        let prog = SockFprog {
            len: PROGRAM.len() as u16,
            filter: PROGRAM.as_ptr(),
        };
        // SAFETY: seccomp(2) reads `prog` and the static program it points to; both outlive
        // the call.
        let r = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                SECCOMP_SET_MODE_FILTER,
                0u32,
                &raw const prog,
            )
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "no seccomp program for this architecture",
        ))
    }
}

#[cfg(all(test, any(target_arch = "x86_64", target_arch = "aarch64")))]
mod tests {
    use super::*;

    /// Follows the program as the kernel would, for one call.
    fn run(arch: u32, nr: u32, request: u32) -> u32 {
        let mut pc = 0usize;
        let mut acc = 0u32;
        loop {
            let i = PROGRAM[pc];
            match i.code {
                BPF_LD_W_ABS => {
                    acc = match i.k {
                        OFFSET_ARCH => arch,
                        OFFSET_NR => nr,
                        OFFSET_ARG1_LOW => request,
                        other => panic!("load of offset {other}"),
                    };
                    pc += 1;
                }
                BPF_JEQ_K => {
                    pc += 1 + usize::from(if acc == i.k { i.jt } else { i.jf });
                }
                BPF_RET_K => return i.k,
                other => panic!("opcode {other}"),
            }
        }
    }

    #[test]
    fn only_terminal_injection_is_refused_in_every_architecture_a_process_can_enter() {
        let refused = SECCOMP_RET_ERRNO | EPERM;
        for (a, ioctl) in [
            (arch::NATIVE, arch::NATIVE_IOCTL),
            (arch::NATIVE, arch::NATIVE_IOCTL_ALT),
            (arch::COMPAT, arch::COMPAT_IOCTL),
        ] {
            assert_eq!(run(a, ioctl, TIOCSTI), refused);
            assert_eq!(run(a, ioctl, TIOCLINUX), refused);
            assert_eq!(run(a, ioctl, 0x5413), SECCOMP_RET_ALLOW, "TIOCGWINSZ");
            assert_eq!(run(a, ioctl + 1, TIOCSTI), SECCOMP_RET_ALLOW, "not ioctl");
        }
        assert_eq!(run(0x1234, arch::NATIVE_IOCTL, TIOCSTI), SECCOMP_RET_ALLOW);
    }
}
