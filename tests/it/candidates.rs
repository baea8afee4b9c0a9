//! `satyrn-host candidates list|show|diff|apply|drop`: real `deliver`s make the candidates,
//! real git checks what the commands did. Every refusal proves the repository unchanged and
//! is followed by a sibling success.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::deliver_support::{Caller, FixedRepo, commit_all, deliver, sh};
use crate::support::{ContractFile, git, git_ok, host_bin, snapshot};

/// One `candidates` run.
pub struct Answer {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Answer {
    /// The one JSON document a `--json` run prints.
    pub fn json(&self) -> Value {
        assert!(
            self.stdout.ends_with('\n') && self.stdout.matches('\n').count() == 1,
            "exactly one JSON line expected, got {:?} (stderr {:?})",
            self.stdout,
            self.stderr
        );
        let doc: Value = serde_json::from_str(self.stdout.trim_end()).expect("JSON");
        assert!(
            self.stdout.starts_with("{\"version\":1,\"code\":"),
            "version and code come first: {}",
            self.stdout
        );
        doc
    }

    pub fn code(&self) -> String {
        self.json()["code"].as_str().expect("code").to_owned()
    }
}

pub fn candidates_cmd(repo: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(host_bin());
    cmd.arg("candidates")
        .args(args)
        .arg("--repo")
        .arg(repo)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Runs `satyrn-host candidates ARGS --repo REPO`.
pub fn candidates(repo: &Path, args: &[&str]) -> Answer {
    let out = candidates_cmd(repo, args).output().expect("run candidates");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "panic: {stderr}");
    Answer {
        status: out.status.code().expect("exited"),
        stdout: String::from_utf8(out.stdout).expect("utf-8 stdout"),
        stderr,
    }
}

/// Delivers candidate `id` running `script` and returns its commit.
pub fn make(root: &Path, id: &str, script: &str) -> String {
    let contract = ContractFile::any(id);
    let run = deliver(root, &contract.path, &sh(script));
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    run.receipt["candidate_commit"]
        .as_str()
        .expect("commit")
        .to_owned()
}

fn head(root: &Path) -> String {
    git_ok(root, &["rev-parse", "HEAD"]).trim().to_owned()
}

fn entry<'a>(list: &'a Value, id: &str) -> &'a Value {
    list["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("{id} not listed in {list}"))
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs()
}

