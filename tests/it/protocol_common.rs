//! Helpers shared by the protocol, race and component tests: a repository with its
//! contract, response assertions, and a `satyrn-host protocol` run with a timeout.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{
    ContractFile, ProtocolRun, Repo, Snapshot, dir_entries, host_bin, protocol, replace_request,
    sha256_file, sha256_hex, snapshot,
};

/// A repository with files and a contract declaring `writable` patterns.
pub struct Fixture {
    pub repo: Repo,
    pub contract: ContractFile,
}

impl Fixture {
    pub fn new(files: &[(&str, &[u8])], writable: &[&str]) -> Self {
        Self {
            repo: Repo::with_files(files),
            contract: ContractFile::new("cand", writable),
        }
    }

    pub fn file(&self, rel: &str) -> PathBuf {
        self.repo.file(rel)
    }

    /// The current revision of a file in the repository.
    pub fn sha(&self, rel: &str) -> String {
        sha256_file(&self.file(rel))
    }

    /// A `replace` request against this fixture.
    pub fn request(&self, path: &str, expected: Option<&str>, old: &str, new: &str) -> Value {
        replace_request(
            self.repo.path(),
            &self.contract.path,
            path,
            expected,
            old,
            new,
        )
    }

    /// A `replace` request of `rel` with its current revision.
    pub fn fresh(&self, rel: &str, old: &str, new: &str) -> Value {
        let sha = self.sha(rel);
        self.request(rel, Some(&sha), old, new)
    }

    /// Runs `request`, asserts it is refused with `code` (exit `status`), and that
    /// every file in `watch` and every directory in `dirs` is exactly as before.
    pub fn refuse(
        &self,
        request: &Value,
        code: &str,
        watch: &[&str],
        dirs: &[&str],
    ) -> ProtocolRun {
        let files: Vec<(PathBuf, Snapshot)> = watch
            .iter()
            .map(|rel| (self.file(rel), snapshot(&self.file(rel))))
            .collect();
        let listings: Vec<(PathBuf, Vec<String>)> = dirs
            .iter()
            .map(|rel| {
                let dir = self.repo.path().join(rel);
                let entries = dir_entries(&dir);
                (dir, entries)
            })
            .collect();
        let run = protocol(request);
        assert_refused(&run, code);
        for (path, before) in &files {
            assert_eq!(
                &snapshot(path),
                before,
                "{} changed although the request was refused with {code}",
                path.display()
            );
        }
        for (dir, before) in &listings {
            assert_eq!(
                &dir_entries(dir),
                before,
                "{} gained or lost entries although the request was refused with {code}",
                dir.display()
            );
        }
        run
    }

    /// Runs `request`, asserts success, and that `rel` now holds exactly `expected`.
    pub fn succeed(&self, request: &Value, rel: &str, expected: &[u8]) -> ProtocolRun {
        let dir = self.file(rel).parent().expect("parent").to_path_buf();
        let before = dir_entries(&dir);
        let run = protocol(request);
        assert_ok(&run, rel, expected);
        assert_eq!(
            std::fs::read(self.file(rel)).expect("read"),
            expected,
            "{rel} does not hold the edited bytes"
        );
        assert_eq!(dir_entries(&dir), before, "the directory of {rel} changed");
        run
    }
}

/// Asserts the exact success response for `path` whose new bytes are `new_bytes`.
pub fn assert_ok(run: &ProtocolRun, path: &str, new_bytes: &[u8]) {
    let expected = json!({
        "version": 1,
        "ok": true,
        "code": "OK",
        "message": "",
        "result": {"path": path, "sha256": sha256_hex(new_bytes)},
    });
    assert_eq!(run.status, 0, "exit status of a success: {run:?}");
    assert_eq!(run.response, expected, "success response: {run:?}");
    // The field order is part of the protocol.
    let line = format!(
        "{{\"version\":1,\"ok\":true,\"code\":\"OK\",\"message\":\"\",\"result\":{{\"path\":{},\"sha256\":\"{}\"}}}}\n",
        serde_json::to_string(path).expect("json"),
        sha256_hex(new_bytes)
    );
    assert_eq!(run.stdout, line, "success line");
}

