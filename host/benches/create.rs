//! Benchmark: `satyrn_publish::create` of a new 1 MiB file against a native create
//! with the same durability, in the same run.
//!
//! Run: `cargo bench -p satyrn-host --bench create` (optionally `-- --calls N --size BYTES`;
//! defaults 200 and 1 MiB).
//!
//! Interleaved, N calls each of
//! - `satyrn`: `publish::create` of `d/s<i>` (path re-check, no-follow walk, sweep, no-follow
//!   stat, anonymous temporary, `fchmod`, write, `fsync`, `linkat`, directory `fsync`, with
//!   the signals held);
//! - `native`: `open(O_CREAT | O_EXCL | O_WRONLY, 0644)` of `d/n<i>`, write, `fsync`,
//!   close, directory `fsync` (the same durability, none of the checks).
//!
//! Printed: median and 90th percentile per variant, and the ratio of the medians (goal of
//! issue 12: at most 1.5×).

#![allow(clippy::print_stdout)] // a bench prints its figures

use satyrn_publish as publish;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

fn main() {
    let mut calls = 200usize;
    let mut size = 1usize << 20;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| -> usize {
            args.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{name} takes a number"))
        };
        match arg.as_str() {
            "--calls" => calls = value("--calls"),
            "--size" => size = value("--size"),
            // `cargo bench` passes `--bench`.
            _ => {}
        }
    }
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("d")).expect("mkdir");
    let root = rustix::fs::open(
        dir.path(),
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .expect("open root");
    let content: Vec<u8> = b"satyrn create bench\n"
        .iter()
        .copied()
        .cycle()
        .take(size)
        .collect();
    let (mut satyrn, mut native) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
    for i in 0..calls {
        let started = Instant::now();
        publish::create(&root, &format!("d/s{i}"), &content).expect("create");
        satyrn.push(started.elapsed());
        let started = Instant::now();
        native_create(&dir.path().join("d"), &format!("n{i}"), &content);
        native.push(started.elapsed());
    }
    let (s, n) = (Figures::of(&mut satyrn), Figures::of(&mut native));
    println!("create of a new {size}-byte file, {calls} calls each (interleaved):");
    println!(
        "  satyrn publish::create  median {:>9.3} ms  p90 {:>9.3} ms",
        ms(s.median),
        ms(s.p90)
    );
    println!(
        "  native create + fsyncs  median {:>9.3} ms  p90 {:>9.3} ms",
        ms(n.median),
        ms(n.p90)
    );
    println!(
        "  ratio of medians        {:.2}x (goal <= 1.5x)",
        s.median.as_secs_f64() / n.median.as_secs_f64()
    );
}

/// The baseline: an exclusive create with the same durability as `publish::create`.
fn native_create(dir: &Path, name: &str, content: &[u8]) {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(dir.join(name))
        .expect("create");
    file.write_all(content).expect("write");
    file.sync_all().expect("fsync");
    drop(file);
    File::open(dir)
        .expect("open dir")
        .sync_all()
        .expect("fsync dir");
}

struct Figures {
    median: Duration,
    p90: Duration,
}

impl Figures {
    fn of(samples: &mut [Duration]) -> Self {
        samples.sort();
        Self {
            median: samples[samples.len() / 2],
            p90: samples[samples.len() * 9 / 10],
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
