//! `deliver` and the repository's worktree lock (`deliver/admin_lock.rs`) held by another
//! process: a real `flock` on the common git directory, taken by this test as another
//! `deliver` would take it.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::Child;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::deliver_support::*;
use crate::support::{ContractFile, dir_entries};

/// An exclusive `flock` on `root/.git`, as `deliver` takes it; released on drop.
struct HeldLock {
    _dir: std::fs::File,
}

impl HeldLock {
    fn take(root: &Path) -> Self {
        let dir = std::fs::File::open(root.join(".git")).expect("open .git");
        // SAFETY: `flock` on a descriptor this function owns; no memory is passed.
        let rc = unsafe { libc::flock(dir.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        assert_eq!(rc, 0, "flock: {}", std::io::Error::last_os_error());
        Self { _dir: dir }
    }
}

/// Starts `deliver` running `script`, and returns it once its stderr said that it waits
/// for the lock (with that stderr so far).
fn start_waiting(root: &Path, contract: &Path, tmp: &Path, script: &str) -> (Child, String) {
    let argv = [OsStr::new("sh"), OsStr::new("-c"), OsStr::new(script)];
    let mut child = deliver_cmd(root, contract, &[], &argv)
        .env("TMPDIR", tmp)
        .spawn()
        .expect("spawn deliver");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    // Reads stderr to its end, so deliver never writes into a closed pipe.
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    let mut seen = String::new();
    let end = Instant::now() + Duration::from_secs(60);
    while Instant::now() < end {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(line) => {
                seen.push_str(&line);
                seen.push('\n');
                if line.contains("waiting for the worktree lock") {
                    return (child, seen);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    kill_tree(&mut child);
    panic!("deliver never said it waits for the lock; stderr: {seen}");
}

#[test]
fn a_deliver_waits_for_a_held_worktree_lock_and_goes_on_once_it_is_free() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let before = Caller::capture(&root);
    let tmp = tempfile::tempdir().expect("tempdir");
    let contract = ContractFile::any("waits");
    let held = HeldLock::take(&root);
    let t0 = Instant::now();
    let (child, stderr) = start_waiting(&root, &contract.path, tmp.path(), "echo x > a.txt");
    let git_dir = std::fs::canonicalize(root.join(".git")).expect("realpath");
    assert!(
        stderr.contains(&format!("{}", git_dir.display())),
        "the message names the repository's git directory: {stderr}"
    );
    // Waiting, it has registered nothing yet.
    assert_eq!(worktree_count(&root), 1, "{}", git_worktrees(&root));
    assert!(
        child_running(&child),
        "deliver ended while the lock was held"
    );
    drop(held);
    let run = wait_ended(child, Duration::from_secs(60), t0);
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    assert_eq!(run.status, 0);
    let name = "refs/satyrn/candidates/waits/head";
    assert_eq!(run.receipt["candidate_ref"], name);
    assert_eq!(show(&root, &format!("{name}:a.txt")), b"x\n");
    before.assert_unchanged(&root, Some(name));
    assert!(dir_entries(tmp.path()).is_empty(), "temporary files left");
}

#[test]
fn a_signal_while_waiting_for_the_worktree_lock_ends_deliver_before_any_worktree() {
    for signal_number in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
        let root = repo.path();
        let before = Caller::capture(&root);
        let tmp = tempfile::tempdir().expect("tempdir");
        let marks = tempfile::tempdir().expect("tempdir");
        let ran = marks.path().join("ran");
        let contract = ContractFile::any("stopped");
        let held = HeldLock::take(&root);
        let script = format!("echo ran > '{}'; echo x > a.txt", ran.display());
        let t0 = Instant::now();
        let (child, _) = start_waiting(&root, &contract.path, tmp.path(), &script);
        signal(&child, signal_number);
        let run = wait_ended(child, Duration::from_secs(30), t0);
        // Nothing was started: refused, as a signal before the worktree always is.
        assert_no_candidate(&run, "INTERRUPTED", 8);
        assert_eq!(run.outcome(), "refused", "{}", run.stdout);
        let message = run.receipt["message"].as_str().expect("message");
        assert!(message.contains("before the attempt started"), "{message}");
        assert_eq!(run.receipt["exit_code"], serde_json::Value::Null);
        assert!(!ran.exists(), "the command ran after the signal");
        assert_eq!(worktree_count(&root), 1, "{}", git_worktrees(&root));
        before.assert_unchanged(&root, None);
        assert!(dir_entries(tmp.path()).is_empty(), "temporary files left");
        drop(held);
        sibling_success(&root, "stopped");
    }
}

fn child_running(child: &Child) -> bool {
    alive(i32::try_from(child.id()).expect("pid"))
}

fn worktree_count(root: &Path) -> usize {
    git_worktrees(root)
        .lines()
        .filter(|l| l.starts_with("worktree "))
        .count()
}
