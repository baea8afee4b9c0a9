//! `publish::create` on the real file system: what it creates, what it refuses with the
//! tree unchanged, and its races (threads, processes, a parent swapped for a symlink).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Instant;

use rustix::fs::RenameFlags;

use super::tests_support::{
    SelfChild, Tree, assert_sweeps_only_what_the_journal_proves, mode_of, names, open_dir,
    outcome_word, report, wait_for_go,
};
use super::{PublishError, create};

const CHILD: &str = "tests_create::child_process_entry";

#[test]
fn creates_the_file_and_its_parents_with_mode_0644_and_no_temporary() {
    let tree = Tree::new();
    create(&tree.fd, "top.txt", b"top\n").expect("create at the root");
    create(&tree.fd, "a/b/c.txt", b"nested\n").expect("create with parents");
    create(&tree.fd, "a/b/empty", b"").expect("create an empty file");
    assert_eq!(std::fs::read(tree.at("top.txt")).expect("read"), b"top\n");
    assert_eq!(
        std::fs::read(tree.at("a/b/c.txt")).expect("read"),
        b"nested\n"
    );
    assert_eq!(std::fs::read(tree.at("a/b/empty")).expect("read"), b"");
    for file in ["top.txt", "a/b/c.txt", "a/b/empty"] {
        assert_eq!(mode_of(&tree.at(file)), 0o644, "{file}");
    }
    assert_eq!(names(&tree.at("")), ["a", "top.txt"]);
    assert_eq!(names(&tree.at("a")), ["b"]);
    assert_eq!(names(&tree.at("a/b")), ["c.txt", "empty"]);
    assert_eq!(names(&tree.outside()), ["kept.txt"]);
}

/// A name of `NAME_MAX` (255) bytes is created; one byte more is refused, nothing made.
#[test]
fn creates_a_name_of_255_bytes_and_refuses_256() {
    let tree = Tree::new();
    let longest = "é".repeat(127) + "x";
    assert_eq!(longest.len(), 255);
    create(&tree.fd, &format!("d/{longest}"), b"long\n").expect("255 bytes");
    assert_eq!(
        std::fs::read(tree.at(&format!("d/{longest}"))).expect("read"),
        b"long\n"
    );
    let before = tree.snapshot();
    let err = create(&tree.fd, &format!("d/{longest}y"), b"long\n").expect_err("256 bytes");
    assert!(err.failure_message().is_some(), "{err:?}");
    assert_eq!(tree.snapshot(), before);
    assert_eq!(names(&tree.at("d")), [longest]);
}

/// The file is 0o644 whatever the umask (0 and 077, set in a child process: the umask is
/// process-wide); the directories are 0o755 less the umask, as `mkdir` makes them.
#[test]
fn the_file_mode_is_0644_under_any_umask() {
    for (umask, dir_mode) in [(0o000, 0o755), (0o077, 0o700), (0o022, 0o755)] {
        let tree = Tree::new();
        let outcome = run_child_once(&tree, &[("SATYRN_TEST_CREATE_UMASK", format!("{umask:o}"))]);
        assert_eq!(outcome, "ok", "umask {umask:o}");
        assert_eq!(
            std::fs::read(tree.at(CHILD_PATH)).expect("read"),
            b"child\n"
        );
        assert_eq!(mode_of(&tree.at(CHILD_PATH)), 0o644, "umask {umask:o}");
        assert_eq!(mode_of(&tree.at("new")), dir_mode, "umask {umask:o}");
        assert_eq!(mode_of(&tree.at("new/dir")), dir_mode, "umask {umask:o}");
    }
}

/// Without `O_TMPFILE` (forced in a child): a named temporary, renamed without replacing
/// (`=1`) or, without `RENAME_NOREPLACE` either (`=2`), linked then unlinked; a second
/// create of the same path is `Exists` and keeps the first one's bytes; no temporary is
/// left either way.
#[test]
fn the_named_temporary_fallbacks_create_once_and_leave_nothing() {
    for level in ["1", "2"] {
        let tree = Tree::new();
        let fallback = [("SATYRN_TEST_PUBLISH_FALLBACK", level.to_string())];
        assert_eq!(run_child_once(&tree, &fallback), "ok", "fallback {level}");
        assert_eq!(
            std::fs::read(tree.at(CHILD_PATH)).expect("read"),
            b"child\n"
        );
        assert_eq!(mode_of(&tree.at(CHILD_PATH)), 0o644);
        let before = tree.snapshot();
        assert_eq!(
            run_child_once(&tree, &fallback),
            "exists",
            "fallback {level}"
        );
        assert_eq!(tree.snapshot(), before, "fallback {level}");
        assert_eq!(names(&tree.at("new/dir")), ["file.txt"], "fallback {level}");
        // A 255-byte name: the named temporary uses only a prefix of it.
        let longest = "é".repeat(127) + "x";
        let long = [
            fallback[0].clone(),
            ("SATYRN_TEST_CREATE_PATH", format!("new/dir/{longest}")),
        ];
        assert_eq!(run_child_once(&tree, &long), "ok", "fallback {level}");
        assert_eq!(
            names(&tree.at("new/dir")),
            ["file.txt".to_string(), longest]
        );
    }
}

