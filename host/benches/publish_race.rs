//! Benchmark: how often a publish overwrites a write it never saw, when another writer that
//! does not take satyrn's lock rewrites the file in place every few milliseconds.
//!
//! Run: `cargo bench -p satyrn-host --bench publish_race` (optionally `-- --calls N
//! --period-ms P`; defaults 1000 and 2).
//!
//! A writer thread rewrites the 1 MiB file's header `seq=NNNNNNNNNNNN\n` in place (open by
//! path, `pwrite` at 0, close) every P ms and logs each write's sequence number and inode.
//! Interleaved in the same run, N calls each of
//! - `satyrn`: `satyrn_publish::publish` under the worktree lock (temporary written
//!   and synced, target re-checked, `RENAME_EXCHANGE`, displaced file re-hashed, swapped
//!   back if it changed);
//! - `baseline`: the order satyrn used before — hash the target, then write, fsync and
//!   rename the temporary over it (what `common::write_atomically` does after a check),
//!
//! each reading the file, toggling an anchor and publishing from the revision it read. A
//! successful publish *lost an update* when the writer wrote a sequence number above the
//! one the publish read into the inode it displaced. Printed: successes, stale refusals,
//! lost updates and their rate among the successes.

#![allow(clippy::print_stdout)] // a bench prints its figures

mod common;

use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use satyrn_contract::repo::RepoRoot;
use satyrn_mutator_core::revision::Revision;
use satyrn_publish::{self as publish, PublishError};

#[derive(Default)]
struct Tally {
    calls: u32,
    ok: u32,
    stale: u32,
    lost: u32,
    time: Duration,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, default: u64| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let calls = u32::try_from(arg("--calls", 1000)).expect("calls");
    let period = Duration::from_millis(arg("--period-ms", 2));
    let repo = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(repo.path().join(".git")).expect("mkdir .git");
    let path = repo.path().join("raced.txt");
    let mut body = String::from("seq=000000000000\n");
    while body.len() < 1024 * 1024 - 32 {
        body.push_str("a line of ordinary source text, about forty bytes\n");
    }
    body.push_str("value = ANCHOR_A;\n");
    std::fs::write(&path, &body).expect("write");
    let root = RepoRoot::open(repo.path()).expect("open the worktree");
    println!(
        "file: {} bytes; writer period: {} ms; calls per variant: {calls}",
        body.len(),
        period.as_millis()
    );
    let writer = Writer::start(path.clone(), period);
    let (mut satyrn, mut baseline) = (Tally::default(), Tally::default());
    for i in 0..2 * calls {
        if i % 2 == 0 {
            round(&writer, &path, &mut satyrn, |base, new| {
                let _lock = satyrn_os::lock::WorktreeLock::acquire(root.dir()).expect("lock");
                match publish::publish(root.dir(), "raced.txt", base, new) {
                    Ok(()) => Ok(true),
                    Err(PublishError::Stale(_)) => Ok(false),
                    Err(e) => Err(e.to_string()),
                }
            });
        } else {
            round(&writer, &path, &mut baseline, |base, new| {
                Ok(baseline_publish(&path, base, new))
            });
        }
    }
    drop(writer);
    println!();
    println!("| variant | calls | OK | REVISION_STALE | lost updates | lost / OK | mean call |");
    println!("|---|---|---|---|---|---|---|");
    for (name, t) in [
        ("baseline (check, write, fsync, rename)", &baseline),
        ("satyrn", &satyrn),
    ] {
        println!(
            "| {name} | {} | {} | {} | {} | {:.2} % | {} |",
            t.calls,
            t.ok,
            t.stale,
            t.lost,
            100.0 * f64::from(t.lost) / f64::from(t.ok.max(1)),
            common::ms(t.time / t.calls.max(1))
        );
    }
}

/// One read-toggle-publish; `publish` answers whether it published.
fn round(
    writer: &Writer,
    path: &Path,
    tally: &mut Tally,
    publish: impl FnOnce(&Revision, &[u8]) -> Result<bool, String>,
) {
    let mark = writer.mark();
    let file = std::fs::File::open(path).expect("open");
    let old_ino = file.metadata().expect("fstat").ino();
    let bytes = std::fs::read(path).expect("read");
    let seen: u64 = std::str::from_utf8(&bytes[4..16])
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let text = String::from_utf8_lossy(&bytes);
    let new = if text.contains("ANCHOR_A") {
        text.replace("ANCHOR_A", "ANCHOR_B")
    } else {
        text.replace("ANCHOR_B", "ANCHOR_A")
    };
    let started = Instant::now();
    let published = publish(&Revision::of(&bytes), new.as_bytes()).expect("publish");
    tally.time += started.elapsed();
    tally.calls += 1;
    if published {
        tally.ok += 1;
        if writer.lost_since(mark, seen, old_ino) {
            tally.lost += 1;
        }
    } else {
        tally.stale += 1;
    }
    drop(file);
}

/// The publish order before the fix: check, then write, fsync and rename.
fn baseline_publish(path: &Path, base: &Revision, new: &[u8]) -> bool {
    let current = std::fs::read(path).expect("read");
    if &Revision::of(&current) != base {
        return false;
    }
    common::write_atomically(path, new);
    true
}

/// The in-place writer (see the module doc).
struct Writer {
    stop: Arc<AtomicBool>,
    log: Arc<Mutex<Vec<(u64, u64)>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Writer {
    fn start(path: PathBuf, period: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let log = Arc::new(Mutex::new(Vec::new()));
        let (stop2, log2) = (stop.clone(), log.clone());
        let thread = std::thread::spawn(move || {
            let mut seq = 0u64;
            while !stop2.load(Ordering::SeqCst) {
                seq += 1;
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .expect("writer opens");
                file.write_all_at(format!("seq={seq:012}\n").as_bytes(), 0)
                    .expect("writer writes");
                let ino = file.metadata().expect("fstat").ino();
                drop(file);
                log2.lock().expect("log").push((seq, ino));
                std::thread::sleep(period);
            }
        });
        Self {
            stop,
            log,
            thread: Some(thread),
        }
    }

    fn mark(&self) -> usize {
        self.log.lock().expect("log").len()
    }

    /// Whether a write logged after `mark`, numbered above `seen`, landed in `old_ino`;
    /// waits until the writer has written into another inode (the caller keeps `old_ino`
    /// open meanwhile, so the number is not reused).
    fn lost_since(&self, mark: usize, seen: u64, old_ino: u64) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            {
                let log = self.log.lock().expect("log");
                if log[mark..].iter().any(|&(_, ino)| ino != old_ino) {
                    return log[mark..]
                        .iter()
                        .any(|&(seq, ino)| ino == old_ino && seq > seen);
                }
            }
            assert!(Instant::now() < deadline, "the writer never wrote again");
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
