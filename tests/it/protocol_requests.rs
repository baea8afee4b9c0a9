//! Malformed requests (every one exit 7 with one well-formed `INVALID_REQUEST` line and
//! the target untouched), the `check` operation and the `satyrn-host check` command line.

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::protocol_common::{Fixture, assert_invalid, assert_refused, protocol_timeout};
use crate::support::{
    ContractFile, ProtocolRun, Repo, dir_entries, host_bin, protocol, protocol_raw, snapshot,
};

const HELLO: &[u8] = b"hello world\n";
const THERE: &[u8] = b"hello there\n";

fn fixture() -> Fixture {
    Fixture::new(&[("a.txt", HELLO)], &["*"])
}

/// A request that would succeed on `fx`.
fn valid(fx: &Fixture) -> Value {
    fx.fresh("a.txt", "world", "there")
}

/// Sends raw `input` and asserts `INVALID_REQUEST` with the repository untouched.
fn assert_invalid_raw(fx: &Fixture, input: &[u8], what: &str) -> ProtocolRun {
    let before = snapshot(&fx.file("a.txt"));
    let entries = dir_entries(fx.repo.path());
    let run = protocol_raw(input);
    assert_eq!(
        run.response["code"], "INVALID_REQUEST",
        "{what}: expected INVALID_REQUEST, got {run:?}"
    );
    assert_invalid(&run);
    assert_eq!(
        snapshot(&fx.file("a.txt")),
        before,
        "{what}: the file changed"
    );
    assert_eq!(
        dir_entries(fx.repo.path()),
        entries,
        "{what}: entries changed"
    );
    run
}

fn assert_invalid_json(fx: &Fixture, request: &Value, what: &str) -> ProtocolRun {
    assert_invalid_raw(fx, request.to_string().as_bytes(), what)
}

/// The sibling success every table ends with: the untouched fixture still accepts a
/// valid request.
fn sibling_success(fx: &Fixture) {
    fx.succeed(&valid(fx), "a.txt", THERE);
}

fn with(request: &Value, key: &str, value: Value) -> Value {
    let mut r = request.clone();
    r[key] = value;
    r
}

fn without(request: &Value, key: &str) -> Value {
    let mut r = request.clone();
    r.as_object_mut().expect("object").remove(key);
    r
}

#[test]
fn not_json_arrays_scalars_and_empty_input() {
    let fx = fixture();
    let good = valid(&fx).to_string();
    let truncated = &good[..good.len() - 1];
    let two = format!("{good}\n{good}");
    let inputs: Vec<(&str, Vec<u8>)> = vec![
        ("empty", b"".to_vec()),
        ("whitespace", b"  \n\t\n".to_vec()),
        ("not json", b"replace a.txt please".to_vec()),
        ("truncated", truncated.as_bytes().to_vec()),
        ("array", format!("[{good}]").into_bytes()),
        ("empty array", b"[]".to_vec()),
        ("string", b"\"replace\"".to_vec()),
        ("number", b"1".to_vec()),
        ("null", b"null".to_vec()),
        ("two requests", two.into_bytes()),
        ("trailing garbage", format!("{good}x").into_bytes()),
        (
            "not utf-8",
            b"{\"version\":1,\"operation\":\"\xff\"}".to_vec(),
        ),
        ("empty object", b"{}".to_vec()),
    ];
    for (what, input) in inputs {
        assert_invalid_raw(&fx, &input, what);
    }
    // A trailing newline after the one object is fine.
    let run = protocol_raw(format!("{good}\n").as_bytes());
    crate::protocol_common::assert_ok(&run, "a.txt", THERE);
}

#[test]
fn each_missing_field_is_invalid() {
    let fx = fixture();
    let request = valid(&fx);
    for key in [
        "version",
        "operation",
        "repo",
        "contract",
        "path",
        "expected_sha256",
        "old_text",
        "new_text",
    ] {
        let run = assert_invalid_json(&fx, &without(&request, key), key);
        let message = run.response["message"].as_str().expect("message");
        if key != "version" {
            assert!(
                message.contains(key),
                "{key}: the message names it: {message}"
            );
        }
    }
    sibling_success(&fx);
}

#[test]
fn each_wrong_type_is_invalid() {
    let fx = fixture();
    let request = valid(&fx);
    let cases: Vec<(&str, Value)> = vec![
        ("version", json!("1")),
        ("version", json!(1.0)),
        ("version", json!(-1)),
        ("version", json!(true)),
        ("version", json!(null)),
        ("version", json!([1])),
        ("operation", json!(1)),
        ("operation", json!(null)),
        ("operation", json!(["replace"])),
        ("repo", json!(1)),
        ("repo", json!(null)),
        ("repo", json!({"path": "/"})),
        ("contract", json!(false)),
        ("contract", json!(null)),
        ("contract", json!(["/c.yaml"])),
        ("path", json!(1)),
        ("path", json!(null)),
        ("path", json!(["a.txt"])),
        ("expected_sha256", json!(1)),
        ("expected_sha256", json!(true)),
        ("expected_sha256", json!({})),
        ("expected_sha256", json!([fx.sha("a.txt")])),
        ("old_text", json!(1)),
        ("old_text", json!(null)),
        ("old_text", json!(["world"])),
        ("new_text", json!(null)),
        ("new_text", json!(2)),
        ("new_text", json!({"text": "there"})),
    ];
    for (key, value) in cases {
        assert_invalid_json(
            &fx,
            &with(&request, key, value.clone()),
            &format!("{key}={value}"),
        );
    }
    sibling_success(&fx);
}

