//! Processes, process groups and sessions: stopping a group with a grace, catching the
//! descendants that left it (child subreaper), reaping, and the `/proc` scan all of that
//! reads.
//!
//! Pid reuse: every function here that signals a group takes the id of a leader its caller
//! has not reaped yet (Linux keeps a pid allocated while it names a process, a zombie, a
//! group or a session), or scans `/proc` for the processes it signals immediately before.

use std::io;
use std::os::fd::OwnedFd;
use std::process::Child;
use std::time::{Duration, Instant};

use rustix::process::{Pid, PidfdFlags, Signal, WaitOptions};

/// `1` in a command's environment exactly when `confine`'s kernel rules hold it (removed
/// otherwise): satyrn's Pi package then lets Pi's own tools run (`pi/lib/guard.ts`), and
/// `attempt` removes it from what Pi inherits (only `confine` says it).
pub const CONFINED_VAR: &str = "SATYRN_CONFINED";

/// The grace between `SIGTERM` and `SIGKILL` in [`stop_group`]: 5 s.
pub const GRACE: Duration = Duration::from_secs(5);

/// `child`'s pid as rustix spells it.
///
/// # Errors
///
/// `child`'s id does not fit a pid (it always does on Linux).
pub fn pid_of(child: &Child) -> io::Result<Pid> {
    i32::try_from(child.id())
        .ok()
        .and_then(Pid::from_raw)
        .ok_or_else(|| io::Error::other("child pid out of range"))
}

/// A pidfd for `child`, un-reaped: readable once it exits, and a way to signal it that can
/// never hit a reused pid.
///
/// # Errors
///
/// The operating-system error of `pidfd_open` (Linux 5.3 and later).
pub fn pidfd_of(child: &Child) -> io::Result<OwnedFd> {
    Ok(rustix::process::pidfd_open(
        pid_of(child)?,
        PidfdFlags::empty(),
    )?)
}

