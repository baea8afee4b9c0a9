//! `deliver --attempts N [--jobs J]` and `deliver --attempt I`: real child `deliver`s, real
//! timeouts and signals; the caller's repository and the temporary directory are checked
//! afterwards.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::candidates::candidates;
use crate::deliver_support::{Caller, FixedRepo, deliver, deliver_cmd, git_worktrees, sh};
use crate::support::{ContractFile, dir_entries, git_ok};

/// A series run: its exit status and summary.
struct Series {
    status: i32,
    summary: Value,
}

impl Series {
    fn code(&self) -> &str {
        self.summary["code"].as_str().expect("code")
    }

    /// The receipt code of attempt `index` (1-based), `None` without a receipt.
    fn attempt_code(&self, index: usize) -> Option<&str> {
        let a = &self.summary["attempts"][index - 1];
        assert_eq!(a["attempt"], index);
        a["receipt"]["code"].as_str()
    }
}

fn series_cmd(root: &Path, contract: &Path, opts: &[&str], script: &str, tmp: &Path) -> Command {
    let argv: Vec<&OsStr> = sh(script).into_iter().map(OsStr::new).collect();
    let mut cmd = deliver_cmd(root, contract, opts, &argv);
    cmd.env("TMPDIR", tmp);
    cmd
}

fn finish_series(child: Child) -> Series {
    let out = child.wait_with_output().expect("wait");
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    assert!(
        stdout.ends_with('\n') && stdout.matches('\n').count() == 1,
        "one summary line: {stdout:?} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.starts_with("{\"version\":1,\"outcome\":\"attempts\",\"code\":"),
        "{stdout}"
    );
    Series {
        status: out.status.code().expect("exited"),
        summary: serde_json::from_str(&stdout).expect("JSON"),
    }
}

fn run_series(root: &Path, contract: &Path, opts: &[&str], script: &str, tmp: &Path) -> Series {
    let child = series_cmd(root, contract, opts, script, tmp)
        .spawn()
        .expect("spawn");
    finish_series(child)
}

fn assert_clean_after(root: &Path, tmp: &Path) {
    assert_eq!(
        git_worktrees(root)
            .lines()
            .filter(|l| l.starts_with("worktree "))
            .count(),
        1
    );
    assert!(
        dir_entries(tmp).is_empty(),
        "left in TMPDIR: {:?}",
        dir_entries(tmp)
    );
}

#[test]
fn one_failing_one_timing_out_one_succeeding_each_has_its_receipt() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let tmp = tempfile::tempdir().expect("tmp");
    let contract = ContractFile::any("multi");
    let before = Caller::capture(&root);
    let script = "case $SATYRN_ATTEMPT_INDEX in 1) exit 3;; 2) exec sleep 60;; *) echo \"$SATYRN_ATTEMPT_INDEX of $SATYRN_ATTEMPTS\" > out.txt;; esac";
    let series = run_series(
        &root,
        &contract.path,
        &["--attempts", "3", "--timeout", "2"],
        script,
        tmp.path(),
    );
    assert_eq!(
        (series.status, series.code()),
        (0, "OK"),
        "{}",
        series.summary
    );
    assert_eq!(
        series.summary["message"],
        "1 of 3 attempts created a candidate"
    );
    assert_eq!(series.attempt_code(1), Some("COMMAND_FAILED"));
    assert_eq!(series.summary["attempts"][0]["receipt"]["exit_code"], 3);
    assert_eq!(series.attempt_code(2), Some("COMMAND_TIMEOUT"));
    assert_eq!(series.attempt_code(3), Some("OK"));
    let third = &series.summary["attempts"][2]["receipt"];
    assert_eq!(
        third["candidate_ref"],
        "refs/satyrn/candidates/multi/003/head"
    );
    assert_eq!(
        third["contract_id"], "multi",
        "the contract id, never changed"
    );
    assert_eq!(
        git_ok(
            &root,
            &["show", "refs/satyrn/candidates/multi/003/head:out.txt"]
        ),
        "3 of 3\n"
    );
    before.assert_unchanged(&root, Some("refs/satyrn/candidates/multi/003/head"));
    assert_clean_after(&root, tmp.path());
}

