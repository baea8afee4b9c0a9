//! A series split over machines: `deliver --attempt-from slurm|kubernetes` takes the index
//! from the scheduler's variable, every index leaves its result on the shared remote (a
//! candidate, or its receipt alone), a rerun of an index overwrites nothing, an interrupted
//! index leaves nothing so its requeue completes, and `candidates series` reads the rows
//! back. The remote is a real bare repository; the "machines" are clones of it. (The same on
//! a real Slurm cluster: `tests/it/slurm.rs`.)

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::candidates::candidates;
use crate::deliver_support::{Run, deliver_cmd, finish, poll_until, sh};
use crate::support::{ContractFile, git_ok};

/// The fleet of `candidates_remote` (an origin, a bare remote, machines `m1` and `m2`) and a
/// contract `feat` that declares `a.txt`.
struct Fleet {
    fleet: crate::candidates_remote::Fleet,
    contract: ContractFile,
}

impl Fleet {
    fn new() -> Self {
        Self {
            fleet: crate::candidates_remote::Fleet::new(),
            contract: ContractFile::new("feat", &["a.txt"]),
        }
    }

    fn bare(&self) -> String {
        self.fleet.bare().to_string_lossy().into_owned()
    }

    fn machine(&self, name: &str) -> PathBuf {
        self.fleet.machine(name)
    }

    fn remote_refs(&self) -> String {
        self.fleet.remote_refs()
    }

    /// `deliver --attempt-from <scheduler>` on `machine` with `var=value`, running `script`.
    fn attempt(&self, machine: &str, opts: &[&str], var: (&str, &str), script: &str) -> Run {
        let argv: Vec<&OsStr> = sh(script).into_iter().map(OsStr::new).collect();
        let mut cmd = deliver_cmd(&self.machine(machine), &self.contract.path, opts, &argv);
        cmd.env_remove("SLURM_ARRAY_TASK_ID")
            .env_remove("JOB_COMPLETION_INDEX")
            .env(var.0, var.1);
        let started = std::time::Instant::now();
        finish(cmd.output().expect("deliver"), started.elapsed())
    }

    fn slurm(&self, machine: &str, index: &str, script: &str) -> Run {
        let bare = self.bare();
        self.attempt(
            machine,
            &["--attempt-from", "slurm", "--push", &bare],
            ("SLURM_ARRAY_TASK_ID", index),
            script,
        )
    }
}

fn published(run: &Run) -> (bool, &str) {
    let p = &run.receipt["published"];
    (
        p["pushed"].as_bool().expect("pushed"),
        p["message"].as_str().expect("message"),
    )
}

fn series(repo: &Path, args: &[&str]) -> Value {
    let mut all = vec!["series", "--json"];
    all.extend_from_slice(args);
    let answer = candidates(repo, &all);
    assert_eq!(answer.status, 0, "{} {}", answer.stdout, answer.stderr);
    serde_json::from_str(&answer.stdout).expect("JSON")
}