#[test]
fn list_shows_base_against_head_files_lines_and_creation_time() {
    let repo = FixedRepo::with_files(&[("a.txt", b"one\ntwo\nthree\n"), ("b.bin", b"\0\x01")]);
    let root = repo.path();
    let empty = candidates(&root, &["list", "--json"]);
    assert_eq!((empty.status, empty.code()), (0, "OK".to_owned()));
    assert_eq!(empty.json()["candidates"], serde_json::json!([]));

    let started = now();
    let old = make(
        &root,
        "old",
        "printf 'one\\nTWO\\nthree\\nfour\\n' > a.txt; printf '\\0\\2' > b.bin",
    );
    let finished = now();
    std::fs::write(root.join("c.txt"), "c\n").expect("write");
    commit_all(&root, "moved on");
    let new = make(&root, "new", "rm a.txt");

    let before = Caller::capture(&root);
    let listed = candidates(&root, &["list", "--json"]);
    before.assert_unchanged(&root, None);
    assert_eq!(listed.status, 0, "{}", listed.stderr);
    let doc = listed.json();
    let ids: Vec<&str> = doc["candidates"]
        .as_array()
        .expect("array")
        .iter()
        .map(|c| c["id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, ["new", "old"], "sorted by id");

    let o = entry(&doc, "old");
    assert_eq!(o["commit"], old.as_str());
    assert_eq!(o["ref"], "refs/satyrn/candidates/old/head");
    assert_eq!(o["base"], git_ok(&root, &["rev-parse", "HEAD~1"]).trim());
    assert_eq!(
        (o["base_is_head"].clone(), o["behind"].clone()),
        (false.into(), 1.into())
    );
    assert_eq!(
        o["files"],
        serde_json::json!([
            {"path": "a.txt", "added": 2, "removed": 1},
            {"path": "b.bin", "added": null, "removed": null},
        ])
    );
    let n = entry(&doc, "new");
    assert_eq!(n["commit"], new.as_str());
    assert_eq!(
        (n["base_is_head"].clone(), n["behind"].clone()),
        (true.into(), 0.into())
    );
    assert_eq!(
        n["files"],
        serde_json::json!([{"path": "a.txt", "added": 0, "removed": 3}])
    );

    // The creation time is the receipt tag's tagger date, read back through git itself.
    let tagged = git_ok(
        &root,
        &[
            "for-each-ref",
            "--format=%(taggerdate:unix) %(taggerdate:iso-strict) %(*objectname)",
            "refs/satyrn/candidates/old/receipt",
        ],
    );
    let fields: Vec<&str> = tagged.split_whitespace().collect();
    let unix: u64 = fields[0].parse().expect("unix date");
    assert!(
        (started..=finished).contains(&unix),
        "{unix} not in {started}..={finished}"
    );
    assert_eq!(o["created"], fields[1]);
    assert_eq!(
        fields[2], old,
        "the receipt tag points at the candidate commit"
    );
    // The candidate commit itself keeps its fixed date.
    assert!(git_ok(&root, &["cat-file", "commit", &old]).contains(" 946684800 +0000\n"));

    let table = candidates(&root, &["list"]);
    assert_eq!(table.status, 0);
    let lines: Vec<&str> = table.stdout.lines().collect();
    assert!(lines[0].starts_with("ID "), "{}", table.stdout);
    assert!(
        lines[1].starts_with("new ") && lines[1].contains(" HEAD "),
        "{}",
        table.stdout
    );
    assert!(
        lines[2].starts_with("old ") && lines[2].contains("1 behind"),
        "{}",
        table.stdout
    );
    assert!(lines[2].contains("2 +2 -1"), "{}", table.stdout);
}

#[test]
fn show_carries_the_published_receipt_and_diff_uses_the_candidates_own_base() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n"), ("b.txt", b"b\n")]);
    let root = repo.path();
    let contract = ContractFile::any("shown");
    let run = deliver(&root, &contract.path, &sh("echo more >> a.txt"));
    assert_eq!(run.code(), "OK");
    let base = head(&root);
    std::fs::write(root.join("b.txt"), "changed on HEAD\n").expect("write");
    commit_all(&root, "HEAD moves");

    let shown = candidates(&root, &["show", "--json", "shown"]);
    assert_eq!(shown.status, 0, "{}", shown.stderr);
    let doc = shown.json();
    assert_eq!(doc["receipt"], run.receipt, "the receipt deliver printed");
    assert_eq!(doc["candidate"]["behind"], 1);
    let text = candidates(&root, &["show", "shown"]);
    assert!(
        text.stdout.contains("HEAD is 1 commit(s) past the base"),
        "{}",
        text.stdout
    );

    let diff = candidates(&root, &["diff", "shown"]);
    assert_eq!(diff.status, 0, "{}", diff.stderr);
    let commit = run.receipt["candidate_commit"].as_str().expect("commit");
    let expected = git_ok(&root, &["diff", "--no-color", &base, commit, "--"]);
    assert_eq!(diff.stdout, expected);
    assert!(
        !diff.stdout.contains("b.txt"),
        "nothing of what HEAD did: {}",
        diff.stdout
    );
}

#[test]
fn unknown_ids_and_bad_repositories_are_refused_with_their_codes() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let before = Caller::capture(&root);
    for args in [
        &["show", "--json", "nope"][..],
        &["apply", "--json", "nope"],
        &[
            "drop",
            "--json",
            "--expect",
            "0123456789012345678901234567890123456789",
            "nope",
        ],
    ] {
        let answer = candidates(&root, args);
        assert_eq!(
            (answer.status, answer.code()),
            (13, "CANDIDATE_NOT_FOUND".to_owned()),
            "{args:?}"
        );
    }
    let diff = candidates(&root, &["diff", "nope"]);
    assert_eq!(diff.status, 13);
    assert!(diff.stdout.is_empty());
    assert!(
        diff.stderr
            .starts_with("satyrn-host candidates: CANDIDATE_NOT_FOUND: "),
        "{}",
        diff.stderr
    );
    before.assert_unchanged(&root, None);

    let sub = root.join("sub");
    std::fs::create_dir(&sub).expect("mkdir");
    let refused = candidates(&sub, &["list", "--json"]);
    assert_eq!(
        (refused.status, refused.code()),
        (6, "REPO_UNAVAILABLE".to_owned())
    );

    for usage in [
        &["list", "--bogus"][..],
        &["drop", "--expect", "abc", "x"],
        &["drop", "x"],
        &["frobnicate"],
    ] {
        let answer = candidates(&root, usage);
        assert_eq!(answer.status, 2, "{usage:?}");
        assert!(answer.stdout.is_empty(), "{usage:?}: {}", answer.stdout);
    }

    make(&root, "sibling", "echo x > x.txt");
    let listed = candidates(&root, &["list", "--json"]);
    assert_eq!(
        entry(&listed.json(), "sibling")["files"][0]["path"],
        "x.txt"
    );
}

