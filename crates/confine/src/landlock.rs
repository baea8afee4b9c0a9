//! The ruleset: [`super::rules::Plan`]'s grants, the network rules and the scopes, made a
//! Landlock ruleset (with the `landlock` crate) that the command's process restricts
//! itself to between `fork` and `exec` ([`restrict_in_child`]).
//!
//! Every file-system access the ABI knows is handled, so whatever is not granted is
//! refused: write, truncate, create (file, directory, FIFO, socket, device, symlink),
//! rename and link (`REFER`), unlink, rmdir, execute, read, list, and (ABI 5) `ioctl` on
//! devices. From ABI 4 TCP `bind` is refused, and `connect` too unless to an allowed port
//! (`--allow-connect`; without any, `connect` is not handled). From ABI 6 the command
//! cannot signal a process outside its domain nor connect to an abstract Unix socket made
//! outside it.

use std::os::fd::OwnedFd;
use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath,
    Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
};

use super::rules::{Grant, Kind, Plan};

/// What the ruleset enforces, as printed at start and recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enforced {
    /// The ABI the ruleset was built for (the kernel's, at most the crate's newest).
    pub abi: i32,
    /// How many path rules.
    pub rules: usize,
    /// TCP `bind` refused (ABI 4).
    pub bind_refused: bool,
    /// `Some(ports)`: TCP `connect` allowed only to these (ABI 4); `None`: not restricted.
    pub connect_ports: Option<Vec<u16>>,
    /// Signals and abstract Unix sockets scoped to the domain (ABI 6).
    pub scoped: bool,
}

