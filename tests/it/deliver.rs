//! `satyrn-host deliver`: real git, real processes, real signals, temporary repositories.
//!
//! Every case checks the caller's repository afterwards ([`Caller`]): status, index bytes,
//! `HEAD`, branch, every ref other than the new candidate, and the registered worktrees.
//! Each refusal is followed by a sibling success in the same repository.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::deliver_support::*;
use crate::support::{ContractFile, git, git_ok, host_bin};

// ---------------------------------------------------------------------------------------
// Success and the main outcomes

#[test]
fn modify_add_delete_creates_a_candidate_on_the_base() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n"), ("b.txt", b"b\n"), ("keep.txt", b"k\n")]);
    let root = repo.path();
    let before = Caller::capture(&root);
    let base = git_ok(&root, &["rev-parse", "HEAD"]).trim().to_owned();
    let contract = ContractFile::any("feature-1");
    let run = deliver(
        &root,
        &contract.path,
        &sh(
            "echo changed > a.txt && rm b.txt && echo new > c.txt && echo to-stdout && echo to-stderr >&2",
        ),
    );
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    assert_eq!(run.status, 0);
    assert_eq!(run.outcome(), "candidate-created");
    let name = "refs/satyrn/candidates/feature-1/head";
    before.assert_unchanged(&root, Some(name));
    let commit = git_ok(&root, &["rev-parse", name]).trim().to_owned();
    assert_eq!(run.receipt["candidate_commit"], commit.as_str());
    assert_eq!(run.receipt["base_commit"], base.as_str());
    assert_eq!(
        git_ok(&root, &["rev-parse", &format!("{commit}^@")]).trim(),
        base
    );
    let changes = git_ok(
        &root,
        &[
            "diff-tree",
            "-r",
            "--no-renames",
            "--name-status",
            "--no-commit-id",
            &commit,
        ],
    );
    assert_eq!(changes, "M\ta.txt\nD\tb.txt\nA\tc.txt\n");
    assert_eq!(show(&root, &format!("{commit}:a.txt")), b"changed\n");
    assert_eq!(show(&root, &format!("{commit}:c.txt")), b"new\n");
    // Fixed identity and date, no signature, a message naming id and base.
    let raw = git_ok(&root, &["cat-file", "commit", &commit]);
    assert!(
        raw.contains("author satyrn <satyrn@satyrn.invalid> 946684800 +0000\n"),
        "{raw}"
    );
    assert!(
        raw.contains("committer satyrn <satyrn@satyrn.invalid> 946684800 +0000\n"),
        "{raw}"
    );
    assert!(!raw.contains("gpgsig"), "{raw}");
    assert!(raw.contains("feature-1") && raw.contains(&base), "{raw}");
    // The command's output went to our stderr, never stdout.
    assert!(
        run.stderr.contains("to-stdout") && run.stderr.contains("to-stderr"),
        "{}",
        run.stderr
    );
    assert_fixture("ok.json", &run.normalized(&root));
}

#[test]
fn candidate_identity_ignores_inherited_author_and_committer() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let contract = ContractFile::any("ident");
    let mut cmd = deliver_cmd(
        &root,
        &contract.path,
        &[],
        &[
            OsStr::new("sh"),
            OsStr::new("-c"),
            OsStr::new("echo x > a.txt"),
        ],
    );
    for (k, v) in [
        ("GIT_AUTHOR_NAME", "Mallory"),
        ("GIT_AUTHOR_EMAIL", "m@example.invalid"),
        ("GIT_AUTHOR_DATE", "1234567890 +0100"),
        ("GIT_COMMITTER_NAME", "Mallory"),
        ("GIT_COMMITTER_EMAIL", "m@example.invalid"),
        ("GIT_COMMITTER_DATE", "1234567890 +0100"),
    ] {
        cmd.env(k, v);
    }
    let run = finish(cmd.output().expect("run"), Duration::ZERO);
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    let raw = git_ok(
        &root,
        &["cat-file", "commit", "refs/satyrn/candidates/ident/head"],
    );
    assert!(
        !raw.contains("Mallory") && !raw.contains("1234567890"),
        "{raw}"
    );
}

#[test]
fn no_change_is_discarded_and_a_sibling_succeeds() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let before = Caller::capture(&root);
    let contract = ContractFile::any("nothing");
    // Rewriting a file with identical bytes is no change either.
    let run = deliver(&root, &contract.path, &sh("echo a > a.txt"));
    assert_discarded(&run, "NO_CHANGE");
    assert_eq!(run.receipt["exit_code"], 0);
    before.assert_unchanged(&root, None);
    assert_fixture("no_change.json", &run.normalized(&root));
    sibling_success(&root, "nothing-sibling");
}

#[test]
fn non_zero_exit_is_command_failed_even_with_changes() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let before = Caller::capture(&root);
    let contract = ContractFile::any("fails");
    let run = deliver(&root, &contract.path, &sh("echo changed > a.txt; exit 3"));
    assert_no_candidate(&run, "COMMAND_FAILED", 8);
    assert_eq!(run.receipt["exit_code"], 3);
    assert_eq!(run.receipt["signal"], Value::Null);
    before.assert_unchanged(&root, None);
    assert_fixture("command_failed.json", &run.normalized(&root));
    // Killed by a signal: the signal is reported.
    let run = deliver(&root, &contract.path, &sh("kill -USR1 $$"));
    assert_no_candidate(&run, "COMMAND_FAILED", 8);
    assert_eq!(run.receipt["exit_code"], Value::Null);
    assert_eq!(run.receipt["signal"], libc::SIGUSR1);
    before.assert_unchanged_then_sibling(&root, "fails");
}