#[test]
fn series_and_single_candidates_coexist_sort_and_never_collide() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let tmp = tempfile::tempdir().expect("tmp");
    let contract = ContractFile::any("both");
    let single = deliver(&root, &contract.path, &sh("echo single > s.txt"));
    assert_eq!(single.code(), "OK");
    let script = "echo $SATYRN_ATTEMPT_INDEX > n.txt";
    let opts = ["--attempts", "2", "--jobs", "1"];
    let series = run_series(&root, &contract.path, &opts, script, tmp.path());
    assert_eq!(series.code(), "OK", "{}", series.summary);
    let listed = candidates(&root, &["list", "--json"]).json();
    let ids: Vec<&str> = listed["candidates"]
        .as_array()
        .expect("array")
        .iter()
        .map(|c| c["id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, ["both", "both/001", "both/002"]);

    // The same series again: every attempt finds its candidate; the series says so.
    let before = Caller::capture(&root);
    let again = run_series(&root, &contract.path, &opts, script, tmp.path());
    assert_eq!(
        (again.status, again.code()),
        (8, "CANDIDATE_EXISTS"),
        "{}",
        again.summary
    );
    assert_eq!(again.attempt_code(2), Some("CANDIDATE_EXISTS"));
    before.assert_unchanged(&root, None);

    // One attempt of a series on its own, as a CI matrix job runs it.
    let argv: Vec<&OsStr> = sh("echo seven > n.txt")
        .into_iter()
        .map(OsStr::new)
        .collect();
    let out = deliver_cmd(&root, &contract.path, &["--attempt", "7"], &argv)
        .output()
        .expect("run");
    let receipt: Value = serde_json::from_slice(&out.stdout).expect("receipt");
    assert_eq!(
        receipt["candidate_ref"],
        "refs/satyrn/candidates/both/007/head"
    );
    assert_clean_after(&root, tmp.path());
}

#[test]
fn a_signal_to_the_series_reaches_every_attempt_and_all_clean_up() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let tmp = tempfile::tempdir().expect("tmp");
    let marks = tempfile::tempdir().expect("marks");
    let contract = ContractFile::any("stopped");
    let before = Caller::capture(&root);
    let script = format!(
        "touch {}/$SATYRN_ATTEMPT_INDEX; exec sleep 60",
        marks.path().display()
    );
    let child = series_cmd(
        &root,
        &contract.path,
        &["--attempts", "3", "--jobs", "2", "--timeout", "120"],
        &script,
        tmp.path(),
    )
    .stderr(Stdio::null())
    .spawn()
    .expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(60);
    while dir_entries(marks.path()).len() < 2 {
        assert!(
            Instant::now() < deadline,
            "the two first attempts never ran"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = i32::try_from(child.id()).expect("pid");
    // SAFETY: kill(2) on the pid of our own un-reaped child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let series = finish_series(child);
    assert_eq!(
        (series.status, series.code()),
        (8, "INTERRUPTED"),
        "{}",
        series.summary
    );
    assert_eq!(series.attempt_code(1), Some("INTERRUPTED"));
    assert_eq!(series.attempt_code(2), Some("INTERRUPTED"));
    assert_eq!(series.attempt_code(3), None, "never started");
    assert_eq!(
        series.summary["attempts"][2]["message"],
        "not started: the series was interrupted"
    );
    assert_eq!(dir_entries(marks.path()), ["1", "2"]);
    before.assert_unchanged(&root, None);
    assert_clean_after(&root, tmp.path());
}

#[test]
fn series_usage_errors_print_nothing() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let contract = ContractFile::any("usage");
    for opts in [
        &["--attempts", "0"][..],
        &["--attempts", "1000"],
        &["--attempts", "+1"],
        &["--attempts", "2", "--attempts", "2"],
        &["--jobs", "2"],
        &["--attempt", "1", "--attempts", "2"],
        &["--attempt", "01x"],
    ] {
        let out = deliver_cmd(&root, &contract.path, opts, &[OsStr::new("true")])
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{opts:?}");
        assert!(out.stdout.is_empty(), "{opts:?}");
    }
    let ok = deliver(&root, &contract.path, &sh("echo ok > ok.txt"));
    assert_eq!(ok.code(), "OK");
}

/// `SIGKILL` to the supervisor: no handler runs, but every attempt gets `SIGTERM` from the
/// kernel (parent-death signal) and cleans up after itself.
#[test]
fn a_killed_series_still_has_every_attempt_clean_up() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let tmp = tempfile::tempdir().expect("tmp");
    let marks = tempfile::tempdir().expect("marks");
    let contract = ContractFile::any("killed");
    let before = Caller::capture(&root);
    let script = format!(
        "touch {}/$SATYRN_ATTEMPT_INDEX; exec sleep 60",
        marks.path().display()
    );
    let mut child = series_cmd(
        &root,
        &contract.path,
        &["--attempts", "2", "--timeout", "120"],
        &script,
        tmp.path(),
    )
    .stderr(Stdio::null())
    .spawn()
    .expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(60);
    while dir_entries(marks.path()).len() < 2 {
        assert!(Instant::now() < deadline, "the attempts never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().expect("SIGKILL the supervisor");
    child.wait().expect("reap");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !dir_entries(tmp.path()).is_empty() {
        assert!(
            Instant::now() < deadline,
            "attempts left behind: {:?}",
            dir_entries(tmp.path())
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The attempts delete their temporary directory last, after the worktree.
    before.assert_unchanged(&root, None);
    assert_clean_after(&root, tmp.path());
}

/// `deliver --attempts N -- satyrn-host attempt --model A --model B …` with a list of models
/// that is not one per attempt is a usage error before any attempt starts: exit 2, nothing
/// on stdout, no worktree, the caller untouched. The same list for as many attempts runs
/// them, each with its own model.
#[test]
fn a_series_refuses_a_list_of_models_that_is_not_one_per_attempt() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let tmp = tempfile::tempdir().expect("tempdir");
    let contract = ContractFile::new("models", &["a.txt"]);
    let host = crate::support::host_bin();
    let contract_arg = contract.path.as_os_str();
    let argv: Vec<&OsStr> = [
        host.as_os_str(),
        OsStr::new("attempt"),
        OsStr::new("--model"),
        OsStr::new("p/one"),
        OsStr::new("--model"),
        OsStr::new("p/two"),
        OsStr::new("--model"),
        OsStr::new("p/three"),
        contract_arg,
    ]
    .to_vec();
    let before = Caller::capture(&root);
    let series = |attempts: &str| {
        deliver_cmd(
            &root,
            &contract.path,
            &["--attempts", attempts, "--jobs", "1"],
            &argv,
        )
        .env("TMPDIR", tmp.path())
        .env("SATYRN_PI_BIN", "true")
        .output()
        .expect("run")
    };
    let refused = series("2");
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(refused.stdout.is_empty());
    assert!(
        said.contains("3 models") && said.contains("2 attempts"),
        "{said}"
    );
    before.assert_unchanged(&root, None);
    assert_clean_after(&root, tmp.path());

    let ran = series("3");
    let said = String::from_utf8_lossy(&ran.stderr);
    for (i, model) in ["p/one", "p/two", "p/three"].iter().enumerate() {
        assert!(
            said.contains(&format!("attempt {} of 3 uses model {model}", i + 1)),
            "{said}"
        );
    }
    let summary: Value = serde_json::from_slice(&ran.stdout).expect("summary");
    assert_eq!(
        summary["attempts"].as_array().map(Vec::len),
        Some(3),
        "{summary}"
    );
    assert_clean_after(&root, tmp.path());
}