/// A write that fails for real (a file-size limit, `EFBIG`, set in a child) leaves no file
/// and no temporary, anonymous or named; the directories made on the way stay.
#[test]
fn a_failed_write_leaves_no_file_no_temporary_and_no_new_directory() {
    for level in ["0", "1"] {
        let tree = Tree::new();
        let envs = [
            ("SATYRN_TEST_CREATE_FSIZE", "3".to_string()),
            ("SATYRN_TEST_PUBLISH_FALLBACK", level.to_string()),
        ];
        assert_eq!(run_child_once(&tree, &envs), "failed", "fallback {level}");
        // The directories the failed create made are gone again.
        assert_eq!(
            names(&tree.at("")),
            Vec::<String>::new(),
            "fallback {level}"
        );
        assert_eq!(names(&tree.outside()), ["kept.txt"]);
    }
}

/// A create first removes what the worktree's journal proves a killed publish left, and
/// nothing on its name alone: a dead pid's name with no entry, a recorded name now holding
/// another inode, and a live writer's are kept, byte for byte.
#[test]
fn a_create_sweeps_only_what_the_journal_proves() {
    let tree = Tree::new();
    std::fs::create_dir(tree.at("d")).expect("mkdir");
    assert_sweeps_only_what_the_journal_proves(&tree, Some("new.txt"), || {
        create(&tree.fd, "d/new.txt", b"new\n").expect("create");
    });
}

#[test]
fn refuses_an_existing_path_of_any_kind_and_changes_nothing() {
    let tree = Tree::new();
    tree.write("file.txt", b"mine\n");
    tree.write("dir/inner.txt", b"inner\n");
    std::os::unix::fs::symlink("file.txt", tree.at("link")).expect("symlink");
    std::os::unix::fs::symlink(tree.outside().join("kept.txt"), tree.at("out-link"))
        .expect("symlink");
    std::os::unix::fs::symlink("nowhere.txt", tree.at("dangling")).expect("symlink");
    std::os::unix::fs::symlink(tree.outside().join("absent"), tree.at("dangling-out"))
        .expect("symlink");
    let before = tree.snapshot();
    for path in [
        "file.txt",
        "dir",
        "link",
        "out-link",
        "dangling",
        "dangling-out",
    ] {
        let err = create(&tree.fd, path, b"owned\n").expect_err(path);
        assert!(matches!(err, PublishError::Exists(_)), "{path}: {err:?}");
        assert_eq!(tree.snapshot(), before, "{path}");
    }
    assert!(
        !tree.at("nowhere.txt").exists(),
        "a dangling link is never followed"
    );
    create(&tree.fd, "dir/sibling.txt", b"new\n").expect("a sibling is created");
    assert_eq!(names(&tree.at("dir")), ["inner.txt", "sibling.txt"]);
}

#[test]
fn refuses_a_parent_that_is_a_symlink_or_a_file_and_writes_nothing_anywhere() {
    let tree = Tree::new();
    tree.write("real/kept.txt", b"real\n");
    tree.write("plain.txt", b"plain\n");
    std::os::unix::fs::symlink("real", tree.at("inside")).expect("symlink");
    std::os::unix::fs::symlink(tree.outside(), tree.at("outside")).expect("symlink");
    let before = tree.snapshot();
    for path in [
        "inside/new.txt",
        "outside/new.txt",
        "outside/deeper/new.txt",
        "plain.txt/new.txt",
        "real/kept.txt/new.txt",
    ] {
        let err = create(&tree.fd, path, b"owned\n").expect_err(path);
        assert!(err.failure_message().is_some(), "{path}: {err:?}");
        assert_eq!(tree.snapshot(), before, "{path}");
    }
    assert_eq!(names(&tree.outside()), ["kept.txt"]);
    create(&tree.fd, "real/new.txt", b"new\n").expect("the real directory takes it");
    assert_eq!(names(&tree.at("real")), ["kept.txt", "new.txt"]);
}