#[test]
fn missing_or_unexecutable_program_is_command_unavailable() {
    let repo = FixedRepo::with_files(&[("script.sh", b"echo hi\n")]);
    let root = repo.path();
    let before = Caller::capture(&root);
    let contract = ContractFile::any("unavailable");
    let run = deliver(
        &root,
        &contract.path,
        &["satyrn-no-such-program-xyz", "arg"],
    );
    assert_discarded(&run, "COMMAND_UNAVAILABLE");
    assert_eq!(run.receipt["exit_code"], Value::Null);
    assert_eq!(run.receipt["signal"], Value::Null);
    // A relative path resolves in the worktree; the checked-out script is not executable.
    let run = deliver(&root, &contract.path, &["./script.sh"]);
    assert_no_candidate(&run, "COMMAND_UNAVAILABLE", 8);
    let message = run.receipt["message"].as_str().expect("message");
    assert!(message.contains("Permission denied"), "{message}");
    before.assert_unchanged_then_sibling(&root, "unavailable");
    // Once executable in the base, the same relative path runs inside the worktree.
    std::fs::set_permissions(
        root.join("script.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    std::fs::write(root.join("script.sh"), "#!/bin/sh\necho ran > ran.txt\n").expect("write");
    commit_all(&root, "executable");
    let contract = ContractFile::any("relative");
    let run = deliver(&root, &contract.path, &["./script.sh"]);
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    assert_eq!(run.receipt["paths"], serde_json::json!(["ran.txt"]));
    assert!(!root.join("ran.txt").exists());
}

#[test]
fn a_command_that_moves_head_is_refused() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let before = Caller::capture(&root);
    let contract = ContractFile::any("mover");
    let run = deliver(
        &root,
        &contract.path,
        &sh("echo x > a.txt && git -c user.name=x -c user.email=x@x.invalid commit -qam moved"),
    );
    assert_no_candidate(&run, "HEAD_MOVED", 8);
    assert_eq!(run.receipt["exit_code"], 0);
    before.assert_unchanged_then_sibling(&root, "mover");
}

#[test]
fn usage_errors_print_no_receipt() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let contract = ContractFile::any("usage");
    let r = root.to_str().expect("utf-8");
    let c = contract.path.to_str().expect("utf-8");
    let cases: Vec<Vec<&str>> = vec![
        vec!["--repo", r, c, "true"],
        vec!["--repo", r, c, "--"],
        vec!["--repo", r, c],
        vec!["--repo", r, "--"],
        vec![c, "--", "true"],
        vec!["--repo", r, "--timeout", "0", c, "--", "true"],
        vec!["--repo", r, "--timeout", "-1", c, "--", "true"],
        vec!["--repo", r, "--timeout", "nan", c, "--", "true"],
        vec!["--repo", r, "--timeout", "inf", c, "--", "true"],
        vec!["--repo", r, "--timeout", "1e999", c, "--", "true"],
        vec!["--repo", r, "--timeout", "abc", c, "--", "true"],
        vec!["--repo", r, "--timeout", "", c, "--", "true"],
        vec![
            "--repo",
            r,
            "--timeout",
            "99999999999999999999999",
            c,
            "--",
            "true",
        ],
        vec!["--repo", r, "--bogus", c, "--", "true"],
    ];
    let before = Caller::capture(&root);
    for args in cases {
        let out = Command::new(host_bin())
            .arg("deliver")
            .args(&args)
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            out.stdout.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("usage"),
            "{args:?}"
        );
    }
    before.assert_unchanged(&root, None);
    // The same line with a valid timeout (fractional seconds allowed) succeeds.
    let run = deliver_os(
        &root,
        &contract.path,
        &["--timeout", "2.5"],
        &[
            OsStr::new("sh"),
            OsStr::new("-c"),
            OsStr::new("echo 1 > a.txt"),
        ],
    );
    assert_eq!(run.code(), "OK", "{}", run.stdout);
}

#[test]
fn argv_after_the_separator_is_preserved_exactly() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let contract = ContractFile::any("argv");
    let args: Vec<OsString> = vec![
        "sh".into(),
        "-c".into(),
        "for a in \"$@\"; do printf '[%s]' \"$a\"; done > args.out".into(),
        "sh".into(),
        "a b".into(),
        "".into(),
        "--".into(),
        "--repo".into(),
        "*".into(),
        "$HOME".into(),
        OsString::from(std::ffi::OsStr::from_bytes(b"\xffraw")),
    ];
    let argv: Vec<&OsStr> = args.iter().map(OsString::as_os_str).collect();
    let run = deliver_os(&root, &contract.path, &[], &argv);
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    assert_eq!(
        show(&root, "refs/satyrn/candidates/argv/head:args.out"),
        b"[a b][][--][--repo][*][$HOME][\xffraw]"
    );
}

#[test]
fn contract_and_repository_refusals_keep_their_exit_statuses() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let before = Caller::capture(&root);
    let missing = root.join("no-such-contract.yaml");
    let run = deliver(&root, &missing, &["true"]);
    assert_no_candidate(&run, "CONTRACT_UNREADABLE", 3);
    assert_eq!(run.outcome(), "refused");
    assert_eq!(run.receipt["contract_id"], Value::Null);
    let invalid = ContractFile::raw("id: [unclosed\n");
    let run = deliver(&root, &invalid.path, &["true"]);
    assert_no_candidate(&run, "CONTRACT_INVALID", 4);
    let missing_field = ContractFile::raw("task: no id\n");
    let run = deliver(&root, &missing_field.path, &["true"]);
    assert_no_candidate(&run, "CONTRACT_MISSING_FIELD", 5);
    // The contract parsed: its id is reported even though the repository is refused.
    let contract = ContractFile::any("repo-missing");
    let run = deliver(&root.join("absent"), &contract.path, &["true"]);
    assert_no_candidate(&run, "REPO_UNAVAILABLE", 6);
    assert_eq!(run.receipt["contract_id"], "repo-missing");
    assert_eq!(run.receipt["base_commit"], Value::Null);
    let not_git = tempfile::tempdir().expect("tempdir");
    let run = deliver(not_git.path(), &contract.path, &["true"]);
    assert_no_candidate(&run, "REPO_UNAVAILABLE", 6);
    // The contract is parsed before the repository is looked at.
    let run = deliver(&root.join("absent"), &missing, &["true"]);
    assert_eq!(run.code(), "CONTRACT_UNREADABLE");
    before.assert_unchanged_then_sibling(&root, "repo-missing");
}