#[test]
fn expected_sha256_omitted_is_invalid_but_null_is_a_refusal() {
    let fx = fixture();
    let request = valid(&fx);
    assert_invalid_json(&fx, &without(&request, "expected_sha256"), "omitted");
    fx.refuse(
        &with(&request, "expected_sha256", Value::Null),
        "REVISION_UNAVAILABLE",
        &["a.txt"],
        &[""],
    );
    sibling_success(&fx);
}

#[test]
fn sha_shapes_are_checked() {
    let fx = fixture();
    let request = valid(&fx);
    let sha = fx.sha("a.txt");
    for bad in [
        sha.to_uppercase(),
        sha[..63].to_string(),
        format!("{sha}0"),
        format!("{}g", &sha[..63]),
        format!(" {}", &sha[..63]),
        format!("{}\n", &sha[..63]),
        String::new(),
        format!("sha256:{sha}"),
    ] {
        assert_invalid_json(&fx, &with(&request, "expected_sha256", json!(bad)), &bad);
    }
    sibling_success(&fx);
}

#[test]
fn unknown_operation_and_version_are_invalid() {
    let fx = fixture();
    let request = valid(&fx);
    for op in ["edit", "REPLACE", "Replace", "", "replace ", "deliver"] {
        assert_invalid_json(&fx, &with(&request, "operation", json!(op)), op);
    }
    for version in [json!(2), json!(0), json!("1"), json!(1.5), json!(u64::MAX)] {
        assert_invalid_json(&fx, &with(&request, "version", version.clone()), "version");
    }
    assert_invalid_json(&fx, &without(&request, "version"), "no version");
    sibling_success(&fx);
}

#[test]
fn unknown_extra_fields_are_invalid() {
    let fx = fixture();
    let request = valid(&fx);
    for key in ["extra", "Path", "expected_sha", "result", ""] {
        let run = assert_invalid_json(&fx, &with(&request, key, json!("x")), key);
        if !key.is_empty() {
            let message = run.response["message"].as_str().expect("message");
            assert!(message.contains(key), "{message}");
        }
    }
    sibling_success(&fx);
}

#[test]
fn duplicate_keys_are_invalid() {
    let fx = fixture();
    let good = valid(&fx).to_string();
    let inner = &good[1..good.len() - 1];
    // The same value twice, and a second value that would change the target.
    for extra in [
        "\"path\":\"a.txt\"".to_string(),
        "\"new_text\":\"evil\"".to_string(),
        "\"version\":1".to_string(),
        format!("\"expected_sha256\":\"{}\"", fx.sha("a.txt")),
    ] {
        let input = format!("{{{inner},{extra}}}");
        assert_invalid_raw(&fx, input.as_bytes(), &extra);
        let input = format!("{{{extra},{inner}}}");
        assert_invalid_raw(&fx, input.as_bytes(), &extra);
    }
    sibling_success(&fx);
}

#[test]
fn relative_repo_or_contract_is_invalid() {
    let fx = fixture();
    let request = valid(&fx);
    let repo_name = fx
        .repo
        .path()
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    for (key, value) in [
        ("repo", repo_name.clone()),
        ("repo", ".".to_string()),
        ("repo", String::new()),
        ("repo", format!("./{repo_name}")),
        ("contract", "contract.yaml".to_string()),
        ("contract", String::new()),
    ] {
        // Run from the parent of the repository, where the relative path would resolve.
        let before = snapshot(&fx.file("a.txt"));
        let input = with(&request, key, json!(value)).to_string();
        let parent = fx.repo.path().parent().expect("parent").to_path_buf();
        let run = crate::support::protocol_with(input.as_bytes(), |cmd| {
            cmd.current_dir(&parent);
        });
        assert_invalid(&run);
        assert_eq!(snapshot(&fx.file("a.txt")), before, "{key}={value}");
    }
    sibling_success(&fx);
}

#[test]
fn empty_old_text_is_invalid() {
    let fx = fixture();
    let request = valid(&fx);
    assert_invalid_json(
        &fx,
        &with(&request, "old_text", json!("")),
        "empty old_text",
    );
    // Even on an undeclared path, an empty file, or with a null revision.
    let empty = Fixture::new(&[("e.txt", b"")], &["*"]);
    let run = protocol(&empty.request("e.txt", None, "", "x"));
    assert_invalid(&run);
    assert_eq!(std::fs::read(empty.file("e.txt")).expect("read"), b"");
    sibling_success(&fx);
}

