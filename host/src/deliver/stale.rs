//! Stale attempts: worktrees that a `deliver` killed before its cleanup left registered.
//!
//! Every attempt's private temporary directory holds an owner marker, `owner`, naming the
//! `deliver` process that created it: its pid, its start time (clock ticks after boot, from
//! `/proc/self/stat`), the boot id and the pid namespace. Before it creates its own attempt,
//! `deliver` runs [`prune`], which removes a registered worktree only when **all** of these
//! hold:
//!
//! - it is satyrn's: the worktree is `<dir>/worktree` and `<dir>`'s name is exactly
//!   `satyrn-deliver-<pid>-<n>-<9 digits>`; `<dir>` is a real directory (not a symlink)
//!   owned by the current user with mode `0700`; it holds a regular-file marker in the
//!   format below whose pid is the one in the name;
//! - it is not locked (`git worktree lock`: a worktree someone locked is theirs to remove);
//! - its owner is provably gone: the marker names another boot, or, in the same pid
//!   namespace, no process has that pid or the process with that pid started at another
//!   time. A marker from another pid namespace proves nothing, and is left alone.
//!
//! Removal is `git worktree remove --force`, or, when git refuses (the command removed or
//! rewrote the worktree's `.git`), removing the directory and `git worktree prune`; then the
//! temporary directory. An attempt directory in the system temporary directory that passes
//! the same checks and has nothing at `<dir>/worktree` (its `deliver` was killed before
//! `git worktree add`) is removed too, and so is an *empty* private one without a marker,
//! at least a minute old, whose named pid has no process (killed between creating it and
//! writing the marker). A worktree that a receipt reported as retained (`CLEANUP_FAILED`)
//! has no marker any more ([`forget_owner`]) and is never pruned.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use super::error::RemoveError;
use crate::git::{self, Git};

/// The marker's file name inside an attempt's temporary directory.
pub const OWNER_FILE: &str = "owner";
/// The marker's first line.
const MAGIC: &str = "satyrn-deliver-owner 1";
/// The prefix of an attempt's temporary directory name.
pub const DIR_PREFIX: &str = "satyrn-deliver-";

/// Who created an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Owner {
    pid: u32,
    start: u64,
    boot: String,
    pidns: String,
}

impl Owner {
    fn current() -> io::Result<Self> {
        let pid = std::process::id();
        Ok(Self {
            pid,
            start: start_time(pid)?.ok_or_else(|| io::Error::other("no /proc/self/stat"))?,
            boot: boot_id()?,
            pidns: pid_namespace()?,
        })
    }

    fn render(&self) -> String {
        format!(
            "{MAGIC}\npid {}\nstart {}\nboot {}\npidns {}\n",
            self.pid, self.start, self.boot, self.pidns
        )
    }