#[test]
fn repo_field_is_absolute_and_normalized_keeping_symlinks() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let link = repo.dir.path().join("link");
    std::os::unix::fs::symlink(&root, &link).expect("symlink");
    let contract = ContractFile::any("spelled");
    let spelled = PathBuf::from(format!("{}/.//./", link.display()));
    let run = deliver(&spelled, &contract.path, &sh("echo 2 > a.txt"));
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    assert_eq!(run.receipt["repo"], link.to_str().expect("utf-8"));
    // Relative to the current directory.
    let out = deliver_cmd(
        Path::new("link"),
        &contract.path,
        &[],
        &[OsStr::new("true")],
    )
    .current_dir(repo.dir.path())
    .output()
    .expect("run");
    let run = finish(out, Duration::ZERO);
    assert_eq!(run.code(), "CANDIDATE_EXISTS");
    assert_eq!(run.receipt["repo"], link.to_str().expect("utf-8"));
}

// ---------------------------------------------------------------------------------------
// Refusals before anything is created

#[test]
fn dirty_trees_are_refused_then_a_clean_one_succeeds() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n"), ("b.txt", b"b\n")]);
    let root = repo.path();
    let contract = ContractFile::any("dirty");
    type Dirty = fn(&Path);
    let cases: [(&str, Dirty, Dirty); 4] = [
        (
            "tracked",
            |r| std::fs::write(r.join("a.txt"), "changed\n").expect("write"),
            |r| std::fs::write(r.join("a.txt"), "a\n").expect("write"),
        ),
        (
            "deleted",
            |r| std::fs::remove_file(r.join("b.txt")).expect("rm"),
            |r| std::fs::write(r.join("b.txt"), "b\n").expect("write"),
        ),
        (
            "untracked",
            |r| {
                std::fs::create_dir_all(r.join("new/deep")).expect("mkdir");
                std::fs::write(r.join("new/deep/u.txt"), "u\n").expect("write");
            },
            |r| std::fs::remove_dir_all(r.join("new")).expect("rm"),
        ),
        (
            "staged",
            |r| {
                std::fs::write(r.join("a.txt"), "staged\n").expect("write");
                git_ok(r, &["add", "a.txt"]);
            },
            |r| {
                git_ok(r, &["reset", "-q", "--hard"]);
            },
        ),
    ];
    for (what, dirty, clean) in cases {
        dirty(&root);
        let before = Caller::capture(&root);
        let run = deliver(&root, &contract.path, &sh("echo never > ran.txt"));
        assert_no_candidate(&run, "REPO_DIRTY", 8);
        assert_eq!(run.outcome(), "refused", "{what}");
        assert_eq!(run.receipt["base_commit"], Value::Null, "{what}");
        assert_eq!(run.receipt["exit_code"], Value::Null, "{what}");
        assert!(!root.join("ran.txt").exists());
        before.assert_unchanged(&root, None);
        if what == "tracked" {
            assert_fixture("repo_dirty.json", &run.normalized(&root));
        }
        clean(&root);
    }
    sibling_success(&root, "dirty");
}

#[test]
fn subdirectory_is_refused_naming_the_root() {
    let repo = FixedRepo::with_files(&[("sub/a.txt", b"a\n")]);
    let root = repo.path();
    let before = Caller::capture(&root);
    let contract = ContractFile::any("subdir");
    let run = deliver(&root.join("sub"), &contract.path, &["true"]);
    assert_no_candidate(&run, "REPO_UNAVAILABLE", 6);
    let message = run.receipt["message"].as_str().expect("message");
    let real_root = std::fs::canonicalize(&root).expect("realpath");
    assert!(
        message.contains(real_root.to_str().expect("utf-8")),
        "{message}"
    );
    // The .git directory itself is no worktree root either.
    let run = deliver(&root.join(".git"), &contract.path, &["true"]);
    assert_no_candidate(&run, "REPO_UNAVAILABLE", 6);
    before.assert_unchanged_then_sibling(&root, "subdir");
}

#[test]
fn a_linked_worktree_root_is_accepted() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let linked = repo.dir.path().join("linked");
    git_ok(
        &root,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "side",
            linked.to_str().expect("utf-8"),
        ],
    );
    std::fs::write(linked.join("side.txt"), "side\n").expect("write");
    commit_all(&linked, "side");
    let main_before = Caller::capture(&root);
    let before = Caller::capture(&linked);
    let contract = ContractFile::any("linked");
    let run = deliver(&linked, &contract.path, &sh("echo L > a.txt"));
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    let side = git_ok(&linked, &["rev-parse", "HEAD"]).trim().to_owned();
    assert_eq!(run.receipt["base_commit"], side.as_str());
    before.assert_unchanged(&linked, Some("refs/satyrn/candidates/linked/head"));
    main_before.assert_unchanged(&root, Some("refs/satyrn/candidates/linked/head"));
}

#[test]
fn invalid_ids_are_refused_never_normalized() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let before = Caller::capture(&root);
    for id in [
        "a/b",
        "\"/lead\"",
        "a..b",
        "x.lock",
        ".hidden",
        "\"a b\"",
        "a~1",
        "a^b",
        "a:b",
        "\"a?b\"",
        "\"a*b\"",
        "\"a[b\"",
        "\"a\\\\b\"",
        "\"@{x}\"",
        "\"tab\\there\"",
        // What would only fail once the command ran: a receipt tag name ending in `.`, and
        // an id too long for a ref's file name.
        "x.",
        concat!(
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "aaaaaaaaa"
        ),
        // Look-alikes: a line separator, a no-break space, a ligature, a fullwidth letter.
        "\"a\\u2028b\"",
        "\"a\\u00a0b\"",
        "\"\\ufb01le\"",
        "\"\\uff21bc\"",
    ] {
        let contract = ContractFile::raw(&format!("id: {id}\ntask: t\n"));
        let run = deliver(&root, &contract.path, &sh("echo never > ran.txt"));
        assert_no_candidate(&run, "INVALID_CANDIDATE_ID", 8);
        assert_eq!(run.outcome(), "refused", "{id}");
        assert!(run.receipt["contract_id"].is_string(), "{id}");
        assert!(!root.join("ran.txt").exists());
    }
    before.assert_unchanged_then_sibling(&root, "valid-id_1.2");
    // At the length limit, an id is delivered.
    before_sibling_at_limit(&root);
}

