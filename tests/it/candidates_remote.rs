//! `deliver --push REMOTE` and `candidates … --remote REMOTE`: "machines" are clones of one
//! bare repository; the remote is that bare repository on the file system, and once a real
//! `git daemon` with receive-pack on 127.0.0.1.

use std::ffi::OsStr;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::candidates::{candidates, candidates_cmd, race_drop_against_republication};
use crate::deliver_support::{
    Caller, FixedRepo, Run, deliver_cmd, deliver_os, finish, poll_until, sh, wait_ended,
};
use crate::support::{ContractFile, git_ok};

/// An origin repository, a bare remote cloned from it, and two machines cloned from that.
pub struct Fleet {
    origin: FixedRepo,
    pub dir: tempfile::TempDir,
}

impl Fleet {
    pub fn new() -> Self {
        let origin = FixedRepo::with_files(&[("a.txt", b"a\n")]);
        let dir = tempfile::tempdir().expect("tempdir");
        let bare = dir.path().join("remote.git");
        git_ok(
            dir.path(),
            &[
                "clone",
                "-q",
                "--bare",
                &origin.path().to_string_lossy(),
                &bare.to_string_lossy(),
            ],
        );
        for machine in ["m1", "m2"] {
            git_ok(
                dir.path(),
                &["clone", "-q", &bare.to_string_lossy(), machine],
            );
        }
        Self { origin, dir }
    }

    pub fn bare(&self) -> PathBuf {
        self.dir.path().join("remote.git")
    }

