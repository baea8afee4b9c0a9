//! `deliver` itself signalled or killed: real `SIGHUP` and `SIGKILL` to the real binary,
//! and the pruning of the worktree a killed `deliver` left registered.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use crate::deliver_support::*;
use crate::support::{ContractFile, dir_entries};

/// Starts `deliver` on `script` with `TMPDIR` set, and waits until the command wrote its
/// pid (its process group and session id) to `pidfile`.
fn start(root: &Path, id: &str, tmp: &Path, script: &str, pidfile: &Path) -> (Child, i32) {
    let contract = ContractFile::any(id);
    let argv = [OsStr::new("sh"), OsStr::new("-c"), OsStr::new(script)];
    let child = deliver_cmd(root, &contract.path, &[], &argv)
        .env("TMPDIR", tmp)
        .spawn()
        .expect("spawn deliver");
    // deliver read the contract before it started the command: it may go now.
    let pid = read_pid(pidfile);
    drop(contract);
    (child, pid)
}

/// The satyrn attempt directories in `tmp`.
fn attempts(tmp: &Path) -> Vec<String> {
    dir_entries(tmp)
        .into_iter()
        .filter(|n| n.starts_with("satyrn-deliver-"))
        .collect()
}

#[test]
fn sighup_to_deliver_is_an_interruption_with_a_receipt() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let before = Caller::capture(&root);
    let tmp = tempfile::tempdir().expect("tempdir");
    let marks = tempfile::tempdir().expect("tempdir");
    let pidfile = marks.path().join("pid");
    let background = marks.path().join("background");
    let script = format!(
        "echo x > a.txt; sleep 3600 & echo $! > '{}'; echo $$ > '{}'; sleep 3600",
        background.display(),
        pidfile.display()
    );
    let t0 = Instant::now();
    let (child, pgid) = start(&root, "hup", tmp.path(), &script, &pidfile);
    signal(&child, libc::SIGHUP);
    let run = wait_ended(child, Duration::from_secs(60), t0);
    assert_eq!(run.code(), "INTERRUPTED", "{}", run.stdout);
    assert_eq!(run.status, 8);
    assert_eq!(run.outcome(), "discarded");
    assert!(
        run.receipt["message"]
            .as_str()
            .expect("message")
            .contains("SIGHUP")
    );
    assert_eq!(run.receipt["signal"], libc::SIGTERM);
    assert!(!group_alive(pgid), "the command's group outlived deliver");
    assert_all_stopped(&[&background]);
    before.assert_unchanged(&root, None);
    assert!(dir_entries(tmp.path()).is_empty(), "temporary files left");
    sibling_success(&root, "hup");
}

#[test]
fn sigkill_to_deliver_kills_its_command_and_the_next_deliver_prunes_the_worktree() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let before = Caller::capture(&root);
    let tmp = tempfile::tempdir().expect("tempdir");
    let marks = tempfile::tempdir().expect("tempdir");
    let pidfile = marks.path().join("pid");
    let (fg, bg) = (marks.path().join("fg"), marks.path().join("bg"));
    // A foreground sentinel written by the command itself, and one by a background
    // descendant in the command's group.
    let script = format!(
        "echo x > a.txt; (sleep 1.5; touch '{}') & echo $$ > '{}'; sleep 1.5; touch '{}'",
        bg.display(),
        pidfile.display(),
        fg.display()
    );
    let (mut child, pgid) = start(&root, "killed", tmp.path(), &script, &pidfile);
    signal(&child, libc::SIGKILL);
    let status = child.wait().expect("wait");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL)
    );
    assert!(
        poll_until(Duration::from_secs(5), || !group_alive(pgid)),
        "the command's group outlived the killed deliver"
    );
    // The whole group is dead: neither sentinel can be written any more.
    assert!(
        !fg.exists() && !bg.exists(),
        "the command ran on after deliver was killed"
    );
    // The killed deliver could not clean up: its worktree is still registered.
    let stale = attempts(tmp.path());
    assert_eq!(stale.len(), 1, "{stale:?}");
    assert!(
        git_worktrees(&root).contains(&stale[0]),
        "stale registration expected"
    );

    // The next deliver prunes it, then succeeds; afterwards everything is as before.
    let contract = ContractFile::any("after-kill");
    let argv = [
        OsStr::new("sh"),
        OsStr::new("-c"),
        OsStr::new("echo y > b.txt"),
    ];
    let run = deliver_with_tmp(&root, &contract.path, tmp.path(), &argv);
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    assert!(
        run.stderr.contains("removed the stale attempt"),
        "{}",
        run.stderr
    );
    before.assert_unchanged(&root, Some("refs/satyrn/candidates/after-kill/head"));
    assert!(dir_entries(tmp.path()).is_empty(), "temporary files left");
}

