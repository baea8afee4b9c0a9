//! `deliver` and the caller's repository, which the attempt's worktree shares: git use in
//! the worktree that changes it is named (`REPOSITORY_CHANGED`), and nothing the command
//! leaves behind makes the work after it hang or run unbounded (`SPECIAL_FILE`,
//! `CANDIDATE_TOO_LARGE`, `FINISH_TIMEOUT`). Real git, real FIFOs, real processes.

use std::ffi::OsStr;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::deliver_support::*;
use crate::support::{ContractFile, git, git_ok};

/// How long a `deliver` that must end by itself may take before the test gives up on it:
/// it bounds a hang, not speed.
const ENDS_WITHIN: Duration = Duration::from_secs(90);

/// git with an identity, as a command in the worktree would run it.
const GIT: &str = "git -c user.name=t -c user.email=t@example.invalid";

fn two_commit_repo() -> FixedRepo {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n"), ("src/main.txt", b"main\n")]);
    std::fs::write(repo.path().join("a.txt"), "a2\n").expect("write");
    commit_all(&repo.path(), "second");
    repo
}

fn run_in(root: &Path, id: &str, opts: &[&str], script: &str) -> Run {
    run_with_home(root, id, opts, script, None)
}

/// [`run_in`] with `deliver`'s (and so the command's) `HOME` set to `home`.
fn run_with_home(root: &Path, id: &str, opts: &[&str], script: &str, home: Option<&Path>) -> Run {
    let contract = ContractFile::any(id);
    let argv: Vec<&OsStr> = sh(script).into_iter().map(OsStr::new).collect();
    let t0 = Instant::now();
    let mut cmd = deliver_cmd(root, &contract.path, opts, &argv);
    if let Some(home) = home {
        cmd.env("HOME", home).env_remove("XDG_CONFIG_HOME");
    }
    let child = cmd.spawn().expect("spawn deliver");
    wait_ended(child, ENDS_WITHIN, t0)
}

fn refs(root: &Path) -> String {
    git_ok(root, &["for-each-ref", "--format=%(refname) %(objectname)"])
}

