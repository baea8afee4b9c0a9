//! `SIGKILL` during a publish, for real: hundreds of kills of a 1 MiB `replace` at delays
//! spread over the run. The file is always exactly the old or the new bytes; a temporary is
//! visible after a kill only in the instant between its naming and the rename (it is
//! anonymous until then, which the kernel's own inotify events prove), and whatever a
//! killed publish left, the next writing call removes — on the proof of the worktree's
//! journal, never on a name alone.
//! The same campaign on the named-temporary fallback (a file system without `O_TMPFILE`,
//! forced in debug builds by `SATYRN_TEST_PUBLISH_FALLBACK=1`) leaves real temporaries, and
//! proves the next call sweeps them.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::protocol_common::{Fixture, assert_ok, temporaries};
use crate::support::{ProtocolRun, dir_entries, host_bin, protocol_with, sha256_hex};

const ROUNDS: u32 = 300;
/// The first rounds, spread over the whole run, find where the rename happens.
const CALIBRATION: u32 = 60;

struct Campaign {
    kills: u32,
    killed_mid_run: u32,
    left_a_temporary: u32,
}

/// The 1 MiB file and its edited form (the first line changes).
fn contents() -> (Vec<u8>, Vec<u8>) {
    let mut old: Vec<u8> = b"HEADER\n".to_vec();
    old.extend(b"0123456789abcdef".repeat(64 * 1024));
    let mut new = old.clone();
    new.splice(0..6, b"HEADXX".iter().copied());
    (old, new)
}

fn fallback(cmd: &mut Command, named: bool) {
    if named {
        cmd.env("SATYRN_TEST_PUBLISH_FALLBACK", "1");
    } else {
        cmd.env_remove("SATYRN_TEST_PUBLISH_FALLBACK");
    }
}

/// The edit that moves the file from what it holds now to the other state.
fn next_call(fx: &Fixture, old: &[u8], new: &[u8], named: bool) -> ProtocolRun {
    let now = std::fs::read(fx.file("big.txt")).expect("read");
    let (from, to, expected) = if now == old {
        ("HEADER", "HEADXX", new)
    } else {
        ("HEADXX", "HEADER", old)
    };
    let request = fx.request("big.txt", Some(&sha256_hex(&now)), from, to);
    let run = protocol_with(request.to_string().as_bytes(), |cmd| fallback(cmd, named));
    assert_ok(&run, "big.txt", expected);
    run
}