#[test]
fn drop_deletes_only_the_listed_commit() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let commit = make(&root, "dropped", "echo b > b.txt");
    let before = Caller::capture(&root);
    let refs_before = git_ok(&root, &["for-each-ref"]);
    let wrong = head(&root);
    let refused = candidates(&root, &["drop", "--json", "--expect", &wrong, "dropped"]);
    assert_eq!(
        (refused.status, refused.code()),
        (13, "CANDIDATE_CHANGED".to_owned())
    );
    before.assert_unchanged(&root, None);

    let dropped = candidates(&root, &["drop", "--json", "--expect", &commit, "dropped"]);
    assert_eq!(dropped.status, 0, "{}", dropped.stdout);
    assert_eq!(
        dropped.json()["dropped"]["refs"],
        serde_json::json!([
            "refs/satyrn/candidates/dropped/head",
            "refs/satyrn/candidates/dropped/receipt"
        ])
    );
    assert!(git_ok(&root, &["for-each-ref", "refs/satyrn"]).is_empty());
    let kept: String = refs_before
        .lines()
        .filter(|l| !l.contains("refs/satyrn/candidates/dropped/"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(
        git_ok(&root, &["for-each-ref"]),
        kept,
        "only the two refs went"
    );
    let again = candidates(&root, &["drop", "--json", "--expect", &commit, "dropped"]);
    assert_eq!(again.code(), "CANDIDATE_NOT_FOUND");
    // The id can be delivered again.
    assert_eq!(make(&root, "dropped", "echo b > b.txt"), commit);
}

/// Each round: the candidate exists at C1; one process drops it expecting C1 while another
/// re-publishes the id at C2 (deletes C1, then creates C2 create-only, as a `drop` and a new
/// `deliver` would). Whoever wins, a re-published C2 is never deleted.
#[test]
fn drop_racing_a_republication_never_loses_it() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let c1 = make(&root, "raced", "echo one > r.txt");
    race_drop_against_republication(&root, &c1, || {
        candidates_cmd(&root, &["drop", "--json", "--expect", &c1, "raced"])
    });
}

/// The race of a `drop --expect C1` of candidate `raced` (made by `drop`) against a
/// re-publication of `raced` at another commit C2 (delete C1, then create C2 create-only, as
/// a `drop` and a new `deliver` would) in the repository `refs_in` that holds the refs, round
/// after round (at least 20, up to 4 s): the re-publication starts at a delay spread over
/// twice a drop's duration, so both orders (and the overlaps between) occur. Whoever wins, a
/// re-published C2 is never deleted.
pub fn race_drop_against_republication(refs_in: &Path, c1: &str, drop: impl Fn() -> Command) {
    let c2 = git_ok(
        refs_in,
        &[
            "commit-tree",
            "-p",
            c1,
            "-m",
            "c2",
            &format!("{c1}^{{tree}}"),
        ],
    )
    .trim()
    .to_owned();
    let name = "refs/satyrn/candidates/raced/head";
    let receipt = "refs/satyrn/candidates/raced/receipt";
    let tag = git_ok(refs_in, &["rev-parse", receipt]).trim().to_owned();
    let timed = Instant::now();
    let first = drop().output().expect("drop");
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stdout)
    );
    let spread = timed.elapsed() * 2;
    let (mut dropped, mut republished, mut rounds) = (0, 0, 0u32);
    // 60 rounds over 16 spreads of delay: 185 rounds gave 114 drops won and 71
    // re-publications kept, so both outcomes come up dozens of times.
    while rounds < 60 {
        git_ok(refs_in, &["update-ref", name, c1]);
        git_ok(refs_in, &["update-ref", receipt, &tag]);
        let running = drop().spawn().expect("spawn drop");
        std::thread::sleep(spread * (rounds % 16) / 16);
        let republish = git(refs_in)
            .args(["update-ref", "-d", name, c1])
            .stderr(Stdio::null())
            .status()
            .expect("delete")
            .success()
            && git(refs_in)
                .args(["update-ref", name, &c2, ""])
                .status()
                .expect("create")
                .success();
        let out = running.wait_with_output().expect("drop");
        let code = serde_json::from_slice::<Value>(&out.stdout).expect("json")["code"]
            .as_str()
            .expect("code")
            .to_owned();
        let now = git(refs_in)
            .args(["rev-parse", "-q", "--verify", name])
            .output()
            .expect("rev-parse");
        let now = String::from_utf8_lossy(&now.stdout).trim().to_owned();
        if republish {
            assert_eq!(
                now, c2,
                "round {rounds}: the re-published candidate was lost ({code})"
            );
            republished += 1;
        }
        if code == "OK" {
            dropped += 1;
        } else {
            assert!(
                ["CANDIDATE_CHANGED", "CANDIDATE_NOT_FOUND"].contains(&code.as_str()),
                "round {rounds}: {code}"
            );
        }
        for r in [name, receipt] {
            git(refs_in)
                .args(["update-ref", "-d", r])
                .stderr(Stdio::null())
                .status()
                .expect("reset");
        }
        rounds += 1;
    }
    eprintln!("{rounds} rounds: {dropped} drops won, {republished} re-publications kept");
    assert!(
        republished > 0 && dropped > 0,
        "both orders must occur: {dropped} drops, {republished} re-publications"
    );
}