    pub fn machine(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The candidate refs on the remote: `refname objectname` lines.
    pub fn remote_refs(&self) -> String {
        let bare = self.bare();
        git_ok(
            &bare,
            &[
                "for-each-ref",
                "--format=%(refname) %(objectname) %(*objectname)",
                "refs/satyrn",
            ],
        )
    }
}

/// `deliver --push REMOTE` of contract `id` running `script` in `root`.
fn push_deliver(root: &Path, id: &str, script: &str, remote: &str) -> Run {
    let contract = ContractFile::any(id);
    let argv: Vec<&OsStr> = sh(script).into_iter().map(OsStr::new).collect();
    deliver_os(root, &contract.path, &["--push", remote], &argv)
}

fn published(run: &Run) -> (bool, String) {
    let p = &run.receipt["published"];
    (
        p["pushed"].as_bool().expect("pushed"),
        p["remote"].as_str().expect("remote").to_owned(),
    )
}

fn commit_of(run: &Run) -> String {
    run.receipt["candidate_commit"]
        .as_str()
        .expect("commit")
        .to_owned()
}

/// The remote after `winner` pushed candidate `id`: exactly its head and receipt refs.
fn assert_remote_holds(fleet: &Fleet, id: &str, winner: &str) -> Vec<String> {
    let lines: Vec<String> = fleet
        .remote_refs()
        .lines()
        .filter(|l| l.starts_with(&format!("refs/satyrn/candidates/{id}/")))
        .map(str::to_owned)
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(
        lines[0],
        format!("refs/satyrn/candidates/{id}/head {winner} ")
    );
    assert!(
        lines[1].starts_with(&format!("refs/satyrn/candidates/{id}/receipt "))
            && lines[1].ends_with(&format!(" {winner}")),
        "the receipt tag of the winner: {lines:?}"
    );
    lines
}

/// The checks common to the file-system remote and the `git daemon` one.
fn first_push_wins_and_the_reviewer_gathers_it(fleet: &Fleet, remote: &str) {
    let (m1, m2) = (fleet.machine("m1"), fleet.machine("m2"));
    let won = push_deliver(&m1, "shared", "echo one > one.txt", remote);
    assert_eq!((won.status, won.code()), (0, "OK"), "{}", won.stdout);
    assert_eq!(published(&won), (true, remote.to_owned()));
    assert_eq!(won.receipt["published"]["message"], "");
    let winner = commit_of(&won);
    let remote_before = assert_remote_holds(fleet, "shared", &winner);

    let before = Caller::capture(&m2);
    let lost = push_deliver(&m2, "shared", "echo two > two.txt", remote);
    assert_eq!(
        (lost.status, lost.code()),
        (8, "CANDIDATE_EXISTS"),
        "{}",
        lost.stdout
    );
    assert_eq!(lost.outcome(), "discarded");
    assert_eq!(published(&lost), (false, remote.to_owned()));
    assert!(lost.receipt["candidate_ref"].is_null());
    // Nothing changed on the remote, and the local refs were withdrawn.
    assert_eq!(assert_remote_holds(fleet, "shared", &winner), remote_before);
    before.assert_unchanged(&m2, None);

    let sibling = push_deliver(&m2, "sibling", "echo three > three.txt", remote);
    assert_eq!(sibling.code(), "OK", "{}", sibling.stdout);

    // The reviewer gathers both from the remote, and applies the winner.
    let origin = fleet.origin.path();
    let listed = candidates(&origin, &["list", "--json", "--remote", remote]);
    assert_eq!(listed.status, 0, "{}", listed.stderr);
    let doc = listed.json();
    let ids: Vec<(&str, &str)> = doc["candidates"]
        .as_array()
        .expect("array")
        .iter()
        .map(|c| {
            (
                c["id"].as_str().expect("id"),
                c["commit"].as_str().expect("commit"),
            )
        })
        .collect();
    assert_eq!(
        ids,
        [
            ("shared", winner.as_str()),
            ("sibling", commit_of(&sibling).as_str())
        ]
    );
    let shown = candidates(&origin, &["show", "--json", "--remote", remote, "shared"]);
    assert_eq!(
        shown.json()["receipt"]["repo"],
        m1.to_string_lossy().as_ref(),
        "the receipt says which machine made it"
    );
    let applied = candidates(&origin, &["apply", "--json", "--remote", remote, "shared"]);
    assert_eq!(applied.code(), "OK", "{}", applied.stdout);
    assert_eq!(
        std::fs::read(origin.join("one.txt")).expect("read"),
        b"one\n"
    );
    assert!(
        git_ok(&origin, &["for-each-ref", "refs/satyrn/candidates"]).is_empty(),
        "the gathered candidates live under refs/satyrn/remotes/ only"
    );
}

#[test]
fn push_is_create_only_and_the_reviewer_lists_the_remote() {
    let fleet = Fleet::new();
    let remote = fleet.bare().to_string_lossy().into_owned();
    first_push_wins_and_the_reviewer_gathers_it(&fleet, &remote);

    // An unreachable remote: GIT_FAILED, and the local refs are withdrawn too.
    let m1 = fleet.machine("m1");
    let before = Caller::capture(&m1);
    let missing = fleet.dir.path().join("missing.git");
    let failed = push_deliver(&m1, "nowhere", "echo x > x.txt", &missing.to_string_lossy());
    assert_eq!(
        (failed.status, failed.code()),
        (8, "GIT_FAILED"),
        "{}",
        failed.stdout
    );
    assert!(!published(&failed).0);
    before.assert_unchanged(&m1, None);
}

/// Two machines push the same fresh candidate name at once, round after round: exactly one
/// remote ref each round, the other gets `CANDIDATE_EXISTS` and keeps nothing.
#[test]
fn two_machines_racing_for_one_name_make_exactly_one_remote_ref() {
    let fleet = Fleet::new();
    let remote = fleet.bare().to_string_lossy().into_owned();
    let (mut rounds, mut wins) = (0, [0, 0]);
    // Ten rounds: each is a real race of two pushes (21 rounds gave 10 and 11 wins).
    while rounds < 10 {
        let id = format!("race-{rounds}");
        let contract = ContractFile::any(&id);
        let children: Vec<(usize, Child)> = ["m1", "m2"]
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let script = format!("echo {m} > who.txt");
                let argv: Vec<&OsStr> = sh(&script).into_iter().map(OsStr::new).collect();
                let child = deliver_cmd(
                    &fleet.machine(m),
                    &contract.path,
                    &["--push", &remote],
                    &argv,
                )
                .spawn()
                .expect("spawn deliver");
                (i, child)
            })
            .collect();
        let runs: Vec<(usize, Run)> = children
            .into_iter()
            .map(|(i, c)| {
                (
                    i,
                    finish(c.wait_with_output().expect("wait"), Duration::ZERO),
                )
            })
            .collect();
        let mut codes: Vec<&str> = runs.iter().map(|(_, r)| r.code()).collect();
        codes.sort_unstable();
        assert_eq!(codes, ["CANDIDATE_EXISTS", "OK"], "round {rounds}");
        let (winner, run) = runs.iter().find(|(_, r)| r.code() == "OK").expect("winner");
        wins[*winner] += 1;
        assert_remote_holds(&fleet, &id, &commit_of(run));
        let (loser, _) = runs.iter().find(|(_, r)| r.code() != "OK").expect("loser");
        let loser_root = fleet.machine(["m1", "m2"][*loser]);
        assert!(
            git_ok(
                &loser_root,
                &["for-each-ref", &format!("refs/satyrn/candidates/{id}/")]
            )
            .is_empty(),
            "round {rounds}: the loser keeps no candidate"
        );
        rounds += 1;
    }
    eprintln!("{rounds} rounds: m1 won {}, m2 won {}", wins[0], wins[1]);
}

