//! Benchmark: one whole `satyrn-host protocol` replace on 10 KiB, 1 MiB and 64 MiB files,
//! beside the same operation done natively without the sandbox, measured in the same run.
//!
//! Run: `cargo bench -p satyrn-host --bench protocol` (optionally `-- --runs N`;
//! `SATYRN_BENCH_HOST=PATH` measures another `satyrn-host`, say the static release build).
//!
//! For each size it prints p50/p95 of
//! - `satyrn`: the whole `satyrn-host protocol` process (spawn, contract, lock, engine and
//!   component load, decide in wasm, publish);
//! - `native process`: this bench re-executed as a child that reads, hashes, counts the
//!   anchor, writes a temporary, fsyncs and renames (the same work, no sandbox, no JSON),
//!   run in turn with `satyrn`, one of each at a time, so that their ratio is not the
//!   machine's drift between two series;
//! - `native in-process`: the same work as a function call;
//!
//! and the ratios, the split of satyrn's cost (engine + component load, instantiate,
//! decide, publish) measured in-process through the library with the component a one-shot
//! `replace` loads (the build without `search`), and the peak RSS of one satyrn process on
//! the largest file.

#![allow(clippy::print_stdout)] // a bench prints its figures

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use satyrn_contract::repo::RepoRoot;
use satyrn_engine::{Build, Loaded, ReplaceRequest};
use satyrn_mutator_core::revision::Revision;
use satyrn_publish as publish;
use sha2::{Digest, Sha256};

/// Runs on the 64 MiB file (each takes about half a second).
const BIG_RUNS: usize = 20;

const ANCHORS: [&str; 2] = ["ANCHOR_ALPHA_0001", "ANCHOR_BRAVO_0002"];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--native-child") {
        native_replace(Path::new(&args[2]), &args[3], &args[4]);
        return;
    }
    let runs = common::runs_arg(&args, 30);
    // SATYRN_BENCH_HOST: another build of the same source, say the static PIE that
    // `scripts/build-release.sh` ships.
    let host = std::env::var_os("SATYRN_BENCH_HOST").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_satyrn-host")),
        PathBuf::from,
    );
    println!("satyrn-host: {}", host.display());
    println!("runs per figure: {runs} (64 MiB: {BIG_RUNS})");
    println!();
    println!(
        "| size | satyrn p50 | satyrn p95 | native process p50 | native in-process p50 | satyrn / native process | satyrn / native in-process |"
    );
    println!("|---|---|---|---|---|---|---|");
    let mut splits = Vec::new();
    for (label, size, n) in [
        ("10 KiB", 10 * 1024, runs),
        ("1 MiB", 1024 * 1024, runs),
        ("64 MiB", 64 * 1024 * 1024, BIG_RUNS),
    ] {
        let fixture = Fixture::new(size);
        let (satyrn, native_process) =
            fixture.measure_alternately(n, |f| f.satyrn_once(&host), Fixture::native_process_once);
        let native_in_process = fixture.measure(n, |f| {
            let (old, new) = f.next_pair();
            let started = Instant::now();
            native_replace(&f.file, old, new);
            started.elapsed()
        });
        let (s50, s95) = common::percentiles(&satyrn);
        let (np50, _) = common::percentiles(&native_process);
        let (ni50, _) = common::percentiles(&native_in_process);
        println!(
            "| {label} | {} | {} | {} | {} | {:.2}× | {:.2}× |",
            common::ms(s50),
            common::ms(s95),
            common::ms(np50),
            common::ms(ni50),
            s50.as_secs_f64() / np50.as_secs_f64(),
            s50.as_secs_f64() / ni50.as_secs_f64()
        );
        splits.push((label, fixture.split(n.min(20))));
        if size == 64 * 1024 * 1024 {
            let rss = fixture.satyrn_peak_rss(&host);
            println!();
            println!(
                "peak RSS of one satyrn-host process on the 64 MiB file: {:.1} MiB ({:.2}× the file)",
                rss as f64 / 1024.0 / 1024.0,
                rss as f64 / size as f64
            );
        }
    }
    println!();
    println!("split of satyrn's cost, in-process through the library (p50):");
    println!();
    println!("| size | engine + component load | instantiate | decide (wasm) | publish |");
    println!("|---|---|---|---|---|");
    for (label, [load, inst, decide, publish]) in splits {
        println!(
            "| {label} | {} | {} | {} | {} |",
            common::ms(load),
            common::ms(inst),
            common::ms(decide),
            common::ms(publish)
        );
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    contract: PathBuf,
    file: PathBuf,
    flip: std::cell::Cell<usize>,
}

