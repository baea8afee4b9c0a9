//! Attempt start-up on real-size repositories: 2 000 and 20 000 writable files of about
//! 5 KB (`writable_paths: ["*"]`), against the time `git ls-files` plus `sha256sum` of the
//! same files take, interleaved in the same run.
//!
//! Run: `cargo bench -p satyrn-host --bench attempt` (release binary; needs `npm ci` in
//! `pi/` for the real Pi). For each size it prints p50/p95 of:
//!
//! - the baseline: `git ls-files -z | xargs -0 sha256sum`;
//! - `satyrn-host attempt` whole, with a Pi that exits at once (`SATYRN_PI_BIN=/bin/true`):
//!   contract, revision map through the component, context and prompt files, the patch,
//!   cleanup — satyrn's own cost;
//! - the real Pi: from spawning `satyrn-host attempt` to Pi's first request to a scripted
//!   model on 127.0.0.1, and the same on a one-file repository (Pi's own start-up), so the
//!   difference is what the repository's size adds.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const RUNS: usize = 5;
const FILE_BYTES: usize = 5 * 1024;

/// A committed repository of `files` files of about [`FILE_BYTES`] in 100 directories.
fn repository(base: &Path, files: usize) -> PathBuf {
    let repo = base.join(format!("repo-{files}"));
    std::fs::create_dir(&repo).expect("mkdir");
    common::ok(common::git(&repo).args(["init", "-q", "-b", "main", "."]));
    let line = "let value = compute(input, 42); // some ordinary source text\n";
    for i in 0..files {
        let dir = repo.join(format!("d{:03}", i % 100));
        if i < 100 {
            std::fs::create_dir(&dir).expect("mkdir");
        }
        let mut text = format!("// file {i}\n");
        while text.len() + line.len() <= FILE_BYTES {
            text.push_str(line);
        }
        std::fs::write(dir.join(format!("f{i:05}.rs")), text).expect("write");
    }
    common::ok(common::git(&repo).args(["add", "-A"]));
    common::ok(common::git(&repo).args(["commit", "-q", "-m", "bench"]));
    repo
}

/// A one-request scripted model: answers every POST with a final text, and reports when
/// the first request arrived.
fn model_server() -> (String, mpsc::Receiver<Instant>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let arrived = Instant::now();
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut length = 0usize;
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                    break;
                }
                if let Some(v) = header.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0u8; length];
            let _ = reader.read_exact(&mut body);
            let _ = tx.send(arrived);
            let chunk = |delta: &str, finish: &str| {
                format!(
                    "data: {{\"id\":\"b\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
                )
            };
            let body = format!(
                "{}{}data: [DONE]\n\n",
                chunk(r#"{"role":"assistant","content":"Done."}"#, "null"),
                chunk("{}", r#""stop""#)
            );
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, rx)
}

fn agent_dir(base: &Path, url: &str) -> PathBuf {
    let dir = base.join("agent");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("models.json"),
        format!(
            r#"{{"providers":{{"bench":{{"baseUrl":"{url}","api":"openai-completions","apiKey":"x","compat":{{"supportsDeveloperRole":false,"supportsReasoningEffort":false}},"models":[{{"id":"m","name":"bench"}}]}}}}}}"#
        ),
    )
    .expect("models.json");
    dir
}