fn before_sibling_at_limit(root: &Path) {
    let id = "b".repeat(200);
    let contract = ContractFile::any(&id);
    let run = deliver(root, &contract.path, &sh("echo long > long.txt"));
    assert_eq!(run.code(), "OK", "{}", run.stdout);
}

#[test]
fn existing_ordinary_symbolic_and_dangling_refs_are_refused() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    git_ok(
        &root,
        &["update-ref", "refs/satyrn/candidates/ordinary/head", "HEAD"],
    );
    git_ok(
        &root,
        &[
            "symbolic-ref",
            "refs/satyrn/candidates/symbolic/head",
            "refs/heads/main",
        ],
    );
    git_ok(
        &root,
        &[
            "symbolic-ref",
            "refs/satyrn/candidates/dangling/head",
            "refs/heads/nowhere",
        ],
    );
    let before = Caller::capture(&root);
    for id in ["ordinary", "symbolic", "dangling"] {
        let contract = ContractFile::any(id);
        let run = deliver(&root, &contract.path, &sh("echo never > ran.txt"));
        assert_no_candidate(&run, "CANDIDATE_EXISTS", 8);
        assert_eq!(run.outcome(), "refused", "{id}");
        if id == "ordinary" {
            assert_fixture("candidate_exists.json", &run.normalized(&root));
        }
    }
    before.assert_unchanged(&root, None);
    assert_eq!(
        git_ok(
            &root,
            &["symbolic-ref", "refs/satyrn/candidates/dangling/head"]
        )
        .trim(),
        "refs/heads/nowhere"
    );
    sibling_success(&root, "fresh");
}

#[test]
fn an_ancestor_ref_collision_is_git_failed_not_candidate_exists() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    git_ok(&root, &["update-ref", "refs/satyrn/candidates/x", "HEAD"]);
    git_ok(
        &root,
        &["update-ref", "refs/satyrn/candidates/y/head/z", "HEAD"],
    );
    let before = Caller::capture(&root);
    for id in ["x", "y"] {
        let contract = ContractFile::any(id);
        let run = deliver(&root, &contract.path, &sh("echo changed > a.txt"));
        assert_discarded(&run, "GIT_FAILED");
    }
    before.assert_unchanged_then_sibling(&root, "xx");
}

// ---------------------------------------------------------------------------------------
// Paths

#[test]
fn paths_are_sorted_by_raw_utf8_bytes() {
    let repo = FixedRepo::with_files(&[("keep.txt", b"k\n")]);
    let root = repo.path();
    let before = Caller::capture(&root);
    let contract = ContractFile::any("utf8");
    let run = deliver(
        &root,
        &contract.path,
        &sh(
            "for f in é.txt z.txt Z.txt a.txt Ä.txt ß.txt a-b.txt 'sp ace.txt'; do echo x > \"$f\"; done; mkdir a; echo y > a/b.txt",
        ),
    );
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    let paths: Vec<&str> = run.receipt["paths"]
        .as_array()
        .expect("paths")
        .iter()
        .map(|p| p.as_str().expect("string"))
        .collect();
    assert_eq!(
        paths,
        [
            "Z.txt",
            "a-b.txt",
            "a.txt",
            "a/b.txt",
            "sp ace.txt",
            "z.txt",
            "Ä.txt",
            "ß.txt",
            "é.txt"
        ]
    );
    before.assert_unchanged(&root, Some("refs/satyrn/candidates/utf8/head"));
}

#[test]
fn a_non_utf8_path_is_git_failed_and_publishes_nothing() {
    let repo = FixedRepo::with_files(&[("keep.txt", b"k\n")]);
    let root = repo.path();
    let before = Caller::capture(&root);
    let contract = ContractFile::any("bytes");
    let run = deliver(
        &root,
        &contract.path,
        &sh("echo x > \"$(printf 'bad\\377name')\""),
    );
    assert_discarded(&run, "GIT_FAILED");
    before.assert_unchanged_then_sibling(&root, "bytes");
}

// ---------------------------------------------------------------------------------------
// Git hardening

#[test]
fn hooks_never_fire_while_a_clean_filter_participates() {
    let repo = FixedRepo::with_files(&[
        ("a.txt", b"a\n"),
        (".gitattributes", b"*.up filter=upper\n"),
    ]);
    let root = repo.path();
    let sentinels = tempfile::tempdir().expect("tempdir");
    let hooks = root.join(".git/hooks");
    std::fs::create_dir_all(&hooks).expect("hooks dir");
    let hook_dir2 = repo.dir.path().join("hooks2");
    std::fs::create_dir_all(&hook_dir2).expect("hooks2");
    for dir in [&hooks, &hook_dir2] {
        for hook in [
            "post-checkout",
            "reference-transaction",
            "post-index-change",
            "pre-commit",
            "post-commit",
            "pre-auto-gc",
        ] {
            let path = dir.join(hook);
            std::fs::write(
                &path,
                format!("#!/bin/sh\ntouch '{}/{hook}'\n", sentinels.path().display()),
            )
            .expect("hook");
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .expect("chmod");
        }
    }
    git_ok(
        &root,
        &[
            "config",
            "core.hooksPath",
            hook_dir2.to_str().expect("utf-8"),
        ],
    );
    git_ok(&root, &["config", "filter.upper.clean", "tr a-z A-Z"]);
    git_ok(&root, &["config", "filter.upper.smudge", "cat"]);
    let before = Caller::capture(&root);
    let contract = ContractFile::any("hooked");
    let run = deliver(
        &root,
        &contract.path,
        &sh("echo hello > x.up && echo b > a.txt"),
    );
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    assert_eq!(
        show(&root, "refs/satyrn/candidates/hooked/head:x.up"),
        b"HELLO\n"
    );
    let fired: Vec<String> = crate::support::dir_entries(sentinels.path());
    assert!(fired.is_empty(), "hooks fired: {fired:?}");
    before.assert_unchanged(&root, Some("refs/satyrn/candidates/hooked/head"));
    // Control: the same hooks do fire for an ordinary git call.
    git_ok(&root, &["update-ref", "refs/probe", "HEAD"]);
    assert!(
        sentinels.path().join("reference-transaction").exists(),
        "control hook did not fire"
    );
}