/// Makes the process `cmd` starts get `signal` when this process dies, however it dies
/// (`PR_SET_PDEATHSIG`), so a `SIGKILL` to this process leaves no such child running. A
/// parent that died between fork and exec fails the spawn (`ESRCH`) instead of leaving an
/// orphan that would never get the signal.
///
/// Linux sends the signal when the *thread* that spawned the child ends: spawn from a
/// thread that lives as long as the child is needed (every caller spawns from the main
/// thread). Only the child itself is signalled, not what it starts.
///
/// # Process-global effects
///
/// None in this process; the child's parent-death signal is set between fork and exec.
pub fn end_with_parent(cmd: &mut std::process::Command, signal: Signal) {
    use std::os::unix::process::CommandExt;
    let parent = rustix::process::getpid();
    // SAFETY: the closure makes only raw, async-signal-safe system calls (prctl(2),
    // getppid(2)) on copied values; nothing allocates between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(signal))?;
            if rustix::process::getppid() != Some(parent) {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// Stops the process group `pgid`: nothing to do when no member is alive; otherwise
/// `SIGTERM`, up to [`GRACE`] for the members to exit, then `SIGKILL` and a bounded wait
/// (2 s) for them to die. Call it before reaping the group's leader.
///
/// # Process-global effects
///
/// Signals every process of the group (it blocks for up to [`GRACE`] + 2 s).
pub fn stop_group(pgid: Pid) {
    if !group_alive(pgid) {
        return;
    }
    let _ = rustix::process::kill_process_group(pgid, Signal::TERM);
    let grace_end = Instant::now() + GRACE;
    while Instant::now() < grace_end {
        std::thread::sleep(Duration::from_millis(20));
        if !group_alive(pgid) {
            return;
        }
    }
    let _ = rustix::process::kill_process_group(pgid, Signal::KILL);
    let kill_end = Instant::now() + Duration::from_secs(2);
    while group_alive(pgid) && Instant::now() < kill_end {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `SIGKILL` to group `leader` and to every live process of session `leader`, round after
/// round until none is left (at most 100 rounds, 10 ms apart).
///
/// # Process-global effects
///
/// Kills every process of that group and session (ours included, were we one of them).
pub fn kill_group_and_session(leader: Pid) {
    for _ in 0..100 {
        let members = session_members(leader);
        let group = group_alive(leader);
        if members.is_empty() && !group {
            return;
        }
        if group {
            let _ = rustix::process::kill_process_group(leader, Signal::KILL);
        }
        for pid in members {
            let _ = rustix::process::kill_process(pid, Signal::KILL);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Makes this process a child subreaper (Linux `PR_SET_CHILD_SUBREAPER`): orphaned
/// descendants are reparented to it instead of to init, where [`stop_strays`] can find
/// them. Best effort: without it, a descendant that leaves its group can escape.
///
/// # Process-global effects
///
/// For the rest of the process's life, every orphaned descendant becomes its child; it
/// must reap them ([`reap_exited_children`], [`stop_strays`]) or they stay zombies.
pub fn become_subreaper() {
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
}

/// How long [`stop_strays`] keeps killing before it gives up on a process tree that forks
/// faster than it can be killed: 10 s.
pub const STRAYS_DEADLINE: Duration = Duration::from_secs(10);

/// Kills every descendant of this process but `spare` and its own descendants (`spare` is
/// reaped by its own `Child`), however deep: the processes that left a stopped group (a
/// `setsid` daemon, a chain of nested children), found through their parents in `/proc`.
/// Each round sends `SIGKILL` to every live descendant found at once and reaps the children
/// that died; a process forked during a round is orphaned by its parent's death,
/// reparented to us ([`become_subreaper`]) and killed in the next. Returns when none is
/// left, or after [`STRAYS_DEADLINE`] (a fork faster than the rounds), with the number
/// still alive (0 when none).
///
/// # Process-global effects
///
/// Kills and reaps processes this process did not necessarily start.
pub fn stop_strays(spare: Option<u32>) -> usize {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let spare = spare.and_then(|p| i32::try_from(p).ok());
    let deadline = std::time::Instant::now() + STRAYS_DEADLINE;
    loop {
        let tree = descendants(me, spare);
        for stat in &tree {
            // A zombie too: a leader that exited may still have running threads, which
            // only a signal to the group ends. At worst it names a process that already
            // exited (ESRCH), which is harmless.
            let _ = rustix::process::kill_process(stat.pid, Signal::KILL);
        }
        for stat in tree.iter().filter(|s| s.ppid == me) {
            reap(stat.pid);
        }
        let alive = tree.iter().filter(|s| !s.dead).count();
        if tree.is_empty() || std::time::Instant::now() >= deadline {
            return alive;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Every descendant of `root` in one reading of `/proc` (a zombie included), except `spare`
/// and those beneath it.
fn descendants(root: i32, spare: Option<i32>) -> Vec<Stat> {
    let all = processes(|_| true);
    let mut children: std::collections::HashMap<i32, Vec<Stat>> = std::collections::HashMap::new();
    for stat in all {
        children.entry(stat.ppid).or_default().push(stat);
    }
    let mut found = Vec::new();
    let mut parents = vec![root];
    while let Some(parent) = parents.pop() {
        for stat in children.remove(&parent).unwrap_or_default() {
            let pid = stat.pid.as_raw_nonzero().get();
            if Some(pid) == spare {
                continue;
            }
            parents.push(pid);
            found.push(stat);
        }
    }
    found
}

/// Reaps the children of this process that have already exited, except `keep` (those
/// belong to a `std::process::Child`, which reaps them itself). Never `waitpid(-1)`.
///
/// # Process-global effects
///
/// Reaps child processes this process did not necessarily start.
pub fn reap_exited_children(keep: &[Pid]) {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    for stat in processes(|p| p.ppid == me && p.state == 'Z' && !keep.contains(&p.pid)) {
        reap(stat.pid);
    }
}

/// Reaps our exited child `pid` without waiting.
fn reap(pid: Pid) {
    let _ = rustix::process::waitpid(Some(pid), WaitOptions::NOHANG);
}

/// Whether any member of the group is alive (zombies excluded), read from `/proc`. Without
/// `/proc`, whether the group exists at all.
#[must_use]
pub fn group_alive(pgid: Pid) -> bool {
    if std::fs::metadata("/proc/self/stat").is_err() {
        return rustix::process::test_kill_process_group(pgid).is_ok();
    }
    let want = pgid.as_raw_nonzero().get();
    !processes(|p| p.pgrp == want && !p.dead).is_empty()
}

/// The live (not zombie) processes of session `sid`, read from `/proc`.
#[must_use]
pub fn session_members(sid: Pid) -> Vec<Pid> {
    let want = sid.as_raw_nonzero().get();
    processes(|p| p.session == want && !p.dead)
        .iter()
        .map(|stat| stat.pid)
        .collect()
}

/// One process as `/proc/PID/stat` describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// Its pid.
    pub pid: Pid,
    /// Its parent's pid (0 for init).
    pub ppid: i32,
    /// Its process group.
    pub pgrp: i32,
    /// Its session.
    pub session: i32,
    /// The one-letter state (`R`, `S`, `Z`, …).
    pub state: char,
    /// A zombie (`Z`) or dead (`X`) with no thread left: no longer running any code. (A
    /// group leader that exited while its other threads run shows `Z` but is not dead.)
    pub dead: bool,
    /// Its start time in clock ticks after boot (field 22), when the line has it.
    pub start: Option<u64>,
}

impl Stat {
    /// The process `pid`, `None` when it does not exist (or `/proc` is not mounted).
    #[must_use]
    pub fn of(pid: Pid) -> Option<Self> {
        Self::read(pid.as_raw_nonzero().get()).ok().flatten()
    }

    /// The one reader of `/proc/PID/stat`: the process `raw_pid`, `Ok(None)` when no such
    /// process exists.
    ///
    /// # Errors
    ///
    /// The file cannot be read for another reason, or is malformed.
    pub fn read(raw_pid: i32) -> std::io::Result<Option<Self>> {
        let stat = match std::fs::read(format!("/proc/{raw_pid}/stat")) {
            Ok(stat) => stat,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        Self::parse(raw_pid, &stat)
            .map(Some)
            .ok_or_else(|| std::io::Error::other("malformed /proc stat"))
    }

    /// `pid (comm) state ppid pgrp session …`: `comm` may contain anything, so the fields
    /// are split after the last `)`.
    fn parse(raw_pid: i32, stat: &[u8]) -> Option<Self> {
        let close = stat.iter().rposition(|b| *b == b')')?;
        let rest = String::from_utf8_lossy(&stat[close + 1..]);
        let mut fields = rest.split_ascii_whitespace();
        let state = fields.next()?.chars().next()?;
        let mut number = || fields.next()?.parse::<i64>().ok();
        let (ppid, pgrp, session) = (number()?, number()?, number()?);
        // tty_nr, tpgid, flags, minflt, cminflt, majflt, cmajflt, utime, stime, cutime,
        // cstime, priority, nice, then num_threads (field 20).
        let threads = (0..13)
            .try_for_each(|_| number().map(drop))
            .and_then(|()| number());
        // itrealvalue, then starttime (field 22).
        let start = threads
            .and_then(|_| number())
            .and_then(|_| number())
            .and_then(|t| u64::try_from(t).ok());
        Some(Self {
            pid: Pid::from_raw(raw_pid)?,
            ppid: i32::try_from(ppid).ok()?,
            pgrp: i32::try_from(pgrp).ok()?,
            session: i32::try_from(session).ok()?,
            state,
            // A leader that exited while its other threads run is `Z` too, with the
            // thread count of the group (it is counted until it is reaped).
            dead: matches!(state, 'Z' | 'X') && threads.is_none_or(|n| n <= 1),
            start,
        })
    }
}

/// Every process whose `/proc/PID/stat` satisfies `keep` (none without `/proc`).
fn processes(keep: impl Fn(&Stat) -> bool) -> Vec<Stat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<i32>().ok()?;
            Stat::parse(pid, &std::fs::read(entry.path().join("stat")).ok()?)
        })
        .filter(|stat| keep(stat))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_split_after_the_last_parenthesis() {
        let stat = Stat::parse(7, b"7 (a) b) (c) Z 1 7 3 0 0").expect("parsed");
        assert_eq!(
            (stat.state, stat.ppid, stat.pgrp, stat.session),
            ('Z', 1, 7, 3)
        );
        assert!(stat.dead);
        assert_eq!(Stat::parse(7, b"7 (x) S 1 2"), None, "too few fields");
        // The whole line: a leader that exited while two more threads run is not dead.
        let leader = b"7 (x) Z 1 7 7 0 -1 4194560 10 0 0 0 3 1 0 0 20 0 3 0 100";
        assert!(!Stat::parse(7, leader).expect("parsed").dead);
        let zombie = b"7 (x) Z 1 7 7 0 -1 4194560 10 0 0 0 3 1 0 0 20 0 1 0 100";
        assert!(Stat::parse(7, zombie).expect("parsed").dead);
        assert_eq!(Stat::parse(0, b"0 (x) S 1 2 3"), None, "not a pid");
    }

    /// A child in a session of its own: the test's own session may be 0 or a leader outside
    /// the pid namespace (a container), so it proves nothing there.
    #[test]
    fn a_session_leader_child_is_found_alive_in_its_group_and_session_then_gone() {
        use std::os::unix::process::CommandExt;
        let mut command = std::process::Command::new("sleep");
        command.arg("30");
        // SAFETY: setsid(2) is async-signal-safe and touches no memory of the parent.
        unsafe {
            command.pre_exec(|| {
                rustix::process::setsid()?;
                Ok(())
            });
        }
        let mut child = command.spawn().expect("spawn sleep");
        let leader = pid_of(&child).expect("pid");
        let me = Stat::of(leader).expect("child stat");
        assert_eq!(
            (me.pgrp, me.session),
            (leader.as_raw_nonzero().get(), leader.as_raw_nonzero().get())
        );
        assert!(!me.dead);
        assert!(group_alive(leader));
        assert_eq!(session_members(leader), vec![leader]);
        assert!(!session_members(leader).contains(&rustix::process::getpid()));
        kill_group_and_session(leader);
        child.wait().expect("reap");
        assert!(!group_alive(leader));
        assert!(session_members(leader).is_empty());
    }
}