/// A `git daemon` serving `base` with receive-pack on a free port of 127.0.0.1; stopped
/// (by its own pid) when dropped. The `git-daemon` program is started directly (from
/// `git --exec-path`): `git daemon` would run it as a child of its own, which killing `git`
/// leaves running.
#[derive(Debug)]
pub struct Daemon {
    child: Child,
    pub port: u16,
}

impl Daemon {
    pub fn start(base: &Path) -> Self {
        let exec_path = git_ok(base, &["--exec-path"]).trim().to_owned();
        let program = Path::new(&exec_path).join("git-daemon");
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .expect("bind")
                .local_addr()
                .expect("addr")
                .port();
            let mut child = Command::new(&program)
                .current_dir(base)
                .args([
                    "--reuseaddr",
                    "--export-all",
                    "--enable=receive-pack",
                    "--listen=127.0.0.1",
                ])
                .arg(format!("--port={port}"))
                .arg(format!("--base-path={}", base.display()))
                .arg(base)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn git daemon");
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if child.try_wait().expect("try_wait").is_some() {
                    break; // the port was taken meanwhile: try another
                }
                if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return Self { child, port };
                }
                std::thread::yield_now();
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("git daemon did not start");
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn push_over_a_real_git_daemon() {
    let fleet = Fleet::new();
    let daemon = Daemon::start(fleet.dir.path());
    let url = format!("git://127.0.0.1:{}/remote.git", daemon.port);
    first_push_wins_and_the_reviewer_gathers_it(&fleet, &url);
    let mirrored = git_ok(
        &fleet.origin.path(),
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/satyrn/remotes/",
        ],
    );
    assert!(
        mirrored
            .lines()
            .all(|l| l.starts_with("refs/satyrn/remotes/url-")),
        "a URL is mirrored under its digest: {mirrored}"
    );
    drop(daemon);
}