#[test]
fn inherited_git_environment_changes_nothing() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let decoy = FixedRepo::with_files(&[("decoy.txt", b"d\n")]);
    let decoy_root = decoy.path();
    let decoy_before = Caller::capture(&decoy_root);
    let before = Caller::capture(&root);
    let contract = ContractFile::any("env");
    let mut cmd = deliver_cmd(
        &root,
        &contract.path,
        &[],
        &[
            OsStr::new("sh"),
            OsStr::new("-c"),
            OsStr::new(
                "echo e > a.txt; env | grep -E '^GIT_(DIR|WORK_TREE|NAMESPACE|INDEX_FILE|CONFIG_PARAMETERS)=' > seen.txt; true",
            ),
        ],
    );
    cmd.env("GIT_DIR", decoy_root.join(".git"))
        .env("GIT_WORK_TREE", &decoy_root)
        .env("GIT_INDEX_FILE", decoy_root.join(".git/index"))
        .env("GIT_NAMESPACE", "elsewhere")
        .env("GIT_CONFIG_PARAMETERS", "'core.hookspath'='/tmp/evil'");
    let run = finish(cmd.output().expect("run"), Duration::ZERO);
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    assert_eq!(
        run.receipt["paths"],
        serde_json::json!(["a.txt", "seen.txt"])
    );
    assert_eq!(show(&root, "refs/satyrn/candidates/env/head:seen.txt"), b"");
    before.assert_unchanged(&root, Some("refs/satyrn/candidates/env/head"));
    decoy_before.assert_unchanged(&decoy_root, None);
    // The namespace was ignored: the ref is in the plain namespace.
    assert!(git_ok(&root, &["for-each-ref", "refs/namespaces"]).is_empty());
}

// ---------------------------------------------------------------------------------------
// Timeouts, signals, descendants

/// How long a `deliver` that must end by itself may take before the test gives up on it
/// (and kills it): far more than any of these runs needs, so it bounds a hang, not speed.
const ENDS_WITHIN: Duration = Duration::from_secs(60);

#[test]
fn timeout_stops_the_group_and_no_descendant_outlives_it() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let before = Caller::capture(&root);
    let tmp = tempfile::tempdir().expect("tempdir");
    let marks = tempfile::tempdir().expect("tempdir");
    let background = marks.path().join("background");
    let contract = ContractFile::any("slow");
    // Without the timeout the command would run for an hour.
    let script = format!(
        "echo changed > a.txt; sleep 3600 & echo $! > '{}'; sleep 3600",
        background.display()
    );
    let argv: Vec<&OsStr> = sh(&script).into_iter().map(OsStr::new).collect();
    let t0 = Instant::now();
    let child = deliver_cmd(&root, &contract.path, &["--timeout", "1"], &argv)
        .env("TMPDIR", tmp.path())
        .spawn()
        .expect("spawn");
    let run = wait_ended(child, ENDS_WITHIN, t0);
    assert_discarded(&run, "COMMAND_TIMEOUT");
    assert_eq!(run.receipt["signal"], libc::SIGTERM);
    assert_fixture("timeout.json", &run.normalized(&root));
    assert_all_stopped(&[&background]);
    before.assert_unchanged(&root, None);
    assert_empty_tmp(tmp.path());
    sibling_success(&root, "slow");
}

#[test]
fn a_group_ignoring_sigterm_is_killed_after_the_grace() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let before = Caller::capture(&root);
    let marks = tempfile::tempdir().expect("tempdir");
    let (leader, termed, in_grace) = (
        marks.path().join("leader"),
        marks.path().join("termed"),
        marks.path().join("in-grace"),
    );
    let contract = ContractFile::any("stubborn");
    // The group notes the SIGTERM and lives on; a member still running 2 s after it (well
    // within the 5 s grace) leaves a mark, so a SIGKILL sent with the SIGTERM would fail.
    let script = format!(
        "echo $$ > '{leader}'; trap 'touch \"{termed}\"' TERM; \
         (trap '' TERM; while [ ! -e '{termed}' ]; do sleep 0.05; done; sleep 2; touch '{in_grace}'; sleep 3600) & \
         while :; do sleep 0.05; done",
        leader = leader.display(),
        termed = termed.display(),
        in_grace = in_grace.display()
    );
    let argv: Vec<&OsStr> = sh(&script).into_iter().map(OsStr::new).collect();
    let t0 = Instant::now();
    let child = deliver_cmd(&root, &contract.path, &["--timeout", "1"], &argv)
        .spawn()
        .expect("spawn");
    let run = wait_ended(child, ENDS_WITHIN, t0);
    assert_no_candidate(&run, "COMMAND_TIMEOUT", 8);
    assert_eq!(run.receipt["signal"], libc::SIGKILL);
    assert!(termed.exists(), "SIGTERM came first");
    assert!(
        in_grace.exists(),
        "grace not honoured: killed before 2 s had passed"
    );
    assert!(
        !group_alive(read_pid(&leader)),
        "the group outlived deliver"
    );
    before.assert_unchanged(&root, None);
}

#[test]
fn background_descendants_of_a_finished_command_are_stopped() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let marks = tempfile::tempdir().expect("tempdir");
    let background = marks.path().join("background");
    let contract = ContractFile::any("bg");
    // deliver does not wait for the background sleeper: it stops it.
    let script = format!(
        "echo bg > a.txt; sleep 3600 > /dev/null 2>&1 & echo $! > '{}'",
        background.display()
    );
    let argv: Vec<&OsStr> = sh(&script).into_iter().map(OsStr::new).collect();
    let t0 = Instant::now();
    let child = deliver_cmd(&root, &contract.path, &[], &argv)
        .spawn()
        .expect("spawn");
    let run = wait_ended(child, ENDS_WITHIN, t0);
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    assert_all_stopped(&[&background]);
}

