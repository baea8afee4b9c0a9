//! Candidates at scale, two measures, each against a baseline in the same run:
//!
//! 1. `satyrn-host candidates list --json` over 1 000 candidates (each a commit with one
//!    changed file and a receipt tag, as `deliver` makes them) against bare
//!    `git for-each-ref refs/satyrn/candidates` (goal: list under 200 ms);
//! 2. `deliver --attempts 8 --jobs 8 … -- true` (8 concurrent no-op attempts) against
//!    `--attempts 8 --jobs 1` (the same 8, one after the other) on a 20 000-file repository:
//!    the throughput ratio.
//!
//! Run: `cargo bench -p satyrn-host --bench candidates` (release binary): both parts. The
//! second takes minutes; `cargo bench -p satyrn-host --bench candidates -- list` runs only
//! the first, `-- series` only the second, `-- remote-series` only the third:
//! 3. `candidates series --remote R ID` over 1 000 indexes (goal ≤ 1 s) against `git fetch`
//!    of the same refs.

mod common;

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CANDIDATES: usize = 1_000;
const LIST_RUNS: usize = 10;
const FILES: usize = 20_000;
const PER_DIR: usize = 100;
const ATTEMPTS: &str = "8";
/// Each series checks out 8 × 20 000 files; on a shared 2-core machine one run of each is
/// already minutes, so there is no warm-up round here (the first, concurrent, run pays the
/// cold page cache: that favours the sequential baseline).
const SERIES_RUNS: usize = 1;

fn main() {
    let mut out = std::io::stdout().lock();
    let host = env!("CARGO_BIN_EXE_satyrn-host");
    let _ = writeln!(out, "satyrn-host: {host}");
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wanted = |part: &str| only.is_empty() || only.iter().any(|o| o == part);
    if wanted("list") {
        list_at_scale(&mut out, Path::new(host));
    }
    if wanted("remote-series") {
        remote_series(&mut out, Path::new(host));
    }
    if wanted("series") {
        series_at_scale(&mut out, Path::new(host));
    }
}

/// The most indexes a series has (three digits: 001 to 999).
const INDEXES: usize = 999;
const REMOTE_RUNS: usize = 5;

/// A remote holding a series of [`INDEXES`] attempts as `deliver --attempt I --push` leaves
/// them: 600 candidates (a commit and its receipt tag) and 399 receipts alone (a tag on the
/// base), made in one `git fast-import` and one `git update-ref --stdin`.
fn make_series_remote(repo: &Path) {
    common::ok(common::git(repo).args(["init", "-q", "-b", "main", "."]));
    std::fs::write(repo.join("base.txt"), "base\n").expect("write");
    common::ok(common::git(repo).args(["add", "-A"]));
    common::ok(common::git(repo).args(["commit", "-q", "-m", "base"]));
    let mut stream = String::new();
    for i in 1..=INDEXES {
        let head = format!("refs/satyrn/candidates/s/{i:03}/head");
        let candidate = i <= 600;
        let code = if candidate { "OK" } else { "COMMAND_FAILED" };
        let receipt = format!(
            "{{\"version\":1,\"outcome\":\"{}\",\"code\":\"{code}\",\"message\":\"\",\"attempt\":{{\"index\":{i},\"host\":\"node-{}\",\"started_at\":1764590000,\"duration_ms\":{}}}}}\n",
            if candidate {
                "candidate-created"
            } else {
                "discarded"
            },
            i % 8,
            1000 + i
        );
        let from = if candidate {
            let message = format!("satyrn candidate s/{i:03}\n");
            let content = format!("attempt {i}\n").repeat(4);
            let _ = write!(
                stream,
                "commit {head}\ncommitter satyrn <satyrn@satyrn.invalid> 946684800 +0000\ndata {}\n{message}from refs/heads/main\nM 100644 inline a.txt\ndata {}\n{content}\n",
                message.len(),
                content.len()
            );
            head
        } else {
            "refs/heads/main".to_owned()
        };
        let _ = write!(
            stream,
            "tag bench-{i:03}\nfrom {from}\ntagger satyrn <satyrn@satyrn.invalid> 1764590000 +0000\ndata {}\n{receipt}\n",
            receipt.len()
        );
    }
    import_with_receipts(repo, &stream, |index| {
        format!("refs/satyrn/candidates/s/{index}/receipt")
    });
}

