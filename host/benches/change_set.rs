//! A change set of ten files (10 KiB each, one hunk each) as one MCP `apply_patch` call,
//! against the same ten changes as ten single-file MCP `edit` calls and against the native
//! floor (the same ten writes, fsyncs and renames and the directory fsync in plain Rust),
//! interleaved in the same run; then the cost of recovery after a kill at every step of such
//! a set's publish, against the recovery every lock runs when nothing is left.
//!
//! Run: `cargo bench -p satyrn-host --bench change_set [-- --runs N]` (release binary; the
//! kills use the debug binary's `SATYRN_TEST_KILL_AT`, which a release build never reads, so
//! the bench builds it first with `cargo build -p satyrn-host`). Goals: the set ≥ 3× faster
//! than ten edits, ≤ 2× the native floor; recovery ≤ 10 ms.

mod common;

use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

const FILES: usize = 10;

fn content(i: usize, k: u64) -> String {
    let mut text = format!("// marker {i} {k}\n");
    let line = format!("let value_{i} = compute(input, 42); // ordinary source text\n");
    while text.len() + line.len() <= 10 * 1024 {
        text.push_str(&line);
    }
    text
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs = common::runs_arg(&args, 100);
    let mut out = std::io::stdout().lock();
    let host = Path::new(env!("CARGO_BIN_EXE_satyrn-host"));
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = tmp.path().join("repo");
    common::git_init(&repo);
    std::fs::create_dir(repo.join("src")).expect("mkdir");
    std::fs::create_dir(repo.join("native")).expect("mkdir");
    for i in 0..FILES {
        std::fs::write(repo.join(format!("src/f{i}.txt")), content(i, 0)).expect("write");
    }
    let contract = tmp.path().join("contract.yaml");
    std::fs::write(
        &contract,
        "id: bench\ntask: bench\nwritable_paths: ['src/*']\n",
    )
    .expect("contract");
    let _ = writeln!(
        out,
        "satyrn-host: {}\n{FILES} files of {} bytes, one hunk each; {runs} rounds, interleaved",
        host.display(),
        content(0, 0).len()
    );

    let mut session = common::McpSession::start(host, &repo, &contract);
    for i in 0..FILES {
        session.call("read", json!({"path": format!("src/f{i}.txt")}));
    }
    let (mut sets, mut singles, mut native, mut batched) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut k = 0u64;
    for round in 0..=runs {
        let mut patch = String::from("*** Begin Patch\n");
        for i in 0..FILES {
            patch.push_str(&format!(
                "*** Update File: src/f{i}.txt\n@@\n-// marker {i} {k}\n+// marker {i} {}\n",
                k + 1
            ));
        }
        patch.push_str("*** End Patch\n");
        let started = Instant::now();
        let done = session.call("apply_patch", json!({"patch": patch}));
        let set = started.elapsed();
        assert_eq!(
            done["files"].as_array().map(Vec::len),
            Some(FILES),
            "{done}"
        );
        k += 1;

        let started = Instant::now();
        for i in 0..FILES {
            session.call(
                "edit",
                json!({"path": format!("src/f{i}.txt"), "edits": [{"op": "replace",
                    "old_text": format!("// marker {i} {k}\n"), "new_text": format!("// marker {i} {}\n", k + 1)}]}),
            );
        }
        let single = started.elapsed();
        k += 1;
        assert_eq!(
            std::fs::read_to_string(repo.join("src/f3.txt")).expect("read"),
            content(3, k)
        );

        let contents: Vec<String> = (0..FILES).map(|i| content(i, k + round as u64)).collect();
        let floor = native_floor(&repo.join("native"), &contents);
        let contents: Vec<String> = (0..FILES)
            .map(|i| content(i, k + round as u64 + 7))
            .collect();
        let floor_batched = native_batched(&repo.join("native"), &contents);
        if round > 0 {
            sets.push(set);
            singles.push(single);
            native.push(floor);
            batched.push(floor_batched);
        }
    }
    drop(session.stdin);
    let _ = session.child.wait();

    let row = |what: &str, samples: &[Duration]| {
        let (p50, p95) = common::percentiles(samples);
        format!("| {what} | {} | {} |", common::ms(p50), common::ms(p95))
    };
    let _ = writeln!(out, "\n| measure | p50 | p95 |\n|---|---|---|");
    let _ = writeln!(
        out,
        "{}",
        row("MCP `apply_patch`: 10 files in one call", &sets)
    );
    let _ = writeln!(
        out,
        "{}",
        row("MCP `edit` × 10: the same changes", &singles)
    );
    let _ = writeln!(
        out,
        "{}",
        row(
            "native floor: 10 × (write, fsync), 10 renames, directory fsync",
            &native
        )
    );
    let _ = writeln!(
        out,
        "{}",
        row(
            "native floor, write-outs batched as the publish does: the same, each fsync after every write-out started",
            &batched
        )
    );
    let p50 = |s: &[Duration]| common::percentiles(s).0.as_secs_f64();
    let _ = writeln!(
        out,
        "\nten edits / one set (p50): {:.2}× (goal ≥ 3×); set / native floor (p50): {:.2}× (goal ≤ 2×); set / batched native floor: {:.2}×",
        p50(&singles) / p50(&sets),
        p50(&sets) / p50(&native),
        p50(&sets) / p50(&batched)
    );

    recovery(&mut out, &repo, &contract);
}

/// The same ten new contents made durable with nothing else: each written to a temporary
/// and fsynced, each renamed over its file, the directory fsynced once.
fn native_floor(dir: &Path, contents: &[String]) -> Duration {
    let started = Instant::now();
    for (i, text) in contents.iter().enumerate() {
        let mut file = std::fs::File::create(dir.join(format!(".f{i}.tmp"))).expect("create");
        file.write_all(text.as_bytes()).expect("write");
        file.sync_all().expect("fsync");
    }
    rename_into_place(dir, contents.len());
    started.elapsed()
}

