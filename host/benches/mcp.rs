//! A read + edit round trip on a 10 KiB file through one long-lived `satyrn-host mcp`
//! session, against the same pair through spawn-per-call `satyrn-host protocol`,
//! interleaved in the same run.
//!
//! Run: `cargo bench -p satyrn-host --bench mcp` (release binary). Prints p50/p95 of the
//! MCP `read`, the MCP `edit`, the MCP pair and the protocol pair, and the ratio of the
//! pairs' p50s (goal: an MCP edit ≤ 1 ms p50, the pair ≥ 3× faster than spawn-per-call).

mod common;

use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const ROUNDS: usize = 200;

fn protocol(host: &Path, request: &Value) -> Value {
    let child = common::spawn_protocol(host, &request.to_string(), Stdio::piped());
    let out = child.wait_with_output().expect("wait");
    serde_json::from_slice(&out.stdout).expect("response")
}

fn main() {
    let mut out = std::io::stdout().lock();
    let host = Path::new(env!("CARGO_BIN_EXE_satyrn-host"));
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = tmp.path().join("repo");
    common::git_init(&repo);
    let line = "let value = compute(input, 42); // some ordinary source text\n";
    let mut text = String::from("// marker 0\n");
    while text.len() + line.len() <= 10 * 1024 {
        text.push_str(line);
    }
    let file = repo.join("bench.rs");
    std::fs::write(&file, &text).expect("write");
    let contract = tmp.path().join("contract.yaml");
    std::fs::write(
        &contract,
        "id: bench\ntask: bench\nwritable_paths: ['*.rs']\n",
    )
    .expect("contract");
    let _ = writeln!(
        out,
        "satyrn-host: {}\nfile: {} bytes; {ROUNDS} rounds each, interleaved",
        host.display(),
        text.len()
    );

    let mut session = common::McpSession::start(host, &repo, &contract);
    let (mut reads, mut edits, mut pairs, mut baseline, mut durable) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut marker = 0u64;
    for round in 0..=ROUNDS {
        let started = Instant::now();
        session.call("read", json!({"path": "bench.rs"}));
        let read = started.elapsed();
        let old = format!("// marker {marker}\n");
        marker += 1;
        let new = format!("// marker {marker}\n");
        let started_edit = Instant::now();
        session.call(
            "edit",
            json!({"path": "bench.rs", "edits": [{"op": "replace", "old_text": old, "new_text": new}]}),
        );
        let edit = started_edit.elapsed();
        let pair = started.elapsed();

        let started = Instant::now();
        let page = protocol(
            host,
            &json!({"version": 1, "operation": "read", "repo": repo, "contract": contract, "path": "bench.rs"}),
        );
        let sha = page["result"]["sha256"].as_str().expect("sha").to_string();
        let old = format!("// marker {marker}\n");
        marker += 1;
        let new = format!("// marker {marker}\n");
        let edited = protocol(
            host,
            &json!({"version": 1, "operation": "edit", "repo": repo, "contract": contract, "path": "bench.rs",
                    "expected_sha256": sha, "edits": [{"op": "replace", "old_text": old, "new_text": new}]}),
        );
        assert_eq!(edited["code"], "OK", "{edited}");
        let base = started.elapsed();
        let durable_write = durable_write(&repo, text.as_bytes());
        if round > 0 {
            durable.push(durable_write);
            reads.push(read);
            edits.push(edit);
            pairs.push(pair);
            baseline.push(base);
        }
    }
    drop(session.stdin);
    let _ = session.child.wait();
    let split = split(&repo);
    let row = |what: &str, samples: &[Duration]| {
        let (p50, p95) = common::percentiles(samples);
        format!("| {what} | {} | {} |", common::ms(p50), common::ms(p95))
    };
    let _ = writeln!(out, "\n| measure | p50 | p95 |\n|---|---|---|");
    let _ = writeln!(out, "{}", row("MCP session: `read`", &reads));
    let _ = writeln!(out, "{}", row("MCP session: `edit`", &edits));
    let _ = writeln!(out, "{}", row("MCP session: read + edit", &pairs));
    let _ = writeln!(
        out,
        "{}",
        row("spawn-per-call `protocol`: read + edit", &baseline)
    );
    let _ = writeln!(
        out,
        "{}",
        row(
            "durability floor: write 10 KiB, fsync, rename, fsync the directory",
            &durable
        )
    );
    let (p50, _) = common::percentiles(&pairs);
    let (b50, _) = common::percentiles(&baseline);
    let (e50, _) = common::percentiles(&edits);
    let _ = writeln!(
        out,
        "\nspawn-per-call / MCP session (read + edit, p50): {:.2}× (goal ≥ 3×); MCP edit p50 {} (goal ≤ 1 ms)",
        b50.as_secs_f64() / p50.as_secs_f64(),
        common::ms(e50)
    );
    let _ = writeln!(
        out,
        "\nIn-process split of one `read` (p50): instantiate {}, call on a fresh instance {}, call on a reused instance {}",
        common::ms(split[0]),
        common::ms(split[1]),
        common::ms(split[2])
    );
}

/// The durable part of a publish alone, in the same directory: a temporary written and
/// fsynced, renamed, the directory fsynced (what every edit must wait for on this disk).
fn durable_write(repo: &Path, bytes: &[u8]) -> Duration {
    let temp = repo.join(".durable.tmp");
    let started = Instant::now();
    let mut file = std::fs::File::create(&temp).expect("create");
    file.write_all(bytes).expect("write");
    file.sync_all().expect("fsync");
    drop(file);
    std::fs::rename(&temp, repo.join(".durable")).expect("rename");
    std::fs::File::open(repo)
        .and_then(|dir| dir.sync_all())
        .expect("fsync the directory");
    started.elapsed()
}

/// In-process p50s of one `read`: instantiating the component, the call on that fresh
/// instance, and the same call again on it.
fn split(repo: &Path) -> [Duration; 3] {
    let root = satyrn_contract::repo::RepoRoot::open(repo).expect("repo");
    let loaded = satyrn_engine::Loaded::new().expect("load");
    let request = satyrn_engine::ReadRequest {
        path: "bench.rs".into(),
        writable_paths: vec!["*.rs".into()],
        private_paths: Vec::new(),
        offset: None,
        limit: None,
    };
    let mut samples: [Vec<Duration>; 3] = Default::default();
    for _ in 0..ROUNDS {
        let t0 = Instant::now();
        let mut mutator = loaded.instantiate(root.dir()).expect("instantiate");
        let t1 = Instant::now();
        mutator.read(&request).expect("no trap").expect("a page");
        let t2 = Instant::now();
        mutator.read(&request).expect("no trap").expect("a page");
        let t3 = Instant::now();
        for (slot, d) in samples.iter_mut().zip([t1 - t0, t2 - t1, t3 - t2]) {
            slot.push(d);
        }
    }
    samples.map(|s| common::percentiles(&s).0)
}
