//! `deliver` under real system-call failures (`faults.rs`), for what a healthy machine never
//! does: a directory that cannot be listed or removed at cleanup, a kernel without
//! `pidfd_open`. The faults apply to `deliver` and to every git it runs. Each run ends in
//! one receipt that says exactly what happened and what is left; nothing is published; and
//! once the leftovers are removed as `docs/delivery.md` says, the caller's repository is as
//! before and the same delivery without the fault succeeds.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::deliver_support::*;
use crate::faults::{Fault, inject};
use crate::support::{ContractFile, dir_entries, git_ok};

fn deliver_faulty(root: &Path, id: &str, tmp: &Path, faults: &[Fault]) -> Run {
    let contract = ContractFile::any(id);
    let argv = [
        OsStr::new("sh"),
        OsStr::new("-c"),
        OsStr::new("echo x > a.txt"),
    ];
    let mut cmd = deliver_cmd(root, &contract.path, &[], &argv);
    cmd.env("TMPDIR", tmp);
    inject(&mut cmd, faults);
    finish(
        cmd.output().expect("run deliver"),
        std::time::Duration::ZERO,
    )
}

/// A cleanup that fails — the worktree's files cannot be listed (`getdents64`), unlinked
/// (`unlinkat`) or its directories removed (`rmdir`), for git and for `deliver` alike — is
/// `CLEANUP_FAILED` (exit 8): nothing published although the command succeeded, and the
/// receipt names every thing kept, each of which exists.
#[test]
fn a_cleanup_that_fails_publishes_nothing_and_names_exactly_what_is_kept() {
    let cases = [
        ("getdents64", Fault::always(libc::SYS_getdents64, libc::EIO)),
        ("unlinkat", Fault::always(libc::SYS_unlinkat, libc::EIO)),
        ("rmdir", crate::faults::rmdir(libc::EIO)),
    ];
    for (call, fault) in cases {
        let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
        let root = repo.path();
        let before = Caller::capture(&root);
        let tmp = tempfile::tempdir().expect("tempdir");
        let run = deliver_faulty(&root, "kept", tmp.path(), &[fault]);
        assert_eq!(
            (run.status, run.code(), run.outcome()),
            (8, "CLEANUP_FAILED", "discarded"),
            "{call}: {}",
            run.stdout
        );
        assert_eq!(run.receipt["candidate_ref"], serde_json::Value::Null);
        assert_eq!(run.receipt["candidate_commit"], serde_json::Value::Null);
        assert_eq!(run.receipt["exit_code"], 0, "{call}: the command succeeded");
        let message = run.receipt["message"].as_str().expect("message");
        assert!(
            message.contains("pending result was OK"),
            "{call}: {message}"
        );
        assert!(message.contains("Input/output error"), "{call}: {message}");
        let kept = message
            .split_once("retained: ")
            .and_then(|(_, rest)| rest.split_once("; nothing was published"))
            .map(|(kept, _)| kept)
            .unwrap_or_else(|| panic!("{call}: no list of what is kept: {message}"));
        // Every directory the list names exists, and a registration it names is listed by git.
        let after = |phrase: &str| -> Option<PathBuf> {
            let (_, rest) = kept.split_once(phrase)?;
            let end = rest.find([' ', ',', ')']).unwrap_or(rest.len());
            Some(PathBuf::from(&rest[..end]))
        };
        for phrase in [
            "the temporary directory ",
            "the worktree directory ",
            "git's administrative directory ",
        ] {
            if let Some(path) = after(phrase) {
                assert!(
                    path.is_dir(),
                    "{call}: {} is named but gone",
                    path.display()
                );
            }
        }
        let parent = dir_entries(tmp.path());
        assert_eq!(
            parent.len(),
            1,
            "{call}: one attempt directory kept: {parent:?}"
        );
        assert_eq!(
            after("the temporary directory "),
            Some(tmp.path().join(&parent[0])),
            "{call}: {kept}"
        );
        // A registration is git's entry, or what is left of its administrative directory.
        let registered = after("the worktree registration of ");
        let listed = registered
            .as_ref()
            .is_some_and(|w| git_worktrees(&root).contains(&w.display().to_string()));
        if registered.is_some() {
            assert!(
                listed || after("git's administrative directory ").is_some(),
                "{call}: {kept}"
            );
        }
        match run.receipt["retained_worktree"].as_str() {
            Some(worktree) => assert!(kept.contains(worktree), "{call}: {kept}"),
            None => assert!(
                registered.is_none() && after("the worktree directory ").is_none(),
                "{call}: {kept}"
            ),
        }

        // Removing what is kept, as the documentation says, restores the caller's repository.
        if let Some(worktree) = registered.as_ref().filter(|_| listed) {
            git_ok(
                &root,
                &[
                    "worktree",
                    "remove",
                    "--force",
                    worktree.to_str().expect("utf-8"),
                ],
            );
        }
        std::fs::remove_dir_all(tmp.path().join(&parent[0])).expect("remove the kept directory");
        git_ok(&root, &["worktree", "prune"]);
        before.assert_unchanged(&root, None);
        sibling_success(&root, "kept");
    }
}

