//! `publish::delete` on the real file system: what it removes, what it refuses with the
//! tree unchanged, and its races against writers that do not take satyrn's lock.

use std::os::fd::OwnedFd;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use satyrn_mutator_core::revision::Revision;

use super::tests_support::{
    SelfChild, Tree, assert_sweeps_only_what_the_journal_proves, names, open_dir, outcome_word,
    report,
};
use super::{PublishError, delete};

const CHILD: &str = "tests_delete::child_process_entry";

#[test]
fn deletes_the_file_it_was_shown_and_leaves_no_temporary() {
    let tree = Tree::new();
    tree.write("top.txt", b"top\n");
    tree.write("a/b/c.txt", b"nested\n");
    tree.write("a/b/keep.txt", b"keep\n");
    delete(&tree.fd, "top.txt", &Revision::of(b"top\n")).expect("delete at the root");
    delete(&tree.fd, "a/b/c.txt", &Revision::of(b"nested\n")).expect("delete nested");
    assert_eq!(names(&tree.at("")), ["a"]);
    assert_eq!(names(&tree.at("a/b")), ["keep.txt"]);
    assert_eq!(names(&tree.outside()), ["kept.txt"]);
}

/// A delete first removes what the worktree's journal proves a killed publish left, and
/// nothing on its name alone: a dead pid's name with no entry, a recorded name now holding
/// another inode, and a live writer's are kept, byte for byte.
#[test]
fn a_delete_sweeps_only_what_the_journal_proves() {
    let tree = Tree::new();
    tree.write("d/old.txt", b"old\n");
    assert_sweeps_only_what_the_journal_proves(&tree, None, || {
        delete(&tree.fd, "d/old.txt", &Revision::of(b"old\n")).expect("delete");
    });
}

#[test]
fn refuses_changed_bytes_as_stale_and_keeps_the_file() {
    let tree = Tree::new();
    tree.write("a.txt", b"changed\n");
    let before = tree.snapshot();
    let err = delete(&tree.fd, "a.txt", &Revision::of(b"seen\n")).expect_err("stale");
    assert!(matches!(err, PublishError::Stale(_)), "{err:?}");
    assert_eq!(tree.snapshot(), before);
    delete(&tree.fd, "a.txt", &Revision::of(b"changed\n")).expect("the current bytes delete");
    assert_eq!(names(&tree.at("")), Vec::<String>::new());
}

/// Symbolic links (to inside, to outside, dangling, or on the way), directories, hard
/// links, missing files, `.git` and unsafe paths: refused, nothing changed anywhere.
#[test]
fn refuses_what_is_not_a_plain_file_and_changes_nothing() {
    let tree = Tree::new();
    let bytes = b"victim\n";
    tree.write("real/victim.txt", bytes);
    tree.write("linked.txt", bytes);
    tree.write(".git/config", bytes);
    std::fs::hard_link(tree.at("linked.txt"), tree.at("real/second-link.txt")).expect("link");
    std::os::unix::fs::symlink("real/victim.txt", tree.at("link")).expect("symlink");
    std::os::unix::fs::symlink(tree.outside().join("kept.txt"), tree.at("out-link"))
        .expect("symlink");
    std::os::unix::fs::symlink("nowhere", tree.at("dangling")).expect("symlink");
    std::os::unix::fs::symlink("real", tree.at("dir-link")).expect("symlink");
    std::fs::create_dir(tree.at("empty-dir")).expect("mkdir");
    let before = tree.snapshot();
    let base = Revision::of(bytes);
    for path in [
        "link",
        "out-link",
        "dangling",
        "dir-link/victim.txt",
        "real",
        "empty-dir",
        "linked.txt",
        "real/second-link.txt",
        "missing.txt",
        "real/missing.txt",
        ".git/config",
        ".GIT/config",
        "../outside/kept.txt",
        "/etc/hostname",
        "./real/victim.txt",
        "real//victim.txt",
        "",
    ] {
        let err = delete(&tree.fd, path, &base).expect_err(path);
        assert!(err.failure_message().is_some(), "{path}: {err:?}");
        assert_eq!(tree.snapshot(), before, "{path}");
    }
    delete(&tree.fd, "real/victim.txt", &base).expect("the plain file is deleted");
    assert_eq!(names(&tree.at("real")), ["second-link.txt"]);
    assert_eq!(
        std::fs::read(tree.outside().join("kept.txt")).expect("read"),
        b"outside\n"
    );
}