#[test]
fn unsafe_path_shapes_are_invalid() {
    let fx = Fixture::new(
        &[("a.txt", HELLO), ("sub/a.txt", HELLO), ("x", HELLO)],
        &["*"],
    );
    let sha = crate::support::sha256_hex(HELLO);
    for path in [
        "../x",
        "/etc/passwd",
        "a//b",
        "sub//a.txt",
        "./a.txt",
        "sub/./a.txt",
        "a.txt/",
        "sub/",
        "a.txt\0",
        "a\0b",
        "",
        ".",
        "..",
        "sub/..",
        "sub\\a.txt",
        "/",
        "//a.txt",
    ] {
        let request = fx.request(path, Some(&sha), "world", "there");
        let before = (snapshot(&fx.file("a.txt")), snapshot(&fx.file("sub/a.txt")));
        let run = protocol(&request);
        assert_eq!(run.response["code"], "INVALID_REQUEST", "{path:?}: {run:?}");
        assert_invalid(&run);
        assert_eq!(
            (snapshot(&fx.file("a.txt")), snapshot(&fx.file("sub/a.txt"))),
            before,
            "{path:?}"
        );
    }
    fx.succeed(&fx.fresh("sub/a.txt", "world", "there"), "sub/a.txt", THERE);
}

#[test]
fn oversized_request_is_invalid_without_reading_forever() {
    let fx = fixture();
    let mut request = valid(&fx);
    request["new_text"] = json!("x".repeat(65 * 1024 * 1024));
    let input = request.to_string();
    assert!(input.len() > 64 * 1024 * 1024);
    let before = snapshot(&fx.file("a.txt"));
    let run = protocol_timeout(input.as_bytes(), Duration::from_secs(20), |_| {});
    assert_invalid(&run);
    let message = run.response["message"].as_str().expect("message");
    assert!(message.contains("larger than"), "{message}");
    assert_eq!(snapshot(&fx.file("a.txt")), before);
    assert_eq!(dir_entries(fx.repo.path()), [".git", "a.txt"]);
    sibling_success(&fx);
}

// ---- check ----

fn check_request(repo: &std::path::Path, contract: &std::path::Path) -> Value {
    json!({"version": 1, "operation": "check", "repo": repo, "contract": contract})
}

/// Asserts a four-field `check` response with `code` and `status`.
fn assert_check(stdout: &str, status: i32, code: &str, expected_status: i32) {
    let response: Value = serde_json::from_str(stdout.trim_end()).expect("json");
    assert!(
        stdout.ends_with('\n') && stdout.matches('\n').count() == 1,
        "{stdout:?}"
    );
    assert_eq!(response["code"], code, "{stdout}");
    assert_eq!(status, expected_status, "{stdout}");
    let object = response.as_object().expect("object");
    let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["code", "message", "ok", "version"], "{stdout}");
    assert_eq!(response["version"], 1);
    assert_eq!(response["ok"], code == "OK");
    if code == "OK" {
        assert_eq!(
            stdout,
            "{\"version\":1,\"ok\":true,\"code\":\"OK\",\"message\":\"\"}\n"
        );
    } else {
        assert!(!response["message"].as_str().expect("message").is_empty());
        assert!(stdout.starts_with("{\"version\":1,\"ok\":false,\"code\":"));
    }
}

