//! `SIGKILL` over the whole publish timeline of a five-file change set (a create in new
//! directories, an edit, a delete, a move into new directories, an overwrite; files of
//! 10 KiB to 4 MiB), for real: first at every step of the publish in turn (debug builds
//! stop themselves there with `SATYRN_TEST_KILL_AT`), then at delays spread over whole
//! runs, until at least 300 processes were killed. After each kill the next taker of the
//! worktree lock settles the record: the worktree then holds exactly every file's old
//! state or exactly every file's new state (bytes, modes, directories), no temporary and no
//! record is left, and the next call succeeds.

use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::protocol_common::Fixture;
use crate::support::{host_bin, protocol_raw, sha256_hex, tree_state};

/// The least number of killed processes: the kill at every step of the publish first, then
/// random delays over the whole publish on two worktrees. 1,000 kills took 132 s; 300 took
/// 26 s and gave 229 roll-backs, 15 roll-forwards, 4 untouched and 125 completed sets.
const KILLS: u32 = 300;

type State = BTreeMap<String, (String, Vec<u8>, u32)>;

/// The worktree as it matters: every entry but `.git`'s own, with kind, bytes and mode;
/// the change-set records are kept in, so a left record shows.
fn state(root: &Path) -> State {
    tree_state(root)
        .into_iter()
        .filter(|(p, _)| !p.starts_with(".git") || p.starts_with(".git/satyrn-change-sets/"))
        .map(|(p, (kind, bytes, mode, _))| (p, (kind, bytes, mode & 0o7777)))
        .collect()
}

fn text(len: usize, seed: u8) -> Vec<u8> {
    let line: Vec<u8> = (0..63)
        .map(|i| b'a' + (i as u8 + seed) % 26)
        .chain([b'\n'])
        .collect();
    line.iter().copied().cycle().take(len).collect()
}

struct Set {
    fx: Fixture,
    old: Vec<(String, Vec<u8>, u32)>,
    request: String,
}

fn five_file_set() -> Set {
    let old = vec![
        (
            "edit.txt".to_owned(),
            [b"HEADER\n".to_vec(), text(10 * 1024, 1)].concat(),
            0o644,
        ),
        ("gone.txt".to_owned(), text(100 * 1024, 2), 0o644),
        ("tool.sh".to_owned(), text(1024 * 1024, 3), 0o755),
        ("over.txt".to_owned(), text(4 * 1024 * 1024, 4), 0o644),
    ];
    let files: Vec<(&str, &[u8])> = old
        .iter()
        .map(|(p, b, _)| (p.as_str(), b.as_slice()))
        .collect();
    let fx = Fixture::new(&files, &["*"]);
    for (p, _, mode) in &old {
        std::fs::set_permissions(fx.file(p), std::fs::Permissions::from_mode(*mode))
            .expect("chmod");
    }
    let sha = |p: &str| sha256_hex(&old.iter().find(|(q, ..)| q == p).expect("file").1);
    let ops = json!([
        {"op": "write", "path": "fresh/deep/new.txt", "content": String::from_utf8(text(512 * 1024, 5)).expect("ascii")},
        {"op": "edit", "path": "edit.txt", "expected_sha256": sha("edit.txt"),
         "edits": [{"op": "replace", "old_text": "HEADER", "new_text": "HEADXX"}]},
        {"op": "delete", "path": "gone.txt", "expected_sha256": sha("gone.txt")},
        {"op": "move", "path": "tool.sh", "to": "bin/tools/tool.sh", "expected_sha256": sha("tool.sh")},
        {"op": "write", "path": "over.txt", "expected_sha256": sha("over.txt"),
         "content": String::from_utf8(text(4 * 1024 * 1024, 6)).expect("ascii")},
    ]);
    let request = json!({
        "version": 1, "operation": "change_set",
        "repo": fx.repo.path(), "contract": fx.contract.path, "ops": ops,
    })
    .to_string();
    Set { fx, old, request }
}