#[test]
fn the_worktree_of_a_live_deliver_is_never_pruned() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let tmp = tempfile::tempdir().expect("tempdir");
    let marks = tempfile::tempdir().expect("tempdir");
    let pidfile = marks.path().join("pid");
    let go = marks.path().join("go");
    let script = format!(
        "echo $$ > '{}'; n=0; while [ ! -e '{}' ]; do n=$((n+1)); [ $n -gt 2000 ] && exit 9; sleep 0.01; done; echo long > a.txt",
        pidfile.display(),
        go.display()
    );
    let (first, _) = start(&root, "live-first", tmp.path(), &script, &pidfile);
    let contract = ContractFile::any("live-second");
    let argv = [
        OsStr::new("sh"),
        OsStr::new("-c"),
        OsStr::new("echo y > b.txt"),
    ];
    let second = deliver_with_tmp(&root, &contract.path, tmp.path(), &argv);
    assert_eq!(second.code(), "OK", "{}", second.stdout);
    assert!(!second.stderr.contains("stale"), "{}", second.stderr);
    std::fs::write(&go, "").expect("go");
    let run = finish(first.wait_with_output().expect("wait"), Duration::ZERO);
    assert_eq!(
        run.code(),
        "OK",
        "the live attempt was disturbed: {}",
        run.stdout
    );
    assert_eq!(run.receipt["paths"], serde_json::json!(["a.txt"]));
}

#[test]
fn a_lookalike_worktree_without_a_dead_owner_is_never_pruned() {
    use std::os::unix::fs::PermissionsExt;
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let tmp = tempfile::tempdir().expect("tempdir");
    // Named like an attempt of a pid that does not exist, private, but with no marker /
    // a marker of this (live) test process / a marker in the wrong format.
    let dead_pid = 999_999_999u32;
    let cases: [(&str, Option<String>); 3] = [
        ("no-marker", None),
        (
            "live-owner",
            Some(format!(
                "satyrn-deliver-owner 1\npid {dead_pid}\nstart 0\nboot {}\npidns {}\n",
                std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
                    .expect("boot id")
                    .trim(),
                "pid:[0]"
            )),
        ),
        ("garbage", Some("not a marker\n".to_owned())),
    ];
    let mut made: Vec<PathBuf> = Vec::new();
    for (i, (_, marker)) in cases.iter().enumerate() {
        let dir = tmp
            .path()
            .join(format!("satyrn-deliver-{dead_pid}-{i}-000000000"));
        std::fs::create_dir(&dir).expect("mkdir");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        if let Some(m) = marker {
            std::fs::write(dir.join("owner"), m).expect("marker");
        }
        let wt = dir.join("worktree");
        crate::support::git_ok(
            &root,
            &[
                "worktree",
                "add",
                "-q",
                "--detach",
                wt.to_str().expect("utf-8"),
                "HEAD",
            ],
        );
        made.push(wt);
    }
    let before = Caller::capture(&root);
    let contract = ContractFile::any("lookalikes");
    let argv = [
        OsStr::new("sh"),
        OsStr::new("-c"),
        OsStr::new("echo y > b.txt"),
    ];
    let run = deliver_with_tmp(&root, &contract.path, tmp.path(), &argv);
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    before.assert_unchanged(&root, Some("refs/satyrn/candidates/lookalikes/head"));
    for wt in &made {
        assert!(wt.join("a.txt").exists(), "{} was touched", wt.display());
    }
    // Sibling: the same lookalike with a marker naming a dead owner in this pid namespace
    // is pruned.
    let dir = made[0].parent().expect("parent");
    std::fs::write(
        dir.join("owner"),
        format!(
            "satyrn-deliver-owner 1\npid {dead_pid}\nstart 0\nboot {}\npidns {}\n",
            std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
                .expect("boot id")
                .trim(),
            std::fs::read_link("/proc/self/ns/pid")
                .expect("pidns")
                .to_string_lossy()
        ),
    )
    .expect("marker");
    let contract = ContractFile::any("lookalikes-2");
    let run = deliver_with_tmp(&root, &contract.path, tmp.path(), &argv);
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    assert!(!dir.exists(), "the attempt of a dead owner was not pruned");
    assert!(made[1].exists() && made[2].exists());
}