/// Contracts covering each contract refusal, with the code each must give.
fn contract_cases() -> Vec<(&'static str, ContractFile, &'static str, i32)> {
    let dir_contract = ContractFile::raw("id: x\ntask: t\n");
    std::fs::remove_file(&dir_contract.path).expect("rm");
    std::fs::create_dir(&dir_contract.path).expect("mkdir");
    let missing = ContractFile::raw("id: x\ntask: t\n");
    std::fs::remove_file(&missing.path).expect("rm");
    vec![
        ("good", ContractFile::new("cand", &["*.txt"]), "OK", 0),
        (
            "no writable_paths",
            ContractFile::raw("id: x\ntask: t\n"),
            "OK",
            0,
        ),
        ("missing file", missing, "CONTRACT_UNREADABLE", 3),
        ("a directory", dir_contract, "CONTRACT_UNREADABLE", 3),
        (
            "yaml syntax",
            ContractFile::raw("id: [x\ntask: t\n"),
            "CONTRACT_INVALID",
            4,
        ),
        (
            "not a mapping",
            ContractFile::raw("- id\n- task\n"),
            "CONTRACT_INVALID",
            4,
        ),
        (
            "unknown key",
            ContractFile::raw("id: x\ntask: t\nwritable: [a]\n"),
            "CONTRACT_INVALID",
            4,
        ),
        (
            "duplicate key",
            ContractFile::raw("id: x\ntask: t\nid: y\n"),
            "CONTRACT_INVALID",
            4,
        ),
        (
            "alias",
            ContractFile::raw("id: &a x\ntask: *a\n"),
            "CONTRACT_INVALID",
            4,
        ),
        // Accepted by yaml-rust2 alone (`crates/contract/src/lexical.rs`).
        (
            "a control character in a flow sequence",
            ContractFile::raw("id: x\ntask: t\nwritable_paths: [a\u{1}.txt]\n"),
            "CONTRACT_INVALID",
            4,
        ),
        (
            "a tab before a mapping colon",
            ContractFile::raw("id\t: x\ntask: t\n"),
            "CONTRACT_INVALID",
            4,
        ),
        (
            "a document-end marker before the content",
            ContractFile::raw("...\nid: x\ntask: t\n"),
            "CONTRACT_INVALID",
            4,
        ),
        (
            "the same, spelled as every YAML parser reads it",
            ContractFile::raw("id: x\ntask: t\nwritable_paths: [\"a\\x01.txt\", \"b\tc\"]\n...\n"),
            "OK",
            0,
        ),
        (
            "no id",
            ContractFile::raw("task: t\n"),
            "CONTRACT_MISSING_FIELD",
            5,
        ),
        (
            "no task",
            ContractFile::raw("id: x\n"),
            "CONTRACT_MISSING_FIELD",
            5,
        ),
        (
            "writable_paths not a list",
            ContractFile::raw("id: x\ntask: t\nwritable_paths: a.txt\n"),
            "CONTRACT_MISSING_FIELD",
            5,
        ),
        (
            "writable_paths with an empty string",
            ContractFile::raw("id: x\ntask: t\nwritable_paths: [\"\"]\n"),
            "CONTRACT_MISSING_FIELD",
            5,
        ),
        (
            "writable_paths with a number",
            ContractFile::raw("id: x\ntask: t\nwritable_paths: [1]\n"),
            "CONTRACT_MISSING_FIELD",
            5,
        ),
    ]
}

/// Repositories covering `REPO_UNAVAILABLE`; they must outlive the checks.
struct RepoCases {
    good: Repo,
    plain: tempfile::TempDir,
    file: tempfile::NamedTempFile,
}

impl RepoCases {
    fn new() -> Self {
        Self {
            good: Repo::with_files(&[("a.txt", HELLO)]),
            plain: tempfile::tempdir().expect("tempdir"),
            file: tempfile::NamedTempFile::new().expect("file"),
        }
    }

    fn unavailable(&self) -> Vec<std::path::PathBuf> {
        vec![
            self.plain.path().to_path_buf(),
            self.plain.path().join("missing"),
            self.file.path().to_path_buf(),
            self.good.path().join("a.txt"),
        ]
    }
}

#[test]
fn check_operation_responses() {
    let repos = RepoCases::new();
    for (what, contract, code, status) in contract_cases() {
        let run = protocol(&check_request(repos.good.path(), &contract.path));
        assert_check(&run.stdout, run.status, code, status);
        assert!(
            run.response.get("result").is_none(),
            "{what}: no result key"
        );
    }
    let good = ContractFile::new("cand", &["*"]);
    for repo in repos.unavailable() {
        let run = protocol(&check_request(&repo, &good.path));
        assert_check(&run.stdout, run.status, "REPO_UNAVAILABLE", 6);
    }
    // The contract is checked first.
    let missing = repos.plain.path().join("missing.yaml");
    let run = protocol(&check_request(repos.plain.path(), &missing));
    assert_check(&run.stdout, run.status, "CONTRACT_UNREADABLE", 3);
    // A malformed check request is INVALID_REQUEST in the check shape.
    let mut bad = check_request(repos.good.path(), &good.path);
    bad["path"] = json!("a.txt");
    let run = protocol(&bad);
    assert_check(&run.stdout, run.status, "INVALID_REQUEST", 7);
    let run = protocol(&without(
        &check_request(repos.good.path(), &good.path),
        "repo",
    ));
    assert_check(&run.stdout, run.status, "INVALID_REQUEST", 7);
    let run = protocol(&with(
        &check_request(repos.good.path(), &good.path),
        "contract",
        json!("relative.yaml"),
    ));
    assert_check(&run.stdout, run.status, "INVALID_REQUEST", 7);
}