/// `candidates series --remote R s --attempts 999` from a fresh clone (the mirror fetched
/// first) and again (the mirror up to date), against `git fetch` of the same refs into a
/// fresh clone (the transport floor) — goal: ≤ 1 s.
fn remote_series(out: &mut impl Write, host: &Path) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let remote = tmp.path().join("remote");
    std::fs::create_dir(&remote).expect("mkdir");
    make_series_remote(&remote);
    let url = remote.to_string_lossy().into_owned();
    let (mut cold, mut warm, mut fetch) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..=REMOTE_RUNS {
        let clone = tmp.path().join(format!("clone-{round}"));
        common::ok(common::git(tmp.path()).args(["clone", "-q", &url, &clone.to_string_lossy()]));
        let floor = tmp.path().join(format!("floor-{round}"));
        common::ok(common::git(tmp.path()).args(["clone", "-q", &url, &floor.to_string_lossy()]));
        let (f, _) = timed(
            common::git(&floor).args([
                "fetch",
                "--quiet",
                "--no-tags",
                &url,
                "+refs/satyrn/candidates/*:refs/satyrn/remotes/floor/*",
            ]),
            0,
        );
        let series = |cmd: &mut Command| {
            timed(
                cmd.args(["candidates", "series", "--json", "--repo"])
                    .arg(&clone)
                    .args(["--remote", &url, "--attempts", "999", "s"]),
                0,
            )
        };
        let (c, body) = series(&mut Command::new(host));
        let (w, _) = series(&mut Command::new(host));
        let doc: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(
            doc["series"]["rows"].as_array().map(Vec::len),
            Some(INDEXES)
        );
        assert_eq!(doc["series"]["missing"].as_array().map(Vec::len), Some(0));
        if round > 0 {
            cold.push(c);
            warm.push(w);
            fetch.push(f);
        }
    }
    let p50 = |s: &[Duration]| common::percentiles(s).0;
    let _ = writeln!(
        out,
        "\ncandidates series over {INDEXES} indexes on a remote (600 candidates, 399 receipts alone), {REMOTE_RUNS} rounds:\n\n| measure | p50 | p95 |\n|---|---|---|"
    );
    for (what, samples) in [
        ("`candidates series --remote`, mirror fetched first", &cold),
        ("`candidates series --remote`, mirror up to date", &warm),
        ("`git fetch` of the same refs (the transport floor)", &fetch),
    ] {
        let (a, b) = common::percentiles(samples);
        let _ = writeln!(out, "| {what} | {} | {} |", common::ms(a), common::ms(b));
    }
    let _ = writeln!(
        out,
        "\nfetched first / git fetch (p50): {:.2}×; goal ≤ 1 s: {}",
        p50(&cold).as_secs_f64() / p50(&fetch).as_secs_f64(),
        if p50(&cold) <= Duration::from_secs(1) {
            "met"
        } else {
            "not met"
        }
    );
}

/// 1 000 candidates made in one `git fast-import` and one `git update-ref --stdin`.
fn make_candidates(repo: &Path) {
    common::ok(common::git(repo).args(["init", "-q", "-b", "main", "."]));
    std::fs::write(repo.join("base.txt"), "base\n").expect("write");
    common::ok(common::git(repo).args(["add", "-A"]));
    common::ok(common::git(repo).args(["commit", "-q", "-m", "base"]));
    let mut stream = String::new();
    for i in 0..CANDIDATES {
        let id = format!("c-{i:04}");
        let message = format!("satyrn candidate {id}\n");
        let content = format!("candidate {i}\n").repeat(4);
        let receipt = format!("{{\"version\":1,\"code\":\"OK\",\"contract_id\":\"{id}\"}}\n");
        let _ = write!(
            stream,
            "commit refs/satyrn/candidates/{id}/head\ncommitter satyrn <satyrn@satyrn.invalid> 946684800 +0000\ndata {}\n{message}from refs/heads/main\nM 100644 inline f-{id}.txt\ndata {}\n{content}\n",
            message.len(),
            content.len()
        );
        let _ = write!(
            stream,
            "tag bench-{id}\nfrom refs/satyrn/candidates/{id}/head\ntagger satyrn <satyrn@satyrn.invalid> 1764590000 +0000\ndata {}\n{receipt}\n",
            receipt.len()
        );
    }
    import_with_receipts(repo, &stream, |id| {
        format!("refs/satyrn/candidates/{id}/receipt")
    });
}

