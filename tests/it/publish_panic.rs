//! A panic is the documented internal-error outcome in every subcommand: exit 1, one line
//! on stderr (no trace, no backtrace even with `RUST_BACKTRACE`), and, where the subcommand
//! answers in JSON, exactly one well-formed `INTERNAL_ERROR` document. No input makes
//! satyrn panic, so debug builds take `SATYRN_TEST_PANIC=<point>` to panic at a point.
//! A panic mid-publish unwinds through the temporary: the file is unchanged and nothing is
//! left behind.

use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::protocol_common::{Fixture, assert_failure, temporaries};
use crate::support::{
    ContractFile, ProtocolRun, Repo, dir_entries, host_bin, protocol_with, snapshot,
};

fn panicking(cmd: &mut Command, point: &str) {
    cmd.env("SATYRN_TEST_PANIC", point)
        .env("RUST_BACKTRACE", "full");
}

/// Exactly one stderr line, the internal-error line.
fn assert_one_line_on_stderr(stderr: &str, point: &str) {
    assert_eq!(stderr.lines().count(), 1, "{stderr:?}");
    assert!(
        stderr.starts_with("satyrn-host: internal error (a bug): ")
            && stderr.contains(&format!("SATYRN_TEST_PANIC={point}")),
        "{stderr:?}"
    );
    assert!(
        !stderr.contains("panicked") && !stderr.contains("backtrace"),
        "{stderr:?}"
    );
}

fn run(args: &[&str], point: Option<&str>, dir: &std::path::Path) -> Output {
    let mut cmd = Command::new(host_bin());
    cmd.args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(point) = point {
        panicking(&mut cmd, point);
    }
    cmd.output().expect("run satyrn-host")
}

/// The one JSON line of `stdout`.
fn one_json_line(stdout: &[u8]) -> Value {
    let stdout = std::str::from_utf8(stdout).expect("utf-8");
    assert!(
        stdout.ends_with('\n') && stdout.matches('\n').count() == 1,
        "{stdout:?}"
    );
    serde_json::from_str(stdout.trim_end()).expect("json")
}

#[test]
fn a_panic_mid_publish_is_internal_error_and_leaves_the_file_and_directory_unchanged() {
    for named in [false, true] {
        let fx = Fixture::new(&[("d/a.txt", b"hello world\n")], &["d/*"]);
        let before = snapshot(&fx.file("d/a.txt"));
        let entries = dir_entries(&fx.file("d"));
        let request = fx.fresh("d/a.txt", "world", "there").to_string();
        let with = |cmd: &mut Command, panic: bool| {
            if named {
                cmd.env("SATYRN_TEST_PUBLISH_FALLBACK", "1");
            }
            if panic {
                panicking(cmd, "publish");
            }
        };
        let run: ProtocolRun = protocol_with(request.as_bytes(), |cmd| with(cmd, true));
        assert_failure(&run, "INTERNAL_ERROR", 1);
        assert_eq!(
            run.response["message"],
            "internal error (a bug): SATYRN_TEST_PANIC=publish"
        );
        assert_one_line_on_stderr(&run.stderr, "publish");
        assert_eq!(
            snapshot(&fx.file("d/a.txt")),
            before,
            "the file is unchanged"
        );
        assert_eq!(dir_entries(&fx.file("d")), entries);
        assert!(temporaries(&fx.file("d")).is_empty());
        // Sibling: the same request without the panic is published.
        let run = protocol_with(request.as_bytes(), |cmd| with(cmd, false));
        crate::protocol_common::assert_ok(&run, "d/a.txt", b"hello there\n");
    }
}

#[test]
fn a_panic_in_a_protocol_check_has_the_four_field_shape() {
    let fx = Fixture::new(&[("a.txt", b"x\n")], &["a.txt"]);
    let request = serde_json::json!({
        "version": 1, "operation": "check",
        "repo": fx.repo.path(), "contract": fx.contract.path,
    })
    .to_string();
    let run = protocol_with(request.as_bytes(), |cmd| panicking(cmd, "check"));
    assert_eq!(run.status, 1);
    assert_eq!(
        run.stdout,
        "{\"version\":1,\"ok\":false,\"code\":\"INTERNAL_ERROR\",\"message\":\"internal error (a bug): SATYRN_TEST_PANIC=check\"}\n"
    );
    assert_one_line_on_stderr(&run.stderr, "check");
    let run = protocol_with(request.as_bytes(), |_| {});
    assert_eq!(run.status, 0, "{run:?}");
}

#[test]
fn a_panic_in_the_check_subcommand_prints_its_internal_error() {
    let repo = Repo::with_files(&[("a.txt", b"x\n")]);
    let contract = ContractFile::new("c", &["a.txt"]);
    let repo_arg = repo.path().to_str().expect("utf-8");
    let contract_arg = contract.path.to_str().expect("utf-8");
    let args = ["check", "--repo", repo_arg, contract_arg];
    let out = run(&args, Some("check"), repo.path());
    assert_eq!(out.status.code(), Some(1));
    let response = one_json_line(&out.stdout);
    assert_eq!(response["code"], "INTERNAL_ERROR");
    assert_eq!(response.as_object().expect("object").len(), 4);
    assert_one_line_on_stderr(&String::from_utf8_lossy(&out.stderr), "check");
    let out = run(&args, None, repo.path());
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(one_json_line(&out.stdout)["code"], "OK");
}

#[test]
fn a_panic_in_deliver_is_an_internal_error_receipt_and_creates_nothing() {
    let repo = Repo::with_files(&[("a.txt", b"x\n")]);
    let contract = ContractFile::new("c", &["a.txt"]);
    let repo_arg = repo.path().to_str().expect("utf-8");
    let contract_arg = contract.path.to_str().expect("utf-8");
    let args = ["deliver", "--repo", repo_arg, contract_arg, "--", "true"];
    let refs_before = crate::support::git_ok(repo.path(), &["for-each-ref"]);
    let out = run(&args, Some("deliver"), repo.path());
    assert_eq!(out.status.code(), Some(1));
    let receipt = one_json_line(&out.stdout);
    assert_eq!(receipt["code"], "INTERNAL_ERROR", "{receipt}");
    assert_eq!(receipt["outcome"], "refused", "{receipt}");
    assert_one_line_on_stderr(&String::from_utf8_lossy(&out.stderr), "deliver");
    assert_eq!(
        crate::support::git_ok(repo.path(), &["for-each-ref"]),
        refs_before
    );
    let out = run(&args, None, repo.path());
    assert_eq!(one_json_line(&out.stdout)["code"], "NO_CHANGE");
}

#[test]
fn a_panic_in_attempt_or_component_exits_1_with_one_line_and_empty_stdout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out_dir = dir.path().join("out");
    let out_arg = out_dir.to_str().expect("utf-8");
    for (args, point) in [
        (
            vec!["attempt", "--model", "m/x", "contract.yaml"],
            "attempt",
        ),
        (vec!["component", "export", "--out", out_arg], "component"),
    ] {
        let out = run(&args, Some(point), dir.path());
        assert_eq!(out.status.code(), Some(1), "{point}");
        assert!(out.stdout.is_empty(), "{point}: {:?}", out.stdout);
        assert_one_line_on_stderr(&String::from_utf8_lossy(&out.stderr), point);
    }
    assert!(!out_dir.exists(), "nothing was exported");
    // Sibling: the export itself works.
    let out = run(&["component", "export", "--out", out_arg], None, dir.path());
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out_dir.join("satyrn_mutator.wasm").exists());
}
