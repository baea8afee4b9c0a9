//! Reviewer-facing receipt warnings and the ids a reviewer could misread: real git, real
//! symlinks, embedded repositories and uninitialized submodules made by real commands.

use std::ffi::OsStr;
use std::time::Duration;

use serde_json::json;

use crate::deliver_support::*;
use crate::support::{ContractFile, git_ok};

fn warnings(run: &crate::deliver_support::Run) -> Vec<(String, String)> {
    run.receipt
        .get("warnings")
        .map(|w| {
            w.as_array()
                .expect("array")
                .iter()
                .map(|w| {
                    assert_eq!(
                        w.as_object().expect("object").keys().collect::<Vec<_>>(),
                        ["detail", "kind", "path"]
                    );
                    assert!(w["detail"].as_str().is_some_and(|d| !d.is_empty()));
                    (
                        w["kind"].as_str().expect("kind").to_owned(),
                        w["path"].as_str().expect("path").to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, p)| ((*k).to_owned(), (*p).to_owned()))
        .collect()
}

#[test]
fn symlinks_leaving_the_repository_are_flagged_and_inner_ones_are_not() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n"), ("d/keep", b"k\n")]);
    let root = repo.path();
    let contract = ContractFile::any("links");
    let run = deliver(
        &root,
        &contract.path,
        &sh(
            "ln -s /etc/passwd abs && ln -s ../outside up && ln -s ../a.txt d/in && ln -s ../../x d/out && ln -s a.txt same && ln -s .. d/up2 && ln -s d/up2/.. via",
        ),
    );
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    assert_eq!(
        warnings(&run),
        pairs(&[
            ("symlink-leaves-repository", "abs"),
            ("symlink-leaves-repository", "d/out"),
            ("symlink-leaves-repository", "up"),
            ("symlink-leaves-repository", "via"),
        ])
    );
    assert!(
        run.stdout
            .contains(r#"symlink to \"/etc/passwd\" is absolute"#),
        "{}",
        run.stdout
    );
    // Sibling: only inner links, no warnings field at all.
    let contract = ContractFile::any("inner-links");
    let run = deliver(
        &root,
        &contract.path,
        &sh("ln -s a.txt also && ln -s ../a.txt d/up"),
    );
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    assert!(run.receipt.get("warnings").is_none(), "{}", run.stdout);
}

#[test]
fn a_gitlink_to_a_commit_missing_from_the_object_store_is_flagged() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let contract = ContractFile::any("embedded");
    // An embedded repository: its commit lives only in its own object store, which goes
    // away with the worktree.
    let run = deliver(
        &root,
        &contract.path,
        &sh(
            "git init -q inner && git -C inner -c user.name=t -c user.email=t@t.invalid commit -q --allow-empty -m inner",
        ),
    );
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    assert_eq!(run.receipt["paths"], json!(["inner"]));
    assert_eq!(
        warnings(&run),
        pairs(&[("gitlink-commit-missing", "inner")])
    );
    // Sibling: an embedded clone whose commit is the base, present in the store.
    let contract = ContractFile::any("embedded-known");
    let run = deliver(
        &root,
        &contract.path,
        &sh("git clone -q \"$(git rev-parse --path-format=absolute --git-common-dir)\" known"),
    );
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    assert_eq!(run.receipt["paths"], json!(["known"]));
    assert!(run.receipt.get("warnings").is_none(), "{}", run.stdout);
}

/// A repository whose base has a gitlink `sub` (an uninitialized submodule everywhere).
fn repo_with_submodule() -> FixedRepo {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let head = git_ok(&root, &["rev-parse", "HEAD"]).trim().to_owned();
    git_ok(
        &root,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{head},sub"),
        ],
    );
    std::fs::create_dir(root.join("sub")).expect("mkdir sub");
    commit_all(&root, "submodule");
    repo
}

#[test]
fn writes_into_an_uninitialized_submodule_are_flagged_not_silently_dropped() {
    let repo = repo_with_submodule();
    let root = repo.path();
    let before = Caller::capture(&root);
    let contract = ContractFile::any("into-sub");
    let run = deliver(
        &root,
        &contract.path,
        &sh("echo x > a.txt && echo hi > sub/new.txt && mkdir sub/d && echo y > sub/d/f"),
    );
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    assert_eq!(
        run.receipt["paths"],
        json!(["a.txt"]),
        "the writes were dropped"
    );
    assert_eq!(
        warnings(&run),
        pairs(&[("submodule-writes-dropped", "sub")])
    );
    assert!(
        run.stdout
            .contains("3 entries written inside the uninitialized submodule sub")
    );
    before.assert_unchanged(&root, Some("refs/satyrn/candidates/into-sub/head"));
    // Only dropped writes: NO_CHANGE, still warned.
    let contract = ContractFile::any("only-sub");
    let run = deliver(&root, &contract.path, &sh("echo hi > sub/new.txt"));
    assert_no_candidate(&run, "NO_CHANGE", 8);
    assert_eq!(
        warnings(&run),
        pairs(&[("submodule-writes-dropped", "sub")])
    );
    // Sibling: no write inside the submodule, no warning.
    let contract = ContractFile::any("beside-sub");
    let run = deliver(&root, &contract.path, &sh("echo z > a.txt"));
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    assert!(run.receipt.get("warnings").is_none(), "{}", run.stdout);
}

#[test]
fn ids_with_control_bidi_invisible_or_decomposed_characters_are_refused() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let before = Caller::capture(&root);
    for id in [
        "\"c1\\u0085x\"",
        "\"rlo\\u202Etxt.exe\"",
        "\"lri\\u2066x\\u2069\"",
        "\"alm\\u061Cx\"",
        "\"lrm\\u200Ex\"",
        "\"zw\\u200Bj\"",
        "\"bom\\uFEFFx\"",
        "\"cafe\\u0301\"",
        // The second adversarial review: Hangul fillers, the blank Braille pattern,
        // variation selectors and tags (`a\u{E0041}b` was listed as `ab`).
        "\"a\\u3164b\"",
        "\"a\\u115Fb\"",
        "\"a\\u1160b\"",
        "\"x\\u2800y\"",
        "\"a\\uFE0Fb\"",
        "\"a\\u180Bb\"",
        "\"a\\U000E0041b\"",
    ] {
        let contract = ContractFile::raw(&format!("id: {id}\ntask: t\n"));
        let run = deliver(&root, &contract.path, &sh("echo never > ran.txt"));
        assert_no_candidate(&run, "INVALID_CANDIDATE_ID", 8);
        assert_eq!(run.outcome(), "refused", "{id}");
        let message = run.receipt["message"].as_str().expect("message");
        assert!(message.contains("U+"), "{id}: {message}");
        assert!(!root.join("ran.txt").exists());
    }
    // An id that every command line would read as an option.
    for id in ["-x", "--help"] {
        let contract = ContractFile::raw(&format!("id: \"{id}\"\ntask: t\n"));
        let run = deliver(&root, &contract.path, &sh("echo never > ran.txt"));
        assert_no_candidate(&run, "INVALID_CANDIDATE_ID", 8);
        let message = run.receipt["message"].as_str().expect("message");
        assert!(message.contains("starts with `-`"), "{id}: {message}");
        assert!(!root.join("ran.txt").exists());
    }
    before.assert_unchanged(&root, None);
    // Siblings: the composed (NFC) spelling and other non-ASCII letters are fine.
    sibling_success(&root, "caf\u{e9}");
    sibling_success(&root, "\u{65e5}\u{672c}-\u{043a}\u{0438}\u{0440}");
}

#[test]
fn a_receipt_without_warnings_has_no_warnings_field() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let contract = ContractFile::any("plain");
    let argv = [
        OsStr::new("sh"),
        OsStr::new("-c"),
        OsStr::new("echo x > a.txt"),
    ];
    let run = finish(
        deliver_cmd(&root, &contract.path, &[], &argv)
            .output()
            .expect("run"),
        Duration::ZERO,
    );
    assert_eq!(run.code(), "OK");
    assert!(!run.stdout.contains("warnings"), "{}", run.stdout);
    assert_eq!(run.receipt.as_object().expect("object").len(), 13);
}