/// Asserts a five-field failure response with `code`, `ok:false`, `result:null`, a
/// non-empty message, and the exit status that code has.
pub fn assert_failure(run: &ProtocolRun, code: &str, status: i32) {
    assert_eq!(run.response["code"], code, "expected {code}, got {run:?}");
    assert_eq!(run.status, status, "exit status for {code}: {run:?}");
    let object = run.response.as_object().expect("response is an object");
    let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["code", "message", "ok", "result", "version"],
        "{run:?}"
    );
    assert_eq!(run.response["version"], 1);
    assert_eq!(run.response["ok"], false);
    assert_eq!(run.response["result"], Value::Null);
    let message = run.response["message"]
        .as_str()
        .expect("message is a string");
    assert!(!message.is_empty(), "a refusal explains itself: {run:?}");
    assert!(
        run.stdout
            .starts_with("{\"version\":1,\"ok\":false,\"code\":"),
        "field order: {}",
        run.stdout
    );
}

/// A policy refusal or `MUTATION_FAILED`: exit 9.
pub fn assert_refused(run: &ProtocolRun, code: &str) {
    assert_failure(run, code, 9);
}

/// `INVALID_REQUEST`: exit 7.
pub fn assert_invalid(run: &ProtocolRun) {
    assert_failure(run, "INVALID_REQUEST", 7);
}

/// Runs `satyrn-host protocol` with `input`, killing it and failing the test if it does
/// not finish within `timeout`. `adjust` may change the command (e.g. add `pre_exec`).
pub fn protocol_timeout(
    input: &[u8],
    timeout: Duration,
    adjust: impl FnOnce(&mut Command),
) -> ProtocolRun {
    let mut cmd = Command::new(host_bin());
    cmd.arg("protocol")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    adjust(&mut cmd);
    let mut child = cmd.spawn().expect("spawn satyrn-host");
    let pid = i32::try_from(child.id()).expect("pid");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stderr.read_to_end(&mut s);
        s
    });
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stdout.read_to_end(&mut s);
        let _ = tx.send(s);
    });
    let out = match rx.recv_timeout(timeout) {
        Ok(out) => out,
        Err(_) => {
            // SAFETY: `pid` is our own child, not yet reaped (we still own `child`).
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
            let _ = child.wait();
            panic!("satyrn-host protocol did not finish within {timeout:?}; killed it");
        }
    };
    let status = child.wait().expect("wait");
    writer.join().expect("writer");
    let stderr = String::from_utf8_lossy(&err_reader.join().expect("stderr")).into_owned();
    let stdout = String::from_utf8(out).expect("utf-8 stdout");
    assert!(
        stdout.ends_with('\n') && stdout.matches('\n').count() == 1,
        "exactly one response line expected, got {stdout:?} (stderr {stderr:?})"
    );
    assert!(!stderr.contains("panicked"), "panic trace: {stderr}");
    let response: Value = serde_json::from_str(stdout.trim_end()).expect("response is JSON");
    ProtocolRun {
        status: status.code().expect("exited normally"),
        response,
        stdout,
        stderr,
    }
}

/// A path's metadata mode (type and permission bits), without following symlinks.
pub fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).expect("stat").mode()
}

/// Whether `name` looks like a publish temporary (`.NAME.satyrn-*.tmp`): deliberately
/// looser than the product's predicate, so a temporary of a slightly different shape is
/// still caught.
pub fn is_temporary(name: &str) -> bool {
    name.starts_with('.') && name.contains(".satyrn-") && name.ends_with(".tmp")
}

/// Names of leftover publish temporaries (`.NAME.satyrn-*.tmp`) in `dir`.
pub fn temporaries(dir: &Path) -> Vec<String> {
    dir_entries(dir)
        .into_iter()
        .filter(|n| is_temporary(n))
        .collect()
}