#[test]
fn git_use_in_the_worktree_that_changes_the_callers_repository_is_named() {
    let cases: [(&str, String, &str); 27] = [
        (
            "stash",
            format!("echo w >> a.txt; {GIT} stash -q"),
            "ref refs/stash was created",
        ),
        (
            "branch",
            "git branch topic".into(),
            "ref refs/heads/topic was created",
        ),
        ("tag", "git tag v9".into(), "ref refs/tags/v9 was created"),
        (
            "note",
            format!("{GIT} notes add -m n"),
            "ref refs/notes/commits was created",
        ),
        (
            "remote",
            "git remote add origin /nowhere".into(),
            ".git/config changed",
        ),
        (
            "config",
            "git config user.name mallory".into(),
            ".git/config changed",
        ),
        (
            "worktree",
            "git worktree add -q --detach ../other".into(),
            ".git/worktrees/other was created",
        ),
        (
            "moved",
            "git update-ref refs/heads/main HEAD~1".into(),
            "ref refs/heads/main moved from",
        ),
        (
            "deleted",
            "git update-ref -d refs/heads/main".into(),
            "ref refs/heads/main was deleted",
        ),
        (
            "hook",
            "printf '#!/bin/sh\\n' > \"$(git rev-parse --git-common-dir)/hooks/pre-commit\"".into(),
            ".git/hooks/pre-commit was created",
        ),
        (
            "exclude",
            "echo '*.c' >> \"$(git rev-parse --git-common-dir)/info/exclude\"".into(),
            ".git/info/exclude changed",
        ),
        (
            "caller-head",
            "echo 'ref: refs/heads/gone' > \"$(git rev-parse --git-common-dir)/HEAD\"".into(),
            ".git/HEAD changed",
        ),
        ("index", "c=$(git rev-parse --git-common-dir); b=$(echo EVIL | git hash-object -w --stdin); GIT_DIR=$c GIT_INDEX_FILE=$c/index git update-index --cacheinfo 100644,$b,a.txt".into(), "the index of the caller's worktree changed"),
        ("merge", "c=$(git rev-parse --git-common-dir); git rev-parse HEAD > $c/MERGE_HEAD; echo m > $c/MERGE_MSG".into(), ".git/MERGE_HEAD was created"),
        ("rebase", "c=$(git rev-parse --git-common-dir); mkdir $c/rebase-merge; echo 'exec touch /tmp/pwned' > $c/rebase-merge/git-rebase-todo".into(), ".git/rebase-merge/git-rebase-todo was created"),
        ("include", "c=$(git rev-parse --git-common-dir); echo '[core]' > $c/extra.cfg; echo '    fsmonitor = touch /tmp/pwned' >> $c/extra.cfg".into(), "/extra.cfg changed"),
        ("objects", "c=$(git rev-parse --git-common-dir); o=$(git rev-parse other); rm -f $c/objects/$(echo $o | cut -c1-2)/$(echo $o | cut -c3-)".into(), "of ref refs/heads/other is gone from the object store"),
        ("journal", "c=$(git rev-parse --git-common-dir); mkdir -p $c/satyrn-temporaries; echo forged > $c/satyrn-temporaries/1-ab.entry".into(), ".git/satyrn-temporaries/1-ab.entry was created"),
        ("worktree-config", "c=$(git rev-parse --git-common-dir); echo '[core]' > $c/config.worktree".into(), ".git/config.worktree was created"),
        // A blob rewritten in place: `git show` in the caller's checkout then prints other
        // bytes under the same id (the second adversarial review: `OK` before).
        ("rewritten-object", "c=$(git rev-parse --git-common-dir); b=$(git rev-parse HEAD:a.txt); f=$c/objects/$(echo $b | cut -c1-2)/$(echo $b | cut -c3-); chmod u+w $f; printf 'blob 9\\0pwned!!!\\n' | python3 -c 'import zlib,sys;sys.stdout.buffer.write(zlib.compress(sys.stdin.buffer.read()))' > $f".into(), "was rewritten: its bytes now hash to"),
        ("reflog-fifo", "c=$(git rev-parse --git-common-dir); rm -f $c/logs/refs/heads/main; mkfifo $c/logs/refs/heads/main".into(), ".git/logs/refs/heads/main was replaced by a FIFO"),
        ("ref-lock", "c=$(git rev-parse --git-common-dir); touch $c/refs/heads/main.lock".into(), ".git/refs/heads/main.lock was created"),
        ("index-lock", "c=$(git rev-parse --git-common-dir); touch $c/index.lock".into(), ".git/index.lock was created"),
        ("commit-graph-fifo", "c=$(git rev-parse --git-common-dir); mkfifo $c/objects/info/commit-graph".into(), ".git/objects/info/commit-graph was created as a FIFO"),
        ("checkout", "c=$(git rev-parse --git-common-dir); echo x >> $c/../a.txt".into(), "the caller's checkout changed:  M a.txt"),
        ("clean-ignored", "c=$(git rev-parse --git-common-dir); git -C $c/.. clean -fdxq".into(), "the caller's ignored build/ was removed"),
        ("user-ignore", "mkdir -p \"$HOME/.config/git\"; echo '*' > \"$HOME/.config/git/ignore\"".into(), "/.config/git/ignore was created"),
    ];
    let home = tempfile::tempdir().expect("home");
    for (id, script, said) in cases {
        let repo = two_commit_repo();
        let root = repo.path();

        if id == "include" {
            std::fs::write(root.join(".git/extra.cfg"), "[core]\n").expect("extra.cfg");
            git_ok(&root, &["config", "include.path", "extra.cfg"]);
        }
        if id == "clean-ignored" {
            std::fs::write(root.join(".gitignore"), "build/\n").expect("ignore");
            commit_all(&root, "ignore build");
            std::fs::create_dir(root.join("build")).expect("build");
            std::fs::write(root.join("build/out.o"), "o\n").expect("out");
        }
        if id == "objects" {
            // A branch whose tip is a loose object only it names.
            git_ok(&root, &["checkout", "-q", "-b", "other"]);
            std::fs::write(root.join("only-other.txt"), "o\n").expect("write");
            commit_all(&root, "other");
            git_ok(&root, &["checkout", "-q", "main"]);
        }
        // The same change to a file alongside: the candidate would otherwise be `OK`.
        let run = run_with_home(
            &root,
            id,
            &[],
            &format!("echo edit >> src/main.txt; {script}"),
            Some(home.path()),
        );
        assert_discarded(&run, "REPOSITORY_CHANGED");
        let message = run.receipt["message"].as_str().expect("message");
        assert!(message.contains(said), "{id}: {message}");
        assert!(
            message.ends_with("nothing was published"),
            "{id}: {message}"
        );
        assert!(
            !refs(&root).contains("refs/satyrn/candidates/"),
            "{id}: a candidate ref was written"
        );
    }
}