#[test]
fn replace_reports_contract_and_repo_refusals() {
    let repos = RepoCases::new();
    let sha = crate::support::sha256_hex(HELLO);
    for (what, contract, code, status) in contract_cases() {
        let request = crate::support::replace_request(
            repos.good.path(),
            &contract.path,
            "a.txt",
            Some(&sha),
            "world",
            "world",
        );
        let before = snapshot(&repos.good.file("a.txt"));
        let run = protocol(&request);
        match code {
            // `*.txt` declares a.txt: a no-op replacement succeeds; with no
            // writable_paths it is undeclared.
            "OK" if what == "good" => crate::protocol_common::assert_ok(&run, "a.txt", HELLO),
            "OK" => assert_refused(&run, "PATH_UNDECLARED"),
            _ => {
                crate::protocol_common::assert_failure(&run, code, status);
                assert_eq!(snapshot(&repos.good.file("a.txt")), before, "{what}");
            }
        }
    }
    let good = ContractFile::new("cand", &["*"]);
    for repo in repos.unavailable() {
        let request =
            crate::support::replace_request(&repo, &good.path, "a.txt", Some(&sha), "o", "p");
        crate::protocol_common::assert_failure(&protocol(&request), "REPO_UNAVAILABLE", 6);
    }
}

// ---- the check command line ----

