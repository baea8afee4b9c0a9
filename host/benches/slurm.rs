//! A series on a real single-node Slurm cluster (started by the bench, as the test does:
//! `tests/series/cluster.rs`): the makespan of an 8-index job array, submit to the last
//! task's end, for
//!
//! 1. the job `series emit slurm` prints: each index clones the repository, runs `deliver
//!    --attempt-from slurm --push` with the command, pushes its candidate to a bare remote;
//! 2. the same array running the command alone, in a directory made for each index
//!    beforehand (the baseline);
//! 3. the same array cloning the repository and running the command in the clone, without
//!    `deliver` (what the clone alone costs).
//!
//! The three are interleaved, `--runs N` rounds (default 3). Per index, `deliver`'s own time
//! is the mean of the receipts' `attempt.duration_ms`.
//!
//! Run: `cargo bench -p satyrn-host --bench slurm [-- --runs N]` (as root, with Debian's
//! `slurm-wlm` and `munge`: `scripts/setup.sh`).

#[path = "../../tests/series/cluster.rs"]
mod cluster;
mod common;

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const INDEXES: u32 = 8;
const COMMAND: &str = "echo \"index $SLURM_ARRAY_TASK_ID\" > a.txt";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs = common::runs_arg(&args, 3);
    let mut out = std::io::stdout().lock();
    let host = Path::new(env!("CARGO_BIN_EXE_satyrn-host"));
    let cluster = cluster::Cluster::start();
    let tmp = tempfile::tempdir().expect("tempdir");
    let origin = tmp.path().join("origin");
    common::git_init(&origin);
    std::fs::write(origin.join("a.txt"), "a\n").expect("write");
    let mut committed = common::git(&origin);
    common::ok(committed.args(["add", "-A"]));
    let mut committed = common::git(&origin);
    common::ok(committed.args(["commit", "-q", "-m", "base"]));
    let bare = tmp.path().join("remote.git");
    let mut cloned = common::git(tmp.path());
    common::ok(cloned.args([
        "clone",
        "-q",
        "--bare",
        &origin.to_string_lossy(),
        &bare.to_string_lossy(),
    ]));
    let url = bare.to_string_lossy().into_owned();
    let (jobs, work) = (tmp.path().join("out"), tmp.path().join("work"));
    for d in [&jobs, &work] {
        std::fs::create_dir(d).expect("mkdir");
    }
    let env = [("TMPDIR", work.as_path())];
    let _ = writeln!(
        out,
        "satyrn-host: {}\n{INDEXES}-index arrays on one node of 2 CPUs, {runs} rounds, interleaved",
        host.display()
    );

    let (mut series, mut alone, mut cloning, mut own) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..=runs {
        // 1. The emitted job.
        let id = format!("bench-{round}");
        let contract = format!("{id}.yaml");
        std::fs::write(
            origin.join(&contract),
            format!("id: {id}\ntask: t\nwritable_paths: [a.txt]\n"),
        )
        .expect("contract");
        let mut add = common::git(&origin);
        common::ok(add.args(["add", "-A"]));
        let mut commit = common::git(&origin);
        common::ok(commit.args(["commit", "-q", "-m", &id]));
        let mut push = common::git(&origin);
        common::ok(push.args(["push", "-q", &url, "HEAD"]));
        let emitted = Command::new(host)
            .args([
                "series",
                "emit",
                "slurm",
                "--id",
                &id,
                "--repo-url",
                &url,
                "--contract",
                &contract,
            ])
            .args([
                "--attempts",
                &INDEXES.to_string(),
                "--push",
                &url,
                "--timeout",
                "60",
                "--host-bin",
            ])
            .arg(host)
            .args(["--", "sh", "-c", COMMAND])
            .output()
            .expect("emit");
        assert!(emitted.status.success());
        let script = tmp.path().join(format!("{id}.sh"));
        std::fs::write(&script, &emitted.stdout).expect("write");
        let s = makespan(&cluster, &script, &jobs, &env);

        // 2. The command alone, in directories made beforehand.
        let dirs = tmp.path().join(format!("alone-{round}"));
        for i in 1..=INDEXES {
            std::fs::create_dir_all(dirs.join(i.to_string())).expect("mkdir");
        }
        let script = tmp.path().join(format!("alone-{round}.sh"));
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\n#SBATCH --array=1-{INDEXES}\ncd '{}'/\"$SLURM_ARRAY_TASK_ID\" && sh -c '{}'\n",
                dirs.display(),
                COMMAND.replace('\'', r"'\''")
            ),
        )
        .expect("write");
        let a = makespan(&cluster, &script, &jobs, &env);

        // 3. A clone and the command, no deliver.
        let script = tmp.path().join(format!("clone-{round}.sh"));
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\n#SBATCH --array=1-{INDEXES}\nset -eu\nw=$(mktemp -d)\ntrap 'rm -rf \"$w\"' EXIT\ngit clone -q '{url}' \"$w/r\"\ncd \"$w/r\" && sh -c '{}'\n",
                COMMAND.replace('\'', r"'\''")
            ),
        )
        .expect("write");
        let c = makespan(&cluster, &script, &jobs, &env);

        let receipts = receipts_of(&bare, &id);
        assert_eq!(
            receipts.len(),
            INDEXES as usize,
            "every index made its candidate"
        );
        if round > 0 {
            series.push(s);
            alone.push(a);
            cloning.push(c);
            own.extend(receipts);
        }
    }
    let _ = writeln!(out, "\n| array of {INDEXES} | p50 | p95 |\n|---|---|---|");
    for (what, samples) in [
        ("`series emit slurm` job: clone, `deliver --push`", &series),
        ("the command alone", &alone),
        ("clone, then the command (no `deliver`)", &cloning),
    ] {
        let (p50, p95) = common::percentiles(samples);
        let _ = writeln!(
            out,
            "| {what} | {} | {} |",
            common::ms(p50),
            common::ms(p95)
        );
    }
    let p50 = |s: &[Duration]| common::percentiles(s).0.as_secs_f64();
    let mean_ms = own.iter().sum::<u64>() as f64 / own.len().max(1) as f64;
    let _ = writeln!(
        out,
        "\nseries / command alone (p50): {:.2}×; series / clone and command: {:.2}×; per index, deliver's own time (receipts, mean): {mean_ms:.0} ms; per index added to the command alone: {:.0} ms",
        p50(&series) / p50(&alone),
        p50(&series) / p50(&cloning),
        (p50(&series) - p50(&alone)) * 1000.0 / f64::from(INDEXES) * 2.0,
    );
    drop(cluster);
}