/// A command that applies the caller's stash entry (or pops it and stores it back, which
/// leaves the stash's reflog as it was) carries the caller's work in progress into its
/// candidate: named, nothing published, the stash unchanged. The sibling: the command's own
/// `git stash` and `git stash pop` of its own edit, with the caller's entry beside it, `OK`.
#[test]
fn a_candidate_holding_the_callers_stashed_work_is_refused() {
    let repo = two_commit_repo();
    let root = repo.path();
    std::fs::write(root.join("a.txt"), "caller WIP secret\n").expect("write");
    git_ok(&root, &["stash", "-q"]);
    let stash = git_ok(&root, &["stash", "list", "--format=%H"]);
    for (id, script) in [
        (
            "apply",
            format!("{GIT} stash apply -q; echo x >> src/main.txt"),
        ),
        (
            "pop-store",
            format!(
                "s=$(git rev-parse stash@{{0}}); m=$(git log -1 --format=%gs -g refs/stash); {GIT} stash pop -q; git stash store -m \"$m\" $s; echo x >> src/main.txt"
            ),
        ),
    ] {
        let run = run_in(&root, id, &[], &script);
        assert_discarded(&run, "REPOSITORY_CHANGED");
        let message = run.receipt["message"].as_str().expect("message");
        assert!(
            message.contains("the candidate holds the caller's stashed change of a.txt (stash@{0}"),
            "{id}: {message}"
        );
        assert_eq!(
            git_ok(&root, &["stash", "list", "--format=%H"]),
            stash,
            "{id}"
        );
    }
    let run = run_in(
        &root,
        "own-stash",
        &[],
        &format!("echo mine >> src/main.txt; {GIT} stash -q; {GIT} stash pop -q"),
    );
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    assert_eq!(git_ok(&root, &["stash", "list", "--format=%H"]), stash);
}

/// What rewrites git's own storage without changing anything the caller sees — `git gc`,
/// `git pack-refs --all`, `git status`, `git log` in the worktree — is no change.
#[test]
fn housekeeping_in_the_worktree_is_not_a_change_of_the_callers_repository() {
    let repo = two_commit_repo();
    let root = repo.path();
    let run = run_in(
        &root,
        "housekeeping",
        &[],
        "echo edit >> src/main.txt; git status -s >/dev/null; git log --oneline >/dev/null; git pack-refs --all; git gc -q",
    );
    assert_eq!(run.code(), "OK", "{}", run.stdout);
}

/// A real git in the caller's checkout holding its locks (`update-ref --stdin` after
/// `prepare`: `refs/heads/packed.lock` and, for the delete of a packed ref,
/// `packed-refs.lock`) until it is told to abort.
struct HeldLocks {
    git: std::process::Child,
    answers: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
    lock: std::path::PathBuf,
}

impl HeldLocks {
    fn take(root: &Path) -> Self {
        use std::io::{BufRead, Write};
        let mut child = std::process::Command::new("git")
            .args(["update-ref", "--stdin"])
            .current_dir(root)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("spawn update-ref");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(b"start\ndelete refs/heads/packed\nprepare\n")
            .expect("start");
        let mut lines = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
        for want in ["start: ok", "prepare: ok"] {
            assert_eq!(lines.next().expect("line").expect("read"), want);
        }
        child.stdin = Some(stdin);
        let lock = root.join(".git/packed-refs.lock");
        assert!(lock.exists());
        Self {
            git: child,
            answers: lines,
            lock,
        }
    }