impl Set {
    /// Puts the old state back (every other entry removed).
    fn reset(&self) {
        let root = self.fx.repo.path();
        for entry in std::fs::read_dir(root).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if path.is_dir() {
                std::fs::remove_dir_all(&path).expect("rm -r");
            } else {
                std::fs::remove_file(&path).expect("rm");
            }
        }
        for (p, bytes, mode) in &self.old {
            std::fs::write(self.fx.file(p), bytes).expect("write");
            std::fs::set_permissions(self.fx.file(p), std::fs::Permissions::from_mode(*mode))
                .expect("chmod");
        }
    }

    fn spawn(&self, kill_at: Option<u32>) -> std::process::Child {
        self.spawn_with("SATYRN_TEST_KILL_AT", kill_at)
    }

    fn spawn_with(&self, var: &str, step: Option<u32>) -> std::process::Child {
        let mut cmd = Command::new(host_bin());
        cmd.arg("protocol")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .env_remove("SATYRN_TEST_KILL_AT")
            .env_remove("SATYRN_TEST_STOP_AT");
        if let Some(n) = step {
            cmd.env(var, n.to_string());
        }
        let mut child = cmd.spawn().expect("spawn");
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        let _ = stdin.write_all(self.request.as_bytes());
        drop(stdin);
        child
    }

    /// Stopped at the publish's first step, then continued: the pid (the caller continues it).
    fn spawn_stopped(&self) -> std::process::Child {
        let child = self.spawn_with("SATYRN_TEST_STOP_AT", Some(1));
        let pid = rustix::process::Pid::from_child(&child);
        let stopped = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::UNTRACED)
            .expect("waitpid")
            .is_some_and(|(_, status)| status.stopped());
        assert!(stopped, "the publish never reached its first step");
        child
    }

    /// How long a publish takes from its first step to the process's end (the longest of
    /// three undisturbed runs), the old state put back after each.
    fn publish_length(&self) -> Duration {
        let mut longest = Duration::ZERO;
        for _ in 0..3 {
            let mut child = self.spawn_stopped();
            let started = Instant::now();
            continue_it(&child);
            assert!(child.wait().expect("wait").success());
            longest = longest.max(started.elapsed());
            self.reset();
        }
        longest
    }

    fn root_fd(&self) -> OwnedFd {
        rustix::fs::open(
            self.fx.repo.path(),
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY,
            rustix::fs::Mode::empty(),
        )
        .expect("open root")
    }
}

fn continue_it(child: &std::process::Child) {
    let pid = rustix::process::Pid::from_child(child);
    rustix::process::kill_process(pid, rustix::process::Signal::CONT).expect("SIGCONT");
}

#[derive(Default, Debug)]
struct Tally {
    kills: u32,
    /// Kills that left a record: a rolled-back or rolled-forward publish.
    rolled_back: u32,
    rolled_forward: u32,
    /// Kills after which the tree held the old state and no record (before the intent).
    untouched: u32,
    completed: u32,
}

/// The set's contract, `writable_paths: ['*']`, as a recovery's boundary.
fn everything() -> satyrn_publish::Boundary<'static> {
    static WRITABLE: std::sync::LazyLock<Vec<String>> =
        std::sync::LazyLock::new(|| vec!["*".to_owned()]);
    satyrn_publish::Boundary {
        writable_paths: &WRITABLE,
        private_paths: &[],
    }
}

/// Settles what the kill left as the next lock taker does, then checks the state is
/// exactly the old or the new one; returns whether it was the new one.
fn settle_and_check(set: &Set, old: &State, new: &State, tally: &mut Tally) -> bool {
    let said = satyrn_publish::recover(&set.root_fd(), everything());
    assert_eq!(said.kept, 0, "a record was kept: {:?}", said.said);
    let said = said.said;
    let now = state(set.fx.repo.path());
    let is_new = if now == *new {
        true
    } else {
        assert!(
            now == *old,
            "after a kill and recovery the tree is neither the old nor the new state: {:?}",
            diff(&now, old, new)
        );
        false
    };
    match (said.is_empty(), is_new) {
        (true, false) => tally.untouched += 1,
        (false, false) => tally.rolled_back += 1,
        (false, true) => tally.rolled_forward += 1,
        (true, true) => tally.completed += 1,
    }
    is_new
}

fn diff(now: &State, old: &State, new: &State) -> Vec<String> {
    let mut out = Vec::new();
    for (p, v) in now {
        let tag = match (old.get(p) == Some(v), new.get(p) == Some(v)) {
            (true, true) => continue,
            (true, false) => "old",
            (false, true) => "new",
            (false, false) => "neither",
        };
        out.push(format!("{p}: {tag}"));
    }
    for p in old.keys().chain(new.keys()) {
        if !now.contains_key(p) {
            out.push(format!("{p}: missing"));
        }
    }
    out
}

