//! Benchmark: a batch of 100 selector edits on a 1 MiB file through one whole
//! `satyrn-host protocol` call, beside the same work done natively, in the same run.
//!
//! Run: `cargo bench -p satyrn-host --bench edit` (optionally `-- --runs N`).
//!
//! It prints p50/p95 of
//! - `satyrn`: the whole `satyrn-host protocol` process (spawn, contract, lock, engine and
//!   component load, decide 100 edits in wasm, publish);
//! - `native process`: this bench re-executed as a child that reads, hashes, finds each of
//!   the 100 selectors (counting every occurrence), applies them, hashes the result,
//!   writes a temporary, fsyncs and renames (no sandbox, no JSON, no diagnostics);
//! - `native in-process`: the same work as a function call;
//!
//! and the ratios.

#![allow(clippy::print_stdout)] // a bench prints its figures

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

const SIZE: usize = 1024 * 1024;
const EDITS: usize = 100;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--native-child") {
        let round: usize = args.get(3).and_then(|r| r.parse().ok()).unwrap_or(0);
        native_edit(Path::new(&args[2]), round);
        return;
    }
    let runs = common::runs_arg(&args, 30);
    let host = PathBuf::from(env!("CARGO_BIN_EXE_satyrn-host"));
    println!("satyrn-host: {}", host.display());
    println!("{EDITS} edits on a {SIZE}-byte file, {runs} runs per figure");
    let fixture = Fixture::new();
    let satyrn = fixture.measure(runs, |f, round| f.satyrn_once(&host, round));
    let process = fixture.measure(runs, |f, round| f.native_process_once(round));
    let in_process = fixture.measure(runs, |f, round| {
        let started = Instant::now();
        native_edit(&f.file, round);
        started.elapsed()
    });
    let (s50, s95) = common::percentiles(&satyrn);
    let (p50, p95) = common::percentiles(&process);
    let (i50, i95) = common::percentiles(&in_process);
    println!();
    println!("| measure | p50 | p95 |");
    println!("|---|---|---|");
    println!(
        "| satyrn-host protocol edit (100 edits) | {} | {} |",
        common::ms(s50),
        common::ms(s95)
    );
    println!(
        "| native process | {} | {} |",
        common::ms(p50),
        common::ms(p95)
    );
    println!(
        "| native in-process | {} | {} |",
        common::ms(i50),
        common::ms(i95)
    );
    println!();
    println!(
        "ratio satyrn / native process: p50 {:.2}×, p95 {:.2}×",
        s50.as_secs_f64() / p50.as_secs_f64(),
        s95.as_secs_f64() / p95.as_secs_f64()
    );
    println!(
        "ratio satyrn / native in-process: p50 {:.2}×, p95 {:.2}×",
        s50.as_secs_f64() / i50.as_secs_f64(),
        s95.as_secs_f64() / i95.as_secs_f64()
    );
}

/// The selector of edit `i` in round `round` (the file alternates between two spellings).
fn marker(i: usize, round: usize) -> String {
    let side = if round.is_multiple_of(2) {
        "even"
    } else {
        "odd"
    };
    format!("MARKER_{i:03}_{side}")
}

struct Fixture {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    contract: PathBuf,
    file: PathBuf,
    round: std::cell::Cell<usize>,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path().join("repo");
        common::git_init(&repo);
        let line = "let value = compute(input, 42); // some ordinary source text\n";
        let per = SIZE / EDITS;
        let mut text = String::with_capacity(SIZE + 64);
        for i in 0..EDITS {
            let block_end = (i + 1) * per;
            text.push_str(&marker(i, 0));
            text.push('\n');
            while text.len() + line.len() <= block_end {
                text.push_str(line);
            }
        }
        let file = repo.join("data.txt");
        std::fs::write(&file, &text).expect("write fixture");
        let contract = dir.path().join("contract.yaml");
        std::fs::write(
            &contract,
            "id: bench\ntask: bench\nwritable_paths: ['*.txt']\n",
        )
        .expect("contract");
        Self {
            _dir: dir,
            repo,
            contract,
            file,
            round: std::cell::Cell::new(0),
        }
    }

    /// Runs `once` `n` times after one warm-up; every call advances the round.
    fn measure(&self, n: usize, mut once: impl FnMut(&Self, usize) -> Duration) -> Vec<Duration> {
        let mut next = || {
            let round = self.round.get();
            self.round.set(round + 1);
            once(self, round)
        };
        next();
        (0..n).map(|_| next()).collect()
    }

    fn satyrn_once(&self, host: &Path, round: usize) -> Duration {
        let sha = common::sha256_hex(&std::fs::read(&self.file).expect("read"));
        let edits: Vec<serde_json::Value> = (0..EDITS)
            .map(|i| {
                serde_json::json!({"op": "replace", "old_text": marker(i, round), "new_text": marker(i, round + 1)})
            })
            .collect();
        let request = serde_json::json!({
            "version": 1, "operation": "edit",
            "repo": self.repo, "contract": self.contract, "path": "data.txt",
            "expected_sha256": sha, "edits": edits,
        })
        .to_string();
        common::time_protocol(host, &request)
    }

    fn native_process_once(&self, round: usize) -> Duration {
        let started = Instant::now();
        let status = Command::new(std::env::current_exe().expect("current exe"))
            .arg("--native-child")
            .arg(&self.file)
            .arg(round.to_string())
            .status()
            .expect("spawn native child");
        let elapsed = started.elapsed();
        assert!(status.success(), "native child failed: {status:?}");
        elapsed
    }
}

/// The native reference: read, hash, find each selector (all occurrences, must be one),
/// apply the 100 replacements, hash, write a temporary, fsync, rename, fsync the directory.
fn native_edit(file: &Path, round: usize) {
    let bytes = std::fs::read(file).expect("read");
    let _base = Sha256::digest(&bytes);
    let mut spans = Vec::with_capacity(EDITS);
    for i in 0..EDITS {
        let old = marker(i, round);
        let finder = memchr::memmem::Finder::new(old.as_bytes());
        let mut found = finder.find_iter(&bytes);
        let at = found.next().expect("selector");
        assert!(found.next().is_none(), "unique selector");
        spans.push((at, old.len(), marker(i, round + 1)));
    }
    spans.sort_by_key(|s| s.0);
    let mut out = Vec::with_capacity(bytes.len() + 1024);
    let mut cursor = 0;
    for (at, len, new) in spans {
        out.extend_from_slice(&bytes[cursor..at]);
        out.extend_from_slice(new.as_bytes());
        cursor = at + len;
    }
    out.extend_from_slice(&bytes[cursor..]);
    let _next = Sha256::digest(&out);
    common::write_atomically(file, &out);
}
