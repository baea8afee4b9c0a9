//! Private temporary directories that name the process that made them, and the test of
//! whether that process is provably gone — so a directory a killed process left behind can
//! be removed by the next one, and a live process's never is.
//!
//! A directory of a [`Kind`] is named `<prefix><pid>-<n>-<9 digits>` and holds an owner
//! marker, [`OWNER_FILE`]: the kind's first line, then the creating process's pid, its
//! start time (clock ticks after boot, from `/proc/self/stat`), the boot id and the pid
//! namespace. [`stale`] calls one abandoned only when **all** of these hold: the name has
//! exactly that shape; the directory is a real directory (not a symlink) owned by the
//! current user with mode `0700`; it holds a regular-file marker of its kind whose pid is
//! the one in the name; the marker is at least the kind's `min_age` old (so what the
//! owner's own children may still be finishing is left to them); and that owner is provably gone — the
//! marker names another boot and was written before this one began, or, in the same pid
//! namespace, no process has that pid (`/proc` has no entry and `kill(pid, 0)` says
//! `ESRCH`) or the process with that pid started at another time. A marker from another
//! pid namespace proves nothing, and neither does anything while this process's `/proc` is
//! not of its own pid namespace (then no marker is written either).

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The marker's file name inside an owned directory.
pub const OWNER_FILE: &str = "owner";

/// The name a marker is moved to when [`forget`] cannot remove it.
const FORGOTTEN_FILE: &str = "owner.retained";

/// What an owned directory is for: its name prefix and the first line of its marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    /// The directory name's prefix, e.g. `satyrn-deliver-`.
    pub prefix: &'static str,
    /// The marker's first line, e.g. `satyrn-deliver-owner 1`.
    pub magic: &'static str,
    /// How old a marker must be before its directory can be called abandoned.
    pub min_age: std::time::Duration,
    /// The subcommand that makes such directories, for what is said on stderr.
    pub command: &'static str,
}

/// A `deliver`'s attempt directory (its worktree's parent). No minimum age: a killed
/// `deliver`'s command dies with it (its parent-death signal and watchdog).
pub const DELIVER: Kind = Kind {
    prefix: "satyrn-deliver-",
    magic: "satyrn-deliver-owner 1",
    min_age: std::time::Duration::ZERO,
    command: "deliver",
};

/// An `attempt`'s private directory (frozen contract, prompt, context, transcript spool):
/// 60 s at least, as Pi and what it started may still be finishing after the attempt died.
pub const ATTEMPT: Kind = Kind {
    prefix: "satyrn-attempt-",
    magic: "satyrn-attempt-owner 1",
    min_age: std::time::Duration::from_secs(60),
    command: "attempt",
};

/// A `confine` run's directory (its scratch home and temporary directory, the broker's
/// socket): 60 s at least, as the confined command's descendants may outlive a killed
/// `confine` for a moment.
pub const CONFINE: Kind = Kind {
    prefix: "satyrn-confine-",
    magic: "satyrn-confine-owner 1",
    min_age: std::time::Duration::from_secs(60),
    command: "confine",
};

/// Who created a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Owner {
    pid: u32,
    start: u64,
    boot: String,
    pidns: String,
}

impl Owner {
    fn current() -> io::Result<Self> {
        if !proc_is_ours() {
            return Err(io::Error::other(
                "/proc is not of this process's pid namespace",
            ));
        }
        let pid = std::process::id();
        Ok(Self {
            pid,
            start: start_time(pid)?.ok_or_else(|| io::Error::other("no /proc/self/stat"))?,
            boot: boot_id()?,
            pidns: pid_namespace()?,
        })
    }

    fn render(&self, kind: Kind) -> String {
        format!(
            "{}\npid {}\nstart {}\nboot {}\npidns {}\n",
            kind.magic, self.pid, self.start, self.boot, self.pidns
        )
    }

    fn parse(text: &str, kind: Kind) -> Option<Self> {
        let mut lines = text.lines();
        if lines.next()? != kind.magic {
            return None;
        }
        let mut field = |name: &str| {
            lines
                .next()?
                .strip_prefix(name)?
                .strip_prefix(' ')
                .map(str::to_owned)
        };
        let pid = field("pid")?.parse().ok()?;
        let start = field("start")?.parse().ok()?;
        let boot = field("boot")?;
        let pidns = field("pidns")?;
        Some(Self {
            pid,
            start,
            boot,
            pidns,
        })
    }