/// Feeds `stream` to `git fast-import` in `repo`, then moves each tag `bench-<name>` it made
/// to `refs/satyrn/candidates/<receipt(name)>/receipt`, as `deliver` names receipts (one
/// `update-ref --stdin`).
fn import_with_receipts(repo: &Path, stream: &str, receipt: impl Fn(&str) -> String) {
    let mut child = common::git(repo)
        .args(["fast-import", "--quiet"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("fast-import");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stream.as_bytes())
        .expect("feed fast-import");
    assert!(child.wait().expect("wait").success());
    let tags = common::git(repo)
        .args([
            "for-each-ref",
            "--format=%(objectname) %(refname)",
            "refs/tags/",
        ])
        .output()
        .expect("for-each-ref");
    let mut moves = String::new();
    for line in String::from_utf8_lossy(&tags.stdout).lines() {
        let (oid, name) = line.split_once(' ').expect("two fields");
        let id = name.strip_prefix("refs/tags/bench-").expect("bench tag");
        let _ = writeln!(moves, "create {} {oid}", receipt(id));
        let _ = writeln!(moves, "delete {name} {oid}");
    }
    let mut child = common::git(repo)
        .args(["update-ref", "--stdin"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("update-ref");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(moves.as_bytes())
        .expect("feed update-ref");
    assert!(child.wait().expect("wait").success());
}

/// Runs `cmd`, expecting exit status `expected`; its duration and stdout.
fn timed(cmd: &mut Command, expected: i32) -> (Duration, Vec<u8>) {
    let started = Instant::now();
    let output = cmd.stdin(Stdio::null()).output().expect("run");
    let elapsed = started.elapsed();
    assert_eq!(
        output.status.code(),
        Some(expected),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    (elapsed, output.stdout)
}

fn list_at_scale(out: &mut impl Write, host: &Path) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = tmp.path().join("repo");
    std::fs::create_dir(&repo).expect("mkdir");
    make_candidates(&repo);
    let mut ours = Vec::new();
    let mut baseline = Vec::new();
    for round in 0..=LIST_RUNS {
        let (b, _) = timed(
            common::git(&repo).args(["for-each-ref", "refs/satyrn/candidates"]),
            0,
        );
        let (s, stdout) = timed(
            Command::new(host)
                .args(["candidates", "list", "--json", "--repo"])
                .arg(&repo),
            0,
        );
        let doc: serde_json::Value = serde_json::from_slice(&stdout).expect("JSON");
        let listed = doc["candidates"].as_array().expect("candidates");
        assert_eq!(listed.len(), CANDIDATES);
        assert!(
            listed
                .iter()
                .all(|c| c["files"].as_array().map(Vec::len) == Some(1) && !c["created"].is_null())
        );
        if round > 0 {
            ours.push(s);
            baseline.push(b);
        }
    }
    let (s50, s95) = common::percentiles(&ours);
    let (b50, b95) = common::percentiles(&baseline);
    let _ = writeln!(
        out,
        "\n## candidates list: {CANDIDATES} candidates, {LIST_RUNS} interleaved runs\n"
    );
    let _ = writeln!(
        out,
        "| measure | p50 | p95 |\n|---|---|---|\n| `satyrn-host candidates list --json` | {} | {} |\n| `git for-each-ref refs/satyrn/candidates` | {} | {} |",
        common::ms(s50),
        common::ms(s95),
        common::ms(b50),
        common::ms(b95)
    );
    let _ = writeln!(
        out,
        "\nratio list / for-each-ref: p50 {:.1}×; goal p50 < 200 ms: {}",
        s50.as_secs_f64() / b50.as_secs_f64(),
        if s50 < Duration::from_millis(200) {
            "met"
        } else {
            "NOT met"
        }
    );
}

fn series_at_scale(out: &mut impl Write, host: &Path) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = tmp.path().join("repo");
    common::repo_of_files(&repo, FILES, PER_DIR);
    let contract = tmp.path().join("contract.yaml");
    std::fs::write(&contract, "id: bench-series\ntask: bench\n").expect("contract");
    let series = |jobs: &str| {
        let (elapsed, stdout) = timed(
            Command::new(host)
                .arg("deliver")
                .arg("--repo")
                .arg(&repo)
                .args(["--attempts", ATTEMPTS, "--jobs", jobs])
                .arg(&contract)
                .args(["--", "true"]),
            8,
        );
        let summary = String::from_utf8_lossy(&stdout).into_owned();
        assert_eq!(
            summary.matches("\"code\":\"NO_CHANGE\"").count(),
            8 + 1,
            "every attempt a no-op (and the summary says so): {summary}"
        );
        elapsed
    };
    let (mut concurrent, mut sequential) = (Vec::new(), Vec::new());
    for _ in 0..SERIES_RUNS {
        concurrent.push(series("8"));
        sequential.push(series("1"));
    }
    let (c50, _) = common::percentiles(&concurrent);
    let (s50, _) = common::percentiles(&sequential);
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let _ = writeln!(
        out,
        "\n## {ATTEMPTS} no-op attempts on {FILES} files ({cpus} CPUs), {SERIES_RUNS} interleaved runs\n"
    );
    let _ = writeln!(
        out,
        "| measure | p50 | per attempt |\n|---|---|---|\n| `deliver --attempts 8 --jobs 8 … -- true` | {} | {} |\n| `deliver --attempts 8 --jobs 1 … -- true` | {} | {} |",
        common::ms(c50),
        common::ms(c50 / 8),
        common::ms(s50),
        common::ms(s50 / 8)
    );
    let _ = writeln!(
        out,
        "\nthroughput concurrent / sequential: {:.2}×",
        s50.as_secs_f64() / c50.as_secs_f64()
    );
}