#[test]
fn descendants_that_leave_the_group_are_stopped_too() {
    // `setsid` puts the sleeper in a new session and process group, out of reach of the
    // group signal; deliver is a child subreaper, so it is reparented to deliver and killed.
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let marks = tempfile::tempdir().expect("tempdir");
    let escaper = marks.path().join("escaper");
    let contract = ContractFile::any("escaper");
    let escape = |pidfile: &Path| {
        format!(
            "setsid sh -c 'echo $$ > \"{}\"; exec sleep 3600' > /dev/null 2>&1 < /dev/null &",
            pidfile.display()
        )
    };
    // The command ends once the escaper has written its pid.
    let script = format!(
        "echo esc > a.txt; {} while [ ! -s '{}' ]; do sleep 0.05; done",
        escape(&escaper),
        escaper.display()
    );
    let run = deliver(&root, &contract.path, &sh(&script));
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    assert_all_stopped(&[&escaper]);
    // Sibling: the same escaper outside deliver does live on (the test can fail).
    let free = marks.path().join("free");
    let status = Command::new("sh")
        .arg("-c")
        .arg(escape(&free))
        .status()
        .expect("sh");
    assert!(status.success());
    let pid = read_pid(&free);
    assert!(alive(pid), "the escaper did not run at all");
    // SAFETY: kill(2) on the sleeper this test started (through its shell).
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
}

#[test]
fn orphans_that_exit_during_a_long_command_are_reaped_not_kept_as_zombies() {
    // Each `( sleep 0 & )` orphans a process that exits at once and is reparented to
    // deliver (a subreaper); they must be reaped while the command still runs, which it
    // does until the test has seen none left.
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let marks = tempfile::tempdir().expect("tempdir");
    let started = marks.path().join("started");
    let done = marks.path().join("done");
    let contract = ContractFile::any("orphans");
    let script = format!(
        "for i in 1 2 3 4 5 6 7 8; do ( sleep 0 & ); done; touch '{}'; while [ ! -e '{}' ]; do sleep 0.05; done; echo o > a.txt",
        started.display(),
        done.display()
    );
    let argv: Vec<&OsStr> = sh(&script).into_iter().map(OsStr::new).collect();
    let t0 = Instant::now();
    let child = deliver_cmd(&root, &contract.path, &[], &argv)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    wait_for(&started);
    let pid = child.id();
    let mut zombies = Vec::new();
    let reaped = poll_until(Duration::from_secs(20), || {
        zombies = zombie_children(pid);
        zombies.is_empty()
    });
    std::fs::write(&done, "").expect("release the command");
    let run = wait_ended(child, ENDS_WITHIN, t0);
    assert!(reaped, "zombies kept under deliver: {zombies:?}");
    assert_eq!(run.code(), "OK", "{}", run.stdout);
}

fn interrupt_case(signal: i32, id: &str) {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let before = Caller::capture(&root);
    let tmp = tempfile::tempdir().expect("tempdir");
    let marks = tempfile::tempdir().expect("tempdir");
    let started = marks.path().join("started");
    let background = marks.path().join("background");
    let contract = ContractFile::any(id);
    let script = format!(
        "echo x > a.txt; sleep 3600 & echo $! > '{}'; touch '{}'; sleep 3600",
        background.display(),
        started.display()
    );
    let argv: Vec<&OsStr> = sh(&script).into_iter().map(OsStr::new).collect();
    let t0 = Instant::now();
    let child = deliver_cmd(&root, &contract.path, &[], &argv)
        .env("TMPDIR", tmp.path())
        .spawn()
        .expect("spawn");
    wait_for(&started);
    let pid = i32::try_from(child.id()).expect("pid");
    // SAFETY: kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    let run = wait_ended(child, ENDS_WITHIN, t0);
    assert_discarded(&run, "INTERRUPTED");
    assert_eq!(run.receipt["signal"], libc::SIGTERM);
    assert_all_stopped(&[&background]);
    before.assert_unchanged(&root, None);
    assert_empty_tmp(tmp.path());
    sibling_success(&root, id);
}

#[test]
fn sigterm_to_deliver_stops_cleans_up_and_prints_a_receipt() {
    interrupt_case(libc::SIGTERM, "term");
}

#[test]
fn sigint_to_deliver_stops_cleans_up_and_prints_a_receipt() {
    interrupt_case(libc::SIGINT, "int");
}

// ---------------------------------------------------------------------------------------
// Cleanup failure and the publication race

#[test]
fn a_command_that_locks_its_worktree_is_cleanup_failed() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let before = Caller::capture(&root);
    let contract = ContractFile::any("locked");
    let run = deliver(
        &root,
        &contract.path,
        &sh("echo x > a.txt && git worktree lock --reason mine \"$PWD\""),
    );
    assert_eq!(run.code(), "CLEANUP_FAILED", "{}", run.stdout);
    assert_eq!(run.status, 8);
    assert_eq!(run.outcome(), "discarded");
    assert_eq!(run.receipt["candidate_ref"], Value::Null);
    let retained = PathBuf::from(
        run.receipt["retained_worktree"]
            .as_str()
            .expect("retained path"),
    );
    assert!(retained.join("a.txt").exists(), "{}", retained.display());
    assert!(git_ok(&root, &["worktree", "list", "--porcelain"]).contains("locked mine"));
    let message = run.receipt["message"].as_str().expect("message");
    for kept in [
        format!("the worktree registration of {}", retained.display()),
        format!("the worktree directory {}", retained.display()),
        format!(
            "the temporary directory {}",
            retained.parent().expect("parent").display()
        ),
    ] {
        assert!(message.contains(&kept), "{kept:?} missing from {message}");
    }
    assert!(
        git_ok(&root, &["for-each-ref", "refs/satyrn"]).is_empty(),
        "nothing published"
    );
    // The user can remove it; then everything is as before.
    let r = retained.to_str().expect("utf-8");
    git_ok(&root, &["worktree", "unlock", r]);
    git_ok(&root, &["worktree", "remove", "--force", r]);
    std::fs::remove_dir_all(retained.parent().expect("parent")).expect("rm parent");
    before.assert_unchanged_then_sibling(&root, "locked");
}

