//! A series on a real Slurm cluster: a single-node cluster (Debian's `slurm-wlm` and
//! `munge`, installed by `scripts/setup.sh`) started by the test in private directories on
//! its own ports, a bare remote served by a real `git daemon` on 127.0.0.1, and the job
//! script `satyrn-host series emit slurm` prints, submitted with `sbatch`. Every daemon the
//! test starts is stopped by its own pid, and nothing is left.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::candidates::candidates;
use crate::candidates_remote::Daemon;
use crate::deliver_support::{FixedRepo, poll_until};

#[path = "../series/cluster.rs"]
mod cluster;
use crate::support::{git_ok, host_bin};
use cluster::{Cluster, short_hostname};

/// The job script for a series of `attempts` of the contract `contract`, running `script`.
fn emitted(
    url: &str,
    contract: &str,
    id: &str,
    attempts: &str,
    timeout: &str,
    script: &str,
) -> String {
    let out = Command::new(host_bin())
        .args([
            "series",
            "emit",
            "slurm",
            "--id",
            id,
            "--repo-url",
            url,
            "--contract",
            contract,
        ])
        .args(["--attempts", attempts, "--push", url, "--timeout", timeout])
        .arg("--host-bin")
        .arg(host_bin())
        .args(["--", "sh", "-c", script])
        .output()
        .expect("series emit");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

fn view(clone: &Path, url: &str, id: &str, attempts: &str) -> Value {
    let answer = candidates(
        clone,
        &[
            "series",
            "--json",
            "--remote",
            url,
            "--attempts",
            attempts,
            id,
        ],
    );
    assert_eq!(answer.status, 0, "{} {}", answer.stdout, answer.stderr);
    serde_json::from_str::<Value>(&answer.stdout).expect("JSON")["series"].clone()
}

fn column<'a>(series: &'a Value, field: &str) -> Vec<Option<&'a str>> {
    series["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r[field].as_str())
        .collect()
}