/// The index comes from the scheduler's own variable (Slurm's as is, Kubernetes' 0-based
/// one plus one), the command sees it, the receipt records it with the host and the
/// duration; a missing or bad variable is a usage error before anything happens.
#[test]
fn the_scheduler_names_the_attempt_and_a_bad_variable_is_a_usage_error() {
    let fleet = Fleet::new();
    let write = "echo \"index $SATYRN_ATTEMPT_INDEX\" > a.txt";
    let run = fleet.attempt(
        "m1",
        &["--attempt-from", "slurm"],
        ("SLURM_ARRAY_TASK_ID", "3"),
        write,
    );
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    assert_eq!(
        run.receipt["candidate_ref"],
        "refs/satyrn/candidates/feat/003/head"
    );
    let attempt = &run.receipt["attempt"];
    assert_eq!(attempt["index"], 3);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("hostname");
    assert_eq!(attempt["host"], host.trim());
    assert!(
        attempt["duration_ms"].as_u64().expect("duration") > 0,
        "{attempt}"
    );
    let blob = git_ok(
        &fleet.machine("m1"),
        &["show", "refs/satyrn/candidates/feat/003/head:a.txt"],
    );
    assert_eq!(blob, "index 3\n");

    let run = fleet.attempt(
        "m1",
        &["--attempt-from", "kubernetes"],
        ("JOB_COMPLETION_INDEX", "0"),
        write,
    );
    assert_eq!(
        run.receipt["candidate_ref"], "refs/satyrn/candidates/feat/001/head",
        "{}",
        run.stdout
    );

    let refs = git_ok(&fleet.machine("m1"), &["for-each-ref", "refs/satyrn"]);
    for (scheduler, var, value, named) in [
        ("slurm", "SLURM_ARRAY_TASK_ID", "abc", "SLURM_ARRAY_TASK_ID"),
        ("slurm", "SLURM_ARRAY_TASK_ID", "0", "SLURM_ARRAY_TASK_ID=0"),
        ("slurm", "SLURM_ARRAY_TASK_ID", "", "SLURM_ARRAY_TASK_ID"),
        (
            "kubernetes",
            "JOB_COMPLETION_INDEX",
            "999",
            "JOB_COMPLETION_INDEX=999",
        ),
        (
            "kubernetes",
            "SOMETHING_ELSE",
            "1",
            "needs JOB_COMPLETION_INDEX",
        ),
    ] {
        let argv: Vec<&OsStr> = sh(write).into_iter().map(OsStr::new).collect();
        let out = deliver_cmd(
            &fleet.machine("m1"),
            &fleet.contract.path,
            &["--attempt-from", scheduler],
            &argv,
        )
        .env_remove("SLURM_ARRAY_TASK_ID")
        .env_remove("JOB_COMPLETION_INDEX")
        .env(var, value)
        .output()
        .expect("deliver");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{var}={value}: {stderr}");
        assert!(out.stdout.is_empty(), "{var}={value}");
        assert!(stderr.contains(named), "{var}={value}: {stderr}");
    }
    assert_eq!(
        git_ok(&fleet.machine("m1"), &["for-each-ref", "refs/satyrn"]),
        refs
    );
    // --attempt-from excludes --attempt and --attempts.
    for other in [["--attempt", "2"], ["--attempts", "2"]] {
        let argv: Vec<&OsStr> = sh(write).into_iter().map(OsStr::new).collect();
        let mut opts = vec!["--attempt-from", "slurm"];
        opts.extend_from_slice(&other);
        let out = deliver_cmd(&fleet.machine("m1"), &fleet.contract.path, &opts, &argv)
            .env("SLURM_ARRAY_TASK_ID", "1")
            .output()
            .expect("deliver");
        assert_eq!(out.status.code(), Some(2), "{other:?}");
    }
}