#[test]
fn sigkill_at_any_moment_leaves_no_command_running_and_everything_prunable() {
    // The race: deliver killed before, while or after it starts the command and arms the
    // watchdog. Each round kills at a later moment; every command that started must die, and
    // one later deliver prunes every attempt left behind.
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let before = Caller::capture(&root);
    let tmp = tempfile::tempdir().expect("tempdir");
    let marks = tempfile::tempdir().expect("tempdir");
    let contract = ContractFile::any("kill-race");
    let mut started = 0;
    let rounds = 12;
    let mut sentinels = Vec::new();
    for round in 0..rounds {
        let pidfile = marks.path().join(format!("pid-{round}"));
        let sentinel = marks.path().join(format!("late-{round}"));
        let script = format!(
            "echo $$ > '{}'; (sleep 1; touch '{}') & sleep 1; touch '{}'",
            pidfile.display(),
            sentinel.display(),
            sentinel.display()
        );
        let argv = [OsStr::new("sh"), OsStr::new("-c"), OsStr::new(&script)];
        let mut child = deliver_cmd(&root, &contract.path, &[], &argv)
            .env("TMPDIR", tmp.path())
            .spawn()
            .expect("spawn deliver");
        // The moment of the kill is what the rounds vary.
        std::thread::sleep(Duration::from_millis(25 * round));
        signal(&child, libc::SIGKILL);
        child.wait().expect("wait");
        sentinels.push((pidfile, sentinel));
    }
    // Every command that started (wrote its pid, however late) dies with its group.
    for (round, (pidfile, _)) in sentinels.iter().enumerate() {
        if let Ok(text) = std::fs::read_to_string(pidfile)
            && let Ok(pgid) = text.trim().parse::<i32>()
        {
            started += 1;
            assert!(
                poll_until(Duration::from_secs(5), || !group_alive(pgid)),
                "round {round}: the command's group outlived deliver"
            );
        }
    }
    eprintln!("{started} of {rounds} rounds killed deliver after its command started");
    // A deliver killed in the microseconds between creating its attempt directory and
    // writing the owner marker leaves an empty, unmarked directory (or one whose marker is
    // created but empty), which is swept only once it is a minute old: age such leftovers
    // (and only those) as the clock would.
    let long_ago = std::time::SystemTime::now() - Duration::from_secs(120);
    for name in attempts(tmp.path()) {
        let dir = tmp.path().join(&name);
        let entries = dir_entries(&dir);
        let unwritten_marker = entries == ["owner"]
            && std::fs::metadata(dir.join("owner")).is_ok_and(|m| m.len() == 0);
        if entries.is_empty() || unwritten_marker {
            eprintln!("aging the unmarked {name}");
            std::fs::File::open(&dir)
                .and_then(|d| d.set_modified(long_ago))
                .expect("age");
        }
    }
    // Every group is dead: no sentinel can be written any more.
    assert!(
        !sentinels.iter().any(|(_, s)| s.exists()),
        "a command ran on after deliver was killed"
    );
    let contract = ContractFile::any("kill-race-after");
    let argv = [
        OsStr::new("sh"),
        OsStr::new("-c"),
        OsStr::new("echo y > b.txt"),
    ];
    let run = deliver_with_tmp(&root, &contract.path, tmp.path(), &argv);
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    before.assert_unchanged(&root, Some("refs/satyrn/candidates/kill-race-after/head"));
    assert!(
        dir_entries(tmp.path()).is_empty(),
        "left: {:?}",
        dir_entries(tmp.path())
    );
}