    fn release(mut self) {
        use std::io::Write;
        let mut stdin = self.git.stdin.take().expect("stdin");
        stdin.write_all(b"abort\n").expect("abort");
        drop(stdin);
        let answer = self.answers.next().expect("line").expect("read");
        assert_eq!(answer, "abort: ok");
        assert!(self.git.wait().expect("wait").success());
        assert!(!self.lock.exists());
    }
}

/// A lock that a live git outside the attempt holds for a moment (another `deliver`, the
/// caller's own git) is no change: taken before the command and released while it runs,
/// or taken while it runs and released within the settle time after it — each `OK` (each
/// `REPOSITORY_CHANGED`, "was removed" or "was created", before). The sibling: a lock
/// still held past the settle time is named as left behind, and once its git lets go the
/// repository is as it was.
#[test]
fn a_lock_a_live_git_holds_for_a_moment_is_no_change_and_one_left_behind_is() {
    let repo = two_commit_repo();
    let root = repo.path();
    git_ok(&root, &["branch", "packed"]);
    git_ok(&root, &["pack-refs", "--all"]);
    let marks = tempfile::tempdir().expect("marks");
    let lock = root.join(".git/packed-refs.lock");
    // A deliver whose command edits a file, says it started, and ends once `until` (a
    // shell test of the lock) holds; returned once the command has started.
    let start = |id: &str, until: &str| {
        let started = marks.path().join(format!("{id}.started"));
        let script = format!(
            "echo edit >> src/main.txt; touch '{}'; until [ {until} '{}' ]; do sleep 0.01; done",
            started.display(),
            lock.display()
        );
        let contract = ContractFile::any(id);
        let argv: Vec<&OsStr> = sh(&script).into_iter().map(OsStr::new).collect();
        let child = deliver_cmd(&root, &contract.path, &[], &argv)
            .spawn()
            .expect("spawn deliver");
        let t0 = Instant::now();
        wait_for(&started);
        (contract, child, t0)
    };

    // Held before, released while the command runs.
    let before = Caller::capture(&root);
    let held = HeldLocks::take(&root);
    let (_c, child, t0) = start("released", "! -e");
    held.release();
    let run = wait_ended(child, ENDS_WITHIN, t0);
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    before.assert_unchanged_but_refs(&root, &["refs/satyrn/candidates/released/head".to_owned()]);

    // Taken while the command runs, released a moment after it ended.
    let (_c, child, t0) = start("taken", "-e");
    let held = HeldLocks::take(&root);
    std::thread::sleep(Duration::from_millis(300));
    held.release();
    let run = wait_ended(child, ENDS_WITHIN, t0);
    assert_eq!(run.code(), "OK", "{}", run.stdout);

    // The sibling: held past the settle time.
    let before = Caller::capture(&root);
    let (_c, child, t0) = start("left", "-e");
    let held = HeldLocks::take(&root);
    let run = wait_ended(child, ENDS_WITHIN, t0);
    assert_discarded(&run, "REPOSITORY_CHANGED");
    let message = run.receipt["message"].as_str().expect("message");
    assert!(
        message.contains(".git/packed-refs.lock was created and left behind"),
        "{message}"
    );
    assert!(
        message.contains(".git/refs/heads/packed.lock was created and left behind"),
        "{message}"
    );
    held.release();
    before.assert_unchanged(&root, None);
}