impl Fixture {
    fn new(size: usize) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path().join("repo");
        common::git_init(&repo);
        let line = "let value = compute(input, 42); // some ordinary source text\n";
        let mut text = String::with_capacity(size + 64);
        while text.len() + line.len() < size - ANCHORS[0].len() - 1 {
            text.push_str(line);
        }
        text.insert_str(text.len() / 2, ANCHORS[0]);
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
            flip: std::cell::Cell::new(0),
        }
    }

    /// The anchor now in the file and the one to put there; alternates every call.
    fn next_pair(&self) -> (&'static str, &'static str) {
        let i = self.flip.get();
        self.flip.set(i + 1);
        (ANCHORS[i % 2], ANCHORS[(i + 1) % 2])
    }

    fn measure(&self, n: usize, mut once: impl FnMut(&Self) -> Duration) -> Vec<Duration> {
        once(self); // warm the page cache and the binary
        (0..n).map(|_| once(self)).collect()
    }

    /// `n` runs of `a` and of `b`, one of each in turn, so that both see the same drift of
    /// the machine (another process, the file system's journal) and their ratio does not;
    /// `b` goes first every other round, so neither always follows the other's write.
    fn measure_alternately(
        &self,
        n: usize,
        mut a: impl FnMut(&Self) -> Duration,
        mut b: impl FnMut(&Self) -> Duration,
    ) -> (Vec<Duration>, Vec<Duration>) {
        a(self); // warm the page cache and the binaries
        b(self);
        (0..n)
            .map(|round| {
                if round % 2 == 0 {
                    let first = a(self);
                    (first, b(self))
                } else {
                    let first = b(self);
                    (a(self), first)
                }
            })
            .unzip()
    }

    fn request(&self, old: &str, new: &str) -> String {
        let sha = common::sha256_hex(&std::fs::read(&self.file).expect("read"));
        serde_json::json!({
            "version": 1, "operation": "replace",
            "repo": self.repo, "contract": self.contract, "path": "data.txt",
            "expected_sha256": sha, "old_text": old, "new_text": new,
        })
        .to_string()
    }

    fn satyrn_once(&self, host: &Path) -> Duration {
        let (old, new) = self.next_pair();
        let request = self.request(old, new);
        common::time_protocol(host, &request)
    }

    fn native_process_once(&self) -> Duration {
        let (old, new) = self.next_pair();
        let started = Instant::now();
        let status = Command::new(std::env::current_exe().expect("current exe"))
            .arg("--native-child")
            .arg(&self.file)
            .arg(old)
            .arg(new)
            .status()
            .expect("spawn native child");
        let elapsed = started.elapsed();
        assert!(
            status.success(),
            "native child failed: {status:?} {:?}",
            status.signal()
        );
        elapsed
    }

    fn split(&self, n: usize) -> [Duration; 4] {
        let mut samples: [Vec<Duration>; 4] = Default::default();
        let root = RepoRoot::open(&self.repo).expect("repo");
        let writable = vec!["*.txt".to_string()];
        for _ in 0..n {
            let (old, new) = self.next_pair();
            let expected = common::sha256_hex(&std::fs::read(&self.file).expect("read"));
            let t0 = Instant::now();
            let loaded = Loaded::of(Build::WithoutSearch).expect("load");
            let t1 = Instant::now();
            let mut mutator = loaded.instantiate(root.dir()).expect("instantiate");
            let t2 = Instant::now();
            let plan = mutator
                .replace(&ReplaceRequest {
                    path: "data.txt".into(),
                    writable_paths: writable.clone(),
                    private_paths: Vec::new(),
                    expected_sha256: Some(expected),
                    old_text: old.into(),
                    new_text: new.into(),
                })
                .expect("no trap")
                .expect("a plan");
            let t3 = Instant::now();
            let base = Revision::parse(&plan.base_sha256).expect("revision");
            publish::publish(root.dir(), &plan.path, &base, &plan.new_content).expect("publish");
            let t4 = Instant::now();
            for (slot, d) in samples.iter_mut().zip([t1 - t0, t2 - t1, t3 - t2, t4 - t3]) {
                slot.push(d);
            }
        }
        samples.map(|s| common::percentiles(&s).0)
    }

    /// Peak RSS (bytes) of one whole satyrn-host process, from `wait4`'s rusage.
    #[allow(clippy::zombie_processes)] // reaped by wait4, which also reports the rusage
    fn satyrn_peak_rss(&self, host: &Path) -> u64 {
        let (old, new) = self.next_pair();
        let request = self.request(old, new);
        let child = common::spawn_protocol(host, &request, Stdio::null());
        let pid = libc::pid_t::try_from(child.id()).expect("pid");
        let mut status = 0;
        // SAFETY: plain wait4 on our own child with valid out-pointers.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        assert_eq!(reaped, pid, "wait4");
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "satyrn-host failed"
        );
        u64::try_from(usage.ru_maxrss).expect("maxrss") * 1024
    }
}

/// The native baseline: read, hash, count the anchor, splice, write a temporary, fsync,
/// rename, fsync the directory. No sandbox, no lock, no JSON.
fn native_replace(file: &Path, old: &str, new: &str) {
    let bytes = std::fs::read(file).expect("read");
    let _base = Sha256::digest(&bytes);
    let at = memchr::memmem::find(&bytes, old.as_bytes()).expect("anchor");
    assert!(
        memchr::memmem::find(&bytes[at + 1..], old.as_bytes()).is_none(),
        "unique anchor"
    );
    let mut out = Vec::with_capacity(bytes.len() - old.len() + new.len());
    out.extend_from_slice(&bytes[..at]);
    out.extend_from_slice(new.as_bytes());
    out.extend_from_slice(&bytes[at + old.len()..]);
    let _next = Sha256::digest(&out);
    common::write_atomically(file, &out);
}