fn host(args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    let out = Command::new(host_bin()).args(args).output().expect("run");
    (
        out.status.code().expect("exit code"),
        String::from_utf8(out.stdout).expect("utf-8"),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn check_cli_codes() {
    let repos = RepoCases::new();
    for (what, contract, code, status) in contract_cases() {
        let (got, stdout, stderr) = host(&[
            "check".as_ref(),
            "--repo".as_ref(),
            repos.good.path().as_os_str(),
            contract.path.as_os_str(),
        ]);
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
        assert_check(&stdout, got, code, status);
    }
    let good = ContractFile::new("cand", &["*"]);
    for repo in repos.unavailable() {
        let (got, stdout, _) = host(&[
            "check".as_ref(),
            "--repo".as_ref(),
            repo.as_os_str(),
            good.path.as_os_str(),
        ]);
        assert_check(&stdout, got, "REPO_UNAVAILABLE", 6);
    }
    // Contract before repository; option order does not matter.
    let (got, stdout, _) = host(&[
        "check".as_ref(),
        repos.plain.path().join("missing.yaml").as_os_str(),
        "--repo".as_ref(),
        repos.plain.path().as_os_str(),
    ]);
    assert_check(&stdout, got, "CONTRACT_UNREADABLE", 3);
}

#[test]
fn usage_errors_exit_2_with_nothing_on_stdout() {
    let repo = Repo::with_files(&[("a.txt", HELLO)]);
    let contract = ContractFile::new("cand", &["*"]);
    let r = repo.path().to_string_lossy().into_owned();
    let c = contract.path.to_string_lossy().into_owned();
    let cases: Vec<Vec<&str>> = vec![
        vec![],
        vec!["frobnicate"],
        vec!["check"],
        vec!["check", &c],
        vec!["check", "--repo", &r],
        vec!["check", "--repo"],
        vec!["check", "--repo", &r, &c, &c],
        vec!["check", "--repo", &r, "--repo", &r, &c],
        vec!["check", "--bogus", "--repo", &r, &c],
        vec!["protocol", "extra"],
    ];
    for args in cases {
        let os: Vec<&std::ffi::OsStr> = args.iter().map(std::convert::AsRef::as_ref).collect();
        let (status, stdout, stderr) = host(&os);
        assert_eq!(status, 2, "{args:?}: {stderr}");
        assert_eq!(stdout, "", "{args:?}: nothing on stdout");
        assert!(stderr.contains("usage"), "{args:?}: {stderr}");
    }
    // The same command, correctly spelled, succeeds.
    let (status, stdout, _) = host(&["check".as_ref(), "--repo".as_ref(), r.as_ref(), c.as_ref()]);
    assert_check(&stdout, status, "OK", 0);
}

#[test]
fn malformed_requests_are_invalid_before_the_contract_and_repo_are_read() {
    let fx = fixture();
    let missing_repo = fx.repo.path().join("no-such-repo");
    let missing_contract = fx.contract.dir.path().join("no-such-contract.yaml");
    let sha = fx.sha("a.txt");
    // Every malformed part of a request is INVALID_REQUEST even when the repository and
    // the contract are unusable: the request is judged first.
    for path in ["../x", "/etc/passwd", "a//b", "./a", "a/", "a\0b", ""] {
        for (repo, contract) in [
            (missing_repo.as_path(), fx.contract.path.as_path()),
            (fx.repo.path(), missing_contract.as_path()),
        ] {
            let request =
                crate::support::replace_request(repo, contract, path, Some(&sha), "world", "x");
            let run = protocol(&request);
            assert_eq!(run.response["code"], "INVALID_REQUEST", "{path:?}: {run:?}");
            assert_invalid(&run);
        }
    }
    for (key, value) in [
        ("old_text", json!("")),
        ("expected_sha256", json!("ABC")),
        ("new_text", json!(1)),
    ] {
        let request = crate::support::replace_request(
            &missing_repo,
            &missing_contract,
            "a.txt",
            Some(&sha),
            "world",
            "x",
        );
        assert_invalid(&protocol(&with(&request, key, value)));
    }
    sibling_success(&fx);
}

#[test]
fn lone_surrogates_are_invalid() {
    let fx = fixture();
    let good = valid(&fx).to_string();
    for (from, to) in [
        ("\"new_text\":\"there\"", "\"new_text\":\"\\ud800\""),
        ("\"old_text\":\"world\"", "\"old_text\":\"\\udfff\""),
        ("\"path\":\"a.txt\"", "\"path\":\"a\\ud800.txt\""),
    ] {
        assert!(good.contains(from), "{good}");
        assert_invalid_raw(&fx, good.replace(from, to).as_bytes(), to);
    }
    // A valid surrogate pair is an ordinary character.
    let pair = good.replace("\"new_text\":\"there\"", "\"new_text\":\"\\ud83d\\ude00\"");
    let run = protocol_raw(pair.as_bytes());
    crate::protocol_common::assert_ok(&run, "a.txt", "hello \u{1f600}\n".as_bytes());
}

// ---- path length limits (4096 bytes, 255 per segment) ----

/// A path of exactly `len` bytes of `x`, in segments of at most 255 bytes.
fn long_path(len: usize) -> String {
    let mut path = String::new();
    while path.len() < len {
        if !path.is_empty() {
            path.push('/');
        }
        let room = (len - path.len()).min(255);
        let take = if len - path.len() - room == 1 {
            room - 1
        } else {
            room
        };
        path.push_str(&"x".repeat(take));
    }
    assert_eq!(path.len(), len);
    path
}

/// Opens the directory holding `rel` beneath `root` one segment at a time (a path this
/// long cannot be given to the kernel whole), creating the directories when `create`.
fn parent_dir(root: &std::path::Path, rel: &str, create: bool) -> (std::os::fd::OwnedFd, String) {
    use rustix::fs::{Mode, OFlags, mkdirat, open, openat};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut dir = open(root, flags, Mode::empty()).expect("open root");
    let (dirs, name) = rel.rsplit_once('/').unwrap_or(("", rel));
    for segment in dirs.split('/').filter(|s| !s.is_empty()) {
        if create {
            match mkdirat(&dir, segment, Mode::from_raw_mode(0o755)) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(e) => panic!("mkdirat: {e}"),
            }
        }
        dir = openat(&dir, segment, flags, Mode::empty()).expect("openat");
    }
    (dir, name.to_string())
}

/// Creates `rel` beneath `root` holding `bytes`.
fn write_deep(root: &std::path::Path, rel: &str, bytes: &[u8]) {
    use rustix::fs::{Mode, OFlags, openat};
    let (dir, name) = parent_dir(root, rel, true);
    let fd = openat(
        &dir,
        name.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .expect("create");
    let mut file = std::fs::File::from(fd);
    std::io::Write::write_all(&mut file, bytes).expect("write");
}

/// The bytes, mode and inode of `rel` beneath `root`, and the names beside it.
fn snapshot_deep(root: &std::path::Path, rel: &str) -> (Vec<u8>, u32, u64, Vec<String>) {
    use rustix::fs::{AtFlags, Mode, OFlags, openat, statat};
    let (dir, name) = parent_dir(root, rel, false);
    let stat = statat(&dir, name.as_str(), AtFlags::SYMLINK_NOFOLLOW).expect("stat");
    let fd = openat(
        &dir,
        name.as_str(),
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .expect("open");
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::fs::File::from(fd), &mut bytes).expect("read");
    let listing =
        openat(&dir, ".", OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).expect("reopen");
    let mut names: Vec<String> = rustix::fs::Dir::read_from(&listing)
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n != "." && n != "..")
        .collect();
    names.sort();
    (bytes, stat.st_mode, stat.st_ino, names)
}

/// `replace`, `edit` and `read` requests of `path` on `fx`, with `sha` as the revision.
fn path_requests(fx: &Fixture, path: &str, sha: &str) -> Vec<(&'static str, Value)> {
    let (repo, contract) = (fx.repo.path(), &fx.contract.path);
    vec![
        ("replace", fx.request(path, Some(sha), "world", "there")),
        (
            "edit",
            json!({"version": 1, "operation": "edit", "repo": repo, "contract": contract,
                   "path": path, "expected_sha256": sha,
                   "edits": [{"op": "replace", "old_text": "world", "new_text": "there"}]}),
        ),
        (
            "read",
            json!({"version": 1, "operation": "read", "repo": repo, "contract": contract,
                   "path": path}),
        ),
    ]
}

/// Every operation on `path` is `INVALID_REQUEST` with exactly `expected` as the message
/// (which never quotes the path), and the file at `watch` (if any) is untouched.
fn assert_path_refused(fx: &Fixture, path: &str, watch: Option<&str>, expected: &str) {
    let sha = crate::support::sha256_hex(HELLO);
    let before = watch.map(|rel| snapshot_deep(fx.repo.path(), rel));
    let entries = dir_entries(fx.repo.path());
    for (operation, request) in path_requests(fx, path, &sha) {
        let run = protocol(&request);
        assert_invalid(&run);
        assert_eq!(
            run.response["message"],
            format!("path: {expected}"),
            "{operation}: {run:?}"
        );
        assert!(
            !run.stdout.contains("xxxxxxxx"),
            "{operation}: the path is echoed"
        );
    }
    if let (Some(rel), Some(before)) = (watch, before) {
        assert_eq!(snapshot_deep(fx.repo.path(), rel), before, "{rel} changed");
    }
    assert_eq!(dir_entries(fx.repo.path()), entries);
}

#[test]
fn a_segment_of_255_bytes_is_edited_and_256_is_invalid() {
    let at = "x".repeat(255);
    let fx = Fixture::new(&[("a.txt", HELLO), (&format!("d/{at}"), HELLO)], &["*"]);
    let over = format!("d/{}", "x".repeat(256));
    assert_path_refused(
        &fx,
        &over,
        Some(&format!("d/{at}")),
        "segment 2 of the path is 256 bytes long; at most 255 bytes are allowed",
    );
    let rel = format!("d/{at}");
    let run = protocol(&path_requests(&fx, &rel, &fx.sha(&rel))[2].1);
    assert_eq!(run.response["result"]["text"], "hello world\n", "{run:?}");
    fx.succeed(&fx.fresh(&rel, "world", "there"), &rel, THERE);
}

#[test]
fn a_path_of_4096_bytes_is_edited_and_4097_is_invalid() {
    let fx = fixture();
    let (at, over) = (long_path(4096), long_path(4097));
    // Both exist, so only the length decides; the over-long one must stay untouched.
    write_deep(fx.repo.path(), &at, HELLO);
    write_deep(fx.repo.path(), &over, HELLO);
    assert_path_refused(
        &fx,
        &over,
        Some(&over),
        "the path is 4097 bytes long; at most 4096 bytes are allowed",
    );
    let sha = crate::support::sha256_hex(HELLO);
    let requests = path_requests(&fx, &at, &sha);
    let run = protocol(&requests[2].1);
    assert_eq!(run.status, 0, "read at the limit: {run:?}");
    assert_eq!(run.response["result"]["text"], "hello world\n");
    let (_, mode, ino, names) = snapshot_deep(fx.repo.path(), &at);
    let run = protocol(&requests[0].1);
    crate::protocol_common::assert_ok(&run, &at, THERE);
    let (bytes, mode_after, ino_after, names_after) = snapshot_deep(fx.repo.path(), &at);
    assert_eq!(bytes, THERE);
    assert_eq!(mode_after, mode);
    assert_ne!(ino_after, ino, "published by a rename");
    assert_eq!(names_after, names, "no temporary left beside it");
    assert_eq!(snapshot_deep(fx.repo.path(), &over).0, HELLO);
}

#[test]
fn a_ten_megabyte_path_is_invalid_at_once_and_not_echoed() {
    let patterns: Vec<&str> = vec!["*a*a*a*a*a*a*a*a*b"; 100];
    let fx = Fixture::new(&[("a.txt", HELLO)], &patterns);
    let huge = "a".repeat(10 * 1024 * 1024);
    let before = snapshot(&fx.file("a.txt"));
    for (operation, request) in path_requests(&fx, &huge, &fx.sha("a.txt")) {
        let input = request.to_string();
        let run = protocol_timeout(input.as_bytes(), Duration::from_secs(60), |_| {});
        assert_invalid(&run);
        assert_eq!(
            run.response["message"],
            "path: the path is 10485760 bytes long; at most 4096 bytes are allowed",
            "{operation}"
        );
        assert!(
            run.stdout.len() < 200,
            "{operation}: {} bytes",
            run.stdout.len()
        );
    }
    assert_eq!(snapshot(&fx.file("a.txt")), before);
    // The same contract still decides an ordinary path.
    let b = Fixture::new(&[("aab", HELLO)], &patterns);
    let run = protocol(&b.fresh("aab", "world", "there"));
    assert_refused(&run, "PATH_UNDECLARED");
    let fx = Fixture::new(&[("aaaaaaaab", HELLO)], &patterns);
    fx.succeed(&fx.fresh("aaaaaaaab", "world", "there"), "aaaaaaaab", THERE);
}

// ---- messages repeat the request's text only in part ----

/// Asserts `INVALID_REQUEST` whose whole response line is at most `max` bytes.
fn assert_short_invalid(fx: &Fixture, input: &[u8], max: usize, what: &str) -> String {
    let run = assert_invalid_raw(fx, input, what);
    assert!(
        run.stdout.len() <= max,
        "{what}: a {}-byte response for a {}-byte request",
        run.stdout.len(),
        input.len()
    );
    run.response["message"]
        .as_str()
        .expect("message")
        .to_string()
}

#[test]
fn long_or_escaped_input_is_never_echoed_in_full() {
    let fx = fixture();
    // Found by the protocol_request fuzz target (fuzz/regressions/protocol_request/): a
    // top-level JSON string of DEL characters came back with each one spelled `\u{7f}`,
    // an 865-byte message for a 250-byte request.
    let found = include_bytes!(
        "../../fuzz/regressions/protocol_request/crash-80e9a8af4ae12659ea6f5c5cbf900b53861c002a"
    );
    let message = assert_short_invalid(&fx, found, 700, "the fuzzer's input");
    assert!(
        message.ends_with("expected a JSON object at line 1 column 239"),
        "{message}"
    );
    let dels = format!("\"{}\"", "\u{7f}".repeat(1 << 20));
    assert_short_invalid(&fx, dels.as_bytes(), 700, "a string of a million DELs");
    let good = valid(&fx);
    let long = "\u{1}".repeat(1 << 20);
    let mut duplicate = good.to_string();
    duplicate.insert_str(1, &format!("{}:1,{}:2,", json!(long), json!(long)));
    let mut edit = json!({"version": 1, "operation": "edit", "repo": fx.repo.path(),
        "contract": &fx.contract.path, "path": "a.txt", "expected_sha256": null,
        "edits": [{"op": "replace", "old_text": "a", "new_text": "b"}]});
    edit["edits"][0]["op"] = json!(long);
    let mut edit_field = edit.clone();
    edit_field["edits"][0]["op"] = json!("replace");
    edit_field["edits"][0][long.as_str()] = json!(1);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "an unknown operation",
            with(&good, "operation", json!(long))
                .to_string()
                .into_bytes(),
        ),
        (
            "an unknown field",
            with(&good, &long, json!(1)).to_string().into_bytes(),
        ),
        ("a duplicate field", duplicate.into_bytes()),
        ("an unknown op", edit.to_string().into_bytes()),
        ("an unknown edit field", edit_field.to_string().into_bytes()),
    ];
    for (what, input) in cases {
        let message = assert_short_invalid(&fx, &input, 700, what);
        assert!(message.contains("(1048576 bytes)"), "{what}: {message}");
    }
    // A version is named by its kind unless it is a number (found by a review: a 5 MiB
    // string came back whole, and escaped backslashes twice their size).
    for (what, version) in [
        ("a long version string", json!(long)),
        ("a version of backslashes", json!("\\".repeat(1 << 20))),
        ("a version array", json!(vec![1; 1 << 18])),
    ] {
        let input = with(&good, "version", version).to_string().into_bytes();
        let message = assert_short_invalid(&fx, &input, 300, what);
        assert!(
            message.starts_with("unsupported protocol version a"),
            "{what}: {message}"
        );
    }
    let message = assert_short_invalid(
        &fx,
        with(&good, "version", json!(2)).to_string().as_bytes(),
        300,
        "version 2",
    );
    assert!(
        message.starts_with("unsupported protocol version 2;"),
        "{message}"
    );
    sibling_success(&fx);
}