/// A TCP server on 127.0.0.1 that accepts every connection and never sends a byte: a git
/// server that hangs. It counts the connections accepted and those the client closed.
struct SilentServer {
    port: u16,
    accepted: Arc<AtomicUsize>,
    closed: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl SilentServer {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let (accepted, closed, stop) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        let counters = (accepted.clone(), closed.clone(), stop.clone());
        std::thread::spawn(move || {
            let (accepted, closed, stop) = counters;
            for stream in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(mut stream) = stream else { continue };
                accepted.fetch_add(1, Ordering::SeqCst);
                let closed = closed.clone();
                // Reads (and drops) what the client sends until it closes its end.
                std::thread::spawn(move || {
                    let mut buf = [0u8; 4096];
                    while matches!(stream.read(&mut buf), Ok(n) if n > 0) {}
                    closed.fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        Self {
            port,
            accepted,
            closed,
            stop,
        }
    }
}

impl Drop for SilentServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// `deliver --timeout TIMEOUT --push` of candidate `id` (a new file) from machine `m1` to
/// `server`, which never answers: the running `deliver`.
fn spawn_push_to_silent(fleet: &Fleet, server: &SilentServer, id: &str, timeout: &str) -> Child {
    let url = format!("git://127.0.0.1:{}/remote.git", server.port);
    let contract = ContractFile::any(id);
    let argv: Vec<&OsStr> = sh("echo x > x.txt").into_iter().map(OsStr::new).collect();
    let child = deliver_cmd(
        &fleet.machine("m1"),
        &contract.path,
        &["--timeout", timeout, "--push", &url],
        &argv,
    )
    .spawn()
    .expect("spawn deliver");
    // deliver has read the contract once it is pushing (the server saw it connect); until
    // then the file must stay.
    assert!(
        poll_until(Duration::from_secs(30), || server
            .accepted
            .load(Ordering::SeqCst)
            >= 1),
        "git never connected"
    );
    drop(contract);
    child
}

/// After a push was stopped: the receipt keeps the local candidate (`candidate-created`,
/// not pushed, the remote's state called unknown), both local refs exist, the server saw every
/// connection of the stopped push close, and nothing reached the bare remote.
fn assert_stopped_push_kept_locally(fleet: &Fleet, server: &SilentServer, run: &Run, id: &str) {
    let url = format!("git://127.0.0.1:{}/remote.git", server.port);
    assert_eq!(run.outcome(), "candidate-created", "{}", run.stdout);
    assert_eq!(published(run), (false, url));
    let said = run.receipt["published"]["message"]
        .as_str()
        .expect("message");
    assert!(said.contains("unknown"), "{said}");
    assert_eq!(run.receipt["paths"], serde_json::json!(["x.txt"]));
    let commit = commit_of(run);
    let m1 = fleet.machine("m1");
    for leaf in ["head", "receipt^{commit}"] {
        let spec = format!("refs/satyrn/candidates/{id}/{leaf}");
        assert_eq!(git_ok(&m1, &["rev-parse", &spec]).trim(), commit, "{spec}");
    }
    assert!(
        poll_until(Duration::from_secs(5), || {
            server.closed.load(Ordering::SeqCst) == server.accepted.load(Ordering::SeqCst)
        }),
        "every connection of the stopped push was closed"
    );
    assert!(
        !fleet
            .remote_refs()
            .contains(&format!("refs/satyrn/candidates/{id}/")),
        "nothing reached the bare remote"
    );
}

/// A push that hangs (a `git://` server that accepts and never answers) ends at its
/// deadline — what is left of `--timeout`, at least the 10 s floor — with `PUSH_TIMEOUT`:
/// the push's process group is stopped, the local candidate is kept, and the remote is named
/// as unknown. Then the same machine pushes to a remote that answers: `OK`.
#[test]
fn a_push_that_hangs_is_stopped_at_its_deadline_and_the_local_candidate_is_kept() {
    let fleet = Fleet::new();
    let server = SilentServer::start();
    let t0 = Instant::now();
    let child = spawn_push_to_silent(&fleet, &server, "hung", "1");
    let run = wait_ended(child, Duration::from_secs(40), t0);
    assert_eq!(
        (run.status, run.code()),
        (8, "PUSH_TIMEOUT"),
        "{}",
        run.stdout
    );
    assert!(
        run.receipt["published"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("did not finish within")),
        "{}",
        run.stdout
    );
    assert_stopped_push_kept_locally(&fleet, &server, &run, "hung");

    let m1 = fleet.machine("m1");
    let bare = fleet.bare().to_string_lossy().into_owned();
    let answered = push_deliver(&m1, "answered", "echo y > y.txt", &bare);
    assert_eq!(
        (answered.status, answered.code()),
        (0, "OK"),
        "{}",
        answered.stdout
    );
    assert_eq!(published(&answered), (true, bare));
    assert_remote_holds(&fleet, "answered", &commit_of(&answered));
}

/// `SIGTERM` to `deliver` while its push hangs stops the push at once (long before the
/// 60 s `--timeout`): `INTERRUPTED`, the push's process group stopped, the local candidate
/// kept as after a timeout.
#[test]
fn a_signal_during_a_hanging_push_stops_it_and_keeps_the_local_candidate() {
    let fleet = Fleet::new();
    let server = SilentServer::start();
    let t0 = Instant::now();
    let child = spawn_push_to_silent(&fleet, &server, "stopped", "60");
    crate::deliver_support::signal(&child, libc::SIGTERM);
    let run = wait_ended(child, Duration::from_secs(20), t0);
    assert_eq!(
        (run.status, run.code()),
        (8, "INTERRUPTED"),
        "{}",
        run.stdout
    );
    assert!(
        run.receipt["message"]
            .as_str()
            .is_some_and(|m| m.contains("SIGTERM"))
    );
    assert_stopped_push_kept_locally(&fleet, &server, &run, "stopped");
}

/// `SIGKILL` to `deliver` while its push hangs: the kernel ends the push with it (the
/// push's parent-death signal), so no `git push` is left talking to the remote.
#[test]
fn sigkill_to_deliver_during_a_hanging_push_ends_the_push_too() {
    let fleet = Fleet::new();
    let server = SilentServer::start();
    let mut child = spawn_push_to_silent(&fleet, &server, "killed", "60");
    let pid = child.id();
    let pushers: Vec<u32> = crate::deliver_support::descendants(pid)
        .into_iter()
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|arg| arg == b"push"))
        })
        .collect();
    assert!(!pushers.is_empty(), "no git push below deliver");
    child.kill().expect("SIGKILL deliver");
    child.wait().expect("reap deliver");
    let limit = Duration::from_secs(15);
    for p in &pushers {
        let p = i32::try_from(*p).expect("pid");
        assert!(
            poll_until(limit, || !crate::deliver_support::alive(p)),
            "git push {p} outlived the killed deliver"
        );
    }
    assert!(
        poll_until(limit, || {
            server.closed.load(Ordering::SeqCst) == server.accepted.load(Ordering::SeqCst)
        }),
        "a connection of the push stayed open"
    );
    assert!(
        !fleet
            .remote_refs()
            .contains("refs/satyrn/candidates/killed/"),
        "nothing reached the bare remote"
    );
}