#[test]
fn an_attempt_directory_killed_before_worktree_add_is_swept() {
    use std::os::unix::fs::PermissionsExt;
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let tmp = tempfile::tempdir().expect("tempdir");
    let dead_pid = 999_999_998u32;
    let marker = format!(
        "satyrn-deliver-owner 1\npid {dead_pid}\nstart 0\nboot {}\npidns {}\n",
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .expect("boot id")
            .trim(),
        std::fs::read_link("/proc/self/ns/pid")
            .expect("pidns")
            .to_string_lossy()
    );
    // One without a worktree (swept), one with an unregistered worktree directory (left:
    // it may belong to another repository), one empty without a marker (swept), one of a
    // live owner (left), one empty without a marker named for this live process (left).
    let dirs: Vec<PathBuf> = (0..3)
        .map(|i| {
            let dir = tmp
                .path()
                .join(format!("satyrn-deliver-{dead_pid}-{i}-000000000"));
            std::fs::create_dir(&dir).expect("mkdir");
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
            dir
        })
        .collect();
    std::fs::write(dirs[0].join("owner"), &marker).expect("marker");
    // Abandoned for two minutes (a marker-less directory counts only after one).
    let long_ago = std::time::SystemTime::now() - Duration::from_secs(120);
    std::fs::File::open(&dirs[2])
        .and_then(|d| d.set_modified(long_ago))
        .expect("age the directory");
    std::fs::write(dirs[1].join("owner"), &marker).expect("marker");
    std::fs::create_dir(dirs[1].join("worktree")).expect("mkdir");
    let me = std::process::id();
    let live = tmp.path().join(format!("satyrn-deliver-{me}-9-000000000"));
    std::fs::create_dir(&live).expect("mkdir");
    std::fs::set_permissions(&live, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let stat = std::fs::read_to_string("/proc/self/stat").expect("stat");
    let start = stat[stat.rfind(')').expect(")") + 1..]
        .split_whitespace()
        .nth(19)
        .expect("starttime")
        .to_owned();
    std::fs::write(
        live.join("owner"),
        marker
            .replace(&format!("pid {dead_pid}"), &format!("pid {me}"))
            .replace("start 0", &format!("start {start}")),
    )
    .expect("marker");
    let unmarked_live = tmp.path().join(format!("satyrn-deliver-{me}-8-000000000"));
    std::fs::create_dir(&unmarked_live).expect("mkdir");
    std::fs::set_permissions(&unmarked_live, std::fs::Permissions::from_mode(0o700))
        .expect("chmod");
    std::fs::File::open(&unmarked_live)
        .and_then(|d| d.set_modified(long_ago))
        .expect("age the directory");
    // A fresh one of a dead pid: left (its deliver may be about to write its marker).
    let fresh = tmp
        .path()
        .join(format!("satyrn-deliver-{dead_pid}-7-000000000"));
    std::fs::create_dir(&fresh).expect("mkdir");
    std::fs::set_permissions(&fresh, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    // Killed between creating its marker and writing it: an empty `owner`, swept like an
    // empty directory. Its sibling holds a marker with something written that is not one:
    // left, since nothing proves whose it is.
    let unwritten = tmp
        .path()
        .join(format!("satyrn-deliver-{dead_pid}-5-000000000"));
    let garbled = tmp
        .path()
        .join(format!("satyrn-deliver-{dead_pid}-6-000000000"));
    for (dir, content) in [(&unwritten, ""), (&garbled, "x")] {
        std::fs::create_dir(dir).expect("mkdir");
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        std::fs::write(dir.join("owner"), content).expect("marker");
        std::fs::File::open(dir)
            .and_then(|d| d.set_modified(long_ago))
            .expect("age the directory");
    }
    let contract = ContractFile::any("swept");
    let argv = [
        OsStr::new("sh"),
        OsStr::new("-c"),
        OsStr::new("echo y > b.txt"),
    ];
    let run = deliver_with_tmp(&root, &contract.path, tmp.path(), &argv);
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    assert!(
        !dirs[0].exists(),
        "the dead owner's empty attempt was not swept"
    );
    assert!(
        dirs[1].join("worktree").exists(),
        "an unregistered worktree was removed"
    );
    assert!(
        live.join("owner").exists(),
        "a live owner's attempt was removed"
    );
    assert!(
        !dirs[2].exists(),
        "an empty, unmarked attempt of a dead pid was not swept"
    );
    assert!(
        unmarked_live.exists(),
        "a live process's fresh directory was removed"
    );
    assert!(fresh.exists(), "a fresh unmarked directory was removed");
    assert!(
        !unwritten.exists(),
        "an attempt with an empty marker of a dead pid was not swept"
    );
    assert_eq!(
        std::fs::read(garbled.join("owner")).expect("the garbled marker is kept"),
        b"x"
    );
}

/// The children of `pid` whose command line is `… __deliver-watchdog`.
fn watchdogs_of(pid: u32) -> Vec<u32> {
    children(pid)
        .into_iter()
        .filter(|child| {
            let cmdline = std::fs::read(format!("/proc/{child}/cmdline")).unwrap_or_default();
            cmdline
                .split(|b| *b == 0)
                .any(|a| a == b"__deliver-watchdog")
        })
        .collect()
}

#[test]
fn the_watchdog_lives_exactly_as_long_as_the_command_and_harms_nothing() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let tmp = tempfile::tempdir().expect("tempdir");
    let marks = tempfile::tempdir().expect("tempdir");
    let pidfile = marks.path().join("pid");
    let go = marks.path().join("go");
    let script = format!(
        "echo $$ > '{}'; n=0; while [ ! -e '{}' ]; do n=$((n+1)); [ $n -gt 2000 ] && exit 9; sleep 0.01; done; echo w > a.txt",
        pidfile.display(),
        go.display()
    );
    let (child, pgid) = start(&root, "watched", tmp.path(), &script, &pidfile);
    let dogs = watchdogs_of(child.id());
    assert_eq!(
        dogs.len(),
        1,
        "one watchdog while the command runs: {dogs:?}"
    );
    let dog = dogs[0];
    // Terminal-style signals to deliver's process group do not reach the watchdog: it has
    // a group of its own.
    let stat = std::fs::read_to_string(format!("/proc/{dog}/stat")).expect("stat");
    let dog_pgrp = stat[stat.rfind(')').expect(")") + 1..]
        .split_whitespace()
        .nth(2)
        .expect("pgrp")
        .to_owned();
    assert_eq!(
        dog_pgrp,
        dog.to_string(),
        "the watchdog leads its own group"
    );
    assert!(group_alive(pgid));
    std::fs::write(&go, "").expect("go");
    let run = finish(child.wait_with_output().expect("wait"), Duration::ZERO);
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    assert!(
        !Path::new(&format!("/proc/{dog}")).exists()
            || poll_until(Duration::from_secs(5), || !Path::new(&format!(
                "/proc/{dog}"
            ))
            .exists()),
        "the watchdog outlived deliver"
    );
}

/// Runs the watchdog by hand, arms it for `pid`, closes its stdin (as `deliver`'s death
/// would) and waits for it.
fn watchdog_for(pid: u32) {
    use std::io::Write;
    let mut dog = std::process::Command::new(crate::support::host_bin())
        .arg("__deliver-watchdog")
        .arg(std::process::id().to_string())
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("spawn watchdog");
    let mut stdin = dog.stdin.take().expect("stdin");
    writeln!(stdin, "arm {pid}").expect("arm");
    drop(stdin);
    let status = dog.wait().expect("wait watchdog");
    assert_eq!(status.code(), Some(0));
}

#[test]
fn the_watchdog_kills_only_a_session_its_parent_started() {
    use std::os::unix::process::CommandExt;
    // Not a session leader (it shares the test's session): never killed.
    let mut plain = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("spawn");
    watchdog_for(plain.id());
    assert!(
        plain.try_wait().expect("try_wait").is_none(),
        "killed a stranger"
    );
    plain.kill().expect("kill");
    plain.wait().expect("wait");
    // A session leader someone else started (its parent is a shell, not the watchdog's
    // parent): never killed.
    let marks = tempfile::tempdir().expect("tempdir");
    let pidfile = marks.path().join("pid");
    let mut shell = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "setsid sleep 30 & echo $! > '{}'; wait",
            pidfile.display()
        ))
        .spawn()
        .expect("spawn");
    let foreign = read_pid(&pidfile);
    assert!(
        poll_until(Duration::from_secs(5), || {
            std::fs::read_to_string(format!("/proc/{foreign}/stat")).is_ok_and(|s| {
                let f: Vec<String> = s[s.rfind(')').expect(")") + 1..]
                    .split_whitespace()
                    .map(str::to_owned)
                    .collect();
                f.get(3) == Some(&foreign.to_string())
            })
        }),
        "the foreign process never led its session"
    );
    watchdog_for(u32::try_from(foreign).expect("pid"));
    assert!(group_alive(foreign), "killed a foreign session");
    // SAFETY: kill(2) on the sleeper this test started (through its shell).
    unsafe {
        libc::kill(foreign, libc::SIGKILL);
    }
    shell.wait().expect("wait shell");
    // Init: never.
    watchdog_for(1);
    // Sibling: a session leader started by the watchdog's parent is killed with its group.
    let mut leader = std::process::Command::new("sh");
    leader.arg("-c").arg("sleep 30 & sleep 30");
    // SAFETY: setsid(2) is async-signal-safe and touches no memory of the parent.
    unsafe {
        leader.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut leader = leader.spawn().expect("spawn");
    let pgid = i32::try_from(leader.id()).expect("pid");
    watchdog_for(leader.id());
    let status = leader.wait().expect("wait");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL)
    );
    assert!(
        poll_until(Duration::from_secs(5), || !group_alive(pgid)),
        "the session's group survived"
    );
}