#[test]
fn a_command_that_removes_or_rewrites_its_git_file_still_gives_its_candidate() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let tmp = tempfile::tempdir().expect("tempdir");
    for (id, script) in [
        ("no-git-file", "echo x > a.txt && rm .git"),
        (
            "rewritten-git-file",
            "echo x > a.txt && echo 'gitdir: /nonexistent/satyrn' > .git",
        ),
        ("git-dir-instead", "echo x > a.txt && rm .git && mkdir .git"),
    ] {
        let before = Caller::capture(&root);
        let contract = ContractFile::any(id);
        let argv: Vec<&OsStr> = sh(script).into_iter().map(OsStr::new).collect();
        let run = deliver_with_tmp(&root, &contract.path, tmp.path(), &argv);
        assert_eq!(run.code(), "OK", "{id}: {}", run.stdout);
        assert_eq!(run.receipt["paths"], serde_json::json!(["a.txt"]), "{id}");
        assert_eq!(run.receipt["retained_worktree"], Value::Null, "{id}");
        let name = format!("refs/satyrn/candidates/{id}/head");
        assert_eq!(show(&root, &format!("{name}:a.txt")), b"x\n", "{id}");
        before.assert_unchanged(&root, Some(&name));
        assert_empty_tmp(tmp.path());
    }
}

#[test]
fn a_registration_that_cannot_be_pruned_is_reported_exactly_and_never_auto_pruned() {
    // The command points its worktree's registration at another existing worktree file, so
    // neither `worktree remove` nor `prune` can drop it: the directory is cleaned, the
    // registration and the temporary directory are retained and named.
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let before = Caller::capture(&root);
    let tmp = tempfile::tempdir().expect("tempdir");
    let decoy = tempfile::tempdir().expect("tempdir");
    std::fs::write(decoy.path().join(".git"), "gitdir: /nonexistent\n").expect("decoy");
    let contract = ContractFile::any("unprunable");
    let script = format!(
        "echo x > a.txt && d=$(git rev-parse --absolute-git-dir) && echo '{}/.git' > \"$d/gitdir\" && rm .git",
        decoy.path().display()
    );
    let argv: Vec<&OsStr> = sh(&script).into_iter().map(OsStr::new).collect();
    let run = deliver_with_tmp(&root, &contract.path, tmp.path(), &argv);
    assert_eq!(run.code(), "CLEANUP_FAILED", "{}", run.stdout);
    assert_eq!(run.receipt["candidate_ref"], Value::Null);
    let message = run.receipt["message"].as_str().expect("message");
    let retained = PathBuf::from(run.receipt["retained_worktree"].as_str().expect("retained"));
    let parent = retained.parent().expect("parent").to_path_buf();
    assert!(
        message.contains(&format!(
            "the worktree registration of {}",
            retained.display()
        )),
        "{message}"
    );
    assert!(
        !message.contains("the worktree directory"),
        "the directory was removed: {message}"
    );
    assert!(
        message.contains(&format!("the temporary directory {}", parent.display())),
        "{message}"
    );
    assert!(message.contains("pending result was OK"), "{message}");
    assert!(!retained.exists(), "the worktree directory was cleaned");
    assert!(parent.exists() && !parent.join("owner").exists());
    let decoy_path = decoy.path().to_string_lossy().into_owned();
    assert!(
        git_worktrees(&root).contains(&decoy_path),
        "registration kept"
    );
    assert!(
        message.contains("git's administrative directory"),
        "{message}"
    );
    // A later deliver leaves what the receipt reported as retained alone.
    let contract = ContractFile::any("after-unprunable");
    let argv = [
        OsStr::new("sh"),
        OsStr::new("-c"),
        OsStr::new("echo y > b.txt"),
    ];
    let later = deliver_with_tmp(&root, &contract.path, tmp.path(), &argv);
    assert_eq!(later.code(), "OK", "{}", later.stdout);
    assert!(parent.exists(), "a retained attempt was pruned");
    assert!(
        git_worktrees(&root).contains(&decoy_path),
        "registration kept"
    );
    // The user's way out: remove the registration the command redirected.
    std::fs::remove_file(decoy.path().join(".git")).expect("rm decoy");
    git_ok(&root, &["worktree", "prune"]);
    std::fs::remove_dir_all(&parent).expect("rm parent");
    before.assert_unchanged(&root, Some("refs/satyrn/candidates/after-unprunable/head"));
}

#[test]
fn two_racing_delivers_give_exactly_one_ok_and_one_candidate_exists() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let sync = tempfile::tempdir().expect("tempdir");
    for round in 0..10 {
        let id = format!("race-{round}");
        let before = Caller::capture(&root);
        let contract = ContractFile::any(&id);
        let mut children = Vec::new();
        for (me, other) in [("one", "two"), ("two", "one")] {
            let mine = sync.path().join(format!("{round}-{me}"));
            let theirs = sync.path().join(format!("{round}-{other}"));
            let script = format!(
                "echo {me} > a.txt; touch '{}'; n=0; while [ ! -e '{}' ]; do n=$((n+1)); [ $n -gt 500 ] && exit 9; sleep 0.01; done",
                mine.display(),
                theirs.display()
            );
            let argv: Vec<&OsStr> = sh(&script).into_iter().map(OsStr::new).collect();
            children.push(
                deliver_cmd(&root, &contract.path, &[], &argv)
                    .spawn()
                    .expect("spawn"),
            );
        }
        let mut codes: Vec<String> = children
            .into_iter()
            .map(|c| {
                finish(c.wait_with_output().expect("wait"), Duration::ZERO)
                    .code()
                    .to_owned()
            })
            .collect();
        codes.sort();
        assert_eq!(codes, ["CANDIDATE_EXISTS", "OK"], "round {round}");
        before.assert_unchanged(&root, Some(&format!("refs/satyrn/candidates/{id}/head")));
    }
}

