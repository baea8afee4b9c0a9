//! The component's `revisions` (the revision map in one call) against `revision` (one path
//! per call), through the real engine on the real file system: path by path the same
//! result on a tree with every kind of entry, and only whole versions of a file that is
//! replaced while the map is computed.

use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use satyrn_engine::{Loaded, Mutator, RevisionError};
use satyrn_mutator_core::gates::MAX_TEXT_FILE_BYTES;

use crate::support::{Repo, Snapshot, sha256_hex, snapshot};

fn open_dir(path: &std::path::Path) -> OwnedFd {
    OwnedFd::from(std::fs::File::open(path).expect("open directory"))
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_string()).collect()
}

/// Every kind of path `revision` distinguishes, in an order that leaves and re-enters
/// directories (the shared directory chain must not leak from one path to the next).
const PATHS: &[&str] = &[
    "src/deep/c.rs",
    "a.txt",
    "src/b.txt",
    "src/deep/c.rs",
    "src/deep",
    "src/deep/missing.rs",
    "src/missing/x.rs",
    "a.txt/below",
    "link.txt",
    "dangling.txt",
    "alias/b.txt",
    "alias/deep/c.rs",
    "pipe.txt",
    "unreadable.txt",
    "big.txt",
    "limit.txt",
    "linked-1.txt",
    "linked-2.txt",
    "secret/key.txt",
    "notes.md",
    ".git/HEAD",
    "src/.GIT/x",
    "../a.txt",
    "/a.txt",
    "a//b",
    "",
    "src/b.txt",
    "zz/last.txt",
];

/// The tree: regular files (empty, at the size limit), a directory, symlinks (leaf,
/// dangling, intermediate), a FIFO, a file with no permissions, one over the size limit,
/// two hard links, a private and an undeclared file.
fn tree() -> Repo {
    let limit = vec![b'l'; usize::try_from(MAX_TEXT_FILE_BYTES).expect("fits")];
    let big = vec![b'b'; limit.len() + 1];
    let repo = Repo::with_files(&[
        ("a.txt", b"hello\n"),
        ("src/b.txt", b""),
        ("src/deep/c.rs", b"fn main() {}\n"),
        ("secret/key.txt", b"k\n"),
        ("notes.md", b"n\n"),
        ("zz/last.txt", b"last\n"),
        ("unreadable.txt", b"u\n"),
        ("linked-1.txt", b"two names\n"),
    ]);
    std::fs::write(repo.file("big.txt"), &big).expect("big");
    std::fs::write(repo.file("limit.txt"), &limit).expect("limit");
    symlink("a.txt", repo.file("link.txt")).expect("symlink");
    symlink("nowhere.txt", repo.file("dangling.txt")).expect("symlink");
    symlink("src", repo.file("alias")).expect("symlink");
    std::fs::hard_link(repo.file("linked-1.txt"), repo.file("linked-2.txt")).expect("link");
    crate::support::mkfifo(&repo.file("pipe.txt"));
    std::fs::set_permissions(
        repo.file("unreadable.txt"),
        std::fs::Permissions::from_mode(0o000),
    )
    .expect("chmod");
    repo
}

fn snapshots(repo: &Repo) -> BTreeMap<&'static str, Snapshot> {
    PATHS
        .iter()
        .filter(|p| std::fs::symlink_metadata(repo.file(p)).is_ok() && !p.starts_with('/'))
        .filter(|p| !p.is_empty() && !p.contains("..") && **p != "unreadable.txt")
        .map(|p| (*p, snapshot(&repo.file(p))))
        .collect()
}

/// Runs `call` on a fresh instance over `repo` on another thread, failing the test if it
/// does not return within 60 s (a FIFO opened for reading would block forever).
fn within_deadline<T: Send + 'static>(
    repo: &Repo,
    call: impl FnOnce(&mut Mutator) -> T + Send + 'static,
) -> T {
    let dir = open_dir(repo.path());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut mutator = Loaded::new()
            .expect("load")
            .instantiate(&dir)
            .expect("instantiate");
        let _ = tx.send(call(&mut mutator));
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the component answered (it did not block on the FIFO)")
}

