//! Racing real `satyrn-host protocol` processes: N edits from one base revision give
//! exactly one `OK` and N−1 `REVISION_STALE`, and the file holds the winner's edit.

use std::io::Write;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::protocol_common::{Fixture, assert_ok, assert_refused};
use crate::support::{ProtocolRun, dir_entries, host_bin, sha256_hex};

const PROCESSES: usize = 8;
const ROUNDS: usize = 25;

fn spawn() -> Child {
    Command::new(host_bin())
        .arg("protocol")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn satyrn-host")
}

fn finish(child: Child) -> ProtocolRun {
    let out = child.wait_with_output().expect("wait");
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        stdout.ends_with('\n') && stdout.matches('\n').count() == 1,
        "{stdout:?} {stderr:?}"
    );
    let response: Value = serde_json::from_str(stdout.trim_end()).expect("json");
    ProtocolRun {
        status: out.status.code().expect("exit code"),
        response,
        stdout,
        stderr,
    }
}

#[test]
fn racing_edits_from_one_revision_give_one_winner() {
    let mut base = String::from("header\n");
    for i in 0..200 {
        base.push_str(&format!("filler line {i}\n"));
    }
    base.push_str("value = ANCHOR;\nfooter\n");
    let fx = Fixture::new(&[("src/race.txt", base.as_bytes())], &["src/*.txt"]);
    let path = fx.file("src/race.txt");
    let entries = dir_entries(&fx.file("src"));
    for round in 0..ROUNDS {
        // Every round starts from the same base revision.
        std::fs::write(&path, &base).expect("reset");
        let sha = sha256_hex(base.as_bytes());
        let candidates: Vec<String> = (0..PROCESSES)
            .map(|p| format!("edit-{round}-{p}-{}", "x".repeat(p * 37)))
            .collect();
        let requests: Vec<String> = candidates
            .iter()
            .map(|new| {
                fx.request("src/race.txt", Some(&sha), "ANCHOR", new)
                    .to_string()
            })
            .collect();
        // Start all, then feed all, so that they really overlap.
        let mut children: Vec<Child> = (0..PROCESSES).map(|_| spawn()).collect();
        for (child, request) in children.iter_mut().zip(&requests) {
            let mut stdin = child.stdin.take().expect("stdin");
            stdin.write_all(request.as_bytes()).expect("write request");
        }
        let runs: Vec<ProtocolRun> = children.into_iter().map(finish).collect();
        let winners: Vec<usize> = runs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.response["code"] == "OK")
            .map(|(i, _)| i)
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: exactly one OK: {runs:#?}");
        let winner = winners[0];
        let expected = base.replace("ANCHOR", &candidates[winner]);
        assert_ok(&runs[winner], "src/race.txt", expected.as_bytes());
        for (i, run) in runs.iter().enumerate() {
            if i != winner {
                assert_refused(run, "REVISION_STALE");
            }
        }
        // No lost update, no torn write: exactly the winner's bytes.
        assert_eq!(
            std::fs::read(&path).expect("read"),
            expected.as_bytes(),
            "round {round}"
        );
        assert_eq!(dir_entries(&fx.file("src")), entries, "round {round}");
    }
    // Nothing was created inside the worktree for the lock.
    assert_eq!(dir_entries(fx.repo.path()), [".git", "src"]);
}