#[test]
fn a_killed_change_set_is_always_all_old_or_all_new_after_recovery() {
    let set = five_file_set();
    let old = state(set.fx.repo.path());
    // Sibling: undisturbed, the set lands whole.
    let done = protocol_raw(set.request.as_bytes());
    assert_eq!(done.response["code"], "OK", "{}", done.stdout);
    let new = state(set.fx.repo.path());
    assert_ne!(old, new);
    assert!(new.contains_key("bin/tools/tool.sh") && new["bin/tools/tool.sh"].2 == 0o755);
    set.reset();
    assert_eq!(state(set.fx.repo.path()), old);
    let mut tally = Tally::default();
    // Every step in turn, until a run is not stopped; when each step comes gives the
    // publish's window for the delays below.
    let mut steps = 0;
    let (mut first, mut last) = (Duration::MAX, Duration::ZERO);
    for n in 1.. {
        let started = Instant::now();
        let status = set.spawn(Some(n)).wait().expect("wait");
        let at = started.elapsed();
        if status.signal().is_none() {
            assert!(status.success(), "step {n}: {status:?}");
            assert_eq!(
                state(set.fx.repo.path()),
                new,
                "an undisturbed run lands whole"
            );
            set.reset();
            steps = n - 1;
            break;
        }
        (first, last) = (first.min(at), last.max(at));
        tally.kills += 1;
        let is_new = settle_and_check(&set, &old, &new, &mut tally);
        if !is_new {
            // The next call succeeds.
            let next = protocol_raw(set.request.as_bytes());
            assert_eq!(
                next.response["code"], "OK",
                "after a kill at step {n}: {}",
                next.stdout
            );
        }
        set.reset();
        assert!(n < 200, "the publish never ends");
    }
    assert!(steps >= 12, "only {steps} steps were found");
    // Then at delays spread over the publish (from its first step, stopped there, to its
    // end), on two worktrees at once, until the kills add up.
    let (from, to) = (0, set.publish_length().as_micros() as u64);
    let phase = Instant::now();
    let others = std::thread::scope(|scope| {
        let other = scope.spawn(|| random_kills(&five_file_set(), (from, to), KILLS / 2, 7));
        let mine = random_kills(
            &set,
            (from, to),
            KILLS - KILLS / 2 - tally.kills.min(KILLS / 2),
            11,
        );
        (other.join().expect("thread"), mine)
    });
    for t in [others.0, others.1] {
        tally.kills += t.kills;
        tally.rolled_back += t.rolled_back;
        tally.rolled_forward += t.rolled_forward;
        tally.untouched += t.untouched;
        tally.completed += t.completed;
    }
    eprintln!(
        "change-set kill campaign: {steps} steps between {first:?} and {last:?} after the start, a publish {to} µs, {tally:?}; the random kills took {:?}",
        phase.elapsed()
    );
    assert!(tally.kills >= KILLS, "{tally:?}");
    assert!(
        tally.rolled_back > 0 && tally.rolled_forward > 0,
        "{tally:?}"
    );
}

/// Kills runs of `set` at random delays in `window` (microseconds) until `kills` were
/// killed, checking each as the campaign does.
fn random_kills(set: &Set, (from, to): (u64, u64), kills: u32, seed: u64) -> Tally {
    let old = state(set.fx.repo.path());
    let done = protocol_raw(set.request.as_bytes());
    assert_eq!(done.response["code"], "OK", "{}", done.stdout);
    let new = state(set.fx.repo.path());
    set.reset();
    let mut seed = (u64::from(std::process::id()) << 8) | seed;
    let mut random = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut tally = Tally::default();
    let mut round = 0u32;
    while tally.kills < kills {
        round += 1;
        let mut child = set.spawn_with("SATYRN_TEST_STOP_AT", Some(1));
        let pid = rustix::process::Pid::from_child(&child);
        // Stopped at the publish's first step (or gone, if it failed before it).
        let stopped = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::UNTRACED)
            .expect("waitpid")
            .is_some_and(|(_, status)| status.stopped());
        assert!(
            stopped,
            "the publish never reached its first step: {:?}",
            child.try_wait()
        );
        let delay = Duration::from_micros(from + random() % (to - from).max(1));
        rustix::process::kill_process(pid, rustix::process::Signal::CONT).expect("SIGCONT");
        std::thread::sleep(delay);
        let _ = child.kill();
        let status = child.wait().expect("wait");
        if status.signal() == Some(9) {
            tally.kills += 1;
        }
        let is_new = settle_and_check(set, &old, &new, &mut tally);
        if !is_new && round.is_multiple_of(50) {
            let next = protocol_raw(set.request.as_bytes());
            assert_eq!(next.response["code"], "OK", "{}", next.stdout);
        }
        set.reset();
        assert!(round < 20 * kills.max(1), "too few kills landed: {tally:?}");
    }
    tally
}