/// In a child, as on file systems without `O_TMPFILE` (`=1`: the rename aside still
/// happens) and without `RENAME_NOREPLACE` either (`=2`: re-checked in place, then
/// unlinked): deletes the same, and a stale delete still keeps the file.
#[test]
fn the_fallbacks_delete_and_refuse_the_same() {
    for level in ["1", "2"] {
        let tree = Tree::new();
        tree.write("d/victim.txt", b"not what was seen\n");
        let envs = [
            ("SATYRN_TEST_DELETE_ROOT", tree.at("").display().to_string()),
            ("SATYRN_TEST_PUBLISH_FALLBACK", level.to_string()),
        ];
        let run = || {
            let mut child = SelfChild::spawn(CHILD, &envs);
            let outcome = child.report();
            child.finish();
            outcome
        };
        let before = tree.snapshot();
        assert_eq!(run(), "stale", "fallback {level}");
        assert_eq!(tree.snapshot(), before, "fallback {level}");
        tree.write("d/victim.txt", CHILD_BYTES);
        assert_eq!(run(), "ok", "fallback {level}");
        assert_eq!(
            names(&tree.at("d")),
            Vec::<String>::new(),
            "fallback {level}"
        );
    }
}

/// What a racing writer does to `f.txt` once per round, at a random moment.
#[derive(Clone, Copy)]
enum Writer {
    /// Opens it by name (never creating it) and overwrites its bytes in place.
    InPlace,
    /// Writes a new file on the same file system and renames that over it.
    RenameOver,
}

const BASE: &[u8] = b"gen-000000\n";

/// Tallies of one race.
#[derive(Default, Debug)]
struct Tally {
    deleted: u64,
    stale: u64,
    /// In place only: the delete happened, and the writer's write went into the deleted
    /// inode (the documented window of a writer that opened the file before the rename
    /// aside and wrote after the re-check).
    lost: u64,
    /// In place only: the writer found no file (the delete came first).
    missed: u64,
}

/// What the test and its writer thread share.
struct Shared {
    barrier: Barrier,
    stop: AtomicBool,
    wrote: AtomicBool,
    /// How long recent deletes took (nanoseconds, a moving average): the writer's
    /// [`jitter`] spans up to twice that, so its write lands before, during and after the
    /// delete.
    delete_nanos: AtomicU64,
}

/// The rounds of one [`race`].
const ROUNDS: u64 = 3_000;

/// Races one delete per round against `writer` for [`ROUNDS`] rounds; checks every round.
fn race(writer: Writer) -> Tally {
    let tree = Arc::new(Tree::new());
    let shared = Arc::new(Shared {
        barrier: Barrier::new(2),
        stop: AtomicBool::new(false),
        wrote: AtomicBool::new(false),
        delete_nanos: AtomicU64::new(100_000),
    });
    let writer_thread = {
        let (tree, shared) = (Arc::clone(&tree), Arc::clone(&shared));
        std::thread::spawn(move || write_rounds(&tree, &shared, writer))
    };
    let mut tally = Tally::default();
    let base = Revision::of(BASE);
    // 3,000 rounds: 3 s ran about 5,000 (rename-over) and 8,000 (in place), each with
    // thousands of deletes and of stale refusals.
    for round in 1u64.. {
        let _ = std::fs::remove_file(tree.at("f.txt"));
        tree.write("f.txt", BASE);
        let held = std::fs::File::open(tree.at("f.txt")).expect("open");
        if round > ROUNDS {
            shared.stop.store(true, Ordering::SeqCst);
            shared.barrier.wait();
            break;
        }
        shared.barrier.wait();
        let started = Instant::now();
        let outcome = delete(&tree.fd, "f.txt", &base);
        let took = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        shared.barrier.wait();
        let average = shared.delete_nanos.load(Ordering::SeqCst);
        shared
            .delete_nanos
            .store((average * 7 + took) / 8, Ordering::SeqCst);
        let wrote = shared.wrote.load(Ordering::SeqCst);
        check_race_round(&tree, writer, round, &outcome, &held, wrote, &mut tally);
    }
    writer_thread.join().expect("writer");
    tally
}

