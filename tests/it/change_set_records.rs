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

fn patch(fx: &Fixture, body: &str) -> crate::support::ProtocolRun {
    let request = json!({"version": 1, "operation": "apply_patch", "repo": fx.repo.path(), "contract": fx.contract.path,
        "patch": format!("*** Begin Patch\n{body}*** End Patch\n"),
        "expected_sha256": {"src/a.txt": fx.sha("src/a.txt")}});
    protocol_raw(request.to_string().as_bytes())
}

/// What else can write the git directory can stop change sets, never make one lose data
/// or make recovery cost without bound: a file where the records directory goes refuses
/// every change set by name (the tree and that file unchanged) while single-file calls go
/// on; records past what one recovery examines (64, 64 MiB in all) are counted as kept,
/// unread, and said.
#[test]
fn what_fills_the_records_directory_is_refused_by_name_and_read_within_bounds() {
    let fx = Fixture::new(
        &[("src/a.txt", b"v0\n"), ("src/b.txt", b"bee\n")],
        &["src/*"],
    );
    let root = fx.repo.path();
    let taken = records(&fx);
    std::fs::write(&taken, "not a directory\n").expect("write");
    let tree = crate::support::tree_state(root);
    let taken_before = snapshot(&taken);
    let refused = patch(
        &fx,
        "*** Update File: src/a.txt\n@@\n-v0\n+v1\n*** Add File: src/c.txt\n+c\n",
    );
    assert_eq!(
        refused.response["code"], "MUTATION_FAILED",
        "{}",
        refused.stdout
    );
    let message = refused.response["message"].as_str().expect("message");
    assert!(
        message.contains("satyrn-change-sets") && message.contains("nothing was written"),
        "{message}"
    );
    assert_eq!(
        crate::support::tree_state(root),
        tree,
        "a refused set changed the tree"
    );
    assert_eq!(snapshot(&taken), taken_before);
    assert_eq!(
        replace(&fx, 0)["code"],
        "OK",
        "a single-file call needs no record"
    );
    // Sibling: with the name free, the set lands.
    std::fs::remove_file(&taken).expect("remove");
    let landed = patch(
        &fx,
        "*** Update File: src/a.txt\n@@\n-v1\n+v2\n*** Add File: src/c.txt\n+c\n",
    );
    assert_eq!(landed.response["code"], "OK", "{}", landed.stdout);
    assert_eq!(std::fs::read(fx.file("src/c.txt")).expect("read"), b"c\n");

    // 200 whole records that are not records, and two committed ones of 40 MiB cut short
    // (sparse: nothing is written to disk). The one of a publish's shape first, then in id
    // order the first 40 MiB and 62 of the 200 are examined; the second 40 MiB would
    // overdraw the 64 MiB, the other 138 the count.
    for n in 0..200 {
        std::fs::write(taken.join(format!("junk-{n:03}.intent")), "{}\n").expect("write");
    }
    // One of the shape a publish writes, sorting after all of them: examined first.
    std::fs::write(taken.join("99999-00000000ff.intent"), "{}\n").expect("write");
    for n in 0..2 {
        let big = std::fs::File::create(taken.join(format!("big-{n}.committed"))).expect("create");
        big.set_len(40 << 20).expect("size");
    }
    let listed = || std::fs::read_dir(&taken).expect("records").count();
    let count = listed();
    let tree = crate::support::tree_state(&root.join("src"));
    let run = patch(&fx, "*** Update File: src/a.txt\n@@\n-v2\n+v3\n");
    assert_eq!(run.response["code"], "OK", "{}", run.stdout);
    assert!(
        run.stderr.matches("139 change-set records").count() == 1
            && run.stderr.contains("`99999-00000000ff` is kept, untouched")
            && run.stderr.contains("kept unexamined"),
        "{}",
        run.stderr
    );
    assert_eq!(listed(), count, "a record was removed");
    let mut after = crate::support::tree_state(&root.join("src"));
    let mut before = tree;
    assert!(after.remove("a.txt").is_some() && before.remove("a.txt").is_some());
    assert_eq!(after, before, "the call changed more than its file");
    assert_eq!(std::fs::read(fx.file("src/a.txt")).expect("read"), b"v3\n");
}
