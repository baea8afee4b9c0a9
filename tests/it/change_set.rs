//! Change sets through the real protocol, the real component and the real file system:
//! the patch scenario directories of `components/mutator-core/tests/patch_scenarios`
//! applied to real repositories (a refusal leaves every byte, mode and inode as it was),
//! the operations' refusals each beside its sibling success, and a `SIGKILL` campaign over
//! the whole publish timeline of a five-file change set.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::protocol_common::Fixture;
use crate::support::{ProtocolRun, protocol_raw, protocol_with, sha256_hex, tree_state};

fn scenarios() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../components/mutator-core/tests/patch_scenarios")
}

/// Every file under `dir`, by relative path.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(at) = todo.pop() {
        for entry in std::fs::read_dir(&at).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let rel = path
                    .strip_prefix(dir)
                    .expect("under")
                    .to_string_lossy()
                    .into_owned();
                out.push((rel, std::fs::read(&path).expect("read")));
            }
        }
    }
    out.sort();
    out
}

/// The worktree's files (not `.git`) with their bytes.
fn worktree_files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    tree_state(root)
        .into_iter()
        .filter(|(p, (kind, ..))| !p.starts_with(".git") && kind == "file")
        .map(|(p, (_, bytes, ..))| (p, bytes))
        .collect()
}

/// Everything beneath the worktree but `.git/` internals other than the change-set records.
fn whole_state(root: &Path) -> BTreeMap<String, (String, Vec<u8>, u32, u64)> {
    tree_state(root)
        .into_iter()
        .filter(|(p, _)| !p.starts_with(".git/") || p.starts_with(".git/satyrn-change-sets/"))
        .filter(|(p, _)| p != ".git/satyrn-change-sets")
        .collect()
}

fn request(fx: &Fixture, operation: &str, fields: Value) -> Value {
    let mut request = json!({
        "version": 1,
        "operation": operation,
        "repo": fx.repo.path(),
        "contract": fx.contract.path,
    });
    for (k, v) in fields.as_object().expect("object") {
        request[k] = v.clone();
    }
    request
}

fn run(request: &Value) -> ProtocolRun {
    protocol_raw(request.to_string().as_bytes())
}

/// Each scenario's patch through `apply_patch` on a real repository holding its `before/`
/// tree, every file's revision given: its `after/` tree exactly, or its refusal code with
/// the tree (bytes, modes, inodes) unchanged.
#[test]
fn every_patch_scenario_gives_its_tree_or_its_refusal_on_a_real_repository() {
    let mut names: Vec<PathBuf> = std::fs::read_dir(scenarios())
        .expect("scenarios")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    names.sort();
    let (mut applied, mut refused) = (0, 0);
    for dir in names {
        let name = dir
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let before = files(&dir.join("before"));
        let borrowed: Vec<(&str, &[u8])> = before
            .iter()
            .map(|(p, b)| (p.as_str(), b.as_slice()))
            .collect();
        let fx = Fixture::new(&borrowed, &["*"]);
        let revisions: BTreeMap<&str, String> = before
            .iter()
            .map(|(p, b)| (p.as_str(), sha256_hex(b)))
            .collect();
        let patch = std::fs::read_to_string(dir.join("patch")).expect("patch");
        let state = whole_state(fx.repo.path());
        let done = run(&request(
            &fx,
            "apply_patch",
            json!({"patch": patch, "expected_sha256": revisions}),
        ));
        if dir.join("after").exists() {
            assert_eq!(done.response["code"], "OK", "{name}: {}", done.stdout);
            let want: BTreeMap<String, Vec<u8>> = files(&dir.join("after")).into_iter().collect();
            assert_eq!(worktree_files(fx.repo.path()), want, "{name}");
            applied += 1;
        } else {
            let want = std::fs::read_to_string(dir.join("refusal")).expect("refusal");
            let mut want = want.split_whitespace();
            assert_eq!(
                done.response["code"],
                want.next().expect("code"),
                "{name}: {}",
                done.stdout
            );
            if let Some(hunk) = want.next() {
                assert_eq!(
                    done.response["result"]["problems"][0]["hunks"][0]["code"], hunk,
                    "{name}"
                );
            }
            assert_ne!(done.status, 0, "{name}");
            assert_eq!(
                whole_state(fx.repo.path()),
                state,
                "{name}: the tree changed"
            );
            refused += 1;
        }
    }
    assert!(
        applied >= 8 && refused >= 8,
        "{applied} applied, {refused} refused"
    );
}