#[test]
fn apply_on_the_base_stages_the_candidate_and_commits_nothing() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n"), ("gone.txt", b"g\n")]);
    let root = repo.path();
    let commit = make(
        &root,
        "plain",
        "echo more >> a.txt; rm gone.txt; echo n > new.txt",
    );
    let (head_before, branch) = (head(&root), git_ok(&root, &["symbolic-ref", "HEAD"]));
    let refs = git_ok(&root, &["for-each-ref"]);
    let applied = candidates(&root, &["apply", "--json", "plain"]);
    assert_eq!(applied.status, 0, "{}", applied.stdout);
    let doc = applied.json();
    assert_eq!(doc["applied"]["three_way"], false);
    assert_eq!(
        doc["applied"]["paths"],
        serde_json::json!(["a.txt", "gone.txt", "new.txt"])
    );
    assert_eq!(
        std::fs::read(root.join("a.txt")).expect("read"),
        b"a\nmore\n"
    );
    assert!(!root.join("gone.txt").exists());
    assert_eq!(std::fs::read(root.join("new.txt")).expect("read"), b"n\n");
    assert_eq!(head(&root), head_before, "nothing committed");
    assert_eq!(
        git_ok(&root, &["symbolic-ref", "HEAD"]),
        branch,
        "no branch moved"
    );
    assert_eq!(git_ok(&root, &["for-each-ref"]), refs, "no ref changed");
    // Staged exactly: the index is the candidate's tree.
    assert_eq!(
        git_ok(&root, &["write-tree"]).trim(),
        git_ok(&root, &["rev-parse", &format!("{commit}^{{tree}}")]).trim()
    );
    assert!(
        git_ok(&root, &["diff", "--name-only"]).is_empty(),
        "worktree = index"
    );
}

#[test]
fn apply_after_head_moved_merges_three_way_or_refuses_a_conflict_whole() {
    let repo = FixedRepo::with_files(&[("a.txt", b"1\n2\n3\n4\n5\n6\n7\n8\n"), ("b.txt", b"b\n")]);
    let root = repo.path();
    make(
        &root,
        "clean",
        "sed -i 's/^2$/two/' a.txt; echo new > new.txt",
    );
    make(
        &root,
        "clash",
        "sed -i 's/^7$/seven/' a.txt; echo cand > b.txt",
    );
    std::fs::write(root.join("a.txt"), "1\n2\n3\n4\n5\n6\nSEVEN\n8\n").expect("write");
    commit_all(&root, "HEAD changes line 7");
    let moved = head(&root);

    // The conflict first: refused whole, with the conflicted path, nothing touched.
    let before = Caller::capture(&root);
    let files = [snapshot(&root.join("a.txt")), snapshot(&root.join("b.txt"))];
    let conflict = candidates(&root, &["apply", "--json", "clash"]);
    assert_eq!(
        (conflict.status, conflict.code()),
        (13, "APPLY_CONFLICT".to_owned())
    );
    let message = conflict.json()["message"]
        .as_str()
        .expect("message")
        .to_owned();
    assert!(
        message.contains("a.txt") && !message.contains("b.txt"),
        "{message}"
    );
    before.assert_unchanged(&root, None);
    assert_eq!(
        files,
        [snapshot(&root.join("a.txt")), snapshot(&root.join("b.txt"))]
    );
    assert!(!root.join("new.txt").exists());

    let applied = candidates(&root, &["apply", "--json", "clean"]);
    assert_eq!(applied.status, 0, "{}", applied.stdout);
    assert_eq!(applied.json()["applied"]["three_way"], true);
    assert_eq!(applied.json()["applied"]["head"], moved.as_str());
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).expect("read"),
        "1\ntwo\n3\n4\n5\n6\nSEVEN\n8\n",
        "both sides kept"
    );
    assert_eq!(std::fs::read(root.join("new.txt")).expect("read"), b"new\n");
    assert_eq!(head(&root), moved, "nothing committed");
}