#[test]
fn refuses_git_and_unsafe_paths_and_changes_nothing() {
    let tree = Tree::new();
    tree.write(".git/config", b"config\n");
    tree.write("a/keep.txt", b"keep\n");
    let before = tree.snapshot();
    for path in [
        ".git/new",
        ".git/hooks/pre-commit",
        "a/.GIT/new",
        ".git",
        "../outside/new.txt",
        "/tmp/satyrn-create-absolute",
        "./a/new.txt",
        "a//new.txt",
        "a/../new.txt",
        "a/new.txt/",
        "",
    ] {
        let err = create(&tree.fd, path, b"owned\n").expect_err(path);
        assert!(err.failure_message().is_some(), "{path}: {err:?}");
        assert_eq!(tree.snapshot(), before, "{path}");
    }
    assert!(!std::path::Path::new("/tmp/satyrn-create-absolute").exists());
    create(&tree.fd, "a/new.txt", b"new\n").expect("a plain path is created");
    assert_eq!(names(&tree.at("a")), ["keep.txt", "new.txt"]);
}

const ROUNDS: usize = 100;
const RACERS: usize = 8;

/// What racer `id` writes in `round`: different bytes and lengths per racer.
fn racer_content(id: usize, round: usize) -> Vec<u8> {
    format!("racer {id} round {round}\n{}", "x".repeat(id * 700)).into_bytes()
}

fn racer_path(round: usize) -> String {
    format!("r{round}/sub/f.txt")
}

/// Checks one round: exactly one `ok`, the others `exists`, the winner's bytes, nothing
/// else in the directory.
fn check_round(tree: &Tree, round: usize, outcomes: &[String]) {
    let winners: Vec<usize> = (0..outcomes.len())
        .filter(|i| outcomes[*i] == "ok")
        .collect();
    assert_eq!(winners.len(), 1, "round {round}: {outcomes:?}");
    assert!(
        outcomes.iter().all(|o| o == "ok" || o == "exists"),
        "round {round}: {outcomes:?}"
    );
    let path = tree.at(&racer_path(round));
    assert_eq!(
        std::fs::read(&path).expect("read"),
        racer_content(winners[0], round),
        "round {round}"
    );
    assert_eq!(mode_of(&path), 0o644);
    assert_eq!(names(&tree.at(&format!("r{round}/sub"))), ["f.txt"]);
}