/// Submits `script` and waits for every task: the time from submission to the last end.
fn makespan(
    cluster: &cluster::Cluster,
    script: &Path,
    out: &Path,
    env: &[(&str, &Path)],
) -> Duration {
    let started = Instant::now();
    let job = cluster.sbatch(script, out, env);
    cluster.wait_done(&job, Duration::from_secs(300));
    let took = started.elapsed();
    let states = cluster.states(&job);
    assert!(
        states.lines().all(|l| l.ends_with(" COMPLETED")),
        "job {job}: {states}\n{}",
        std::fs::read_to_string(out.join(format!("{job}_1.err"))).unwrap_or_default()
    );
    took
}

/// `attempt.duration_ms` of each receipt of series `id` on the remote.
fn receipts_of(bare: &Path, id: &str) -> Vec<u64> {
    let mut list = common::git(bare);
    let out = list
        .args([
            "for-each-ref",
            "--format=%(contents)%00",
            &format!("refs/satyrn/candidates/{id}/"),
        ])
        .output()
        .expect("for-each-ref");
    String::from_utf8_lossy(&out.stdout)
        .split('\0')
        .filter_map(|text| serde_json::from_str::<serde_json::Value>(text.trim()).ok())
        .filter_map(|r| r["attempt"]["duration_ms"].as_u64())
        .collect()
}