    /// `Some(why)` when this owner, whose marker was last modified at `written`, is
    /// provably gone.
    fn gone(&self, written: std::time::SystemTime) -> io::Result<Option<String>> {
        if !proc_is_ours() {
            return Ok(None);
        }
        if self.boot != boot_id()? {
            // Another kernel may share this directory (a network or shared file system):
            // only a marker older than this boot is proof.
            return Ok((written < boot_time()?).then(|| "it ran before the last boot".to_owned()));
        }
        if self.pidns != pid_namespace()? {
            return Ok(None);
        }
        Ok(match start_time(self.pid)? {
            None if no_such_process(self.pid) => {
                Some(format!("process {} no longer exists", self.pid))
            }
            None => None,
            Some(t) if t != self.start => Some(format!(
                "process {} is another process now (started at tick {t}, not {})",
                self.pid, self.start
            )),
            Some(_) => None,
        })
    }
}

/// The start time of `pid` in clock ticks after boot, `None` when no such process exists.
///
/// # Errors
///
/// `/proc/PID/stat` cannot be read for another reason, or is malformed.
pub fn start_time(pid: u32) -> io::Result<Option<u64>> {
    let Ok(raw) = i32::try_from(pid) else {
        return Ok(None);
    };
    match crate::process::Stat::read(raw)? {
        None => Ok(None),
        Some(stat) => stat
            .start
            .map(Some)
            .ok_or_else(|| io::Error::other("malformed /proc stat")),
    }
}

/// Whether `/proc` is of this process's pid namespace (`/proc/self` names our own pid); a
/// `/proc` left from a parent namespace would answer for other processes.
fn proc_is_ours() -> bool {
    std::fs::read_link("/proc/self")
        .ok()
        .and_then(|l| l.to_str()?.parse::<u32>().ok())
        == Some(std::process::id())
}

/// `kill(pid, 0)` fails with `ESRCH`: no process has `pid` (one hidden from `/proc`, by
/// `hidepid`, still answers).
fn no_such_process(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    rustix::process::test_kill_process(pid) == Err(rustix::io::Errno::SRCH)
}

/// When this boot began (`btime` in `/proc/stat`).
fn boot_time() -> io::Result<std::time::SystemTime> {
    let stat = std::fs::read_to_string("/proc/stat")?;
    let seconds: u64 = stat
        .lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| io::Error::other("no btime in /proc/stat"))?;
    Ok(std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds))
}

fn boot_id() -> io::Result<String> {
    Ok(std::fs::read_to_string("/proc/sys/kernel/random/boot_id")?
        .trim()
        .to_owned())
}

fn pid_namespace() -> io::Result<String> {
    Ok(std::fs::read_link("/proc/self/ns/pid")?
        .to_string_lossy()
        .into_owned())
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Creates a fresh directory of `kind` in `base` (mode `0700` whatever the umask, a unique
/// name of the kind's shape, up to 16 tries) and writes this process's owner marker into
/// it. A marker that cannot be written is said on stderr: the directory is usable, but
/// [`stale`] will never call it abandoned.
///
/// # Errors
///
/// The operating-system error of `mkdir` (`AlreadyExists` only when 16 names were taken).
pub fn create(base: &Path, kind: Kind) -> io::Result<PathBuf> {
    let marker = Owner::current().map(|o| o.render(kind));
    let mut last = None;
    for _ in 0..16 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = base.join(format!(
            "{}{}-{n}-{nanos:09}",
            kind.prefix,
            std::process::id()
        ));
        match std::fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => {
                // Exactly 0700, whatever the umask.
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))?;
                let written = match &marker {
                    Ok(m) => write_marker(&path, m),
                    Err(e) => Err(io::Error::new(e.kind(), e.to_string())),
                };
                if let Err(e) = written {
                    use std::io::Write;
                    let _ = writeln!(
                        io::stderr(),
                        "satyrn-host {}: cannot write the owner marker of {}: {e}",
                        kind.command,
                        path.display()
                    );
                }
                return Ok(path);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::ErrorKind::AlreadyExists.into()))
}

fn write_marker(dir: &Path, marker: &str) -> io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(dir.join(OWNER_FILE))?;
    file.write_all(marker.as_bytes())
}