/// The native floor with the write-outs batched as the publish batches them: every
/// temporary written and its write-out started, then each fsynced (one journal commit for
/// all of them, mostly), the renames, the directory fsync.
fn native_batched(dir: &Path, contents: &[String]) -> Duration {
    use std::os::fd::AsRawFd;
    let started = Instant::now();
    let mut files = Vec::with_capacity(contents.len());
    for (i, text) in contents.iter().enumerate() {
        let mut file = std::fs::File::create(dir.join(format!(".f{i}.tmp"))).expect("create");
        file.write_all(text.as_bytes()).expect("write");
        // SAFETY: the descriptor is open for the call, which reads no memory of ours.
        let _ =
            unsafe { libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
        files.push(file);
    }
    for file in &files {
        file.sync_all().expect("fsync");
    }
    rename_into_place(dir, contents.len());
    started.elapsed()
}

/// The floors' common end: each temporary renamed over its file, the directory fsynced once.
fn rename_into_place(dir: &Path, files: usize) {
    for i in 0..files {
        std::fs::rename(
            dir.join(format!(".f{i}.tmp")),
            dir.join(format!("f{i}.txt")),
        )
        .expect("rename");
    }
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .expect("fsync the directory");
}

/// The debug binary, built (or found up to date) by cargo: only it takes the kill points.
fn debug_host() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--locked", "-p", "satyrn-host"])
        .current_dir(manifest)
        .stdout(Stdio::null())
        .status()
        .expect("run cargo build for the debug binary");
    assert!(status.success(), "cargo build -p satyrn-host failed");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| manifest.join("../target"), PathBuf::from);
    target.join("debug/satyrn-host")
}

fn open_root(repo: &Path) -> OwnedFd {
    rustix::fs::open(
        repo,
        rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .expect("open the worktree")
}

/// A ten-file set (four edits, two writes over, two creations, a deletion, a move) killed at
/// each step of its publish in turn, twice over; each time the in-process recovery is timed.
fn recovery(out: &mut impl Write, repo: &Path, contract: &Path) {
    let debug = debug_host();
    let root = open_root(repo);
    let writable = vec!["src/*".to_owned()];
    let boundary = satyrn_publish::Boundary {
        writable_paths: &writable,
        private_paths: &[],
    };
    let reset = || {
        for i in 0..FILES {
            std::fs::write(repo.join(format!("src/f{i}.txt")), content(i, 0)).expect("reset");
        }
        for extra in ["src/new0.txt", "src/new1.txt", "src/moved.txt"] {
            let _ = std::fs::remove_file(repo.join(extra));
        }
    };
    let sha = |i: usize| common::sha256_hex(content(i, 0).as_bytes());
    let mut ops = Vec::new();
    for i in 0..4 {
        ops.push(json!({"op": "edit", "path": format!("src/f{i}.txt"), "expected_sha256": sha(i),
            "edits": [{"op": "replace", "old_text": format!("// marker {i} 0\n"), "new_text": "// changed\n"}]}));
    }
    for i in 4..6 {
        ops.push(json!({"op": "write", "path": format!("src/f{i}.txt"), "expected_sha256": sha(i), "content": content(i, 9)}));
    }
    ops.push(json!({"op": "write", "path": "src/new0.txt", "content": content(0, 7)}));
    ops.push(json!({"op": "write", "path": "src/new1.txt", "content": content(1, 7)}));
    ops.push(json!({"op": "delete", "path": "src/f6.txt", "expected_sha256": sha(6)}));
    ops.push(json!({"op": "move", "path": "src/f7.txt", "to": "src/moved.txt", "expected_sha256": sha(7)}));
    let request = json!({"version": 1, "operation": "change_set", "repo": repo, "contract": contract, "ops": ops})
        .to_string();
    let (mut times, mut idle) = (Vec::new(), Vec::new());
    let mut steps = 0;
    for _ in 0..2 {
        for n in 1.. {
            reset();
            let mut child = Command::new(&debug)
                .arg("protocol")
                .env("SATYRN_TEST_KILL_AT", n.to_string())
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn the debug satyrn-host");
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(request.as_bytes())
                .expect("request");
            let status = child.wait().expect("wait");
            if status.success() {
                steps = n - 1;
                break;
            }
            let started = Instant::now();
            let said = satyrn_publish::recover(&root, boundary);
            times.push(started.elapsed());
            assert_eq!(said.kept, 0, "step {n}: {:?}", said.said);
            let f0 = std::fs::read_to_string(repo.join("src/f0.txt")).expect("f0");
            let moved = repo.join("src/moved.txt").exists();
            assert_eq!(
                f0.starts_with("// changed"),
                moved,
                "step {n}: a mix after recovery"
            );
            let started = Instant::now();
            let said = satyrn_publish::recover(&root, boundary);
            idle.push(started.elapsed());
            assert!(
                said.said.is_empty(),
                "step {n}: a second recovery found {:?}",
                said.said
            );
        }
    }
    let (p50, _) = common::percentiles(&times);
    let max = times.iter().max().copied().unwrap_or_default();
    let (i50, _) = common::percentiles(&idle);
    let _ = writeln!(
        out,
        "\nrecovery after a kill at each of the {steps} steps of a ten-file set's publish (×2): p50 {}, max {} (goal ≤ 10 ms); \
         with nothing left (every lock runs it): p50 {}; max / idle p50: {:.1}×",
        common::ms(p50),
        common::ms(max),
        common::ms(i50),
        max.as_secs_f64() / i50.as_secs_f64()
    );
}