#[test]
fn a_stash_pop_in_the_worktree_names_the_callers_entry_and_how_to_restore_it() {
    let repo = two_commit_repo();
    let root = repo.path();
    std::fs::write(root.join("a.txt"), "work in progress\n").expect("write");
    git_ok(&root, &["stash", "-q"]);
    let stash_before = git_ok(&root, &["stash", "list", "--format=%H %s"]);
    let entry = git_ok(&root, &["rev-parse", "refs/stash"]);
    let entry = entry.trim();
    let run = run_in(&root, "pop", &[], &format!("{GIT} stash pop -q"));
    assert_discarded(&run, "REPOSITORY_CHANGED");
    let message = run.receipt["message"].as_str().expect("message");
    let restore = format!("git stash store -m restored {entry}");
    assert!(
        message.contains(&format!("stash entry {entry} was dropped")),
        "{message}"
    );
    assert!(message.contains(&restore), "{message}");
    // The command took it; the receipt's own words bring it back.
    assert_eq!(git_ok(&root, &["stash", "list"]), "");
    git_ok(&root, &["stash", "store", "-m", "restored", entry]);
    assert_eq!(
        git_ok(&root, &["stash", "list", "--format=%H"]).trim(),
        stash_before.split(' ').next().expect("hash")
    );
    // The sibling: the same repository with its stash, an ordinary command, `OK`, the stash
    // untouched.
    let stash = git_ok(&root, &["stash", "list", "--format=%H"]);
    let run = run_in(&root, "pop-sibling", &[], "echo edit >> src/main.txt");
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    assert_eq!(git_ok(&root, &["stash", "list", "--format=%H"]), stash);
}