/// Eight indexes (two fail, one makes no change, one times out), a cancelled index whose
/// requeue completes, and two arrays of one series racing: the series view shows every
/// row as it ran, and create-only holds.
#[test]
fn a_series_on_slurm_gathers_every_index_on_the_remote() {
    let cluster = Cluster::start();
    let work = tempfile::tempdir().expect("tempdir");
    let (out, tmp, marks) = (
        work.path().join("out"),
        work.path().join("tmp"),
        work.path().join("marks"),
    );
    for d in [&out, &tmp, &marks] {
        std::fs::create_dir(d).expect("mkdir");
    }
    let origin = FixedRepo::with_files(&[
        ("a.txt", b"a\n"),
        ("task.yaml", b"id: feat\ntask: t\nwritable_paths: [a.txt]\n"),
        ("slow.yaml", b"id: slow\ntask: t\nwritable_paths: [a.txt]\n"),
        ("race.yaml", b"id: race\ntask: t\nwritable_paths: [a.txt]\n"),
    ]);
    let served = work.path().join("served");
    std::fs::create_dir(&served).expect("mkdir");
    git_ok(
        &served,
        &[
            "clone",
            "-q",
            "--bare",
            &origin.path().to_string_lossy(),
            "remote.git",
        ],
    );
    let daemon = Daemon::start(&served);
    let url = format!("git://127.0.0.1:{}/remote.git", daemon.port);
    let reader = work.path().join("reader");
    git_ok(
        work.path(),
        &["clone", "-q", &url, &reader.to_string_lossy()],
    );
    let env = [("TMPDIR", tmp.as_path()), ("MARKS", marks.as_path())];

    // Eight indexes.
    let script = "case $SATYRN_ATTEMPT_INDEX in 2|5) exit 3;; 4) true;; 7) sleep 60;; *) echo \"index $SATYRN_ATTEMPT_INDEX\" > a.txt;; esac";
    let job_file = work.path().join("feat.sh");
    std::fs::write(
        &job_file,
        emitted(&url, "task.yaml", "feat", "8", "3", script),
    )
    .expect("write");
    let job = cluster.sbatch(&job_file, &out, &env);
    cluster.wait_done(&job, Duration::from_secs(180));
    let series = view(&reader, &url, "feat", "8");
    assert_eq!(
        column(&series, "state"),
        [
            "candidate",
            "no-candidate",
            "candidate",
            "no-candidate",
            "no-candidate",
            "candidate",
            "no-candidate",
            "candidate"
        ]
        .map(Some),
        "{series}"
    );
    assert_eq!(
        column(&series, "code"),
        [
            "OK",
            "COMMAND_FAILED",
            "OK",
            "NO_CHANGE",
            "COMMAND_FAILED",
            "OK",
            "COMMAND_TIMEOUT",
            "OK"
        ]
        .map(Some),
        "{series}"
    );
    assert_eq!(series["missing"], serde_json::json!([]));
    let host = short_hostname();
    assert!(
        column(&series, "host")
            .iter()
            .all(|h| h.is_some_and(|h| h.starts_with(&host))),
        "{series}"
    );
    for i in [1, 3, 6, 8] {
        let blob = git_ok(
            &reader,
            &[
                "show",
                &format!(
                    "refs/satyrn/remotes/url-{}/feat/{i:03}/head:a.txt",
                    url_key(&url)
                ),
            ],
        );
        assert_eq!(blob, format!("index {i}\n"));
    }
    assert!(
        crate::support::dir_entries(&tmp).is_empty(),
        "left by the jobs: {:?}",
        crate::support::dir_entries(&tmp)
    );

    // A cancelled index leaves nothing; its requeue completes.
    let slow = "if [ \"${SLURM_RESTART_COUNT:-0}\" = 0 ]; then touch \"$MARKS/slow-started\"; sleep 60; fi; echo requeued > a.txt";
    let job_file = work.path().join("slow.sh");
    std::fs::write(
        &job_file,
        emitted(&url, "slow.yaml", "slow", "1", "120", slow),
    )
    .expect("write");
    let job = cluster.sbatch(&job_file, &out, &env);
    assert!(
        poll_until(Duration::from_secs(60), || marks
            .join("slow-started")
            .exists()),
        "the slow index never started: {}",
        cluster.states(&job)
    );
    let task = format!("{job}_1");
    assert!(
        cluster.output("scancel", &[&task]).is_some(),
        "scancel failed"
    );
    cluster.wait_done(&job, Duration::from_secs(60));
    assert!(
        cluster.states(&job).contains("CANCELLED"),
        "{}",
        cluster.states(&job)
    );
    let remote = Path::new(&served).join("remote.git");
    assert!(
        git_ok(&remote, &["for-each-ref", "refs/satyrn/candidates/slow"]).is_empty(),
        "a cancelled index left a ref"
    );
    assert!(
        poll_until(Duration::from_secs(20), || crate::support::dir_entries(
            &tmp
        )
        .is_empty()),
        "the cancelled index left {:?}",
        crate::support::dir_entries(&tmp)
    );
    assert!(
        cluster.output("scontrol", &["requeue", &task]).is_some(),
        "requeue failed"
    );
    // A requeued job waits out a begin time; the test has no need to.
    assert!(
        cluster
            .output(
                "scontrol",
                &["update", &format!("jobid={task}"), "StartTime=now"]
            )
            .is_some(),
        "update failed"
    );
    assert!(
        poll_until(Duration::from_secs(90), || cluster
            .states(&job)
            .contains(" COMPLETED")),
        "the requeued index never completed: {}",
        cluster.states(&job)
    );
    let series = view(&reader, &url, "slow", "1");
    assert_eq!(column(&series, "code"), [Some("OK")], "{series}");

    // Two arrays of one series racing: one result per index, every loser named.
    let race = "sleep 0.3; echo \"job $SLURM_ARRAY_JOB_ID\" > a.txt";
    let job_file = work.path().join("race.sh");
    std::fs::write(
        &job_file,
        emitted(&url, "race.yaml", "race", "4", "60", race),
    )
    .expect("write");
    let jobs = [
        cluster.sbatch(&job_file, &out, &env),
        cluster.sbatch(&job_file, &out, &env),
    ];
    for job in &jobs {
        cluster.wait_done(job, Duration::from_secs(180));
    }
    let heads = git_ok(
        &remote,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/satyrn/candidates/race",
        ],
    );
    assert_eq!(
        heads.lines().filter(|l| l.ends_with("/head")).count(),
        4,
        "{heads}"
    );
    for i in 1..=4 {
        let codes: Vec<String> = jobs
            .iter()
            .map(|job| {
                let line =
                    std::fs::read_to_string(out.join(format!("{job}_{i}.out"))).expect("receipt");
                let receipt: Value = serde_json::from_str(line.trim()).expect("receipt JSON");
                receipt["code"].as_str().expect("code").to_owned()
            })
            .collect();
        let mut sorted = codes.clone();
        sorted.sort();
        assert_eq!(sorted, ["CANDIDATE_EXISTS", "OK"], "index {i}: {codes:?}");
    }
    drop(daemon);
    drop(cluster);
}

/// The mirror key `candidates --remote URL` uses for a URL that is no configured remote.
fn url_key(url: &str) -> String {
    satyrn_mutator_core::revision::Revision::of(url.as_bytes()).to_hex()[..16].to_owned()
}