fn campaign(named: bool, on_create: bool, rounds: u32) -> Campaign {
    let (old, new) = contents();
    let fx = Fixture::new(&[("big.txt", &old)], &["*.txt"]);
    let path = fx.file("big.txt");
    let request = fx
        .request("big.txt", Some(&sha256_hex(&old)), "HEADER", "HEADXX")
        .to_string();
    // Sibling: undisturbed, the edit lands (and gives the length of a whole run).
    let mut whole = Duration::ZERO;
    for _ in 0..3 {
        std::fs::write(&path, &old).expect("reset");
        let started = Instant::now();
        let run = protocol_with(request.as_bytes(), |cmd| fallback(cmd, named));
        whole = whole.max(started.elapsed());
        assert_ok(&run, "big.txt", &new);
    }
    let entries = dir_entries(fx.repo.path());
    let mut result = Campaign {
        kills: 0,
        killed_mid_run: 0,
        left_a_temporary: 0,
    };
    let mut published_at: Option<Duration> = None;
    for round in 0..rounds {
        std::fs::write(&path, &old).expect("reset");
        let mut cmd = Command::new(host_bin());
        cmd.arg("protocol")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        fallback(&mut cmd, named);
        let watcher = on_create.then(|| watch(fx.repo.path()));
        let mut child = cmd.spawn().expect("spawn");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(request.as_bytes())
            .expect("write request");
        // First spread over the run, then concentrated on the last fifth before the
        // earliest kill that found the edit published (the rename), where the
        // temporary is written and synced.
        let delay = match published_at {
            Some(at) if round >= CALIBRATION => {
                let spread = whole / 5;
                (at + whole / 20).saturating_sub(spread)
                    + spread * (round - CALIBRATION) / (rounds - CALIBRATION).max(1)
            }
            _ => whole / 4 + whole * round / CALIBRATION,
        };
        match &watcher {
            Some(watcher) => wait_for_a_temporary(watcher),
            None => std::thread::sleep(delay),
        }
        child.kill().expect("SIGKILL");
        let status = child.wait().expect("wait");
        result.kills += 1;
        if status.code().is_none() {
            result.killed_mid_run += 1;
        }
        let bytes = std::fs::read(&path).expect("read");
        assert!(bytes == old || bytes == new, "round {round}: torn file");
        if bytes == new && round < CALIBRATION {
            published_at = Some(published_at.map_or(delay, |at: Duration| at.min(delay)));
        }
        let left = temporaries(fx.repo.path());
        let others: Vec<String> = dir_entries(fx.repo.path())
            .into_iter()
            .filter(|n| !left.contains(n))
            .collect();
        assert_eq!(others, entries, "round {round}: the directory changed");
        if !left.is_empty() {
            result.left_a_temporary += 1;
            if !named {
                // Named only once written and synced: never a partial temporary. It holds
                // the new content (killed before the exchange with the target) or, once
                // the edit is in place, the displaced old content (killed before its
                // removal).
                for name in &left {
                    let held = std::fs::read(fx.repo.path().join(name)).expect("read");
                    assert!(
                        held == new || (held == old && bytes == new),
                        "round {round}: a partial temporary {name}"
                    );
                }
            }
            let run = next_call(&fx, &old, &new, named);
            assert!(
                run.stderr.contains("that a killed satyrn-host left"),
                "round {round}: {run:?}"
            );
            assert_eq!(
                temporaries(fx.repo.path()),
                Vec::<String>::new(),
                "round {round}: a temporary survived the next call"
            );
        }
    }
    // After the campaign, an ordinary call still works and leaves the directory as it was.
    next_call(&fx, &old, &new, named);
    assert_eq!(dir_entries(fx.repo.path()), entries);
    eprintln!(
        "{} kills ({} mid-run), {} left a temporary ({})",
        result.kills,
        result.killed_mid_run,
        result.left_a_temporary,
        if named { "named fallback" } else { "O_TMPFILE" }
    );
    result
}

#[test]
fn sigkill_campaign_leaves_the_file_old_or_new_and_the_next_call_removes_any_temporary() {
    let run = campaign(false, false, ROUNDS);
    assert!(
        run.killed_mid_run * 2 >= run.kills,
        "most kills must land mid-run, or the campaign proves nothing: {} of {}",
        run.killed_mid_run,
        run.kills
    );
}

/// Kills at the very moment a temporary's name appears (an inotify `IN_CREATE`): with
/// `O_TMPFILE` the name appears only once the content is complete and synced, so even these
/// kills leave at most a complete temporary, which the next call removes.
#[test]
fn sigkill_as_the_temporary_is_named_leaves_at_most_a_complete_one() {
    let run = campaign(false, true, 60);
    assert!(
        run.killed_mid_run * 2 > run.kills,
        "most kills must land mid-run: {} of {}",
        run.killed_mid_run,
        run.kills
    );
}

/// The same on the named fallback, where the name exists while the content is written:
/// the kills leave real, partial temporaries of dead processes, and each next call
/// removes them.
#[test]
fn sigkill_campaign_on_the_named_fallback_leaves_temporaries_the_next_call_removes() {
    let run = campaign(true, true, 60);
    assert!(
        run.left_a_temporary * 2 > run.kills,
        "kills at the temporary's creation left one in only {} of {} rounds",
        run.left_a_temporary,
        run.kills
    );
}