#[test]
fn concurrent_delivers_on_one_repository_never_fail_each_other() {
    // `git worktree add` makes its administrative entry non-atomically; a concurrent
    // `worktree list`/`add`/`prune` that reads it half-made fails. Looped: rounds of four
    // delivers at once, every one must succeed.
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let before = Caller::capture(&root);
    let (rounds, width) = (12, 4);
    let mut failures = Vec::new();
    for round in 0..rounds {
        let contracts: Vec<ContractFile> = (0..width)
            .map(|i| ContractFile::any(&format!("crowd-{round}-{i}")))
            .collect();
        let children: Vec<Child> = contracts
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let script = format!("echo {round}-{i} > a.txt");
                let argv = [OsStr::new("sh"), OsStr::new("-c"), OsStr::new(&script)];
                deliver_cmd(&root, &c.path, &[], &argv)
                    .spawn()
                    .expect("spawn deliver")
            })
            .collect();
        for child in children {
            let run = finish(child.wait_with_output().expect("wait"), Duration::ZERO);
            if run.code() != "OK" {
                failures.push(run.stdout.clone());
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} concurrent delivers failed: {failures:#?}",
        failures.len(),
        rounds * width
    );
    let names: Vec<String> = (0..rounds)
        .flat_map(|r| (0..width).map(move |i| format!("refs/satyrn/candidates/crowd-{r}-{i}/head")))
        .collect();
    before.assert_unchanged_but_refs(&root, &names);
}