/// Where a command can leave a FIFO that `deliver`'s own git would open.
fn fifo_placements() -> [(&'static str, &'static str, &'static str); 9] {
    [
        ("gitignore", "mkfifo .gitignore", "SPECIAL_FILE"),
        ("src-gitignore", "mkfifo src/.gitignore", "SPECIAL_FILE"),
        (
            "gitattributes",
            "mkdir -p docs && mkfifo docs/.gitattributes",
            "SPECIAL_FILE",
        ),
        ("gitmodules", "mkfifo .gitmodules", "SPECIAL_FILE"),
        (
            "index",
            "g=$(git rev-parse --git-dir); rm \"$g/index\"; mkfifo \"$g/index\"",
            "SPECIAL_FILE",
        ),
        (
            "exclude",
            "c=$(git rev-parse --git-common-dir); rm -f \"$c/info/exclude\"; mkfifo \"$c/info/exclude\"",
            "REPOSITORY_CHANGED",
        ),
        (
            "packed-refs",
            "c=$(git rev-parse --git-common-dir); git pack-refs --all; rm \"$c/packed-refs\"; mkfifo \"$c/packed-refs\"",
            "REPOSITORY_CHANGED",
        ),
        (
            "include",
            "mkfifo ../fifo; git config include.path \"$PWD/../fifo\"",
            "REPOSITORY_CHANGED",
        ),
        (
            "worktree-head",
            "g=$(git rev-parse --git-dir); rm \"$g/HEAD\"; mkfifo \"$g/HEAD\"",
            "SPECIAL_FILE",
        ),
    ]
}

#[test]
fn a_fifo_where_git_would_open_it_never_hangs_deliver() {
    for (id, script, code) in fifo_placements() {
        eprintln!("placement {id}");
        let repo = two_commit_repo();
        let root = repo.path();
        let head = git_ok(&root, &["rev-parse", "HEAD"]);
        // A generous --timeout: the refusal comes from looking, not from waiting it out.
        let run = run_in(
            &root,
            id,
            &["--timeout", "60"],
            &format!("echo edit >> src/main.txt; {script}"),
        );
        assert_discarded(&run, code);
        assert!(
            run.elapsed < Duration::from_secs(30),
            "{id}: took {:?}",
            run.elapsed
        );
        let message = run.receipt["message"].as_str().expect("message");
        assert!(
            message.contains("FIFO")
                || message.contains("replaced by a FIFO")
                || message.contains("config changed"),
            "{id}: {message}"
        );
        // Undo what the command did to the caller's repository, then the sibling succeeds.
        let common = root.join(".git");
        for fifo in ["info/exclude", "packed-refs"] {
            let path = common.join(fifo);
            if path.symlink_metadata().is_ok_and(|m| !m.is_file()) {
                std::fs::remove_file(&path).expect("remove fifo");
            }
        }
        let _ = git(&root)
            .args(["config", "--unset", "include.path"])
            .output();
        // `pack-refs` then a FIFO for `packed-refs` took the branch with it.
        git_ok(&root, &["update-ref", "refs/heads/main", head.trim()]);
        sibling_success(&root, &format!("{id}-sibling"));
    }
}

#[test]
fn a_huge_new_file_is_refused_before_git_hashes_it() {
    let repo = two_commit_repo();
    let root = repo.path();
    let objects = || git_ok(&root, &["count-objects", "-v"]);
    let before = objects();
    let run = run_in(
        &root,
        "huge",
        &["--timeout", "60"],
        "echo edit >> src/main.txt; truncate -s 8G big",
    );
    assert_discarded(&run, "CANDIDATE_TOO_LARGE");
    let message = run.receipt["message"].as_str().expect("message");
    assert!(
        message.starts_with("big is 8589934592 bytes, over the 16777216 bytes"),
        "{message}"
    );
    assert_eq!(
        objects(),
        before,
        "nothing was written to the caller's object store"
    );
    // At the limit it is staged; an ignored huge file is not the candidate's.
    let run = run_in(
        &root,
        "huge-sibling",
        &["--timeout", "60"],
        "truncate -s 16777216 at-limit; mkdir target; echo target/ > .gitignore; truncate -s 8G target/huge",
    );
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    assert_eq!(
        run.receipt["paths"],
        serde_json::json!([".gitignore", "at-limit"])
    );
}

/// A clean filter the caller configured (legitimately, before the command) that hangs,
/// and whose `setsid` child would outlive `deliver`.
fn hanging_filter(root: &Path, marks: &Path) {
    std::fs::write(root.join(".gitattributes"), "*.slow filter=slow\n").expect("attributes");
    commit_all(root, "attributes");
    let script = marks.join("filter.sh");
    std::fs::write(
        &script,
        format!(
            "setsid sleep 300 </dev/null >/dev/null 2>&1 &\necho $! > '{}'\nsleep 300\n",
            marks.join("escaped").display()
        ),
    )
    .expect("filter script");
    git_ok(
        root,
        &[
            "config",
            "filter.slow.clean",
            &format!("sh '{}'", script.display()),
        ],
    );
    git_ok(root, &["config", "filter.slow.smudge", "cat"]);
}

#[test]
fn a_git_that_hangs_after_the_command_is_stopped_at_the_deadline_with_its_strays() {
    let repo = two_commit_repo();
    let root = repo.path();
    let marks = tempfile::tempdir().expect("tempdir");
    hanging_filter(&root, marks.path());
    let run = run_in(&root, "slow", &["--timeout", "1"], "echo x > x.slow");
    assert_discarded(&run, "FINISH_TIMEOUT");
    let message = run.receipt["message"].as_str().expect("message");
    assert!(message.contains("git add"), "{message}");
    // The floor (10 s) and the group's grace (5 s) bound it, with room for a slow machine.
    assert!(
        run.elapsed < Duration::from_secs(40),
        "took {:?}",
        run.elapsed
    );
    assert_all_stopped(&[&marks.path().join("escaped")]);
    // The sibling: the same filter on a file it does not match.
    let run = run_in(
        &root,
        "slow-sibling",
        &["--timeout", "1"],
        "echo x > x.fast",
    );
    assert_eq!(run.code(), "OK", "{}", run.stdout);
}

#[test]
fn sigterm_during_a_hanging_git_after_the_command_ends_deliver_promptly() {
    let repo = two_commit_repo();
    let root = repo.path();
    let marks = tempfile::tempdir().expect("tempdir");
    hanging_filter(&root, marks.path());
    let contract = ContractFile::any("term");
    let argv: Vec<&OsStr> = sh("echo x > x.slow").into_iter().map(OsStr::new).collect();
    let t0 = Instant::now();
    let child = deliver_cmd(&root, &contract.path, &["--timeout", "600"], &argv)
        .spawn()
        .expect("spawn");
    // The stray's pid written in full, not only its file created: a signal between the
    // two would stop the filter before it named the stray this test then looks for.
    read_pid(&marks.path().join("escaped"));
    signal(&child, libc::SIGTERM);
    let run = wait_ended(child, ENDS_WITHIN, t0);
    assert_discarded(&run, "INTERRUPTED");
    assert_all_stopped(&[&marks.path().join("escaped")]);
    assert!(
        git_worktrees(&root).matches("worktree ").count() == 1,
        "{}",
        git_worktrees(&root)
    );
}

#[test]
fn a_setsid_child_of_deliver_s_own_git_never_outlives_a_successful_delivery() {
    let repo = two_commit_repo();
    let root = repo.path();
    let marks = tempfile::tempdir().expect("tempdir");
    std::fs::write(root.join(".gitattributes"), "*.up filter=up\n").expect("attributes");
    commit_all(&root, "attributes");
    let script = marks.path().join("filter.sh");
    std::fs::write(
        &script,
        format!(
            "setsid sleep 300 </dev/null >/dev/null 2>&1 &\necho $! > '{}'\ntr a-z A-Z\n",
            marks.path().join("escaped").display()
        ),
    )
    .expect("filter script");
    git_ok(
        &root,
        &[
            "config",
            "filter.up.clean",
            &format!("sh '{}'", script.display()),
        ],
    );
    git_ok(&root, &["config", "filter.up.smudge", "cat"]);
    let run = run_in(&root, "up", &[], "echo hello > x.up");
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    assert_eq!(
        show(&root, "refs/satyrn/candidates/up/head:x.up"),
        b"HELLO\n"
    );
    assert_all_stopped(&[&marks.path().join("escaped")]);
}

/// A FIFO in the attempt's own registration (`gitdir`) while the command runs out its
/// timeout: `SPECIAL_FILE` at once after the command (not after cleanup's git waits), the
/// registration removed without git, and the next delivery in the repository succeeds.
#[test]
fn a_fifo_in_the_attempts_registration_past_the_timeout_is_cleaned_up_without_git() {
    let repo = two_commit_repo();
    let root = repo.path();
    let run = run_in(
        &root,
        "regfifo",
        &["--timeout", "2"],
        "g=$(git rev-parse --absolute-git-dir); rm -f $g/gitdir; mkfifo $g/gitdir; echo new > src/main.txt; sleep 300",
    );
    assert_discarded(&run, "SPECIAL_FILE");
    assert!(
        run.elapsed < Duration::from_secs(30),
        "took {:?}",
        run.elapsed
    );
    assert_eq!(
        git_worktrees(&root).matches("worktree ").count(),
        1,
        "{}",
        git_worktrees(&root)
    );
    sibling_success(&root, "regfifo-sibling");
}

/// Before the command too, no git runs unbounded: a clean filter the caller configured that
/// hangs (and leaves the group) while the preflight's `git status` re-hashes a touched
/// file; `SIGTERM` ends the delivery promptly as `INTERRUPTED`, its `setsid` child with it.
#[test]
fn sigterm_during_a_hanging_git_before_the_command_ends_deliver_and_its_strays() {
    let repo = two_commit_repo();
    let root = repo.path();
    let marks = tempfile::tempdir().expect("tempdir");
    std::fs::write(root.join("x.slow"), "x\n").expect("write");
    commit_all(&root, "slow file");
    hanging_filter(&root, marks.path());
    // Its stat data no longer what the index holds: status hashes it through the filter.
    std::fs::write(root.join("x.slow"), "x\n").expect("rewrite");
    let contract = ContractFile::any("pre");
    let argv: Vec<&OsStr> = sh("true").into_iter().map(OsStr::new).collect();
    let t0 = Instant::now();
    let child = deliver_cmd(&root, &contract.path, &[], &argv)
        .spawn()
        .expect("spawn");
    // The stray's pid written in full, not only its file created: a signal between the
    // two would stop the filter before it named the stray this test then looks for.
    read_pid(&marks.path().join("escaped"));
    signal(&child, libc::SIGTERM);
    let run = wait_ended(child, ENDS_WITHIN, t0);
    assert_no_candidate(&run, "INTERRUPTED", 8);
    assert!(
        run.elapsed < Duration::from_secs(30),
        "took {:?}",
        run.elapsed
    );
    assert_all_stopped(&[&marks.path().join("escaped")]);
}

/// A directory with a `.git` that is no repository (an empty file, a `gitdir:` to nowhere)
/// is staged file by file, so its files are looked at like any other: a huge one is
/// `CANDIDATE_TOO_LARGE`, a FIFO `.gitignore` `SPECIAL_FILE` (both passed the scan, which
/// skipped every directory holding a `.git`, in the second adversarial review). The
/// sibling: a real embedded repository is a gitlink, its huge file never looked at.
#[test]
fn a_fake_git_directory_does_not_hide_files_from_the_checks() {
    let repo = two_commit_repo();
    let root = repo.path();
    for (id, script, code, said) in [
        (
            "fake-empty",
            "mkdir d; touch d/.git; truncate -s 20000000 d/big",
            "CANDIDATE_TOO_LARGE",
            "d/big is 20000000 bytes",
        ),
        (
            "fake-gitdir",
            "mkdir d; echo 'gitdir: /nowhere' > d/.git; mkfifo d/.gitignore",
            "SPECIAL_FILE",
            "a FIFO at d/.gitignore",
        ),
    ] {
        let run = run_in(
            &root,
            id,
            &["--timeout", "60"],
            &format!("echo edit >> src/main.txt; {script}"),
        );
        assert_discarded(&run, code);
        let message = run.receipt["message"].as_str().expect("message");
        assert!(message.contains(said), "{id}: {message}");
    }
    let run = run_in(
        &root,
        "embedded",
        &["--timeout", "60"],
        &format!(
            "echo edit >> src/main.txt; git init -q d && {GIT} -C d commit -q --allow-empty -m x && truncate -s 8G d/huge"
        ),
    );
    assert_eq!(run.code(), "OK", "{}", run.stdout);
}

/// The sweep after the command reads the attempt's own registration, never the worktree's
/// `.git` file, which the command may point at another worktree's: that worktree's journal
/// of temporaries is left as it was (it was consumed before). The sibling: the same
/// delivery with the `.git` file untouched, `OK`, the other journal also as it was.
#[test]
fn the_sweep_never_follows_a_rewritten_git_file_into_another_worktree() {
    let repo = two_commit_repo();
    let root = repo.path();
    let other = tempfile::tempdir().expect("other");
    let other_tree = other.path().join("other");
    git_ok(
        &root,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            other_tree.to_str().expect("utf-8"),
        ],
    );
    let journal = root.join(".git/worktrees/other/satyrn-temporaries");
    std::fs::create_dir_all(&journal).expect("journal");
    std::fs::write(journal.join("1-ab.entry"), "x").expect("entry");
    for (id, script) in [
        (
            "rewritten",
            "echo edit >> src/main.txt; c=$(git rev-parse --git-common-dir); echo \"gitdir: $c/worktrees/other\" > .git",
        ),
        ("plain", "echo edit >> src/main.txt"),
    ] {
        let _ = run_in(&root, id, &[], script);
        assert!(
            journal.join("1-ab.entry").exists(),
            "{id}: the other journal was swept"
        );
    }
}