#[test]
fn revisions_gives_what_revision_gives_for_every_kind_of_path() {
    let repo = tree();
    let before = snapshots(&repo);
    let writable = strings(&["*"]);
    let private = strings(&["secret"]);
    let declared = strings(&["*.txt", "*.rs", "src/*", "a.txt/*", "alias/*", "src/deep"]);
    for (writable, label) in [(&writable, "everything"), (&declared, "some patterns")] {
        let (w, p) = (writable.clone(), private.clone());
        let (one_by_one, batched) = within_deadline(&repo, move |m| {
            let one_by_one: Vec<String> = PATHS
                .iter()
                .map(|path| format!("{:?}", m.revision(path, &w, &p).expect("no trap")))
                .collect();
            let batched: Vec<String> = m
                .revisions(PATHS, &w, &p)
                .expect("no trap")
                .iter()
                .map(|r| format!("{r:?}"))
                .collect();
            (one_by_one, batched)
        });
        assert_eq!(batched.len(), PATHS.len());
        for ((path, old), new) in PATHS.iter().zip(&one_by_one).zip(&batched) {
            assert_eq!(new, old, "{label}: `{path}`");
        }
    }
    // And what that common answer is, so two equally wrong answers cannot pass.
    let (w, p) = (writable.clone(), private.clone());
    let results = within_deadline(&repo, move |m| m.revisions(PATHS, &w, &p).expect("no trap"));
    let by_path: BTreeMap<&str, &Result<String, RevisionError>> =
        PATHS.iter().copied().zip(&results).collect();
    let ok = |path: &str| by_path[path].as_ref().ok().cloned();
    assert_eq!(ok("a.txt"), Some(sha256_hex(b"hello\n")));
    assert_eq!(ok("src/b.txt"), Some(sha256_hex(b"")));
    assert_eq!(ok("src/deep/c.rs"), Some(sha256_hex(b"fn main() {}\n")));
    assert_eq!(ok("zz/last.txt"), Some(sha256_hex(b"last\n")));
    let limit = vec![b'l'; usize::try_from(MAX_TEXT_FILE_BYTES).expect("fits")];
    assert_eq!(ok("limit.txt"), Some(sha256_hex(&limit)));
    // The process may bypass permissions (root); whatever it is, the two paths agreed above.
    let readable = std::fs::File::open(repo.file("unreadable.txt")).is_ok();
    assert_eq!(ok("unreadable.txt").is_some(), readable);
    let message = |path: &str| match by_path[path] {
        Err(RevisionError::NotEditable(m)) => m.clone(),
        other => panic!("`{path}`: {other:?}"),
    };
    for (path, says) in [
        ("src/deep", "is a directory"),
        ("src/deep/missing.rs", "does not exist"),
        ("src/missing/x.rs", "does not exist"),
        ("a.txt/below", "is not a directory"),
        ("link.txt", "symbolic link"),
        ("dangling.txt", "symbolic link"),
        ("alias/b.txt", "symbolic link"),
        ("alias/deep/c.rs", "symbolic link"),
        ("pipe.txt", "is not a regular file"),
        ("big.txt", "over the"),
        ("linked-1.txt", "hard links"),
        ("linked-2.txt", "hard links"),
    ] {
        assert!(message(path).contains(says), "`{path}`: {}", message(path));
    }
    assert!(matches!(
        by_path["secret/key.txt"],
        Err(RevisionError::Private)
    ));
    assert!(matches!(
        by_path[".git/HEAD"],
        Err(RevisionError::Undeclared)
    ));
    assert!(matches!(
        by_path["src/.GIT/x"],
        Err(RevisionError::Undeclared)
    ));
    for path in ["../a.txt", "/a.txt", "a//b", ""] {
        assert!(
            matches!(by_path[path], Err(RevisionError::InvalidRequest(_))),
            "`{path}`: {:?}",
            by_path[path]
        );
    }
    let undeclared = within_deadline(&repo, |m| {
        m.revisions(&["notes.md", "a.txt"], &strings(&["*.txt"]), &[])
            .expect("no trap")
    });
    assert!(matches!(undeclared[0], Err(RevisionError::Undeclared)));
    assert_eq!(undeclared[1].as_ref().ok(), Some(&sha256_hex(b"hello\n")));
    // Computing revisions changes nothing.
    assert_eq!(snapshots(&repo), before);
}

