//! Benchmark: one edit from a Pi session through the confined run's broker (one connection
//! for the session, `pi/lib/channel.ts`) against the same edit through one `satyrn-host
//! protocol` process per call (relayed to the same broker), with satyrn's real Pi `edit`
//! tool code under a real `satyrn-host confine`, interleaved in the same run.
//!
//! Needs `pi/node_modules` (`cd pi && npm ci`). Run: `cargo bench -p satyrn-host --bench
//! pi_channel` (optionally `-- --runs N`).

#![allow(clippy::print_stdout)] // a bench prints its figures

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs = common::runs_arg(&args, 100);
    let host = PathBuf::from(env!("CARGO_BIN_EXE_satyrn-host"));
    let pi = Path::new(env!("CARGO_MANIFEST_DIR")).join("../pi");
    assert!(
        pi.join("node_modules/tsx").is_dir(),
        "pi/node_modules is missing: run `cd pi && npm ci`"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join("src")).expect("mkdir");
    for name in ["session", "process"] {
        std::fs::write(repo.join(format!("src/{name}.txt")), "value v0\n").expect("write");
    }
    common::git_init(&repo);
    let contract = dir.path().join("contract.yaml");
    std::fs::write(
        &contract,
        "id: bench\ntask: bench\nwritable_paths: ['src/*.txt']\n",
    )
    .expect("contract");
    let context = dir.path().join("context.json");
    let json = serde_json::json!({
        "version": 1, "repo": repo, "contract": contract, "revisions": {},
    });
    std::fs::write(&context, json.to_string()).expect("context");
    let out = Command::new(&host)
        .arg("confine")
        .arg("--repo")
        .arg(&repo)
        .arg("--cwd")
        .arg(&pi)
        .arg(&contract)
        .args(["--", "node", "--import", "tsx", "bench/channel.ts"])
        .arg(runs.to_string())
        .env("SATYRN_MUTATION_CONTEXT_FILE", &context)
        .env("SATYRN_HOST_BIN", &host)
        .output()
        .expect("run confine");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let figures: Vec<(String, f64, f64)> = stdout
        .lines()
        .filter_map(|l| {
            let mut f = l.split('\t');
            let label = f.next()?.to_owned();
            let p50 = f.next()?.parse().ok()?;
            let p95 = f.next()?.parse().ok()?;
            Some((label, p50, p95))
        })
        .collect();
    assert_eq!(figures.len(), 2, "{stdout}");
    println!("satyrn-host: {}", host.display());
    println!(
        "runs per figure: {runs}; one edit of a 9-byte file per call, Pi's edit tool code, confined"
    );
    println!();
    println!("| path of one edit | p50 | p95 |");
    println!("|---|---|---|");
    for (label, p50, p95) in &figures {
        println!(
            "| {label} | {:.2} ms | {:.2} ms |",
            p50 / 1000.0,
            p95 / 1000.0
        );
    }
    println!();
    println!(
        "the broker session is {:.1}x faster than a protocol process per call (p50)",
        figures[1].1 / figures[0].1
    );
    let expected = (runs + 1) * 2 + 2;
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!(
        "{}",
        stderr
            .lines()
            .find(|l| l.contains("the broker served"))
            .unwrap_or("(no broker summary)")
    );
    assert!(
        stderr.contains(&format!(
            "and {expected} protocol requests over {} connections",
            runs + 3
        )),
        "every call reached the broker: {stderr}"
    );
}
