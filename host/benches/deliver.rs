//! Delivery overhead: `satyrn-host deliver` with a trivial command (`true`) against the bare
//! git baseline (`git worktree add --detach` + `git worktree remove`) on a generated
//! repository of 20 000 files, interleaved in the same run.
//!
//! Run: `cargo bench -p satyrn-host --bench deliver` (release binary). Prints p50/p95 of
//! each and the ratio of the p50s (target ≤ 1.3×).

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Instant;

const FILES: usize = 20_000;
const PER_DIR: usize = 100;
const RUNS: usize = 10;

fn main() {
    let mut out = std::io::stdout().lock();
    let host = env!("CARGO_BIN_EXE_satyrn-host");
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = tmp.path().join("repo");
    common::repo_of_files(&repo, FILES, PER_DIR);
    let contract = tmp.path().join("contract.yaml");
    let scratch = tmp.path().join("scratch");
    std::fs::create_dir(&scratch).expect("mkdir");
    let _ = writeln!(out, "satyrn-host: {host}");
    let _ = writeln!(
        out,
        "repository: {FILES} files in {} directories; {RUNS} interleaved runs each",
        FILES / PER_DIR
    );

    let mut satyrn = Vec::with_capacity(RUNS);
    let mut baseline = Vec::with_capacity(RUNS);
    // One warm-up of each (page cache, git's first-run costs), not measured.
    for round in 0..=RUNS {
        let wt = scratch.join(format!("wt{round}"));
        let started = Instant::now();
        common::ok(
            common::git(&repo)
                .args(["worktree", "add", "--detach", "--quiet"])
                .arg(&wt)
                .arg("HEAD"),
        );
        common::ok(
            common::git(&repo)
                .args(["worktree", "remove", "--force"])
                .arg(&wt),
        );
        let base = started.elapsed();

        std::fs::write(&contract, format!("id: bench-{round}\ntask: bench\n")).expect("contract");
        let started = Instant::now();
        let run = Command::new(host)
            .arg("deliver")
            .arg("--repo")
            .arg(&repo)
            .arg(&contract)
            .args(["--", "true"])
            .env_remove("GIT_DIR")
            .stdin(Stdio::null())
            .output()
            .expect("run deliver");
        let ours = started.elapsed();
        let receipt = String::from_utf8_lossy(&run.stdout);
        assert!(
            receipt.contains("\"code\":\"NO_CHANGE\""),
            "unexpected receipt {receipt} (stderr {})",
            String::from_utf8_lossy(&run.stderr)
        );
        if round > 0 {
            baseline.push(base);
            satyrn.push(ours);
        }
    }
    let (s50, s95) = common::percentiles(&satyrn);
    let (b50, b95) = common::percentiles(&baseline);
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "| measure | p50 | p95 |\n|---|---|---|\n| `satyrn-host deliver … -- true` | {} | {} |\n| git baseline (`worktree add --detach` + `worktree remove`) | {} | {} |",
        common::ms(s50),
        common::ms(s95),
        common::ms(b50),
        common::ms(b95)
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "ratio deliver / baseline: p50 {:.2}×, p95 {:.2}× (target ≤ 1.3×)",
        s50.as_secs_f64() / b50.as_secs_f64(),
        s95.as_secs_f64() / b95.as_secs_f64()
    );
}