    fn parse(text: &str) -> Option<Self> {
        let mut lines = text.lines();
        if lines.next()? != MAGIC {
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

    /// `Some(why)` when this owner is provably gone.
    fn gone(&self) -> io::Result<Option<String>> {
        if self.boot != boot_id()? {
            return Ok(Some("it ran before the last boot".to_owned()));
        }
        if self.pidns != pid_namespace()? {
            return Ok(None);
        }
        Ok(match start_time(self.pid)? {
            None => Some(format!("process {} no longer exists", self.pid)),
            Some(t) if t != self.start => Some(format!(
                "process {} is another process now (started at tick {t}, not {})",
                self.pid, self.start
            )),
            Some(_) => None,
        })
    }
}

/// The start time of `pid` in clock ticks after boot, `None` when no such process exists.
fn start_time(pid: u32) -> io::Result<Option<u64>> {
    let stat = match std::fs::read(format!("/proc/{pid}/stat")) {
        Ok(s) => s,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let close = stat
        .iter()
        .rposition(|b| *b == b')')
        .ok_or_else(|| io::Error::other("malformed /proc stat"))?;
    // Field 22 (starttime); the fields after ')' start at field 3.
    String::from_utf8_lossy(&stat[close + 1..])
        .split_ascii_whitespace()
        .nth(22 - 3)
        .and_then(|f| f.parse().ok())
        .map(Some)
        .ok_or_else(|| io::Error::other("malformed /proc stat"))
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

/// The owner marker of this process, to be written into each new attempt directory
/// ([`write_owner`]); computed first, so the directory is without it for as short a time as
/// possible.
///
/// # Errors
///
/// The operating-system error when the process cannot be described.
pub fn owner_marker() -> io::Result<String> {
    Ok(Owner::current()?.render())
}

/// Writes `marker` ([`owner_marker`]) into `dir` (a fresh attempt directory).
///
/// # Errors
///
/// The operating-system error when the file cannot be written.
pub fn write_owner(dir: &Path, marker: &str) -> io::Result<()> {
    use std::io::Write;
    let text = marker;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(dir.join(OWNER_FILE))?;
    file.write_all(text.as_bytes())
}

/// Removes the owner marker from `dir`, so the attempt is never pruned automatically (it is
/// reported as retained). A missing marker is fine.
pub fn forget_owner(dir: &Path) {
    let _ = std::fs::remove_file(dir.join(OWNER_FILE));
}

/// Whether `name` is exactly `satyrn-deliver-<pid>-<n>-<9 digits>`; returns the pid.
fn attempt_dir_pid(name: &OsStr) -> Option<u32> {
    let rest = name.as_bytes().strip_prefix(DIR_PREFIX.as_bytes())?;
    let parts: Vec<&[u8]> = rest.split(|b| *b == b'-').collect();
    let digits = |p: &[u8]| !p.is_empty() && p.iter().all(u8::is_ascii_digit);
    match parts.as_slice() {
        [pid, n, nanos] if digits(pid) && digits(n) && digits(nanos) && nanos.len() == 9 => {
            std::str::from_utf8(pid).ok()?.parse().ok()
        }
        _ => None,
    }
}

/// Why `worktree` is a stale attempt of satyrn's, or `None` when it is not provably one.
fn stale(worktree: &Path) -> io::Result<Option<String>> {
    if worktree.file_name() != Some(OsStr::new("worktree")) {
        return Ok(None);
    }
    let Some(dir) = worktree.parent() else {
        return Ok(None);
    };
    let Some(named_pid) = dir.file_name().and_then(attempt_dir_pid) else {
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
    let marker = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(dir.join(OWNER_FILE))
    {
        Ok(f) => f,
        Err(_) => return Ok(None),
    };
    if !marker.metadata()?.is_file() {
        return Ok(None);
    }
    let mut text = String::new();
    {
        use std::io::Read;
        if (&marker).take(4096).read_to_string(&mut text).is_err() {
            return Ok(None);
        }
    }
    let Some(owner) = Owner::parse(&text) else {
        return Ok(None);
    };
    if owner.pid != named_pid {
        return Ok(None);
    }
    owner.gone()
}

/// Removes the stale attempts registered in `repo` (see the module documentation); returns
/// one line per attempt removed or failed, for stderr. Never fails the delivery: errors are
/// reported in the lines.
#[must_use]
pub fn prune(repo: &Git) -> Vec<String> {
    let list = match git::worktree_entries(repo) {
        Ok(l) => l,
        Err(e) => {
            return vec![format!(
                "cannot list worktrees to prune stale attempts: {e}"
            )];
        }
    };
    let mut notes = Vec::new();
    sweep_unregistered(&mut notes);
    for wt in list.iter().filter(|w| !w.locked) {
        let why = match stale(&wt.path) {
            Ok(Some(why)) => why,
            Ok(None) => continue,
            Err(e) => {
                notes.push(format!(
                    "cannot tell whether {} is stale: {e}",
                    wt.path.display()
                ));
                continue;
            }
        };
        notes.push(match remove(repo, &wt.path) {
            Ok(()) => format!("removed the stale attempt {} ({why})", wt.path.display()),
            Err(e) => format!(
                "cannot remove the stale attempt {} ({why}): {e}",
                wt.path.display()
            ),
        });
    }
    notes
}

/// Removes, from the system temporary directory, the attempt directories of dead owners
/// that never got a worktree (their `deliver` was killed before `git worktree add`): the
/// same checks as for a registered one, and nothing at `<dir>/worktree`. One with a
/// worktree is left alone here — it may belong to another repository.
fn sweep_unregistered(notes: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let Some(named_pid) = attempt_dir_pid(&entry.file_name()) else {
            continue;
        };
        let worktree = entry.path().join("worktree");
        if worktree.symlink_metadata().is_ok() {
            continue;
        }
        if empty_orphan(&entry.path(), named_pid) {
            // Killed between creating the directory and writing its marker: nothing in it.
            if std::fs::remove_dir(entry.path()).is_ok() {
                notes.push(format!(
                    "removed the empty attempt directory {} (process {named_pid} no longer exists)",
                    entry.path().display()
                ));
            }
            continue;
        }
        let Ok(Some(why)) = stale(&worktree) else {
            continue;
        };
        notes.push(match std::fs::remove_dir_all(entry.path()) {
            Ok(()) => format!(
                "removed the stale attempt directory {} ({why})",
                entry.path().display()
            ),
            Err(e) => format!(
                "cannot remove the stale attempt directory {} ({why}): {e}",
                entry.path().display()
            ),
        });
    }
}

/// How old a marker-less attempt directory must be before it counts as abandoned: 60 s. Its
/// `deliver` writes the marker right after creating it; without the marker nothing proves
/// which pid namespace the name's pid is from, but no live `deliver` leaves it that long.
const UNMARKED_AGE: std::time::Duration = std::time::Duration::from_secs(60);

/// Whether `dir` is a private directory of ours with nothing in it, older than
/// [`UNMARKED_AGE`], named for `pid`, which no process has.
fn empty_orphan(dir: &Path, pid: u32) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return false;
    };
    let old = meta
        .modified()
        .ok()
        .and_then(|m| m.elapsed().ok())
        .is_some_and(|age| age >= UNMARKED_AGE);
    old && meta.is_dir()
        && meta.uid() == rustix::process::geteuid().as_raw()
        && meta.mode() & 0o7777 == 0o700
        && std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_none())
        && matches!(start_time(pid), Ok(None))
}

fn remove(repo: &Git, worktree: &Path) -> Result<(), RemoveError> {
    let mut args: Vec<std::ffi::OsString> =
        vec!["worktree".into(), "remove".into(), "--force".into()];
    args.push(worktree.as_os_str().to_owned());
    let removed = matches!(repo.output(&args), Ok(out) if out.status.success());
    if !removed {
        remove_dir_all(worktree)?;
    }
    repo.run(&["worktree", "prune"]).map_err(RemoveError::Git)?;
    if let Some(dir) = worktree.parent() {
        remove_dir_all(dir)?;
    }
    Ok(())
}

/// Removes `dir` and everything in it; a `dir` already gone is not an error.
fn remove_dir_all(dir: &Path) -> Result<(), RemoveError> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(RemoveError::Io(e)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_directory_pattern_is_recognized() {
        assert_eq!(
            attempt_dir_pid(OsStr::new("satyrn-deliver-12-0-000000123")),
            Some(12)
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
            assert_eq!(attempt_dir_pid(OsStr::new(bad)), None, "{bad}");
        }
    }

    #[test]
    fn the_marker_round_trips_and_names_a_live_owner() {
        let me = Owner::current().expect("owner");
        assert_eq!(Owner::parse(&me.render()), Some(me.clone()));
        assert_eq!(me.gone().expect("gone"), None, "this process is alive");
        let other = Owner {
            start: me.start + 1,
            ..me.clone()
        };
        assert!(other.gone().expect("gone").is_some());
        let rebooted = Owner {
            boot: "another-boot".to_owned(),
            ..me.clone()
        };
        assert!(rebooted.gone().expect("gone").is_some());
        let elsewhere = Owner {
            pidns: "pid:[1]".to_owned(),
            start: me.start + 1,
            ..me
        };
        assert_eq!(elsewhere.gone().expect("gone"), None, "unprovable");
        assert_eq!(Owner::parse("satyrn-deliver-owner 2\npid 1\n"), None);
    }
}