// ---------------------------------------------------------------------------------------
// The renderer against the committed fixtures

#[test]
fn renderer_matches_the_fixture_bytes() {
    use satyrn_code::Code;
    use satyrn_deliver::receipt::{Outcome, Receipt};
    let mut full = Receipt::new(
        Outcome::Discarded,
        Code::CleanupFailed,
        "kept \"it\"\n",
        "/r/é",
    );
    full.contract_id = Some("id-1".to_owned());
    full.base_commit = Some("a".repeat(40));
    full.candidate_ref = Some("refs/satyrn/candidates/id-1/head".to_owned());
    full.candidate_commit = Some("b".repeat(40));
    full.paths = vec!["a.txt".to_owned(), "é.txt".to_owned()];
    full.retained_worktree = Some("/tmp/satyrn-deliver-1/worktree".to_owned());
    full.exit_code = Some(0);
    full.signal = Some(9);
    assert_fixture("render_every_field.json", &format!("{}\n", full.to_json()));
    let empty = Receipt::new(Outcome::Refused, Code::ContractUnreadable, "m", "/r");
    assert_fixture("render_empty.json", &format!("{}\n", empty.to_json()));
    assert_eq!(empty.exit_status(), 3);
    assert_eq!(
        Receipt::new(Outcome::CandidateCreated, Code::Ok, "", "/").exit_status(),
        0
    );
    assert_eq!(
        Receipt::new(Outcome::Discarded, Code::Interrupted, "", "/").exit_status(),
        8
    );
}

// ---------------------------------------------------------------------------------------
// Edges

#[test]
fn an_unborn_head_is_git_failed_before_anything_is_created() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("repo");
    std::fs::create_dir(&root).expect("mkdir");
    git_ok(&root, &["init", "-q", "-b", "main", "."]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let contract = ContractFile::any("unborn");
    let argv = [OsStr::new("true")];
    let run = deliver_with_tmp(&root, &contract.path, tmp.path(), &argv);
    assert_no_candidate(&run, "GIT_FAILED", 8);
    assert_eq!(run.outcome(), "refused");
    assert_empty_tmp(tmp.path());
    commit_all(&root, "first");
    sibling_success(&root, "unborn");
}

#[test]
fn a_temporary_directory_inside_a_worktree_is_refused() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n"), (".gitignore", b"tmp/\n")]);
    let root = repo.path();
    std::fs::create_dir(root.join("tmp")).expect("mkdir");
    let before = Caller::capture(&root);
    let contract = ContractFile::any("tmpdir");
    let argv = [
        OsStr::new("sh"),
        OsStr::new("-c"),
        OsStr::new("echo x > a.txt"),
    ];
    let run = deliver_with_tmp(&root, &contract.path, &root.join("tmp"), &argv);
    assert_no_candidate(&run, "GIT_FAILED", 8);
    assert_eq!(run.outcome(), "refused");
    assert!(crate::support::dir_entries(&root.join("tmp")).is_empty());
    before.assert_unchanged_then_sibling(&root, "tmpdir");
}

#[test]
fn large_command_output_is_spooled_to_stderr_never_stdout() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let contract = ContractFile::any("loud");
    // 2 MiB on stdout and 1 MiB on stderr, more than any pipe buffer.
    let run = deliver(
        &root,
        &contract.path,
        &sh(
            "head -c 2097152 /dev/zero | tr '\\0' o; head -c 1048576 /dev/zero | tr '\\0' e >&2; echo x > a.txt",
        ),
    );
    assert_eq!(run.code(), "OK", "{}", &run.stdout);
    assert_eq!(run.stderr.bytes().filter(|b| *b == b'o').count(), 2_097_152);
    assert!(run.stderr.bytes().filter(|b| *b == b'e').count() >= 1_048_576);
}

#[test]
fn a_command_that_deletes_its_worktree_leaves_nothing_registered() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let before = Caller::capture(&root);
    let contract = ContractFile::any("selfdestruct");
    let run = deliver(&root, &contract.path, &sh("cd .. && rm -rf worktree"));
    assert_discarded(&run, "GIT_FAILED");
    before.assert_unchanged_then_sibling(&root, "selfdestruct");
}

#[test]
fn replace_objects_are_ignored() {
    let repo = FixedRepo::with_files(&[("a.txt", b"A\n")]);
    let root = repo.path();
    let a = git_ok(&root, &["rev-parse", "HEAD"]).trim().to_owned();
    git_ok(&root, &["checkout", "-q", "-b", "other"]);
    std::fs::write(root.join("a.txt"), "B\n").expect("write");
    commit_all(&root, "b");
    let b = git_ok(&root, &["rev-parse", "HEAD"]).trim().to_owned();
    git_ok(&root, &["checkout", "-q", "main"]);
    git_ok(&root, &["replace", &a, &b]);
    // Control: ordinary git now sees B's content at A.
    assert_eq!(show(&root, &format!("{a}:a.txt")), b"B\n");
    let before = Caller::capture(&root);
    let contract = ContractFile::any("replaced");
    let run = deliver(&root, &contract.path, &sh("echo x > new.txt"));
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    assert_eq!(run.receipt["base_commit"], a.as_str());
    assert_eq!(run.receipt["paths"], serde_json::json!(["new.txt"]));
    let out = git(&root)
        .env("GIT_NO_REPLACE_OBJECTS", "1")
        .args([
            "cat-file",
            "blob",
            "refs/satyrn/candidates/replaced/head:a.txt",
        ])
        .output()
        .expect("git");
    assert_eq!(
        out.stdout, b"A\n",
        "the candidate was built on the replacement"
    );
    before.assert_unchanged(&root, Some("refs/satyrn/candidates/replaced/head"));
}