/// Every index that ran leaves its result on the remote — its candidate, or its receipt
/// alone — so the series view tells "ran, no change" from "never ran"; a rerun of an index
/// (a requeue, a duplicate job) finds it and overwrites nothing.
#[test]
fn every_index_leaves_its_result_on_the_remote_and_a_rerun_overwrites_nothing() {
    let fleet = Fleet::new();
    let ok = fleet.slurm("m1", "1", "echo one > a.txt");
    assert_eq!(ok.code(), "OK", "{}", ok.stdout);
    assert_eq!(published(&ok), (true, ""));
    let failed = fleet.slurm("m1", "2", "exit 3");
    assert_eq!(failed.code(), "COMMAND_FAILED", "{}", failed.stdout);
    assert_eq!(published(&failed), (true, ""), "{}", failed.stdout);
    let nothing = fleet.slurm("m2", "3", "true");
    assert_eq!(nothing.code(), "NO_CHANGE", "{}", nothing.stdout);
    assert_eq!(published(&nothing), (true, ""));
    let refs = fleet.remote_refs();
    let names: Vec<&str> = refs
        .lines()
        .map(|l| l.split(' ').next().expect("name"))
        .collect();
    assert_eq!(
        names,
        [
            "refs/satyrn/candidates/feat/001/head",
            "refs/satyrn/candidates/feat/001/receipt",
            "refs/satyrn/candidates/feat/002/receipt",
            "refs/satyrn/candidates/feat/003/receipt",
        ]
    );

    // Reruns: a candidate where a receipt is, a receipt where a candidate is, a receipt
    // where a receipt is. Each is named; the remote keeps what it had.
    let again = fleet.slurm("m2", "2", "echo two > a.txt");
    assert_eq!(again.code(), "CANDIDATE_EXISTS", "{}", again.stdout);
    assert!(
        again.receipt["message"]
            .as_str()
            .expect("message")
            .contains("earlier run"),
        "{}",
        again.stdout
    );
    let again = fleet.slurm("m2", "1", "exit 4");
    assert_eq!(again.code(), "COMMAND_FAILED");
    let (pushed, message) = published(&again);
    assert!(
        !pushed && message.contains("ran before"),
        "{}",
        again.stdout
    );
    let again = fleet.slurm("m1", "3", "true");
    assert!(!published(&again).0, "{}", again.stdout);
    assert_eq!(fleet.remote_refs(), refs, "a rerun changed the remote");
    assert!(
        git_ok(
            &fleet.machine("m2"),
            &["for-each-ref", "refs/satyrn/candidates"]
        )
        .is_empty(),
        "the refused candidate's local refs are withdrawn"
    );

    // The view, from a third clone.
    let view = series(
        &fleet.machine("m2"),
        &["--remote", &fleet.bare(), "--attempts", "4", "feat"],
    );
    let rows = view["series"]["rows"].as_array().expect("rows");
    let states: Vec<&str> = rows
        .iter()
        .map(|r| r["state"].as_str().expect("state"))
        .collect();
    assert_eq!(
        states,
        ["candidate", "no-candidate", "no-candidate", "missing"],
        "{view}"
    );
    let codes: Vec<Option<&str>> = rows.iter().map(|r| r["code"].as_str()).collect();
    assert_eq!(
        codes,
        [Some("OK"), Some("COMMAND_FAILED"), Some("NO_CHANGE"), None]
    );
    assert_eq!(view["series"]["missing"], serde_json::json!([4]));
    assert_eq!(rows[0]["files"][0]["path"], "a.txt");
    assert_eq!(rows[0]["files"][0]["added"], 1);
    assert_eq!(rows[0]["commit"], ok.receipt["candidate_commit"]);
    for row in &rows[..3] {
        assert!(row["host"].as_str().is_some_and(|h| !h.is_empty()), "{row}");
        assert!(row["duration_ms"].as_u64().is_some(), "{row}");
    }
    let table = candidates(
        &fleet.machine("m2"),
        &[
            "series",
            "--remote",
            &fleet.bare(),
            "--attempts",
            "4",
            "feat",
        ],
    );
    assert_eq!(table.status, 0, "{}", table.stderr);
    assert!(
        table.stdout.starts_with(
            "series feat: 4 attempts; 1 with a candidate, 2 without, 1 missing (004)\n"
        ),
        "{}",
        table.stdout
    );
    assert!(table.stdout.contains("COMMAND_FAILED"), "{}", table.stdout);
    // Without --attempts, up to the highest index there; an unknown series is named.
    let view = series(&fleet.machine("m2"), &["--remote", &fleet.bare(), "feat"]);
    assert_eq!(view["series"]["attempts"], 3);
    let unknown = candidates(
        &fleet.machine("m2"),
        &["series", "--json", "--remote", &fleet.bare(), "other"],
    );
    assert_ne!(unknown.status, 0);
    assert!(
        unknown.stdout.contains("CANDIDATE_NOT_FOUND"),
        "{}",
        unknown.stdout
    );
}

/// An index stopped by the scheduler (`SIGTERM`, as `scancel` and a preemption send) leaves
/// nothing on the remote, so its requeue runs and completes.
#[test]
fn an_interrupted_index_leaves_nothing_and_its_requeue_completes() {
    let fleet = Fleet::new();
    let marks = tempfile::tempdir().expect("tempdir");
    let started = marks.path().join("started");
    let script = format!("touch '{}'; sleep 30", started.display());
    let argv: Vec<&OsStr> = sh(&script).into_iter().map(OsStr::new).collect();
    let bare = fleet.bare();
    let child = deliver_cmd(
        &fleet.machine("m1"),
        &fleet.contract.path,
        &["--attempt-from", "slurm", "--push", &bare],
        &argv,
    )
    .env("SLURM_ARRAY_TASK_ID", "5")
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("spawn");
    assert!(
        poll_until(Duration::from_secs(20), || started.exists()),
        "the command never started"
    );
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
    let run = finish(child.wait_with_output().expect("wait"), Duration::ZERO);
    assert_eq!(run.code(), "INTERRUPTED", "{}", run.stdout);
    assert!(run.receipt.get("published").is_none(), "{}", run.stdout);
    assert_eq!(fleet.remote_refs(), "", "an interrupted index left a ref");
    let requeued = fleet.slurm("m1", "5", "echo five > a.txt");
    assert_eq!(requeued.code(), "OK", "{}", requeued.stdout);
    assert_eq!(published(&requeued), (true, ""));
    assert!(
        fleet
            .remote_refs()
            .contains("refs/satyrn/candidates/feat/005/head")
    );
}