#[test]
fn repo_and_contract_paths_over_4096_bytes_are_invalid() {
    let fx = fixture();
    let good = valid(&fx);
    for key in ["repo", "contract"] {
        let at_limit = format!("/{}", "d/".repeat(2047)) + "x";
        assert_eq!(at_limit.len(), 4096);
        // At the limit the path is looked at (and does not exist).
        let run = protocol(&with(&good, key, json!(at_limit)));
        let code = if key == "repo" {
            "REPO_UNAVAILABLE"
        } else {
            "CONTRACT_UNREADABLE"
        };
        assert_eq!(run.response["code"], code, "{key}: {run:?}");
        let over = format!("{at_limit}x");
        let message = assert_short_invalid(
            &fx,
            with(&good, key, json!(over)).to_string().as_bytes(),
            300,
            key,
        );
        assert_eq!(
            message,
            format!("`{key}` is 4097 bytes long; at most 4096 bytes are allowed")
        );
    }
    sibling_success(&fx);
}

/// A standard input that cannot be read (a directory: `read` fails with `EISDIR`) is one
/// well-formed `INVALID_REQUEST` naming the error, exit 7; the sibling with the request on a
/// readable stdin succeeds.
#[test]
fn a_stdin_that_cannot_be_read_is_invalid_and_names_the_error() {
    let fx = fixture();
    let before = snapshot(&fx.file("a.txt"));
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(host_bin())
        .arg("protocol")
        .stdin(std::fs::File::open(dir.path()).expect("open a directory"))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(7));
    let line = String::from_utf8(out.stdout).expect("utf-8");
    assert_eq!(line.matches('\n').count(), 1, "{line}");
    let response: Value = serde_json::from_str(line.trim_end()).expect("JSON");
    assert_eq!(response["code"], "INVALID_REQUEST");
    let message = response["message"].as_str().expect("message");
    assert!(
        message.starts_with("cannot read stdin: Is a directory"),
        "{message}"
    );
    assert_eq!(snapshot(&fx.file("a.txt")), before);
    fx.succeed(&valid(&fx), "a.txt", THERE);
}