/// The writer's part of [`race`]: per round, waits for the start, [`jitter`]s,
/// writes once, records whether it found the file, and waits for the end.
fn write_rounds(tree: &Tree, shared: &Shared, writer: Writer) {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ u64::from(std::process::id());
    for round in 1u64.. {
        // Staged beside the worktree (same file system), so the root lists only `f.txt`.
        let staged = tree.outside().join("w.new");
        if let Writer::RenameOver = writer {
            std::fs::write(&staged, writer_bytes(round)).expect("write");
        }
        shared.barrier.wait();
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        jitter(&mut seed, shared.delete_nanos.load(Ordering::SeqCst));
        let wrote = match writer {
            Writer::InPlace => {
                match std::fs::OpenOptions::new()
                    .write(true)
                    .open(tree.at("f.txt"))
                {
                    Ok(file) => {
                        file.write_all_at(&writer_bytes(round), 0).expect("write");
                        true
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
                    Err(e) => panic!("writer: {e}"),
                }
            }
            Writer::RenameOver => {
                std::fs::rename(&staged, tree.at("f.txt")).expect("rename over");
                true
            }
        };
        shared.wrote.store(wrote, Ordering::SeqCst);
        shared.barrier.wait();
    }
}

/// Waits a random time between 1 µs and twice `delete_nanos`, log-uniformly (each decade
/// as likely: the rename aside and re-check take microseconds, the directory fsync after
/// them milliseconds); spins below 100 µs, sleeps above, so the deleting thread keeps a
/// core on a loaded machine.
fn jitter(seed: &mut u64, delete_nanos: u64) {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    #[allow(clippy::cast_precision_loss)]
    let unit = (*seed >> 11) as f64 / (1u64 << 53) as f64;
    #[allow(clippy::cast_precision_loss)]
    let top = (2 * delete_nanos).max(2_000) as f64;
    let nanos = (1_000f64.ln() + unit * (top.ln() - 1_000f64.ln())).exp();
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let wait = Duration::from_nanos(nanos as u64);
    if wait > Duration::from_micros(100) {
        std::thread::sleep(wait);
    } else {
        let until = Instant::now() + wait;
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    }
}

/// What the writer writes in `round`: as long as [`BASE`], so an in-place write replaces
/// every byte.
fn writer_bytes(round: u64) -> Vec<u8> {
    format!("gen-{round:06}\n").into_bytes()
}

/// Either the delete removed the bytes it checked, or it was `Stale` and the writer's file
/// is in place; never a temporary left.
fn check_race_round(
    tree: &Tree,
    writer: Writer,
    round: u64,
    outcome: &Result<(), PublishError>,
    held: &std::fs::File,
    wrote: bool,
    tally: &mut Tally,
) {
    let theirs = writer_bytes(round);
    let mut checked = vec![0u8; 64];
    let n = held
        .read_at(&mut checked, 0)
        .expect("read the checked inode");
    checked.truncate(n);
    let held_meta = held.metadata().expect("fstat");
    let at_name = std::fs::read(tree.at("f.txt")).ok();
    match (writer, outcome) {
        (Writer::InPlace, Ok(())) => {
            assert_eq!(at_name, None, "round {round}");
            assert_eq!(held_meta.nlink(), 0, "round {round}");
            let expected = if wrote { &theirs[..] } else { BASE };
            assert_eq!(checked, expected, "round {round}");
            tally.deleted += 1;
            if wrote {
                tally.lost += 1;
            } else {
                tally.missed += 1;
            }
        }
        (Writer::InPlace, Err(PublishError::Stale(_))) => {
            assert!(wrote, "round {round}: stale without a write");
            assert_eq!(at_name.as_deref(), Some(&theirs[..]), "round {round}");
            let now = std::fs::symlink_metadata(tree.at("f.txt")).expect("lstat");
            assert_eq!(
                (now.ino(), now.nlink(), now.mode()),
                (held_meta.ino(), 1, held_meta.mode()),
                "round {round}: the same file, put back"
            );
            tally.stale += 1;
        }
        (Writer::RenameOver, Ok(()) | Err(PublishError::Stale(_))) => {
            assert_eq!(
                at_name.as_deref(),
                Some(&theirs[..]),
                "round {round}: the writer's file survives"
            );
            assert_eq!(
                checked, BASE,
                "round {round}: the checked inode was not written"
            );
            assert_eq!(
                held_meta.nlink(),
                0,
                "round {round}: the checked inode is gone"
            );
            if outcome.is_ok() {
                tally.deleted += 1;
            } else {
                tally.stale += 1;
            }
        }
        (_, Err(e)) => panic!("round {round}: {e:?}"),
    }
    let expected: &[&str] = if at_name.is_some() { &["f.txt"] } else { &[] };
    assert_eq!(names(&tree.at("")), expected, "round {round}: no temporary");
}

#[test]
fn delete_racing_an_in_place_writer_deletes_only_what_it_checked_or_is_stale() {
    let tally = race(Writer::InPlace);
    eprintln!("delete vs in-place writer: {tally:?}");
    assert!(
        tally.deleted > 0 && tally.stale > 0,
        "not exercised: {tally:?}"
    );
}

#[test]
fn delete_racing_a_rename_over_writer_never_removes_the_writers_file() {
    let tally = race(Writer::RenameOver);
    eprintln!("delete vs rename-over writer: {tally:?}");
    assert!(
        tally.deleted > 0 && tally.stale > 0,
        "not exercised: {tally:?}"
    );
}

const CHILD_BYTES: &[u8] = b"victim\n";

/// The child side of the fallback test, selected by `SATYRN_TEST_DELETE_ROOT`: deletes
/// `d/victim.txt` as if it had been shown [`CHILD_BYTES`] and reports. Run directly, it
/// deletes such a file in a fresh tree and checks it is gone.
#[test]
fn child_process_entry() {
    let base = Revision::of(CHILD_BYTES);
    let Some(root) = std::env::var_os("SATYRN_TEST_DELETE_ROOT") else {
        let tree = Tree::new();
        tree.write("d/victim.txt", CHILD_BYTES);
        delete(&tree.fd, "d/victim.txt", &base).expect("delete");
        assert_eq!(names(&tree.at("d")), Vec::<String>::new());
        return;
    };
    let fd: OwnedFd = open_dir(std::path::Path::new(&root));
    report(outcome_word(&delete(&fd, "d/victim.txt", &base)));
}