/// A kernel without `pidfd_open` (before Linux 5.3): `deliver` cannot watch its command,
/// says so, stops it and cleans up — no candidate, no worktree, nothing left in `TMPDIR`.
#[test]
fn a_kernel_without_pidfd_open_fails_the_delivery_cleanly() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let before = Caller::capture(&root);
    let tmp = tempfile::tempdir().expect("tempdir");
    let fault = Fault::always(libc::SYS_pidfd_open, libc::ENOSYS);
    let run = deliver_faulty(&root, "nopidfd", tmp.path(), &[fault]);
    assert_discarded(&run, "GIT_FAILED");
    let message = run.receipt["message"].as_str().expect("message");
    assert!(
        message.contains("cannot wait for the command: Function not implemented"),
        "{message}"
    );
    assert_eq!(run.receipt["retained_worktree"], serde_json::Value::Null);
    assert!(dir_entries(tmp.path()).is_empty(), "left in TMPDIR");
    before.assert_unchanged_then_sibling(&root, "nopidfd");
}

/// A `TMPDIR` that cannot hold the attempt — missing, a file, or a directory where `mkdir`
/// fails with `EIO` — is refused before anything is created (`GIT_FAILED`, outcome
/// `refused`), naming the directory and the error; the caller's repository is unchanged
/// and the same delivery with a usable `TMPDIR` succeeds.
#[test]
fn a_tmpdir_that_cannot_hold_the_attempt_is_refused_before_anything_is_created() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let before = Caller::capture(&root);
    let healthy = tempfile::tempdir().expect("tempdir");
    let file = healthy.path().join("a-file");
    std::fs::write(&file, b"x").expect("write");
    let missing = healthy.path().join("missing");
    let cases: [(&Path, Vec<Fault>, String); 3] = [
        (
            &missing,
            vec![],
            format!(
                "temporary directory {} is unusable: No such file or directory",
                missing.display()
            ),
        ),
        (
            &file,
            vec![],
            format!(
                "cannot create a temporary directory in {}: Not a directory",
                file.display()
            ),
        ),
        (
            healthy.path(),
            vec![crate::faults::mkdir(libc::EIO)],
            format!(
                "cannot create a temporary directory in {}: Input/output error",
                healthy.path().display()
            ),
        ),
    ];
    for (tmp, faults, said) in cases {
        let run = deliver_faulty(&root, "tmp", tmp, &faults);
        assert_no_candidate(&run, "GIT_FAILED", 8);
        assert_eq!(run.outcome(), "refused", "{}", run.stdout);
        let message = run.receipt["message"].as_str().expect("message");
        assert!(message.starts_with(&said), "{message}");
        before.assert_unchanged(&root, None);
    }
    assert_eq!(dir_entries(healthy.path()), ["a-file"]);
    let run = deliver_faulty(&root, "tmp", healthy.path(), &[]);
    assert_eq!(run.code(), "OK", "{}", run.stdout);
}

/// A series whose attempts cannot be started (every `clone` fails with `EAGAIN`, as when the
/// user's process limit is reached) reports each attempt's failure in its summary and exits
/// 1; nothing is created. The sibling: the same series on a healthy machine.
#[test]
fn a_series_that_cannot_start_its_attempts_reports_each_and_creates_nothing() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let before = Caller::capture(&root);
    let contract = ContractFile::any("series");
    let argv = [
        OsStr::new("sh"),
        OsStr::new("-c"),
        OsStr::new("echo x > a.txt"),
    ];
    let no_process = crate::faults::no_new_process(libc::EAGAIN);
    let mut cmd = deliver_cmd(&root, &contract.path, &["--attempts", "2"], &argv);
    inject(&mut cmd, &no_process);
    let out = cmd.output().expect("run deliver");
    assert_eq!(out.status.code(), Some(1));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one summary line");
    assert_eq!(summary["code"], "INTERNAL_ERROR");
    assert_eq!(summary["message"], "0 of 2 attempts created a candidate");
    let attempts = summary["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 2);
    for (i, attempt) in attempts.iter().enumerate() {
        assert_eq!(attempt["attempt"], i + 1);
        assert_eq!(attempt["receipt"], serde_json::Value::Null);
        assert_eq!(
            attempt["message"],
            "cannot start the attempt: Resource temporarily unavailable (os error 11)"
        );
    }
    before.assert_unchanged(&root, None);
    let out = deliver_cmd(&root, &contract.path, &["--attempts", "2"], &argv)
        .output()
        .expect("run deliver");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
