//! Change-set records as a hostile repository or an agent's shell could leave them in the
//! worktree's git directory: recovery (run by the next call that takes the worktree lock)
//! acts only on a record a publish of this worktree could have written, within the contract.
//! Every forged record below names the real identities of its targets (a forger can stat
//! them): each is kept untouched, every target is unchanged (bytes, mode, inode), and the call
//! itself succeeds beside them. A record cut short while it was written is removed; a whole
//! one that is not a record is kept.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde_json::{Value, json};

use crate::protocol_common::Fixture;
use crate::support::{protocol_raw, snapshot};

fn id(path: &Path) -> Value {
    let meta = std::fs::symlink_metadata(path).expect("stat");
    json!({"ino": meta.ino(), "born": null})
}

fn records(fx: &Fixture) -> std::path::PathBuf {
    fx.repo.path().join(".git/satyrn-change-sets")
}

fn replace(fx: &Fixture, n: u32) -> Value {
    let request = json!({"version": 1, "operation": "replace", "repo": fx.repo.path(), "contract": fx.contract.path,
        "path": "src/a.txt", "expected_sha256": fx.sha("src/a.txt"), "old_text": format!("v{n}"), "new_text": format!("v{}", n + 1)});
    protocol_raw(request.to_string().as_bytes()).response
}

#[test]
fn a_forged_record_touches_nothing_and_a_torn_one_is_removed() {
    let fx = Fixture::new(
        &[
            ("src/a.txt", b"v0\n"),
            ("README.md", b"readme\n"),
            (".env", b"SECRET=1\n"),
            ("src/b.txt", b"bee\n"),
        ],
        &["src/*"],
    );
    let outside = tempfile::tempdir().expect("tempdir");
    let victim = outside.path().join("victim.txt");
    std::fs::write(&victim, "outside\n").expect("write");
    std::fs::create_dir(outside.path().join("hooks")).expect("mkdir");
    std::fs::create_dir_all(records(&fx)).expect("mkdir");
    let root = fx.repo.path();
    let dev = std::fs::metadata(root).expect("stat").dev();
    let root_id = id(root);
    let record = |entries: Value, made: Value| json!({"version": 1, "dev": dev, "root": root_id, "entries": entries, "made": made});
    let temp = |leaf: &str| format!(".{leaf}.satyrn-1-ab.tmp");
    let forged: Vec<(&str, Value)> = vec![
        // A temporary name that is an absolute path outside the worktree.
        (
            "absolute",
            record(
                json!([{"path": "src/b.txt", "kind": "delete", "home": "src", "temp": victim, "new": null, "base": id(&victim)}]),
                json!([]),
            ),
        ),
        // A private file, a file the contract does not declare, a file in `.git`.
        (
            "private",
            record(
                json!([{"path": ".env", "kind": "delete", "home": "", "temp": temp(".env"), "new": null, "base": id(&root.join(".env"))}]),
                json!([]),
            ),
        ),
        (
            "undeclared",
            record(
                json!([{"path": "README.md", "kind": "create", "home": "", "temp": temp("README.md"), "new": id(&root.join("README.md")), "base": null}]),
                json!([]),
            ),
        ),
        (
            "git",
            record(
                json!([{"path": ".git/HEAD", "kind": "create", "home": ".git", "temp": temp("HEAD"), "new": id(&root.join(".git/HEAD")), "base": null}]),
                json!([]),
            ),
        ),
        // A temporary name with a `..` in it, and one of another file's leaf.
        (
            "dotdot",
            record(
                json!([{"path": "src/b.txt", "kind": "replace", "home": "src", "temp": "../README.md", "new": id(&root.join("src/b.txt")), "base": id(&root.join("README.md"))}]),
                json!([]),
            ),
        ),
        (
            "leaf",
            record(
                json!([{"path": "src/b.txt", "kind": "create", "home": "src", "temp": temp("a.txt"), "new": id(&root.join("src/b.txt")), "base": null}]),
                json!([]),
            ),
        ),
        // A directory made outside any creation.
        ("made", record(json!([]), json!(["src"]))),
    ];
    // Within the boundary, but a directory where the base is: settling touches only regular
    // single-link files, so nothing moves, and since its path still holds the file it names
    // as new the set cannot be rolled back whole: kept.
    let aside = root.join("src").join(temp("b.txt"));
    std::fs::create_dir(&aside).expect("mkdir");
    std::fs::write(aside.join("inside"), "x\n").expect("write");
    let mut forged = forged;
    forged.push(("dirswap", record(json!([{"path": "src/b.txt", "kind": "replace", "home": "src", "temp": temp("b.txt"), "new": id(&root.join("src/b.txt")), "base": id(&aside)}]), json!([]))));
    for (name, body) in &forged {
        for state in ["intent", "committed"] {
            std::fs::write(
                records(&fx).join(format!("{name}-{state}.{state}")),
                format!("{body}\n"),
            )
            .expect("write");
        }
    }
    // Whole but not a record: kept; cut short while written (no final line feed): removed.
    std::fs::write(
        records(&fx).join("junk-1.intent"),
        "{\"not\": \"a record\"}\n",
    )
    .expect("write");
    std::fs::write(
        records(&fx).join("torn-1.intent"),
        "{\"version\": 1, \"dev\"",
    )
    .expect("write");
    let watched = [
        victim.clone(),
        root.join(".env"),
        root.join("README.md"),
        root.join(".git/HEAD"),
        root.join("src/b.txt"),
        root.join("src"),
        aside.clone(),
        aside.join("inside"),
    ];
    let before: Vec<_> = watched.iter().map(|p| snapshot(p)).collect();
    let kept_before: usize = std::fs::read_dir(records(&fx)).expect("records").count();

    for n in 0..2 {
        let response = replace(&fx, n);
        assert_eq!(response["code"], "OK", "{response}");
    }
    assert_eq!(
        std::fs::read(fx.file("src/a.txt")).expect("read"),
        b"v2\n",
        "the calls beside the records land"
    );
    let after: Vec<_> = watched.iter().map(|p| snapshot(p)).collect();
    assert_eq!(after, before, "a forged record changed a file");
    let left: Vec<String> = std::fs::read_dir(records(&fx))
        .expect("records")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left.len(), kept_before - 1, "{left:?}");
    assert!(
        !left.iter().any(|n| n.starts_with("torn-")),
        "the torn intent stays: {left:?}"
    );
    assert!(
        left.iter().any(|n| n.starts_with("junk-")),
        "the unreadable record is gone: {left:?}"
    );
    assert_eq!(
        crate::support::git_ok(root, &["rev-parse", "--is-inside-work-tree"]).trim(),
        "true"
    );
}