/// Whether `dir` holds nothing its owner wrote: it is empty, or its only entry is an empty
/// regular [`OWNER_FILE`] (a process killed between creating its marker and writing it).
/// `false` when `dir` cannot be read.
#[must_use]
pub fn holds_nothing_written(dir: &Path) -> bool {
    let Ok(mut entries) = std::fs::read_dir(dir) else {
        return false;
    };
    match (entries.next(), entries.next()) {
        (None, _) => true,
        (Some(Ok(only)), None) => {
            only.file_name() == OWNER_FILE
                && only
                    .path()
                    .symlink_metadata()
                    .is_ok_and(|m| m.is_file() && m.len() == 0)
        }
        _ => false,
    }
}

/// Takes the owner marker out of `dir`, so it is never called abandoned (a directory a
/// report names as retained): removed, or, when that fails, renamed aside. A missing marker
/// is fine; one that stays is said on stderr.
pub fn forget(dir: &Path, kind: Kind) {
    let marker = dir.join(OWNER_FILE);
    let outcome = match std::fs::remove_file(&marker) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            std::fs::rename(&marker, dir.join(FORGOTTEN_FILE))
        }
        _ => Ok(()),
    };
    if let Err(e) = outcome {
        use std::io::Write;
        let _ = writeln!(
            io::stderr(),
            "satyrn-host {0}: cannot take the owner marker out of the retained {1}: {e}; a later {0} may remove it",
            kind.command,
            dir.display()
        );
    }
}

/// Whether `name` is exactly `<kind's prefix><pid>-<n>-<9 digits>`; returns the pid.
#[must_use]
pub fn named_pid(name: &OsStr, kind: Kind) -> Option<u32> {
    let rest = name.as_bytes().strip_prefix(kind.prefix.as_bytes())?;
    let parts: Vec<&[u8]> = rest.split(|b| *b == b'-').collect();
    let digits = |p: &[u8]| !p.is_empty() && p.iter().all(u8::is_ascii_digit);
    match parts.as_slice() {
        [pid, n, nanos] if digits(pid) && digits(n) && digits(nanos) && nanos.len() == 9 => {
            std::str::from_utf8(pid).ok()?.parse().ok()
        }
        _ => None,
    }
}

/// Why `dir` is an abandoned directory of `kind` (see the module documentation), or `None`
/// when it is not provably one.
///
/// # Errors
///
/// The operating-system error when `dir` or its marker cannot be inspected.
pub fn stale(dir: &Path, kind: Kind) -> io::Result<Option<String>> {
    let Some(named) = dir.file_name().and_then(|n| named_pid(n, kind)) else {
        return Ok(None);
    };
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let uid = rustix::process::geteuid().as_raw();
    if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o7777 != 0o700 {
        return Ok(None);
    }
    let Ok(marker) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(dir.join(OWNER_FILE))
    else {
        return Ok(None);
    };
    let meta = marker.metadata()?;
    if !meta.is_file() {
        return Ok(None);
    }
    let written = meta.modified()?;
    if written.elapsed().unwrap_or_default() < kind.min_age {
        return Ok(None);
    }
    let mut text = String::new();
    {
        use std::io::Read;
        if (&marker).take(4096).read_to_string(&mut text).is_err() {
            return Ok(None);
        }
    }
    match Owner::parse(&text, kind) {
        Some(owner) if owner.pid == named => owner.gone(written),
        _ => Ok(None),
    }
}