/// A node's fault before the command ran uses no index up (nothing is pushed), and what a
/// hostile remote holds under a series is shown for what it is: a receipt whose code would
/// drive the terminal is quoted, and a receipt ref whose text is no receipt is `unreadable`,
/// never `missing`.
#[test]
fn a_fault_before_the_command_uses_no_index_and_a_hostile_receipt_is_shown_as_it_is() {
    let fleet = Fleet::new();
    let bare = fleet.bare();
    let argv: Vec<&OsStr> = sh("echo x > a.txt").into_iter().map(OsStr::new).collect();
    let started = std::time::Instant::now();
    let out = deliver_cmd(
        &fleet.machine("m1"),
        &fleet.contract.path,
        &["--attempt-from", "slurm", "--push", &bare],
        &argv,
    )
    .env("SLURM_ARRAY_TASK_ID", "2")
    .env("TMPDIR", "/nonexistent-satyrn-tmp")
    .output()
    .expect("deliver");
    let refused = finish(out, started.elapsed());
    assert_ne!(refused.code(), "OK", "{}", refused.stdout);
    assert!(refused.receipt["exit_code"].is_null(), "{}", refused.stdout);
    assert_eq!(
        fleet.remote_refs(),
        "",
        "a fault before the command used the index up"
    );
    // Sibling: the same index, the node mended, runs and lands.
    assert_eq!(fleet.slurm("m1", "2", "echo two > a.txt").code(), "OK");

    // Plant what a hostile remote may hold: a receipt whose code is an escape sequence, and
    // a receipt ref that is a tag of something else.
    let remote = Path::new(&bare);
    let base = git_ok(remote, &["rev-parse", "HEAD"]).trim().to_owned();
    let plant = |index: &str, text: &str| {
        let body = format!("object {base}\ntype commit\ntag x\ntagger x <x@x> 0 +0000\n\n{text}\n");
        let mut mktag = std::process::Command::new("git");
        mktag
            .current_dir(remote)
            .arg("mktag")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        let mut child = mktag.spawn().expect("mktag");
        std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), body.as_bytes())
            .expect("feed");
        let tag =
            String::from_utf8(child.wait_with_output().expect("mktag").stdout).expect("utf-8");
        git_ok(
            remote,
            &[
                "update-ref",
                &format!("refs/satyrn/candidates/feat/{index}/receipt"),
                tag.trim(),
            ],
        );
    };
    plant(
        "004",
        r#"{"version":1,"outcome":"discarded","code":"\u001b]0;pwned\u0007\u001b[2J"}"#,
    );
    plant("005", "not a receipt at all");
    let table = candidates(
        &fleet.machine("m2"),
        &["series", "--remote", &bare, "--attempts", "5", "feat"],
    );
    assert_eq!(table.status, 0, "{}", table.stderr);
    assert!(
        !table.stdout.contains('\u{1b}') && !table.stdout.contains('\u{7}'),
        "{:?}",
        table.stdout
    );
    assert!(
        table.stdout.contains("pwned"),
        "the code is shown, quoted: {}",
        table.stdout
    );
    let view = series(
        &fleet.machine("m2"),
        &["--remote", &bare, "--attempts", "5", "feat"],
    );
    let rows = view["series"]["rows"].as_array().expect("rows");
    let states: Vec<&str> = rows
        .iter()
        .map(|r| r["state"].as_str().expect("state"))
        .collect();
    assert_eq!(
        states,
        [
            "missing",
            "candidate",
            "missing",
            "no-candidate",
            "unreadable"
        ],
        "{view}"
    );
    assert_eq!(view["series"]["missing"], serde_json::json!([1, 3]));
    assert_eq!(
        view["series"]["bases"].as_array().map(Vec::len),
        Some(1),
        "{view}"
    );
}