#[test]
fn eight_threads_creating_one_path_give_exactly_one_winner_per_round() {
    let tree = Arc::new(Tree::new());
    let barrier = Arc::new(Barrier::new(RACERS));
    let racers: Vec<_> = (0..RACERS)
        .map(|id| {
            let (tree, barrier) = (Arc::clone(&tree), Arc::clone(&barrier));
            std::thread::spawn(move || {
                (0..ROUNDS)
                    .map(|round| {
                        barrier.wait();
                        let outcome =
                            create(&tree.fd, &racer_path(round), &racer_content(id, round));
                        outcome_word(&outcome).to_owned()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let outcomes: Vec<Vec<String>> = racers
        .into_iter()
        .map(|r| r.join().expect("racer"))
        .collect();
    for round in 0..ROUNDS {
        let per_round: Vec<String> = outcomes.iter().map(|o| o[round].clone()).collect();
        check_round(&tree, round, &per_round);
    }
    assert_eq!(names(&tree.at("")).len(), ROUNDS);
}

#[test]
fn eight_processes_creating_one_path_give_exactly_one_winner_per_round() {
    let tree = Tree::new();
    let root = tree.at("").display().to_string();
    let mut children: Vec<SelfChild> = (0..RACERS)
        .map(|id| {
            SelfChild::spawn(
                CHILD,
                &[
                    ("SATYRN_TEST_CREATE_ROOT", root.clone()),
                    ("SATYRN_TEST_CREATE_RACER", id.to_string()),
                    ("SATYRN_TEST_CREATE_ROUNDS", ROUNDS.to_string()),
                ],
            )
        })
        .collect();
    for round in 0..ROUNDS {
        for child in &mut children {
            child.go();
        }
        let outcomes: Vec<String> = children.iter_mut().map(SelfChild::report).collect();
        check_round(&tree, round, &outcomes);
    }
    for child in children {
        child.finish();
    }
}

/// A thread swaps the parent directory `p` with a symlink to the outside directory (one
/// atomic exchange of the two names, in a loop) while creates run beneath `p` for two
/// seconds: every create lands in the real directory or is refused, and nothing is ever
/// written outside the root.
#[test]
fn a_parent_swapped_for_an_outside_symlink_never_lets_a_create_escape() {
    let tree = Arc::new(Tree::new());
    std::fs::create_dir(tree.at("p")).expect("mkdir");
    std::os::unix::fs::symlink(tree.outside(), tree.at("p.swap")).expect("symlink");
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let swapper = {
        let (tree, stop, swaps) = (Arc::clone(&tree), Arc::clone(&stop), Arc::clone(&swaps));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                rustix::fs::renameat_with(&tree.fd, "p", &tree.fd, "p.swap", RenameFlags::EXCHANGE)
                    .expect("exchange");
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let (mut created, mut refused) = (Vec::new(), 0u64);
    // 20,000 creates: 69,717 in 2 s published 301 and met 69,416 symlinked parents.
    let mut i = 0u64;
    while i < 20_000 {
        let path = if i.is_multiple_of(2) {
            format!("p/f{i}")
        } else {
            format!("p/q{i}/f")
        };
        match create(&tree.fd, &path, b"inside\n") {
            Ok(()) => created.push(path),
            Err(e)
                if e.failure_message()
                    .is_some_and(|m| m.contains("`p` is not a directory")) =>
            {
                refused += 1;
            }
            Err(e) => panic!("{path}: {e:?}"),
        }
        i += 1;
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().expect("swapper");
    let swaps = swaps.load(Ordering::Relaxed);
    eprintln!(
        "parent swap race: {i} creates, {} created, {refused} refused, {swaps} swaps",
        created.len()
    );
    assert_eq!(names(&tree.outside()), ["kept.txt"], "nothing escaped");
    let real = if tree.at("p").is_symlink() {
        "p.swap"
    } else {
        "p"
    };
    let mut expected: Vec<String> = created
        .iter()
        .map(|p| {
            p["p/".len()..]
                .split('/')
                .next()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    // A refused `p/qN/f` may have made `qN` (created directories may stay).
    let mut found = names(&tree.at(real));
    found.retain(|n| !n.starts_with('q') || expected.contains(n));
    expected.sort();
    assert_eq!(found, expected, "every created file, and no temporary");
    for path in &created {
        let rel = path.replacen("p/", &format!("{real}/"), 1);
        assert_eq!(std::fs::read(tree.at(&rel)).expect("read"), b"inside\n");
    }
    assert!(
        swaps > 0 && !created.is_empty() && refused > 0,
        "the race was not exercised: {swaps} swaps, {} created, {refused} refused",
        created.len()
    );
}

/// `SIGTERM` sent to a child at moments spread over a 16 MiB create, 16 times: the child
/// ends by the signal, and the file is either absent (the signal came before the hold) or
/// complete with mode 0o644 (the signal was held until the create was done: the child then
/// died before it could report), never partial, and no temporary is ever left.
#[test]
fn sigterm_during_a_create_leaves_the_file_absent_or_complete_and_no_temporary() {
    const SIZE: usize = 16 << 20;
    const ROUNDS_SIGNALLED: u32 = 16;
    let expected = big_content(SIZE);
    let spawn = |tree: &Tree| {
        let mut child = SelfChild::spawn(
            CHILD,
            &[
                ("SATYRN_TEST_CREATE_ROOT", tree.at("").display().to_string()),
                ("SATYRN_TEST_CREATE_BIG", SIZE.to_string()),
            ],
        );
        assert_eq!(child.report(), "ready");
        child
    };
    // How long one create takes here, unsignalled: the signals are spread over it.
    let timed = Tree::new();
    let mut child = spawn(&timed);
    let started = Instant::now();
    assert_eq!(child.report(), "ok");
    let duration = started.elapsed();
    child.finish();
    let (mut absent, mut held, mut after) = (0u32, 0u32, 0u32);
    for round in 0..ROUNDS_SIGNALLED {
        let tree = Tree::new();
        let mut child = spawn(&tree);
        std::thread::sleep(duration * round / ROUNDS_SIGNALLED);
        child.signal(rustix::process::Signal::TERM);
        let reported = child.try_report();
        let status = child.wait();
        // The signal may even come before the directories are made.
        let dir = if tree.at("new/dir").exists() {
            names(&tree.at("new/dir"))
        } else {
            Vec::new()
        };
        match std::fs::read(tree.at(CHILD_PATH)) {
            Ok(bytes) => {
                assert!(bytes == expected, "round {round}: a partial file");
                assert_eq!(mode_of(&tree.at(CHILD_PATH)), 0o644);
                if reported.is_some() {
                    after += 1;
                } else {
                    held += 1;
                }
            }
            Err(e) => {
                assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "round {round}");
                assert_eq!(reported, None, "round {round}");
                absent += 1;
            }
        }
        assert!(
            dir.is_empty() || dir == ["file.txt"],
            "round {round}: {dir:?}"
        );
        assert!(
            std::os::unix::process::ExitStatusExt::signal(&status).is_some() || status.success(),
            "round {round}: {status}"
        );
    }
    eprintln!(
        "SIGTERM during create: {absent} absent, {held} held until complete, {after} after (a create took {duration:?})"
    );
    assert!(
        held > 0,
        "no signal landed in a create: {absent} absent, {after} after"
    );
}

fn big_content(size: usize) -> Vec<u8> {
    b"satyrn\n".repeat(size / 7 + 1)[..size].to_vec()
}

/// The path every one-shot child creates.
const CHILD_PATH: &str = "new/dir/file.txt";

/// Runs one child that creates [`CHILD_PATH`] in `tree`; returns its outcome word.
fn run_child_once(tree: &Tree, envs: &[(&str, String)]) -> String {
    let mut all = vec![("SATYRN_TEST_CREATE_ROOT", tree.at("").display().to_string())];
    all.extend(envs.iter().cloned());
    let mut child = SelfChild::spawn(CHILD, &all);
    let outcome = child.report();
    child.finish();
    outcome
}

/// The child side of the tests above, selected by `SATYRN_TEST_CREATE_ROOT`: with
/// `SATYRN_TEST_CREATE_ROUNDS`, races (one create per go-ahead on stdin, reporting each
/// outcome); else sets the file-size limit `SATYRN_TEST_CREATE_FSIZE` if given; with
/// `SATYRN_TEST_CREATE_BIG`, reports `ready` and creates that many bytes; else sets the
/// umask `SATYRN_TEST_CREATE_UMASK` if given and creates `SATYRN_TEST_CREATE_PATH` (by
/// default [`CHILD_PATH`]); then reports the outcome. Run directly (no variable), it
/// creates [`CHILD_PATH`] in a fresh tree and checks it.
#[test]
fn child_process_entry() {
    let Some(root) = std::env::var_os("SATYRN_TEST_CREATE_ROOT") else {
        let tree = Tree::new();
        create(&tree.fd, CHILD_PATH, b"child\n").expect("create");
        assert_eq!(
            std::fs::read(tree.at(CHILD_PATH)).expect("read"),
            b"child\n"
        );
        assert_eq!(mode_of(&tree.at(CHILD_PATH)), 0o644);
        return;
    };
    let fd = open_dir(std::path::Path::new(&root));
    let env_number = |name: &str, radix: u32| {
        std::env::var(name)
            .ok()
            .map(|v| usize::from_str_radix(&v, radix).expect(name))
    };
    if let Some(rounds) = env_number("SATYRN_TEST_CREATE_ROUNDS", 10) {
        let id = env_number("SATYRN_TEST_CREATE_RACER", 10).expect("racer id");
        for round in 0..rounds {
            assert!(wait_for_go(), "the parent went away");
            let outcome = create(&fd, &racer_path(round), &racer_content(id, round));
            report(outcome_word(&outcome));
        }
        return;
    }
    if let Some(limit) = env_number("SATYRN_TEST_CREATE_FSIZE", 10) {
        let limit = u64::try_from(limit).expect("limit");
        rustix::process::setrlimit(
            rustix::process::Resource::Fsize,
            rustix::process::Rlimit {
                current: Some(limit),
                maximum: Some(limit),
            },
        )
        .expect("setrlimit");
    }
    if let Some(size) = env_number("SATYRN_TEST_CREATE_BIG", 10) {
        let content = big_content(size);
        report("ready");
        report(outcome_word(&create(&fd, CHILD_PATH, &content)));
        return;
    }
    if let Some(umask) = env_number("SATYRN_TEST_CREATE_UMASK", 8) {
        let umask = u32::try_from(umask).expect("umask");
        rustix::process::umask(rustix::fs::Mode::from_raw_mode(umask));
    }
    let path = std::env::var("SATYRN_TEST_CREATE_PATH").unwrap_or_else(|_| CHILD_PATH.into());
    report(outcome_word(&create(&fd, &path, b"child\n")));
}
