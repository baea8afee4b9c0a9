//! What every benchmark shares: percentiles, formatting, and the native atomic write the
//! baselines end with.
#![allow(dead_code)] // each bench uses its own subset

use std::io::{BufRead, BufReader, Write};

use serde_json::{Value, json};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `q`-quantile (0.0–1.0, nearest rank) of `samples`.
pub fn percentile(samples: &[Duration], q: f64) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// p50 and p95 of `samples`.
pub fn percentiles(samples: &[Duration]) -> (Duration, Duration) {
    (percentile(samples, 0.50), percentile(samples, 0.95))
}

/// The value of `--runs N` among `args`, or `default`.
pub fn runs_arg(args: &[String], default: usize) -> usize {
    args.iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `12.34 ms`.
pub fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

/// Lowercase hex SHA-256 of `bytes`, as satyrn spells revisions.
pub fn sha256_hex(bytes: &[u8]) -> String {
    satyrn_mutator_core::revision::Revision::of(bytes).to_hex()
}

/// The native baselines' publish: a temporary beside `file`, fsync, rename over `file`,
/// fsync the directory — the same durability satyrn's publish gives.
pub fn write_atomically(file: &Path, content: &[u8]) {
    let dir = file.parent().expect("parent");
    let temp = dir.join(".native.tmp");
    let mut f = std::fs::File::create(&temp).expect("create temp");
    f.write_all(content).expect("write");
    f.sync_all().expect("fsync");
    std::fs::rename(&temp, file).expect("rename");
    std::fs::File::open(dir)
        .expect("dir")
        .sync_all()
        .expect("fsync dir");
}

/// Starts `satyrn-host protocol` with `request` written to its stdin (then closed).
pub fn spawn_protocol(host: &Path, request: &str, stdout: Stdio) -> Child {
    let mut child = Command::new(host)
        .arg("protocol")
        .stdin(Stdio::piped())
        .stdout(stdout)
        .spawn()
        .expect("spawn satyrn-host");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(request.as_bytes())
        .expect("write request");
    child
}

/// Times one whole `satyrn-host protocol` process answering `request`; panics unless it
/// exits 0.
pub fn time_protocol(host: &Path, request: &str) -> Duration {
    let started = Instant::now();
    let out = spawn_protocol(host, request, Stdio::piped())
        .wait_with_output()
        .expect("wait");
    let elapsed = started.elapsed();
    assert!(
        out.status.success(),
        "satyrn-host failed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    elapsed
}

/// A git command in `dir` with no user or system configuration and a fixed identity.
pub fn git(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.invalid")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.invalid")
        .env("LC_ALL", "C")
        .stdin(Stdio::null());
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

/// Runs `cmd` and panics with its stderr unless it succeeds.
pub fn ok(cmd: &mut Command) {
    let out = cmd.output().expect("spawn");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Creates `repo` (and its parents) as an empty git repository.
pub fn git_init(repo: &Path) {
    std::fs::create_dir_all(repo).expect("mkdir");
    ok(git(repo).args(["init", "-q"]));
}

/// Creates `repo` with one commit of `files` small files, `per_dir` to a directory
/// (`dNNN/fNNNNN.txt`), on branch `main`.
pub fn repo_of_files(repo: &Path, files: usize, per_dir: usize) {
    std::fs::create_dir_all(repo).expect("mkdir");
    ok(git(repo).args(["init", "-q", "-b", "main", "."]));
    for i in 0..files {
        let dir = repo.join(format!("d{:03}", i / per_dir));
        if i % per_dir == 0 {
            std::fs::create_dir(&dir).expect("mkdir");
        }
        std::fs::write(
            dir.join(format!("f{i:05}.txt")),
            format!("file {i}\n").repeat(8),
        )
        .expect("write");
    }
    ok(git(repo).args(["add", "-A"]));
    ok(git(repo).args(["commit", "-q", "-m", "bench"]));
}

/// Runs `cmd` (stdout and stderr discarded) and returns its wall time and the CPU time
/// (user + system) of its whole process tree, from `wait4`'s rusage (which includes every
/// descendant the process waited for); panics unless it exits 0. The CPU time stays
/// comparable when other work shares the machine.
#[allow(dead_code)] // not every bench uses it
#[allow(clippy::zombie_processes)] // reaped by wait4, which also reports the rusage
pub fn wall_and_cpu(cmd: &mut Command) -> (Duration, Duration) {
    let started = Instant::now();
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let pid = i32::try_from(child.id()).expect("pid");
    let mut status = 0;
    // SAFETY: plain wait4 on our own child, not yet reaped, with valid out-pointers.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = started.elapsed();
    assert_eq!(reaped, pid, "wait4");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{cmd:?} failed"
    );
    let time = |t: libc::timeval| {
        Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
    };
    (wall, time(usage.ru_utime) + time(usage.ru_stime))
}

/// A long-lived `satyrn-host mcp` session driven over stdio, one JSON-RPC request at a time.
pub struct McpSession {
    /// The server process.
    pub child: std::process::Child,
    /// Its stdin (drop it to end the session).
    pub stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
    next: u64,
}

impl McpSession {
    /// Starts the server over `repo` under `contract` and completes the handshake.
    pub fn start(host: &Path, repo: &Path, contract: &Path) -> Self {
        let mut child = Command::new(host)
            .arg("mcp")
            .arg("--repo")
            .arg(repo)
            .arg(contract)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn satyrn-host mcp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut session = Self {
            child,
            stdin,
            stdout,
            next: 0,
        };
        session.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
        );
        writeln!(
            session.stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )
        .expect("initialized");
        session
    }

    /// One request; its answer.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        writeln!(
            self.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )
        .expect("write");
        self.stdin.flush().expect("flush");
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("read");
        let value: Value = serde_json::from_str(&line).expect("json");
        assert_eq!(value["id"], id, "{line}");
        value
    }

    /// One successful tool call's structured content (panics on a tool error).
    pub fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let answer = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        assert_eq!(answer["result"]["isError"], false, "{answer}");
        answer["result"]["structuredContent"].clone()
    }
}
