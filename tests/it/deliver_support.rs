//! The shared harness of the `deliver*` modules: reproducible repositories, the caller's
//! state before and after, running `deliver` and reading its one receipt, and the `/proc`
//! and polling helpers that watch the processes a delivery starts. Every wait polls up to a
//! deadline; none sleeps a fixed time.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{ContractFile, git, git_ok, host_bin, without_git_location};

/// A fixed date for test commits, so base (and so candidate) commits are reproducible.
const TEST_DATE: &str = "1700000000 +0000";

/// A repository whose first commit is reproducible (fixed identity and dates).
pub struct FixedRepo {
    pub dir: tempfile::TempDir,
}

impl FixedRepo {
    pub fn with_files(files: &[(&str, &[u8])]) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("repo");
        std::fs::create_dir(&root).expect("mkdir repo");
        git_ok(&root, &["init", "-q", "-b", "main", "."]);
        for (path, content) in files {
            let full = root.join(path);
            std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
            std::fs::write(&full, content).expect("write");
        }
        commit_all(&root, "init");
        Self { dir }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.path().join("repo")
    }
}

/// `git add -A && git commit` with the fixed date.
pub fn commit_all(root: &Path, message: &str) {
    git_ok(root, &["add", "-A"]);
    let out = git(root)
        .args(["commit", "-q", "--allow-empty", "-m", message])
        .env("GIT_AUTHOR_DATE", TEST_DATE)
        .env("GIT_COMMITTER_DATE", TEST_DATE)
        .output()
        .expect("git commit");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Everything of the caller's repository that `deliver` must not change.
#[derive(Debug, PartialEq, Eq)]
pub struct Caller {
    status: Vec<u8>,
    index: Option<Vec<u8>>,
    head: String,
    branch: String,
    refs: Vec<String>,
    worktrees: Vec<u8>,
}

fn quiet_git(dir: &Path, args: &[&str]) -> Vec<u8> {
    let out = git(dir)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

impl Caller {
    pub fn capture(root: &Path) -> Self {
        let git_dir = String::from_utf8(quiet_git(root, &["rev-parse", "--absolute-git-dir"]))
            .expect("utf-8");
        // The index is read before any git command that could refresh it runs.
        let index = std::fs::read(Path::new(git_dir.trim()).join("index")).ok();
        let status = quiet_git(
            root,
            &[
                "status",
                "--porcelain=v1",
                "-z",
                "--untracked-files=all",
                "--ignore-submodules=none",
            ],
        );
        let head = String::from_utf8(quiet_git(root, &["rev-parse", "HEAD"])).expect("utf-8");
        let branch = git(root)
            .env("GIT_OPTIONAL_LOCKS", "0")
            .args(["symbolic-ref", "-q", "HEAD"])
            .output()
            .expect("git");
        let refs = String::from_utf8(quiet_git(
            root,
            &[
                "for-each-ref",
                "--format=%(refname) %(objectname) %(symref)",
            ],
        ))
        .expect("utf-8")
        .lines()
        .map(str::to_owned)
        .collect();
        let worktrees = quiet_git(root, &["worktree", "list", "--porcelain", "-z"]);
        Self {
            status,
            index,
            head,
            branch: String::from_utf8_lossy(&branch.stdout).into_owned(),
            refs,
            worktrees,
        }
    }

    /// Asserts nothing changed except the new candidate refs `names`, which must exist.
    pub fn assert_unchanged_but_refs(&self, root: &Path, names: &[String]) {
        let mut now = Self::capture(root);
        for name in names {
            let before = now.refs.len();
            now.refs.retain(|r| !r.starts_with(&format!("{name} ")));
            assert_eq!(
                before,
                now.refs.len() + 1,
                "the candidate ref {name} must exist"
            );
            if let Some(id_dir) = name.strip_suffix("/head") {
                now.refs
                    .retain(|r| !r.starts_with(&format!("{id_dir}/receipt ")));
            }
        }
        assert_eq!(self, &now, "the caller's repository changed");
    }

    /// Asserts nothing changed, then that a delivery with the fresh id `id` succeeds in the
    /// same repository: the sibling success every refusal is followed by.
    pub fn assert_unchanged_then_sibling(&self, root: &Path, id: &str) {
        self.assert_unchanged(root, None);
        sibling_success(root, id);
    }

    /// Asserts nothing changed except, when given, the new candidate ref.
    pub fn assert_unchanged(&self, root: &Path, new_ref: Option<&str>) {
        let names: Vec<String> = new_ref.iter().map(|n| (*n).to_owned()).collect();
        self.assert_unchanged_but_refs(root, &names);
    }
}

/// One `deliver` run.
#[derive(Debug)]
pub struct Run {
    pub status: i32,
    pub receipt: Value,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Run {
    pub fn code(&self) -> &str {
        self.receipt["code"].as_str().expect("code")
    }
    pub fn outcome(&self) -> &str {
        self.receipt["outcome"].as_str().expect("outcome")
    }
    /// The receipt line with `repo` replaced by `@REPO@`.
    pub fn normalized(&self, repo: &Path) -> String {
        let spelled = serde_json::to_string(&repo.to_string_lossy()).expect("json");
        self.stdout.replace(&spelled, "\"@REPO@\"")
    }
}

pub fn deliver_cmd(repo: &Path, contract: &Path, opts: &[&str], argv: &[&OsStr]) -> Command {
    let mut cmd = Command::new(host_bin());
    cmd.arg("deliver")
        .arg("--repo")
        .arg(repo)
        .args(opts)
        .arg(contract)
        .arg("--")
        .args(argv)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    without_git_location(&mut cmd);
    cmd
}

/// Checks the one-receipt promise and parses the receipt.
pub fn finish(out: std::process::Output, elapsed: Duration) -> Run {
    let stdout = String::from_utf8(out.stdout).expect("utf-8 stdout");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        stdout.ends_with('\n') && stdout.matches('\n').count() == 1,
        "exactly one receipt line expected, got {stdout:?} (stderr {stderr:?})"
    );
    assert!(!stderr.contains("panicked"), "panic on stderr: {stderr}");
    let receipt: Value = serde_json::from_str(stdout.trim_end()).expect("receipt is JSON");
    let keys: Vec<&str> = receipt
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    let mut in_order = keys.clone();
    in_order.sort_by_key(|k| FIELDS.iter().position(|f| f == k));
    // `warnings` is additive: absent when empty, else the last field and never empty.
    // `published` is additive too: only with `--push`, after `signal`.
    let extra = usize::from(receipt.get("warnings").is_some())
        + usize::from(receipt.get("published").is_some())
        + usize::from(receipt.get("attempt").is_some())
        + usize::from(receipt.get("outside_contract").is_some())
        + usize::from(receipt.get("confinement").is_some());
    if let Some(at) = stdout.find("\"published\":") {
        assert!(
            stdout.find("\"signal\":") < Some(at),
            "published after signal: {stdout}"
        );
    }
    if let Some(at) = stdout.find("\"attempt\":{") {
        assert!(
            stdout.find("\"signal\":") < Some(at),
            "attempt after signal: {stdout}"
        );
    }
    if receipt.get("warnings").is_some() {
        assert!(
            !receipt["warnings"].as_array().expect("array").is_empty(),
            "{stdout}"
        );
        let (signal, warnings) = (stdout.find("\"signal\":"), stdout.find("\"warnings\":"));
        assert!(signal < warnings, "warnings must come last: {stdout}");
    }
    assert_eq!(
        keys.len() - extra,
        FIELDS.len(),
        "every field present: {stdout}"
    );
    Run {
        status: out.status.code().expect("exited normally"),
        receipt,
        stdout,
        stderr,
        elapsed,
    }
}

/// The frozen field order (checked against the raw line, not the parsed map).
pub const FIELDS: [&str; 13] = [
    "version",
    "outcome",
    "code",
    "message",
    "contract_id",
    "repo",
    "base_commit",
    "candidate_ref",
    "candidate_commit",
    "paths",
    "retained_worktree",
    "exit_code",
    "signal",
];

pub fn assert_field_order(line: &str) {
    let mut at = 0;
    for f in FIELDS {
        let needle = format!("\"{f}\":");
        let pos = line[at..]
            .find(&needle)
            .unwrap_or_else(|| panic!("{f} missing or out of order in {line}"));
        at += pos + needle.len();
    }
}

pub fn deliver_os(repo: &Path, contract: &Path, opts: &[&str], argv: &[&OsStr]) -> Run {
    let started = Instant::now();
    let out = deliver_cmd(repo, contract, opts, argv)
        .output()
        .expect("run deliver");
    let run = finish(out, started.elapsed());
    assert_field_order(&run.stdout);
    run
}

pub fn deliver(repo: &Path, contract: &Path, argv: &[&str]) -> Run {
    let argv: Vec<&OsStr> = argv.iter().map(OsStr::new).collect();
    deliver_os(repo, contract, &[], &argv)
}

/// Runs `deliver` with `TMPDIR` set to `tmp` and checks its one receipt.
pub fn deliver_with_tmp(root: &Path, contract: &Path, tmp: &Path, argv: &[&OsStr]) -> Run {
    let out = deliver_cmd(root, contract, &[], argv)
        .env("TMPDIR", tmp)
        .output()
        .expect("run deliver");
    finish(out, Duration::ZERO)
}

/// Asserts a `discarded` receipt with `code` and no candidate (exit 8).
pub fn assert_discarded(run: &Run, code: &str) {
    assert_no_candidate(run, code, 8);
    assert_eq!(run.outcome(), "discarded", "{}", run.stdout);
}

/// `sh -c SCRIPT`.
pub fn sh(script: &str) -> Vec<&str> {
    vec!["sh", "-c", script]
}

/// Runs a successful delivery with a fresh id in `root` and checks it and the caller.
pub fn sibling_success(root: &Path, id: &str) {
    let before = Caller::capture(root);
    let contract = ContractFile::any(id);
    let run = deliver(root, &contract.path, &sh("echo sibling > sibling-file.txt"));
    assert_eq!(run.code(), "OK", "sibling success: {}", run.stdout);
    assert_eq!(run.status, 0);
    let name = format!("refs/satyrn/candidates/{id}/head");
    assert_eq!(run.receipt["candidate_ref"], name.as_str());
    before.assert_unchanged(root, Some(&name));
}

/// Asserts a refusal/discard: code, exit 8 (or `exit`), no candidate, caller unchanged.
pub fn assert_no_candidate(run: &Run, code: &str, exit: i32) {
    assert_eq!(run.code(), code, "{}", run.stdout);
    assert_eq!(run.status, exit, "{}", run.stdout);
    assert_eq!(run.receipt["candidate_ref"], Value::Null);
    assert_eq!(run.receipt["candidate_commit"], Value::Null);
    assert_eq!(run.receipt["paths"], serde_json::json!([]));
    assert_eq!(run.receipt["retained_worktree"], Value::Null);
}

/// Compares `actual` with the committed fixture `name`. With `SATYRN_BLESS_FIXTURES=1` the
/// fixture is (re)written instead: review the diff before committing it.
pub fn assert_fixture(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/receipts")
        .join(name);
    if std::env::var_os("SATYRN_BLESS_FIXTURES").is_some_and(|v| v == "1") {
        std::fs::write(&path, actual).expect("bless fixture");
        return;
    }
    assert_eq!(actual, fixture(name), "receipt differs from fixture {name}");
}

pub fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/receipts")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn show(root: &Path, spec: &str) -> Vec<u8> {
    let out = git(root)
        .args(["cat-file", "blob", spec])
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "{spec}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The registered worktree paths of `root`, as one string (for `contains`).
pub fn git_worktrees(root: &Path) -> String {
    git_ok(root, &["worktree", "list", "--porcelain"])
}

/// Asserts a private `TMPDIR` given to `deliver` holds nothing afterwards.
pub fn assert_empty_tmp(tmp: &Path) {
    let left = crate::support::dir_entries(tmp);
    assert!(left.is_empty(), "temporary files left behind: {left:?}");
}

/// One process as `/proc/PID/stat` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: u32,
    pub state: String,
    pub ppid: u32,
    pub pgrp: i32,
    pub session: i32,
}

impl ProcStat {
    /// A zombie or dead process: it runs no code any more.
    pub fn dead(&self) -> bool {
        self.state == "Z" || self.state == "X"
    }
}

/// Every process `/proc` lists now (those that vanish while it is read are left out).
pub fn proc_stats() -> Vec<ProcStat> {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_string_lossy().parse::<u32>().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let close = stat.rfind(')')?;
            let f: Vec<&str> = stat[close + 1..].split_whitespace().take(4).collect();
            Some(ProcStat {
                pid,
                state: (*f.first()?).to_owned(),
                ppid: f.get(1)?.parse().ok()?,
                pgrp: f.get(2)?.parse().ok()?,
                session: f.get(3)?.parse().ok()?,
            })
        })
        .collect()
}