#[test]
fn revisions_of_no_paths_is_an_empty_list() {
    let repo = Repo::with_files(&[("a.txt", b"hello\n")]);
    let empty = within_deadline(&repo, |m| {
        m.revisions(&[], &strings(&["*"]), &[]).expect("no trap")
    });
    assert!(empty.is_empty());
    let one = within_deadline(&repo, |m| {
        m.revisions(&["a.txt"], &strings(&["*"]), &[])
            .expect("no trap")
    });
    assert_eq!(one[0].as_ref().ok(), Some(&sha256_hex(b"hello\n")));
}

/// A writer replaces `d/target.txt` by renaming whole versions over it, as fast as it can,
/// while both calls hash it again and again for two seconds each: every revision either
/// call gives is the hash of one whole version, never of a mix, and a file displaced right
/// after it was opened (no link left) is refused rather than hashed.
#[test]
fn a_file_replaced_while_hashed_gives_one_whole_version_or_a_refusal() {
    let one: Vec<u8> = b"version one\n".repeat(40_000);
    let two: Vec<u8> = b"version two, longer\n".repeat(30_000);
    let repo = Repo::with_files(&[("d/target.txt", &one), ("d/other.txt", b"o\n")]);
    let allowed = [sha256_hex(&one), sha256_hex(&two)];
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let writer = {
        let (dir, stop) = (repo.file("d"), stop.clone());
        let (one, two) = (one.clone(), two.clone());
        std::thread::spawn(move || {
            let mut renames = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let next = if renames.is_multiple_of(2) {
                    &two
                } else {
                    &one
                };
                std::fs::write(dir.join(".next"), next).expect("write");
                std::fs::rename(dir.join(".next"), dir.join("target.txt")).expect("rename");
                renames += 1;
            }
            renames
        })
    };
    let writable = strings(&["*"]);
    let counts = within_deadline(&repo, move |m| {
        let mut counts = BTreeMap::<(&str, String), u32>::new();
        for batched in [false, true] {
            // 300 calls of each kind: 2 s gave about 480 of each against 3,595 renames.
            for _ in 0..300 {
                let result = if batched {
                    m.revisions(&["d/target.txt"], &writable, &[])
                        .expect("no trap")
                        .remove(0)
                } else {
                    m.revision("d/target.txt", &writable, &[]).expect("no trap")
                };
                let outcome = match result {
                    Ok(sha) => sha,
                    Err(RevisionError::NotEditable(m)) if m.contains("hard links") => {
                        "displaced".to_string()
                    }
                    Err(RevisionError::NotEditable(m)) if m.contains("was replaced") => {
                        "swapped before the open".to_string()
                    }
                    Err(other) => panic!("unexpected: {other:?}"),
                };
                *counts
                    .entry((if batched { "revisions" } else { "revision" }, outcome))
                    .or_default() += 1;
            }
        }
        counts
    });
    stop.store(true, Ordering::Relaxed);
    let renames = writer.join().expect("writer");
    eprintln!("{renames} renames; outcomes: {counts:?}");
    assert!(renames > 10, "the writer ran ({renames} renames)");
    for ((call, outcome), n) in &counts {
        assert!(
            allowed.contains(outcome)
                || outcome == "displaced"
                || outcome == "swapped before the open",
            "{call}: {n} × {outcome}"
        );
    }
    for call in ["revision", "revisions"] {
        let hashed: u32 = counts
            .iter()
            .filter(|((c, o), _)| *c == call && allowed.contains(o))
            .map(|(_, n)| n)
            .sum();
        assert!(
            hashed > 0,
            "{call} hashed a whole version at least once: {counts:?}"
        );
    }
}