/// A FIFO among the user's git files (an earlier command's doing: `~/.config/git/attributes`)
/// makes every git that reads it wait for ever: `deliver` names it at once, before any git
/// runs (it took the 120 s preparation limit, then blamed `git status`). The sibling: the
/// FIFO gone, the same delivery is `OK`.
#[test]
fn a_fifo_among_the_users_git_files_is_named_before_any_git_runs() {
    let repo = two_commit_repo();
    let root = repo.path();
    let home = tempfile::tempdir().expect("home");
    let fifo = home.path().join(".config/git/attributes");
    std::fs::create_dir_all(fifo.parent().expect("parent")).expect("config dir");
    crate::support::mkfifo(&fifo);
    let t0 = Instant::now();
    let run = run_with_home(
        &root,
        "fifo-home",
        &[],
        "echo edit >> src/main.txt",
        Some(home.path()),
    );
    assert_eq!(run.code(), "GIT_FAILED", "{}", run.stdout);
    let message = run.receipt["message"].as_str().expect("message");
    assert!(
        message.contains(".config/git/attributes is a FIFO"),
        "{message}"
    );
    assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
    std::fs::remove_file(&fifo).expect("remove");
    let run = run_with_home(
        &root,
        "fifo-home-gone",
        &[],
        "echo edit >> src/main.txt",
        Some(home.path()),
    );
    assert_eq!(run.code(), "OK", "{}", run.stdout);
}