#[test]
fn apply_refuses_a_dirty_checkout_and_leaves_it_untouched() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n"), ("b.txt", b"b\n")]);
    let root = repo.path();
    make(&root, "later", "echo c > c.txt");
    type Dirty = fn(&Path);
    let cases: [(&str, Dirty); 4] = [
        ("modified", |r| {
            std::fs::write(r.join("a.txt"), "edited\n").expect("write")
        }),
        ("untracked", |r| {
            std::fs::write(r.join("u.txt"), "u\n").expect("write")
        }),
        ("staged", |r| {
            std::fs::write(r.join("b.txt"), "staged\n").expect("write");
            git_ok(r, &["add", "b.txt"]);
        }),
        ("deleted", |r| {
            std::fs::remove_file(r.join("b.txt")).expect("rm")
        }),
    ];
    for (what, dirty) in cases {
        dirty(&root);
        let before = Caller::capture(&root);
        let files: Vec<_> = ["a.txt", "u.txt"]
            .iter()
            .filter(|f| root.join(f).exists())
            .map(|f| snapshot(&root.join(f)))
            .collect();
        let refused = candidates(&root, &["apply", "--json", "later"]);
        assert_eq!(
            (refused.status, refused.code()),
            (8, "REPO_DIRTY".to_owned()),
            "{what}"
        );
        before.assert_unchanged(&root, None);
        let after: Vec<_> = ["a.txt", "u.txt"]
            .iter()
            .filter(|f| root.join(f).exists())
            .map(|f| snapshot(&root.join(f)))
            .collect();
        assert_eq!(files, after, "{what}");
        assert!(!root.join("c.txt").exists(), "{what}");
        git_ok(&root, &["reset", "-q", "--hard"]);
        let _ = std::fs::remove_file(root.join("u.txt"));
    }
    let applied = candidates(&root, &["apply", "--json", "later"]);
    assert_eq!(applied.code(), "OK");
    assert_eq!(std::fs::read(root.join("c.txt")).expect("read"), b"c\n");
}

#[test]
fn apply_never_overwrites_an_ignored_file() {
    let repo = FixedRepo::with_files(&[(".gitignore", b"build.out\nout/\n"), ("a.txt", b"a\n")]);
    let root = repo.path();
    make(
        &root,
        "unignores",
        ": > .gitignore; echo cand > build.out; mkdir out; echo cand > out/x",
    );
    std::fs::write(root.join("build.out"), "mine\n").expect("write");
    std::fs::create_dir(root.join("out")).expect("mkdir");
    std::fs::write(root.join("out/x"), "mine too\n").expect("write");
    let before = Caller::capture(&root);
    let files = [
        snapshot(&root.join("build.out")),
        snapshot(&root.join("out/x")),
    ];
    let refused = candidates(&root, &["apply", "--json", "unignores"]);
    assert_eq!(
        (refused.status, refused.code()),
        (13, "APPLY_CONFLICT".to_owned())
    );
    let message = refused.json()["message"]
        .as_str()
        .expect("message")
        .to_owned();
    assert!(
        message.contains("build.out") && message.contains("out/x"),
        "{message}"
    );
    before.assert_unchanged(&root, None);
    assert_eq!(
        files,
        [
            snapshot(&root.join("build.out")),
            snapshot(&root.join("out/x"))
        ]
    );
    assert_eq!(
        std::fs::read(root.join(".gitignore")).expect("read"),
        b"build.out\nout/\n"
    );

    std::fs::remove_file(root.join("build.out")).expect("rm");
    std::fs::remove_dir_all(root.join("out")).expect("rm");
    let applied = candidates(&root, &["apply", "--json", "unignores"]);
    assert_eq!(applied.code(), "OK", "{}", applied.stdout);
    assert_eq!(
        std::fs::read(root.join("build.out")).expect("read"),
        b"cand\n"
    );
}