/// An inotify watch of `dir` for created names.
fn watch(dir: &std::path::Path) -> std::os::fd::OwnedFd {
    use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
    let watcher = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC).expect("inotify");
    inotify::add_watch(&watcher, dir, WatchFlags::CREATE).expect("watch");
    watcher
}

/// Returns as soon as a temporary's name is created in the watched directory (or after
/// 30 s, when the test then fails on the outcome).
fn wait_for_a_temporary(watcher: &std::os::fd::OwnedFd) {
    use rustix::event::{PollFd, PollFlags, poll};
    use rustix::fs::inotify::Reader;
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut buf = [std::mem::MaybeUninit::uninit(); 16 * 1024];
    let mut reader = Reader::new(watcher, &mut buf);
    while Instant::now() < deadline {
        match reader.next() {
            Ok(event) => {
                if event
                    .file_name()
                    .is_some_and(|n| crate::protocol_common::is_temporary(&n.to_string_lossy()))
                {
                    return;
                }
            }
            Err(rustix::io::Errno::AGAIN) => {
                let mut fds = [PollFd::new(watcher, PollFlags::IN)];
                let timeout = rustix::event::Timespec::try_from(Duration::from_millis(100))
                    .expect("timespec");
                let _ = poll(&mut fds, Some(&timeout));
            }
            Err(e) => panic!("reading inotify events: {e}"),
        }
    }
    panic!("no temporary was created within 30 s");
}

/// Repository content named like satyrn's temporaries, with a dead pid — committed, one of
/// them private — is never removed: the sweep takes no name for proof. An edit of the only
/// writable file beside them publishes, and both stay, byte for byte, tracked and clean.
#[test]
fn committed_files_named_like_temporaries_are_never_swept() {
    let notes = "src/.notes.satyrn-4000000-ab.tmp";
    let key = "src/.id_rsa.satyrn-999999999-0.tmp";
    let fx = Fixture::new(
        &[
            ("src/main.txt", b"hello world\n"),
            (notes, b"my notes\n"),
            (key, b"-----BEGIN PRIVATE KEY-----\n"),
        ],
        &["src/main.txt"],
    );
    let before: Vec<(String, Vec<u8>, u64)> = [notes, key]
        .iter()
        .map(|p| {
            let path = fx.file(p);
            let ino = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&path).expect("stat"));
            ((*p).to_owned(), std::fs::read(&path).expect("read"), ino)
        })
        .collect();
    for round in 0..3 {
        let (from, to) = if round % 2 == 0 {
            ("world", "there")
        } else {
            ("there", "world")
        };
        let run = crate::support::protocol(&fx.fresh("src/main.txt", from, to));
        assert_eq!(run.response["code"], "OK", "{run:?}");
        assert!(
            !run.stderr.contains("satyrn-"),
            "stderr names a temporary: {}",
            run.stderr
        );
    }
    for (p, bytes, ino) in &before {
        let path = fx.file(p);
        assert_eq!(&std::fs::read(&path).expect("still there"), bytes, "{p}");
        let now = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&path).expect("stat"));
        assert_eq!(now, *ino, "{p}: same inode");
    }
    let status = crate::support::git_ok(fx.repo.path(), &["status", "--porcelain"]);
    assert_eq!(status, " M src/main.txt\n");
}

