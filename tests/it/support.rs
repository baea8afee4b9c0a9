//! Shared helpers: temporary repositories, contracts, running `satyrn-host`, and file
//! snapshots that prove a refusal changed nothing.
#![allow(dead_code)]

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

/// The `satyrn-host` binary under test.
pub fn host_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_satyrn-host"))
}

/// A git command with no user or system configuration leaking in.
pub fn git(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "test")
        .env("GIT_AUTHOR_EMAIL", "test@example.invalid")
        .env("GIT_COMMITTER_NAME", "test")
        .env("GIT_COMMITTER_EMAIL", "test@example.invalid")
        .env("LC_ALL", "C");
    without_git_location(&mut cmd);
    cmd
}

/// Removes the variables that would point git (or `satyrn-host`) at another repository,
/// worktree, index or namespace than the one the test means.
pub fn without_git_location(cmd: &mut Command) -> &mut Command {
    for var in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_NAMESPACE",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// Runs git and returns stdout; panics with stderr on failure.
pub fn git_ok(dir: &Path, args: &[&str]) -> String {
    let out = git(dir).args(args).output().expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 git output")
}

/// A temporary git repository with one commit of `files`.
pub struct Repo {
    pub dir: tempfile::TempDir,
}

impl Repo {
    /// Creates the repository and commits `files` (path, content).
    pub fn with_files(files: &[(&str, &[u8])]) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        git_ok(dir.path(), &["init", "-q", "-b", "main", "."]);
        for (path, content) in files {
            let full = dir.path().join(path);
            std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
            std::fs::write(&full, content).expect("write");
        }
        git_ok(dir.path(), &["add", "-A"]);
        git_ok(dir.path(), &["commit", "-q", "--allow-empty", "-m", "init"]);
        Self { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn file(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
}

/// Writes a contract file in its own temporary directory (outside any repository).
pub struct ContractFile {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl ContractFile {
    pub fn new(id: &str, writable: &[&str]) -> Self {
        let mut text = format!("id: {id}\ntask: edit the files\nwritable_paths:\n");
        for w in writable {
            text.push_str(&format!(
                "  - {}\n",
                serde_json::to_string(w).expect("json")
            ));
        }
        if writable.is_empty() {
            text = format!("id: {id}\ntask: edit the files\n");
        }
        Self::raw(&text)
    }

    /// A contract that declares every path writable (`*`; the default private paths stay
    /// private): for deliveries whose commands may change anything.
    pub fn any(id: &str) -> Self {
        Self::new(id, &["*"])
    }

    pub fn raw(text: &str) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("contract.yaml");
        std::fs::write(&path, text).expect("write contract");
        Self { dir, path }
    }
}

/// SHA-256 of bytes, lowercase hex — computed with `sha2` directly, not with the product's
/// `Revision`, so tests check revisions against an independent spelling.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// SHA-256 of a file's current bytes.
pub fn sha256_file(path: &Path) -> String {
    sha256_hex(&std::fs::read(path).expect("read"))
}

/// The result of one `satyrn-host protocol` run.
#[derive(Debug)]
pub struct ProtocolRun {
    pub status: i32,
    pub response: Value,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `satyrn-host protocol` with raw stdin bytes; asserts exactly one JSON line.
pub fn protocol_raw(input: &[u8]) -> ProtocolRun {
    protocol_with(input, |_| {})
}

/// Like [`protocol_raw`], with a hook to adjust the command first.
pub fn protocol_with(input: &[u8], adjust: impl FnOnce(&mut Command)) -> ProtocolRun {
    use std::io::Write;
    let mut cmd = Command::new(host_bin());
    cmd.arg("protocol")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    adjust(&mut cmd);
    let mut child = cmd.spawn().expect("spawn satyrn-host");
    let mut stdin = child.stdin.take().expect("stdin");
    // The host may stop reading early (oversized input); a broken pipe is fine.
    let _ = stdin.write_all(input);
    drop(stdin);
    let out: Output = child.wait_with_output().expect("wait");
    let stdout = String::from_utf8(out.stdout).expect("utf-8 stdout");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        stdout.ends_with('\n') && stdout.matches('\n').count() == 1,
        "exactly one response line expected, got {stdout:?} (stderr {stderr:?})"
    );
    let response: Value = serde_json::from_str(stdout.trim_end()).expect("response is JSON");
    assert!(
        !stderr.contains("panicked"),
        "panic trace on stderr: {stderr}"
    );
    ProtocolRun {
        status: out.status.code().expect("exited normally"),
        response,
        stdout,
        stderr,
    }
}

/// A `replace` request as JSON.
pub fn replace_request(
    repo: &Path,
    contract: &Path,
    path: &str,
    expected: Option<&str>,
    old_text: &str,
    new_text: &str,
) -> Value {
    json!({
        "version": 1,
        "operation": "replace",
        "repo": repo,
        "contract": contract,
        "path": path,
        "expected_sha256": expected,
        "old_text": old_text,
        "new_text": new_text,
    })
}

/// Runs one `replace` request.
pub fn protocol(request: &Value) -> ProtocolRun {
    protocol_raw(request.to_string().as_bytes())
}

/// What must not change when a request is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub bytes: Vec<u8>,
    pub mode: u32,
    pub ino: u64,
    pub nlink: u64,
}

/// Snapshots a file without following a symlink at the leaf.
pub fn snapshot(path: &Path) -> Snapshot {
    let meta = std::fs::symlink_metadata(path).expect("stat");
    let bytes = if meta.file_type().is_file() {
        std::fs::read(path).expect("read")
    } else {
        Vec::new()
    };
    Snapshot {
        bytes,
        mode: meta.mode(),
        ino: meta.ino(),
        nlink: meta.nlink(),
    }
}

/// The names in a directory, sorted (to prove no temporary was left behind).
pub fn dir_entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Everything beneath `root` (`.git` included), never following a symlink: kind, bytes,
/// permission bits and inode of every entry, and the target of every symlink.
pub fn tree_state(root: &Path) -> std::collections::BTreeMap<String, (String, Vec<u8>, u32, u64)> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            let meta = std::fs::symlink_metadata(&path).expect("lstat");
            let rel = path
                .strip_prefix(root)
                .expect("beneath")
                .to_string_lossy()
                .into_owned();
            let (kind, bytes) = if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).expect("readlink");
                ("symlink", target.to_string_lossy().as_bytes().to_vec())
            } else if meta.is_dir() {
                stack.push(path.clone());
                ("dir", Vec::new())
            } else {
                ("file", std::fs::read(&path).expect("read"))
            };
            out.insert(
                rel,
                (
                    kind.to_string(),
                    bytes,
                    std::os::unix::fs::MetadataExt::mode(&meta),
                    std::os::unix::fs::MetadataExt::ino(&meta),
                ),
            );
        }
    }
    out
}

/// Makes a FIFO (mode 0644) at `path`.
pub fn mkfifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .expect("mkfifo");
}