/// A candidate fetched from elsewhere was never checked by this machine's `deliver`: an id
/// with a bidirectional override is shown escaped on a terminal, exactly in JSON.
#[test]
fn ids_a_reader_could_not_see_as_they_are_are_escaped_in_text() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let commit = make(&root, "plain-id", "echo b > b.txt");
    let tricky = "ev\u{202e}il";
    git_ok(
        &root,
        &[
            "update-ref",
            &format!("refs/satyrn/candidates/{tricky}/head"),
            &commit,
        ],
    );
    let table = candidates(&root, &["list"]);
    assert!(
        table.stdout.contains("\"ev\\u{202e}il\""),
        "{}",
        table.stdout
    );
    assert!(!table.stdout.contains(tricky), "{}", table.stdout);
    assert!(table.stdout.contains("\nplain-id "), "{}", table.stdout);
    let listed = candidates(&root, &["list", "--json"]).json();
    assert_eq!(entry(&listed, tricky)["commit"], commit.as_str());
    assert!(
        entry(&listed, tricky)["created"].is_null(),
        "no receipt ref"
    );
    let shown = candidates(&root, &["show", tricky]);
    assert!(
        shown.stdout.starts_with("id:          \"ev\\u{202e}il\"\n"),
        "{}",
        shown.stdout
    );
}

/// `count` candidates `many-NNNN` on the current `HEAD`, made in one `git fast-import`:
/// candidate `i` adds `f-NNNN.txt` of `i % 7 + 1` lines. Returns each id with its line
/// count.
fn import_candidates(root: &Path, count: usize) -> Vec<(String, u64)> {
    use std::fmt::Write as _;
    use std::io::Write as _;
    let head = head(root);
    let mut stream = String::new();
    let mut made = Vec::new();
    for i in 0..count {
        let id = format!("many-{i:04}");
        let lines = i % 7 + 1;
        let content = format!("line of {id}\n").repeat(lines);
        let message = format!("satyrn candidate {id}\n");
        let _ = write!(
            stream,
            "commit refs/satyrn/candidates/{id}/head\ncommitter satyrn <satyrn@satyrn.invalid> 946684800 +0000\ndata {}\n{message}from {head}\nM 100644 inline f-{i:04}.txt\ndata {}\n{content}\n",
            message.len(),
            content.len()
        );
        made.push((id, lines as u64));
    }
    let mut child = git(root)
        .args(["fast-import", "--quiet"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("fast-import");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stream.as_bytes())
        .expect("feed fast-import");
    assert!(child.wait().expect("wait").success());
    made
}

/// Enough candidates for `list` to split the numstat over several `diff-tree`s (from 256
/// commits on): every row still carries exactly its own commit's files, also for two ids
/// naming one commit.
#[test]
fn a_list_of_hundreds_pairs_every_candidate_with_its_own_files() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let mut made = import_candidates(&root, 300);
    let shared = git_ok(
        &root,
        &["rev-parse", "refs/satyrn/candidates/many-0005/head"],
    );
    git_ok(
        &root,
        &[
            "update-ref",
            "refs/satyrn/candidates/twin-of-0005/head",
            shared.trim(),
        ],
    );
    made.push(("twin-of-0005".to_owned(), 6));
    let listed = candidates(&root, &["list", "--json"]);
    assert_eq!(listed.status, 0, "{}", listed.stderr);
    let doc = listed.json();
    let rows = doc["candidates"].as_array().expect("candidates");
    assert_eq!(rows.len(), made.len());
    let base = head(&root);
    for (id, lines) in &made {
        let row = entry(&doc, id);
        let file = id.strip_prefix("many-").unwrap_or("0005");
        assert_eq!(
            row["files"],
            serde_json::json!([{"path": format!("f-{file}.txt"), "added": lines, "removed": 0}]),
            "{id}"
        );
        assert_eq!(
            (row["base"].as_str(), row["behind"].as_u64()),
            (Some(base.as_str()), Some(0)),
            "{id}"
        );
    }
}