/// Every inotify event of the repository's root during one real `replace`, as
/// (name, event flags); `named` selects the fallback.
fn events_of_one_replace(named: bool) -> Vec<(String, rustix::fs::inotify::ReadFlags)> {
    use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
    let (old, new) = contents();
    let fx = Fixture::new(&[("big.txt", &old)], &["*.txt"]);
    let watcher = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC).expect("inotify");
    inotify::add_watch(&watcher, fx.repo.path(), WatchFlags::ALL_EVENTS).expect("watch");
    let request = fx.request("big.txt", Some(&sha256_hex(&old)), "HEADER", "HEADXX");
    let run = protocol_with(request.to_string().as_bytes(), |cmd| fallback(cmd, named));
    assert_ok(&run, "big.txt", &new);
    let mut buf = [std::mem::MaybeUninit::uninit(); 64 * 1024];
    let mut reader = inotify::Reader::new(&watcher, &mut buf);
    let mut events = Vec::new();
    loop {
        match reader.next() {
            Ok(event) => {
                assert!(
                    !event.events().contains(ReadFlags::QUEUE_OVERFLOW),
                    "inotify queue overflowed"
                );
                let name = event
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                events.push((name, event.events()));
            }
            Err(rustix::io::Errno::AGAIN) => break,
            Err(e) => panic!("reading inotify events: {e}"),
        }
    }
    assert!(temporaries(fx.repo.path()).is_empty());
    events
}

/// The kernel reports every write and attribute change of a file under its name in the
/// watched directory: with `O_TMPFILE` the temporary's name is created (linked) once the
/// content is complete and synced, and nothing is ever written or changed under it (it is
/// then exchanged with the target, and the displaced file read and removed).
#[test]
fn the_temporary_is_never_written_while_it_has_a_name() {
    use rustix::fs::inotify::ReadFlags;
    let events = events_of_one_replace(false);
    let on_temporary: Vec<ReadFlags> = events
        .iter()
        .filter(|(name, _)| crate::protocol_common::is_temporary(name))
        .map(|(_, flags)| *flags)
        .collect();
    assert_eq!(on_temporary.first(), Some(&ReadFlags::CREATE), "{events:?}");
    let written = ReadFlags::MODIFY | ReadFlags::ATTRIB | ReadFlags::CLOSE_WRITE;
    assert!(
        on_temporary.iter().all(|flags| !flags.intersects(written)),
        "{events:?}"
    );
    // Sibling: the named fallback's temporary is visible while it is written.
    let events = events_of_one_replace(true);
    let written = events.iter().any(|(name, flags)| {
        crate::protocol_common::is_temporary(name) && flags.contains(ReadFlags::MODIFY)
    });
    assert!(written, "{events:?}");
}

/// `deliver` never commits a publish temporary into a candidate: one left in the attempt's
/// worktree (by a `satyrn-host` killed mid-publish: a dead process's pid in its name) is
/// not part of the candidate; a file that only resembles one is, like any other file.
#[test]
fn a_candidate_carries_what_the_command_wrote_even_when_named_like_a_temporary() {
    use crate::deliver_support::{FixedRepo, deliver, sh};
    use crate::support::{ContractFile, git_ok};
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n"), ("d/b.txt", b"b\n")]);
    let root = repo.path();
    let mut gone = Command::new("true").spawn().expect("true");
    let pid = gone.id();
    gone.wait().expect("wait");
    let script = format!(
        "echo changed > a.txt && printf partial > .a.txt.satyrn-{pid}-0abc01.tmp && \
         printf old > 'd/.b [x].txt.satyrn-{pid}-ff.tmp' && printf kept > .notes.satyrn-tmp.tmp"
    );
    let contract = ContractFile::any("no-temporaries");
    let run = deliver(&root, &contract.path, &sh(&script));
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    let commit = git_ok(
        &root,
        &["rev-parse", "refs/satyrn/candidates/no-temporaries/head"],
    );
    let changes = git_ok(
        &root,
        &[
            "diff-tree",
            "-r",
            "--no-renames",
            "--name-status",
            "--no-commit-id",
            commit.trim(),
        ],
    );
    // No journal entry proves any of them satyrn's: they are the command's files, and a
    // reviewer sees them.
    assert_eq!(
        changes,
        format!(
            "A\t.a.txt.satyrn-{pid}-0abc01.tmp\nA\t.notes.satyrn-tmp.tmp\nM\ta.txt\nA\td/.b [x].txt.satyrn-{pid}-ff.tmp\n"
        )
    );
}