/// A candidate never holds an intent record or half a change set: `deliver` settles what a
/// publish killed inside the command left before it looks at the worktree. Killed in the
/// middle of its commits, the set is rolled back (the command changed nothing); killed
/// after its mark, it is finished (the candidate is exactly the whole set).
#[test]
fn a_candidate_never_holds_half_a_change_set() {
    let set = five_file_set();
    // The request, with the attempt's worktree for the repository, from a file outside it.
    let template = set.request.replace(
        &serde_json::to_string(&set.fx.repo.path()).expect("json"),
        "\"@REPO@\"",
    );
    let outside = tempfile::tempdir().expect("tempdir");
    let request = outside.path().join("request.json");
    std::fs::write(&request, template).expect("write");
    crate::support::git_ok(set.fx.repo.path(), &["add", "-A"]);
    crate::support::git_ok(set.fx.repo.path(), &["commit", "-q", "-m", "modes"]);
    let changed = [
        "bin/tools/tool.sh",
        "edit.txt",
        "fresh/deep/new.txt",
        "gone.txt",
        "over.txt",
        "tool.sh",
    ];
    for (step, paths, said) in [
        (12, &[][..], "rolled back the change set"),
        (18, &changed[..], "finished the committed change set"),
    ] {
        let script = format!(
            "sed \"s#@REPO@#$PWD#g\" {} | SATYRN_TEST_KILL_AT={step} {} protocol; exit 0",
            request.display(),
            host_bin().display()
        );
        let run = crate::deliver_support::deliver(
            set.fx.repo.path(),
            &set.fx.contract.path,
            &["sh", "-c", &script],
        );
        let listed: Vec<&str> = run.receipt["paths"]
            .as_array()
            .map(|a| a.iter().map(|p| p.as_str().expect("path")).collect())
            .unwrap_or_default();
        assert_eq!(listed, paths, "killed at step {step}: {}", run.stdout);
        assert!(
            run.stderr.contains(said),
            "killed at step {step}: {}",
            run.stderr
        );
        if paths.is_empty() {
            assert_eq!(run.code(), "NO_CHANGE", "{}", run.stdout);
        } else {
            assert_eq!(run.code(), "OK", "{}", run.stdout);
        }
    }
    for line in crate::support::git_ok(
        set.fx.repo.path(),
        &["for-each-ref", "--format=%(refname)", "refs/satyrn"],
    )
    .lines()
    {
        crate::support::git_ok(set.fx.repo.path(), &["update-ref", "-d", line]);
    }
    // Killed with every name changed but before the mark, then the command writes a deleted
    // path again: the base renamed aside cannot go back, so the set cannot be rolled back
    // whole. The record is kept and no candidate is made (never one holding the aside file).
    let script = format!(
        "sed \"s#@REPO@#$PWD#g\" {} | SATYRN_TEST_KILL_AT=17 {} protocol; echo again > gone.txt; exit 0",
        request.display(),
        host_bin().display()
    );
    let run = crate::deliver_support::deliver(
        set.fx.repo.path(),
        &set.fx.contract.path,
        &["sh", "-c", &script],
    );
    assert_eq!(run.code(), "MUTATION_FAILED", "{}", run.stdout);
    assert!(
        run.receipt["message"].as_str().is_some_and(
            |m| m.contains("could not be settled") && m.contains("no candidate was made")
        ),
        "{}",
        run.stdout
    );
    assert!(run.receipt["candidate_commit"].is_null(), "{}", run.stdout);
}