/// Removes, from `base`, every directory of `kind` that [`stale`] calls abandoned; returns
/// one line per directory removed or failed, for stderr. Never fails: an entry that cannot
/// be inspected is left alone.
#[must_use]
pub fn sweep(base: &Path, kind: Kind) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(base) else {
        return Vec::new();
    };
    let mut notes = Vec::new();
    for entry in entries.flatten() {
        if named_pid(&entry.file_name(), kind).is_none() {
            continue;
        }
        let dir = entry.path();
        let Ok(Some(why)) = stale(&dir, kind) else {
            continue;
        };
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => notes.push(format!(
                "removed the abandoned directory {} ({why})",
                dir.display()
            )),
            // Another sweep removed it first.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => notes.push(format!(
                "cannot remove the abandoned directory {} ({why}): {e}",
                dir.display()
            )),
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_directory_pattern_is_recognized() {
        assert_eq!(
            named_pid(OsStr::new("satyrn-deliver-12-0-000000123"), DELIVER),
            Some(12)
        );
        assert_eq!(
            named_pid(OsStr::new("satyrn-attempt-12-0-000000123"), ATTEMPT),
            Some(12)
        );
        assert_eq!(
            named_pid(OsStr::new("satyrn-attempt-12-0-000000123"), DELIVER),
            None
        );
        for bad in [
            "satyrn-deliver-12-0-00000012",
            "satyrn-deliver-12-0-0000001234",
            "satyrn-deliver--0-000000123",
            "satyrn-deliver-12-0-000000123-x",
            "satyrn-deliver-a-0-000000123",
            "xsatyrn-deliver-12-0-000000123",
            "satyrn-deliver-12-000000123",
        ] {
            assert_eq!(named_pid(OsStr::new(bad), DELIVER), None, "{bad}");
        }
    }

    #[test]
    fn the_marker_round_trips_and_names_a_live_owner() {
        let me = Owner::current().expect("owner");
        assert_eq!(Owner::parse(&me.render(DELIVER), DELIVER), Some(me.clone()));
        assert_eq!(
            Owner::parse(&me.render(ATTEMPT), DELIVER),
            None,
            "another kind"
        );
        let now = std::time::SystemTime::now();
        assert_eq!(me.gone(now).expect("gone"), None, "this process is alive");
        let other = Owner {
            start: me.start + 1,
            ..me.clone()
        };
        assert!(other.gone(now).expect("gone").is_some());
        let rebooted = Owner {
            boot: "another-boot".to_owned(),
            ..me.clone()
        };
        assert!(
            rebooted
                .gone(std::time::UNIX_EPOCH)
                .expect("gone")
                .is_some(),
            "written before this boot"
        );
        assert_eq!(
            rebooted.gone(now).expect("gone"),
            None,
            "another kernel's, written during this boot: unprovable"
        );
        let elsewhere = Owner {
            pidns: "pid:[1]".to_owned(),
            start: me.start + 1,
            ..me
        };
        assert_eq!(elsewhere.gone(now).expect("gone"), None, "unprovable");
        assert_eq!(
            Owner::parse("satyrn-deliver-owner 2\npid 1\n", DELIVER),
            None
        );
    }

    #[test]
    fn a_live_owners_directory_is_kept_and_a_dead_ones_is_swept() {
        let base = tempfile::tempdir().expect("tempdir");
        let mine = create(base.path(), ATTEMPT).expect("create");
        assert!(mine.join(OWNER_FILE).is_file());
        assert_eq!(stale(&mine, ATTEMPT).expect("stale"), None);
        // A directory whose marker names a process that has exited.
        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        let pid = child.id();
        child.wait().expect("reap");
        let dead = base
            .path()
            .join(format!("satyrn-attempt-{pid}-0-000000001"));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dead)
            .expect("mkdir");
        let owner = Owner {
            pid,
            ..Owner::current().expect("owner")
        };
        write_marker(&dead, &owner.render(ATTEMPT)).expect("marker");
        std::fs::write(dead.join("transcript.jsonl"), b"{}\n").expect("write");
        // Too young: kept, though its owner is gone.
        assert_eq!(stale(&dead, ATTEMPT).expect("stale"), None);
        let old = std::time::SystemTime::now() - 2 * ATTEMPT.min_age;
        std::fs::File::options()
            .write(true)
            .open(dead.join(OWNER_FILE))
            .and_then(|f| f.set_modified(old))
            .expect("backdate the marker");
        // The same, but without a marker, and one of another kind: both kept.
        let unmarked = base
            .path()
            .join(format!("satyrn-attempt-{pid}-1-000000001"));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&unmarked)
            .expect("mkdir");
        let deliver = base
            .path()
            .join(format!("satyrn-deliver-{pid}-0-000000001"));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&deliver)
            .expect("mkdir");
        write_marker(&deliver, &owner.render(DELIVER)).expect("marker");
        let notes = sweep(base.path(), ATTEMPT);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains(&format!("process {pid} no longer exists")),
            "{notes:?}"
        );
        assert!(!dead.exists());
        assert!(mine.exists() && unmarked.exists() && deliver.exists());
        forget(&mine, ATTEMPT);
        assert!(!mine.join(OWNER_FILE).exists());
    }
}
