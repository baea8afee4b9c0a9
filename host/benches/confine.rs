//! Benchmark: what `satyrn-host confine -- true` adds to `true` (the rules built from a walk
//! of the worktree, the ruleset, the run's directory, the broker started and stopped) on a
//! 20,000-file worktree with private files in 100 directories, measured in the same run,
//! interleaved, beside a worktree with none.
//!
//! Run: `cargo bench -p satyrn-host --bench confine` (optionally `-- --runs N`).

#![allow(clippy::print_stdout)] // a bench prints its figures

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs = common::runs_arg(&args, 30);
    let host = PathBuf::from(env!("CARGO_BIN_EXE_satyrn-host"));
    let dir = tempfile::tempdir().expect("tempdir");
    let plain = dir.path().join("plain");
    common::repo_of_files(&plain, 20_000, 200);
    let private = dir.path().join("private");
    common::repo_of_files(&private, 20_000, 200);
    for d in 0..100 {
        std::fs::write(private.join(format!("d{d:03}/.env")), "SECRET=1\n").expect("env");
    }
    let contract = dir.path().join("contract.yaml");
    std::fs::write(&contract, "id: bench\ntask: bench\nwritable_paths: ['*']\n").expect("contract");
    println!("satyrn-host: {}", host.display());
    println!("runs per figure: {runs}; worktree: 20,000 files in 100 directories");
    println!();
    let mut samples: [Vec<Duration>; 3] = Default::default();
    for _ in 0..=runs {
        samples[0].push(time(Command::new("true")));
        samples[1].push(time(confine(&host, &plain, &contract)));
        samples[2].push(time(confine(&host, &private, &contract)));
    }
    for s in &mut samples {
        s.remove(0); // the warm-up round
    }
    let (t50, _) = common::percentiles(&samples[0]);
    println!("| command | p50 | p95 | added to `true` (p50) |");
    println!("|---|---|---|---|");
    for (label, s) in [
        ("`true`", &samples[0]),
        ("`confine -- true`, no private file", &samples[1]),
        (
            "`confine -- true`, a private file in each of 100 directories",
            &samples[2],
        ),
    ] {
        let (p50, p95) = common::percentiles(s);
        println!(
            "| {label} | {} | {} | {} |",
            common::ms(p50),
            common::ms(p95),
            common::ms(p50.saturating_sub(t50))
        );
    }
}

fn confine(host: &Path, repo: &Path, contract: &Path) -> Command {
    let mut cmd = Command::new(host);
    cmd.arg("confine")
        .arg("--repo")
        .arg(repo)
        .arg(contract)
        .args(["--", "true"]);
    cmd
}

fn time(mut cmd: Command) -> Duration {
    let started = Instant::now();
    let out = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("spawn");
    let elapsed = started.elapsed();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    elapsed
}