/// `candidates drop --remote REMOTE --expect COMMIT ID`: compare-and-delete on the remote.
/// A wrong `--expect` is `CANDIDATE_CHANGED` and leaves the remote as it was; the right one
/// deletes exactly the candidate's two refs there (the pushing machine's local candidate
/// and the remote's other candidates stay), and the reviewer's mirror follows; again is
/// `CANDIDATE_NOT_FOUND`.
#[test]
fn drop_on_a_remote_deletes_only_the_listed_commit_there() {
    let fleet = Fleet::new();
    let remote = fleet.bare().to_string_lossy().into_owned();
    let m1 = fleet.machine("m1");
    let gone = push_deliver(&m1, "gone", "echo g > g.txt", &remote);
    assert_eq!(gone.code(), "OK", "{}", gone.stdout);
    let kept = push_deliver(&m1, "kept", "echo k > k.txt", &remote);
    assert_eq!(kept.code(), "OK", "{}", kept.stdout);
    let commit = commit_of(&gone);
    let origin = fleet.origin.path();
    let remote_before = fleet.remote_refs();
    let drop = |expect: &str| {
        candidates(
            &origin,
            &[
                "drop", "--json", "--remote", &remote, "--expect", expect, "gone",
            ],
        )
    };

    let wrong = commit_of(&kept);
    let refused = drop(&wrong);
    assert_eq!(
        (refused.status, refused.code()),
        (13, "CANDIDATE_CHANGED".to_owned()),
        "{}",
        refused.stdout
    );
    assert_eq!(
        fleet.remote_refs(),
        remote_before,
        "the remote is unchanged"
    );

    let dropped = drop(&commit);
    assert_eq!(dropped.status, 0, "{}", dropped.stdout);
    let doc = dropped.json();
    assert_eq!(doc["dropped"]["remote"], remote.as_str());
    assert_eq!(
        doc["dropped"]["refs"],
        serde_json::json!([
            "refs/satyrn/candidates/gone/head",
            "refs/satyrn/candidates/gone/receipt"
        ])
    );
    let left: String = remote_before
        .lines()
        .filter(|l| !l.starts_with("refs/satyrn/candidates/gone/"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(fleet.remote_refs(), left, "only the two refs went");
    assert_eq!(
        git_ok(&m1, &["rev-parse", "refs/satyrn/candidates/gone/head"]).trim(),
        commit,
        "the pushing machine keeps its local candidate"
    );
    let listed = candidates(&origin, &["list", "--json"]);
    assert!(
        listed.json()["candidates"]
            .as_array()
            .expect("array")
            .is_empty()
    );
    let mirrored = git_ok(
        &origin,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/satyrn/remotes/",
        ],
    );
    assert!(
        !mirrored.contains("/gone/") && mirrored.contains("/kept/head"),
        "the mirror follows the remote: {mirrored}"
    );
    let again = drop(&commit);
    assert_eq!(again.code(), "CANDIDATE_NOT_FOUND", "{}", again.stdout);
}

/// `drop --remote` racing a re-publication on the remote itself (delete C1, create C2
/// there, round after round): the lease of the drop's push expects C1, so a re-published C2
/// is never deleted; both orders occur.
#[test]
fn drop_on_a_remote_racing_a_republication_there_never_loses_it() {
    let fleet = Fleet::new();
    let remote = fleet.bare().to_string_lossy().into_owned();
    let pushed = push_deliver(&fleet.machine("m1"), "raced", "echo one > r.txt", &remote);
    assert_eq!(pushed.code(), "OK", "{}", pushed.stdout);
    let c1 = commit_of(&pushed);
    let origin = fleet.origin.path();
    race_drop_against_republication(&fleet.bare(), &c1, || {
        candidates_cmd(
            &origin,
            &[
                "drop", "--json", "--remote", &remote, "--expect", &c1, "raced",
            ],
        )
    });
}

#[test]
fn push_usage_errors_print_no_receipt() {
    let fleet = Fleet::new();
    let m1 = fleet.machine("m1");
    let contract = ContractFile::any("u");
    for opts in [
        &["--push"][..],
        &["--push", "a", "--push", "b"],
        &["--push", ""],
    ] {
        let out = Command::new(crate::support::host_bin())
            .arg("deliver")
            .arg("--repo")
            .arg(&m1)
            .args(opts)
            .arg(&contract.path)
            .args(["--", "true"])
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{opts:?}");
        assert!(out.stdout.is_empty(), "{opts:?}");
    }
}

/// `candidates list --remote` and `drop --remote` against a server that never answers end
/// at their `--timeout`, naming the git that was stopped, the caller's refs unchanged; the
/// siblings: the same commands against a remote that answers.
#[test]
fn list_and_drop_on_a_remote_that_never_answers_end_at_their_timeout() {
    let fleet = Fleet::new();
    let server = SilentServer::start();
    let m1 = fleet.machine("m1");
    let url = format!("git://127.0.0.1:{}/remote.git", server.port);
    let refs = || crate::support::git_ok(&m1, &["for-each-ref"]);
    let before = refs();
    for args in [
        vec!["list", "--json", "--remote", url.as_str(), "--timeout", "2"],
        vec![
            "drop",
            "--json",
            "--remote",
            url.as_str(),
            "--timeout",
            "2",
            "--expect",
            "0000000000000000000000000000000000000000",
            "gone",
        ],
    ] {
        let t0 = Instant::now();
        let child = candidates_cmd(&m1, &args).spawn().expect("spawn");
        let out = crate::deliver_support::wait_ended_output(child, Duration::from_secs(40));
        let text = String::from_utf8_lossy(&out.stdout);
        assert_ne!(out.status.code(), Some(0), "{text}");
        assert!(
            text.contains("did not finish by its deadline"),
            "{args:?}: {text}"
        );
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "{args:?} took {:?}",
            t0.elapsed()
        );
        assert_eq!(refs(), before, "{args:?}");
    }
    let bare = fleet.bare().to_string_lossy().into_owned();
    let listed = candidates(
        &m1,
        &["list", "--json", "--remote", &bare, "--timeout", "30"],
    );
    assert_eq!(listed.status, 0, "{}", listed.stdout);
}