/// A five-file change set whose last operation is refused changes nothing (every byte,
/// mode and inode, no temporary, no record); the same set with that operation fixed lands
/// whole, a move keeps the file's mode, and every problem of a set is named at once.
#[test]
fn a_change_set_lands_whole_or_not_at_all_and_names_every_problem() {
    let fx = Fixture::new(
        &[
            ("src/a.rs", b"fn a() {}\n"),
            ("src/b.rs", b"fn b() {}\n"),
            ("run.sh", b"#!/bin/sh\necho hi\n"),
            ("old.txt", b"old\n"),
            ("keep.txt", b"keep\n"),
            ("README.md", b"readme\n"),
        ],
        &["src/*", "*.sh", "*.txt", "bin/*"],
    );
    std::fs::set_permissions(
        fx.file("run.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    let sha = |p: &str| fx.sha(p);
    let ops = |last: Value| {
        json!([
            {"op": "edit", "path": "src/a.rs", "expected_sha256": sha("src/a.rs"),
             "edits": [{"op": "replace", "old_text": "a()", "new_text": "alpha()"}]},
            {"op": "write", "path": "src/c.rs", "content": "fn c() {}\n"},
            {"op": "delete", "path": "old.txt", "expected_sha256": sha("old.txt")},
            {"op": "move", "path": "run.sh", "to": "bin/run.sh", "expected_sha256": sha("run.sh")},
            last,
        ])
    };
    let state = whole_state(fx.repo.path());
    // Refused: the last operation's path is not declared.
    let refused = run(&request(
        &fx,
        "change_set",
        json!({"ops": ops(json!({"op": "write", "path": "README.md", "content": "x\n", "expected_sha256": sha("README.md")}))}),
    ));
    assert_eq!(
        refused.response["code"], "PATH_UNDECLARED",
        "{}",
        refused.stdout
    );
    assert_eq!(refused.status, 9);
    assert_eq!(refused.response["result"]["problems"][0]["index"], 4);
    assert_eq!(
        whole_state(fx.repo.path()),
        state,
        "a refused set changed the tree"
    );
    // Every problem at once: stale, missing, move onto an existing file, a refused batch.
    let many = run(&request(
        &fx,
        "change_set",
        json!({"ops": [
            {"op": "delete", "path": "old.txt", "expected_sha256": "0".repeat(64)},
            {"op": "delete", "path": "src/none.rs", "expected_sha256": sha("src/a.rs")},
            {"op": "move", "path": "keep.txt", "to": "old.txt", "expected_sha256": sha("keep.txt")},
            {"op": "edit", "path": "src/b.rs", "expected_sha256": sha("src/b.rs"),
             "edits": [{"op": "replace", "old_text": "missing", "new_text": "x"}]},
        ]}),
    ));
    let codes: Vec<&str> = many.response["result"]["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .map(|p| p["code"].as_str().expect("code"))
        .collect();
    assert_eq!(
        codes,
        [
            "REVISION_STALE",
            "FILE_MISSING",
            "MOVE_EXISTS",
            "ANCHOR_MISSING"
        ],
        "{}",
        many.stdout
    );
    assert_eq!(
        many.response["result"]["problems"][0]["current_sha256"],
        sha("old.txt")
    );
    assert_eq!(
        whole_state(fx.repo.path()),
        state,
        "a refused set changed the tree"
    );
    // The sibling: the fixed set lands whole.
    let done = run(&request(
        &fx,
        "change_set",
        json!({"ops": ops(json!({"op": "write", "path": "keep.txt", "content": "kept\n", "expected_sha256": sha("keep.txt")}))}),
    ));
    assert_eq!(done.response["code"], "OK", "{}", done.stdout);
    let now = worktree_files(fx.repo.path());
    let want: BTreeMap<String, Vec<u8>> = [
        ("README.md", &b"readme\n"[..]),
        ("bin/run.sh", b"#!/bin/sh\necho hi\n"),
        ("keep.txt", b"kept\n"),
        ("src/a.rs", b"fn alpha() {}\n"),
        ("src/b.rs", b"fn b() {}\n"),
        ("src/c.rs", b"fn c() {}\n"),
    ]
    .into_iter()
    .map(|(p, b)| (p.to_owned(), b.to_vec()))
    .collect();
    assert_eq!(now, want);
    let mode = std::os::unix::fs::MetadataExt::mode(
        &std::fs::metadata(fx.file("bin/run.sh")).expect("stat"),
    );
    assert_eq!(mode & 0o777, 0o755, "a move keeps the mode");
    let records = fx.file(".git/satyrn-change-sets");
    assert_eq!(
        std::fs::read_dir(records).expect("records").count(),
        0,
        "a record was left"
    );
}

/// A move onto an existing file needs that file's revision; with it, the move replaces it.
/// A set on a file system without `O_TMPFILE` (forced in debug builds) is refused whole.
#[test]
fn a_move_replaces_only_at_the_revision_given_and_a_lacking_file_system_refuses_the_set() {
    let fx = Fixture::new(&[("a.txt", b"a\n"), ("b.txt", b"b\n")], &["*.txt"]);
    let state = whole_state(fx.repo.path());
    let mv = |to_sha: Option<String>| json!({"ops": [{"op": "move", "path": "a.txt", "to": "b.txt", "expected_sha256": fx.sha("a.txt"), "to_expected_sha256": to_sha}]});
    let refused = run(&request(&fx, "change_set", mv(None)));
    assert_eq!(
        refused.response["code"], "MOVE_EXISTS",
        "{}",
        refused.stdout
    );
    assert_eq!(whole_state(fx.repo.path()), state);
    let fallback = protocol_with(
        request(&fx, "change_set", mv(Some(fx.sha("b.txt"))))
            .to_string()
            .as_bytes(),
        |cmd| {
            cmd.env("SATYRN_TEST_PUBLISH_FALLBACK", "1");
        },
    );
    assert_eq!(
        fallback.response["code"], "MUTATION_FAILED",
        "{}",
        fallback.stdout
    );
    assert!(
        fallback.response["message"]
            .as_str()
            .expect("message")
            .contains("O_TMPFILE")
    );
    assert_eq!(whole_state(fx.repo.path()), state);
    let done = run(&request(&fx, "change_set", mv(Some(fx.sha("b.txt")))));
    assert_eq!(done.response["code"], "OK", "{}", done.stdout);
    assert_eq!(
        worktree_files(fx.repo.path())
            .into_iter()
            .collect::<Vec<_>>(),
        [("b.txt".to_owned(), b"a\n".to_vec())]
    );
}

/// `"paths": "agent"` takes a patch's and a change set's paths as agents write them
/// (`./`, an absolute path under `repo`, a trailing `/`) and echoes the canonical ones; the
/// protocol's default stays strict, and a path the rule does not cover (`..`, another
/// absolute path) is refused either way, the tree unchanged. Another `paths` value is named.
#[test]
fn agent_paths_are_taken_only_when_asked_for_and_never_widen_the_strict_rules() {
    let fx = Fixture::new(
        &[("src/a.txt", b"one\n"), ("src/b.txt", b"bee\n")],
        &["src/*"],
    );
    let root = fx.repo.path().display().to_string();
    let sha_a = sha256_hex(b"one\n");
    let patch = format!(
        "*** Begin Patch\n*** Update File: ./src/a.txt\n@@\n-one\n+two\n*** Add File: {root}/src/c.txt\n+sea\n*** End Patch\n"
    );
    let fields = |paths: Option<&str>, patch: &str| {
        let mut f =
            json!({"patch": patch, "expected_sha256": {format!("{root}/src/a.txt"): sha_a}});
        if let Some(p) = paths {
            f["paths"] = json!(p);
        }
        f
    };
    let before = whole_state(fx.repo.path());
    for paths in [None, Some("strict")] {
        let done = run(&request(&fx, "apply_patch", fields(paths, &patch)));
        assert_eq!(
            done.response["code"], "INVALID_REQUEST",
            "{paths:?}: {}",
            done.stdout
        );
        assert_eq!(whole_state(fx.repo.path()), before, "{paths:?}");
    }
    let done = run(&request(&fx, "apply_patch", fields(Some("loose"), &patch)));
    assert_eq!(done.response["code"], "INVALID_REQUEST", "{}", done.stdout);
    assert!(
        done.response["message"]
            .as_str()
            .expect("message")
            .contains("`paths` must be \"strict\" or \"agent\""),
        "{}",
        done.stdout
    );
    for outside in ["../src/a.txt", "/etc/passwd", "src/./a.txt"] {
        let bad = patch.replace("./src/a.txt", outside);
        let done = run(&request(&fx, "apply_patch", fields(Some("agent"), &bad)));
        assert_ne!(done.response["code"], "OK", "{outside}: {}", done.stdout);
        assert_eq!(whole_state(fx.repo.path()), before, "{outside}");
    }
    let done = run(&request(&fx, "apply_patch", fields(Some("agent"), &patch)));
    assert_eq!(done.response["code"], "OK", "{}", done.stdout);
    let paths: Vec<&str> = done.response["result"]["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f["path"].as_str().expect("path"))
        .collect();
    assert_eq!(paths, ["src/a.txt", "src/c.txt"]);
    assert_eq!(worktree_files(fx.repo.path())["src/a.txt"], b"two\n");
    // A change set: the same rule on `path` and `to`.
    let set = json!({"paths": "agent", "ops": [
        {"op": "move", "path": format!("{root}/src/b.txt"), "to": "./src/d.txt",
         "expected_sha256": sha256_hex(b"bee\n")},
    ]});
    let strict = {
        let mut s = set.clone();
        s.as_object_mut().expect("object").remove("paths");
        s
    };
    let before = whole_state(fx.repo.path());
    let done = run(&request(&fx, "change_set", strict));
    assert_eq!(done.response["code"], "INVALID_REQUEST", "{}", done.stdout);
    assert_eq!(whole_state(fx.repo.path()), before);
    let done = run(&request(&fx, "change_set", set));
    assert_eq!(done.response["code"], "OK", "{}", done.stdout);
    assert_eq!(
        done.response["result"]["files"][1]["path"], "src/d.txt",
        "{}",
        done.stdout
    );
    assert_eq!(worktree_files(fx.repo.path())["src/d.txt"], b"bee\n");
}