/// Whether any live process is in process group `pgid`.
pub fn group_alive(pgid: i32) -> bool {
    proc_stats().iter().any(|p| p.pgrp == pgid && !p.dead())
}

/// Whether process `pid` is alive (not a zombie).
pub fn alive(pid: i32) -> bool {
    proc_stats()
        .iter()
        .any(|p| i64::from(p.pid) == i64::from(pid) && !p.dead())
}

/// Pids of the zombie children of `parent`.
pub fn zombie_children(parent: u32) -> Vec<u32> {
    proc_stats()
        .into_iter()
        .filter(|p| p.ppid == parent && p.state == "Z")
        .map(|p| p.pid)
        .collect()
}

/// The children of `parent`.
pub fn children(parent: u32) -> Vec<u32> {
    proc_stats()
        .into_iter()
        .filter(|p| p.ppid == parent)
        .map(|p| p.pid)
        .collect()
}

/// Every descendant of `pid`, children first.
pub fn descendants(pid: u32) -> Vec<u32> {
    let stats = proc_stats();
    let mut found = Vec::new();
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        for p in stats.iter().filter(|p| p.ppid == parent) {
            found.push(p.pid);
            frontier.push(p.pid);
        }
    }
    found
}

/// Stops a `deliver` that failed its test, and everything it started (the failure path
/// only: a fixed `deliver` ends by itself).
pub fn kill_tree(child: &mut Child) {
    for pid in descendants(child.id()) {
        // SAFETY: kill(2) on a descendant of our own child; at worst ESRCH.
        unsafe {
            libc::kill(i32::try_from(pid).expect("pid"), libc::SIGKILL);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Sends `signal` to our child `child`.
pub fn signal(child: &Child, signal: i32) {
    let pid = i32::try_from(child.id()).expect("pid");
    // SAFETY: kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
}

/// Polls `cond` every 20 ms until it holds (`true`) or `limit` has passed (`false`).
pub fn poll_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for `path` to exist (up to 20 s), failing the test otherwise.
pub fn wait_for(path: &Path) {
    assert!(
        poll_until(Duration::from_secs(20), || path.exists()),
        "{} never appeared",
        path.display()
    );
}

/// Reads the pid a command wrote to `path` (polling until it is complete).
pub fn read_pid(path: &Path) -> i32 {
    let mut pid = None;
    assert!(
        poll_until(Duration::from_secs(20), || {
            pid = std::fs::read_to_string(path)
                .ok()
                .filter(|t| t.ends_with('\n'))
                .and_then(|t| t.trim().parse().ok());
            pid.is_some()
        }),
        "the command never wrote its pid to {}",
        path.display()
    );
    pid.expect("pid")
}

/// Waits for the spawned `deliver` to end, up to `limit`; a `deliver` still running then is
/// killed with everything it started and the test fails (it never hangs).
pub fn wait_ended(mut child: Child, limit: Duration, t0: Instant) -> Run {
    if !poll_until(limit, || child.try_wait().expect("try_wait").is_some()) {
        kill_tree(&mut child);
        panic!("deliver did not end within {limit:?}");
    }
    finish(child.wait_with_output().expect("wait"), t0.elapsed())
}

/// Asserts that no process written to the pid files `pids` is alive: checked at once,
/// since `deliver` stops (and reaps) every one of them before it prints its receipt.
pub fn assert_all_stopped(pids: &[&Path]) {
    for file in pids {
        let pid = read_pid(file);
        assert!(
            !alive(pid),
            "{pid} (from {}) outlived deliver",
            file.display()
        );
    }
}

/// Waits up to `limit` for `child` to end (killing it and failing past that) and returns
/// its output.
pub fn wait_ended_output(mut child: Child, limit: Duration) -> std::process::Output {
    if !poll_until(limit, || child.try_wait().expect("try_wait").is_some()) {
        kill_tree(&mut child);
        panic!("the process did not end within {limit:?}");
    }
    child.wait_with_output().expect("wait")
}