fn attempt(host: &Path, repo: &Path, contract: &Path) -> Command {
    let mut cmd = Command::new(host);
    cmd.current_dir(repo)
        .args(["attempt", "--model", "bench/m"])
        .arg(contract)
        .env_remove("SATYRN_ATTEMPT_TRANSCRIPT")
        .env_remove("SATYRN_ATTEMPT_PATCH")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

fn main() {
    let mut out = std::io::stdout().lock();
    let host = PathBuf::from(env!("CARGO_BIN_EXE_satyrn-host"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let pi = root.join("pi/node_modules/.bin/pi");
    assert!(
        pi.exists(),
        "the real Pi is not installed at {}: run `npm ci` in pi/",
        pi.display()
    );
    let tmp = tempfile::tempdir().expect("tempdir");
    let contract = tmp.path().join("contract.yaml");
    std::fs::write(
        &contract,
        "id: bench\ntask: Say done.\nwritable_paths: ['*']\n",
    )
    .expect("contract");
    let (url, first_request) = model_server();
    let agent = agent_dir(tmp.path(), &url);
    let _ = writeln!(out, "satyrn-host: {}\npi: {}", host.display(), pi.display());

    let pi_start = |repo: &Path| -> Duration {
        while first_request.try_recv().is_ok() {}
        let started = Instant::now();
        let run = attempt(&host, repo, &contract)
            .env("SATYRN_PI_BIN", &pi)
            .env("PI_CODING_AGENT_DIR", &agent)
            .env("PI_OFFLINE", "1")
            .output()
            .expect("attempt");
        assert!(
            run.status.success(),
            "attempt with Pi failed: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        first_request
            .recv_timeout(Duration::from_secs(5))
            .expect("Pi asked the model")
            .duration_since(started)
    };

    let one = repository(tmp.path(), 1);
    let mut alone = Vec::new();
    for round in 0..=RUNS {
        let d = pi_start(&one);
        if round > 0 {
            alone.push(d);
        }
    }
    let (a50, a95) = common::percentiles(&alone);

    let _ = writeln!(
        out,
        "\n| writable files | measure | p50 | p95 |\n|---|---|---|---|"
    );
    let _ = writeln!(
        out,
        "| 1 | real Pi: attempt spawn → first model request (Pi's own start-up) | {} | {} |",
        common::ms(a50),
        common::ms(a95)
    );
    let (mut ratios, mut cpu_ratios) = (Vec::new(), Vec::new());
    for files in [2_000, 20_000] {
        let repo = repository(tmp.path(), files);
        let (mut baseline, mut prep, mut real) = (Vec::new(), Vec::new(), Vec::new());
        let (mut baseline_cpu, mut prep_cpu) = (Vec::new(), Vec::new());
        for round in 0..=RUNS {
            let (b, b_cpu) = common::wall_and_cpu(
                Command::new("sh")
                    .current_dir(&repo)
                    .args(["-c", "git ls-files -z | xargs -0 sha256sum > /dev/null"]),
            );
            let (p, p_cpu) = common::wall_and_cpu(
                attempt(&host, &repo, &contract).env("SATYRN_PI_BIN", "/bin/true"),
            );
            let r = pi_start(&repo);
            if round > 0 {
                baseline.push(b);
                prep.push(p);
                real.push(r);
                baseline_cpu.push(b_cpu);
                prep_cpu.push(p_cpu);
            }
        }
        let (b50, b95) = common::percentiles(&baseline);
        let (p50, p95) = common::percentiles(&prep);
        let (r50, r95) = common::percentiles(&real);
        let (bc50, bc95) = common::percentiles(&baseline_cpu);
        let (pc50, pc95) = common::percentiles(&prep_cpu);
        for (what, x50, x95) in [
            ("baseline: `git ls-files -z | xargs -0 sha256sum`", b50, b95),
            ("`satyrn-host attempt` whole, Pi exits at once", p50, p95),
            ("baseline, CPU time (user + system)", bc50, bc95),
            (
                "`satyrn-host attempt`, Pi exits at once, CPU time (user + system)",
                pc50,
                pc95,
            ),
            ("real Pi: attempt spawn → first model request", r50, r95),
        ] {
            let _ = writeln!(
                out,
                "| {files} | {what} | {} | {} |",
                common::ms(x50),
                common::ms(x95)
            );
        }
        cpu_ratios.push((files, pc50.as_secs_f64() / bc50.as_secs_f64()));
        ratios.push((files, p50, b50, r50));
    }
    let _ = writeln!(out);
    for (files, p50, b50, r50) in ratios {
        let _ = writeln!(
            out,
            "{files} files: satyrn's own cost / baseline (p50) {:.2}× (goal ≤ 2×); \
             start-up to the first model request {} of which Pi's own start-up {} \
             (the repository adds {})",
            p50.as_secs_f64() / b50.as_secs_f64(),
            common::ms(r50),
            common::ms(a50),
            common::ms(r50.saturating_sub(a50))
        );
    }
    for (files, ratio) in cpu_ratios {
        let _ = writeln!(
            out,
            "{files} files: CPU time satyrn / baseline (p50) {ratio:.2}×"
        );
    }
}