/// Why the ruleset could not be built.
#[derive(Debug, thiserror::Error)]
pub enum RulesetError {
    /// The `landlock` crate refused a step.
    #[error("cannot build the Landlock ruleset: {0}")]
    Landlock(#[from] landlock::RulesetError),
    /// A granted path could not be opened.
    #[error("cannot open {path} for its Landlock rule: {source}")]
    Open {
        /// The path.
        path: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The crate built no kernel ruleset (it cannot, under `HardRequirement`, on a kernel
    /// that passed [`super::abi::probe`]).
    #[error("the Landlock ruleset has no descriptor")]
    NoDescriptor,
    /// `--allow-connect` needs ABI 4.
    #[error("--allow-connect needs Landlock ABI 4 (TCP rules); this kernel has ABI {0}")]
    NoNetwork(i32),
}

/// Builds the ruleset for `abi` (the kernel's, at least [`super::abi::MIN_ABI`]) and returns
/// its descriptor (close-on-exec) and what it enforces. No process is restricted yet.
///
/// # Errors
///
/// [`RulesetError`] when a rule cannot be added or a granted path opened.
pub fn build(
    abi: i32,
    plan: &Plan,
    connect_ports: &[u16],
) -> Result<(OwnedFd, Enforced), RulesetError> {
    let known = ABI::from(abi.min(7));
    let all = AccessFs::from_all(known);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(all)?;
    let net = abi >= 4;
    if !net && !connect_ports.is_empty() {
        return Err(RulesetError::NoNetwork(abi));
    }
    if net {
        ruleset = ruleset.handle_access(AccessNet::BindTcp)?;
        if !connect_ports.is_empty() {
            ruleset = ruleset.handle_access(AccessNet::ConnectTcp)?;
        }
    }
    let scoped = abi >= 6;
    if scoped {
        ruleset = ruleset.scope(Scope::Signal | Scope::AbstractUnixSocket)?;
    }
    let mut created = ruleset.create()?;
    let mut opener = Opener::default();
    let read = AccessFs::from_read(known);
    let file = AccessFs::from_file(known);
    for (path, grant, kind) in &plan.grants {
        let mut access: BitFlags<AccessFs> = match grant {
            Grant::Read => read,
            Grant::List => AccessFs::ReadDir.into(),
            Grant::Write => all,
            Grant::Device => file & !AccessFs::Execute,
        };
        if *kind == Kind::File {
            access &= file;
        }
        if matches!(grant, Grant::Device) && *kind == Kind::Dir {
            access |= AccessFs::ReadDir;
        }
        let fd = match opener.open(path) {
            Ok(fd) => fd,
            // Gone since the plan was made (another process's temporary file): nothing to
            // grant. A write grant is the run's own, and must be there.
            Err(RulesetError::Open { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound && *grant != Grant::Write =>
            {
                continue;
            }
            Err(e) => return Err(e),
        };
        created = created.add_rule(PathBeneath::new(fd, access))?;
    }
    let mut ports: Vec<u16> = connect_ports.to_vec();
    ports.sort_unstable();
    ports.dedup();
    for port in &ports {
        created = created.add_rule(NetPort::new(*port, AccessNet::ConnectTcp))?;
    }
    let fd: Option<OwnedFd> = created.into();
    let fd = fd.ok_or(RulesetError::NoDescriptor)?;
    Ok((
        fd,
        Enforced {
            abi: known as i32,
            rules: plan.grants.len(),
            bind_refused: net,
            connect_ports: (!ports.is_empty()).then_some(ports),
            scoped,
        },
    ))
}

/// Opens granted paths `O_PATH | O_NOFOLLOW` (the rule names the path's own inode, never
/// a symlink's target), each relative to its parent directory, which stays open while the
/// grants of one directory follow each other (as the plan lists them): a split directory
/// of thousands of files is one path lookup, then one name each.
#[derive(Default)]
struct Opener {
    parent: Option<(std::path::PathBuf, OwnedFd)>,
}

impl Opener {
    fn open(&mut self, path: &Path) -> Result<OwnedFd, RulesetError> {
        let flags =
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::CLOEXEC;
        let failed = |e: rustix::io::Errno| RulesetError::Open {
            path: path.display().to_string(),
            source: e.into(),
        };
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return rustix::fs::open(path, flags, rustix::fs::Mode::empty()).map_err(failed);
        };
        if self.parent.as_ref().is_none_or(|(p, _)| p != parent) {
            self.parent = None;
            let dir = rustix::fs::open(
                parent,
                rustix::fs::OFlags::PATH
                    | rustix::fs::OFlags::DIRECTORY
                    | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )
            .map_err(failed)?;
            self.parent = Some((parent.to_path_buf(), dir));
        }
        let Some((_, dir)) = &self.parent else {
            return rustix::fs::open(path, flags, rustix::fs::Mode::empty()).map_err(failed);
        };
        rustix::fs::openat(dir, name, flags, rustix::fs::Mode::empty()).map_err(failed)
    }
}

/// Restricts the calling process to the ruleset `fd`: every capability dropped
/// ([`drop_capabilities`]), `no_new_privs`, then `landlock_restrict_self`. Only raw system calls, so it is safe between `fork` and
/// `exec` of a multi-threaded process.
///
/// # Errors
///
/// The system call's error.
///
/// # Process-global effects
///
/// The calling thread (and every process it starts) is confined for good.
pub fn restrict_in_child(fd: i32) -> std::io::Result<()> {
    drop_capabilities()?;
    rustix::thread::set_no_new_privs(true)?;
    // SAFETY: a ruleset descriptor and no flags; the kernel reads no memory of ours.
    let r = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Drops every capability for good: the bounding set (so an `exec` as root regains
/// none), the ambient set, and the effective, permitted and inheritable sets. A command
/// run as root keeps its uid but can no longer `chattr +i` (`CAP_LINUX_IMMUTABLE`), change
/// the network (`CAP_NET_ADMIN`), the host name or mounts (`CAP_SYS_ADMIN`), or read past
/// file modes (`CAP_DAC_OVERRIDE`). Only raw system calls: safe between `fork` and `exec`.
///
/// # Errors
///
/// The error of `capset`. (Dropping the bounding set stops at the first refusal: `EINVAL`
/// past the kernel's last capability, or `EPERM` without `CAP_SETPCAP`, when there is
/// nothing in it this process could regain.)
fn drop_capabilities() -> std::io::Result<()> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    for cap in 0..64 {
        // SAFETY: prctl(2) with integer arguments only.
        let r = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) };
        if r != 0 {
            // EINVAL: past the last capability this kernel knows; EPERM: no CAP_SETPCAP.
            break;
        }
    }
    // SAFETY: prctl(2) with integer arguments only.
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
    }
    let mut header = Header {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capset(2) reads the header and two data records, all on this stack frame.
    let r = unsafe { libc::syscall(libc::SYS_capset, &raw mut header, data.as_ptr()) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
