//! The shared reuse fixtures (`tests/fixtures/mutator-cases.json`) through the Rust host
//! — the real embedded component via `satyrn_engine::Loaded` — and
//! `satyrn-host component export`. Node (jco) and Python (wasmtime-py) run the same
//! fixtures in `tests/reuse/` (`scripts/test-reuse.sh`); see `docs/reuse.md`.

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use satyrn_engine::{
    COMPONENT_WASM, Loaded, Mutator, RefusalCode, ReplaceError, ReplaceRequest, RevisionError,
};
use serde_json::{Value, json};

use crate::support::{host_bin, sha256_hex};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn cases() -> Vec<Value> {
    let text = std::fs::read_to_string(root().join("tests/fixtures/mutator-cases.json"))
        .expect("read the shared fixtures");
    let doc: Value = serde_json::from_str(&text).expect("fixtures are JSON");
    doc["cases"].as_array().expect("cases").clone()
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} is a string in {v}"))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .expect("an array")
        .iter()
        .map(|s| s.as_str().expect("a string").to_string())
        .collect()
}

fn make_files(worktree: &Path, files: &Value) {
    for f in files.as_array().expect("files") {
        let path = worktree.join(str_of(f, "path"));
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        if let Some(text) = f["text"].as_str() {
            std::fs::write(&path, text).expect("write");
        } else if let Some(hex) = f["hex"].as_str() {
            let bytes: Vec<u8> = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
                .collect();
            std::fs::write(&path, bytes).expect("write");
        } else if let Some(target) = f["symlink"].as_str() {
            std::os::unix::fs::symlink(target, &path).expect("symlink");
        } else if let Some(existing) = f["hardlink"].as_str() {
            std::fs::hard_link(worktree.join(existing), &path).expect("hard link");
        } else if f["dir"] == true {
            std::fs::create_dir(&path).expect("mkdir");
        } else {
            panic!("unknown file kind {f}");
        }
    }
}

/// Every entry beneath `dir`: mode, inode, link count, and bytes or link target.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (u32, u64, u64, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read_dir") {
            let p = entry.expect("entry").path();
            let meta = std::fs::symlink_metadata(&p).expect("lstat");
            let content = if meta.file_type().is_symlink() {
                std::fs::read_link(&p)
                    .expect("readlink")
                    .into_os_string()
                    .into_encoded_bytes()
            } else if meta.is_file() {
                std::fs::read(&p).expect("read")
            } else {
                stack.push(p.clone());
                Vec::new()
            };
            out.insert(p, (meta.mode(), meta.ino(), meta.nlink(), content));
        }
    }
    out
}

/// One call, its result in the canonical form of `docs/reuse.md`.
fn call(mutator: &mut Mutator, c: &Value) -> Value {
    match str_of(c, "function") {
        "replace" => {
            let request = ReplaceRequest {
                path: str_of(c, "path").to_string(),
                writable_paths: strings(&c["writable_paths"]),
                private_paths: strings(&c["private_paths"]),
                expected_sha256: c["expected_sha256"].as_str().map(str::to_string),
                old_text: str_of(c, "old_text").to_string(),
                new_text: str_of(c, "new_text").to_string(),
            };
            match mutator.replace(&request).expect("no trap") {
                Ok(plan) => json!({"ok": {
                    "path": plan.path,
                    "base_sha256": plan.base_sha256,
                    "new_text": String::from_utf8(plan.new_content).expect("UTF-8 plan"),
                    "next_sha256": plan.next_sha256,
                }}),
                Err(ReplaceError::Refused(r)) => {
                    json!({"refused": {"code": wit_code(r.code), "message": r.message}})
                }
                Err(ReplaceError::InvalidRequest(m)) => json!({"invalid_request": m}),
            }
        }
        "revision" => {
            let got = mutator
                .revision(
                    str_of(c, "path"),
                    &strings(&c["writable_paths"]),
                    &strings(&c["private_paths"]),
                )
                .expect("no trap");
            match got {
                Ok(sha) => json!({"ok": sha}),
                Err(RevisionError::Undeclared) => json!({"undeclared": null}),
                Err(RevisionError::Private) => json!({"private": null}),
                Err(RevisionError::NotEditable(m)) => json!({"not_editable": m}),
                Err(RevisionError::InvalidRequest(m)) => json!({"invalid_request": m}),
            }
        }
        "matches" => json!({"ok": mutator
            .matches(str_of(c, "path"), &strings(&c["patterns"]))
            .expect("no trap")}),
        other => panic!("unknown function {other}"),
    }
}

/// The WIT spelling of a refusal code (exhaustive: a new code must be named here).
fn wit_code(code: RefusalCode) -> &'static str {
    match code {
        RefusalCode::PathPrivate => "path-private",
        RefusalCode::PathUndeclared => "path-undeclared",
        RefusalCode::TargetExists => "target-exists",
        RefusalCode::RevisionUnavailable => "revision-unavailable",
        RefusalCode::RevisionStale => "revision-stale",
        RefusalCode::AnchorMissing => "anchor-missing",
        RefusalCode::AnchorAmbiguous => "anchor-ambiguous",
        RefusalCode::MutationFailed => "mutation-failed",
    }
}

#[test]
fn every_shared_case_decides_as_expected_and_writes_nothing() {
    let loaded = Loaded::new().expect("load the embedded component");
    let mut failures = Vec::new();
    let cases = cases();
    for case in &cases {
        let name = str_of(case, "name");
        let dir = tempfile::tempdir().expect("tempdir");
        let worktree = dir.path().join("worktree");
        std::fs::create_dir(&worktree).expect("mkdir");
        make_files(&worktree, &case["files"]);
        let before = snapshot(&worktree);
        let fd = OwnedFd::from(std::fs::File::open(&worktree).expect("open worktree"));
        let mut mutator = loaded.instantiate(&fd).expect("instantiate");
        let got = call(&mut mutator, &case["call"]);
        if got != case["expect"] {
            failures.push(format!("{name}: got {got}, expected {}", case["expect"]));
        }
        if snapshot(&worktree) != before {
            failures.push(format!("{name}: the worktree changed"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn the_shared_fixtures_cover_every_gate_and_each_refusal_has_a_success_sibling() {
    let cases = cases();
    let by_name: BTreeMap<&str, &Value> = cases.iter().map(|c| (str_of(c, "name"), c)).collect();
    assert_eq!(by_name.len(), cases.len(), "case names are unique");
    let mut codes = BTreeSet::new();
    let mut functions = BTreeSet::new();
    for case in &cases {
        let name = str_of(case, "name");
        let expect = case["expect"].as_object().expect("expect is an object");
        functions.insert(str_of(&case["call"], "function"));
        if let Some(refusal) = expect.get("refused") {
            codes.insert(str_of(refusal, "code"));
        }
        if let Some(ok) = expect.get("ok").filter(|v| v.is_object()) {
            // The expected plan is consistent with the file it is made from.
            let path = str_of(ok, "path");
            let file = case["files"]
                .as_array()
                .expect("files")
                .iter()
                .find(|f| f["path"] == path)
                .unwrap_or_else(|| panic!("{name}: no file {path}"));
            assert_eq!(
                str_of(ok, "base_sha256"),
                sha256_hex(str_of(file, "text").as_bytes()),
                "{name}"
            );
            assert_eq!(
                str_of(ok, "next_sha256"),
                sha256_hex(str_of(ok, "new_text").as_bytes()),
                "{name}"
            );
        }
        if !expect.contains_key("ok") {
            let sibling = case["sibling"]
                .as_str()
                .unwrap_or_else(|| panic!("{name}: a refusal names its success sibling"));
            let sibling = by_name
                .get(sibling)
                .unwrap_or_else(|| panic!("{name}: no sibling {sibling}"));
            assert!(
                sibling["expect"].get("ok").is_some(),
                "{name}: the sibling succeeds"
            );
            assert_eq!(
                sibling["call"]["function"], case["call"]["function"],
                "{name}: the sibling calls the same function"
            );
        }
    }
    assert_eq!(
        codes,
        BTreeSet::from([
            "path-private",
            "path-undeclared",
            "revision-unavailable",
            "revision-stale",
            "anchor-missing",
            "anchor-ambiguous",
            "mutation-failed",
        ])
    );
    assert_eq!(
        functions,
        BTreeSet::from(["matches", "replace", "revision"])
    );
    for required in [
        "symlink-leaf",
        "symlink-intermediate-directory",
        "hard-link",
        "git-path-under-star",
        "invalid-path-parent",
    ] {
        assert!(by_name.contains_key(required), "{required}");
    }
}

fn export(out: &Path) -> std::process::Output {
    Command::new(host_bin())
        .args(["component", "export", "--out"])
        .arg(out)
        .output()
        .expect("run satyrn-host component export")
}

fn files_under(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = snapshot(dir)
        .keys()
        .map(|p| {
            p.strip_prefix(dir)
                .expect("beneath")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

#[test]
fn export_writes_the_embedded_component_its_wit_and_a_true_manifest() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("new/export");
    let run = export(&out);
    assert!(run.status.success(), "{run:?}");
    assert_eq!(
        files_under(&out),
        [
            "manifest.json",
            "satyrn_mutator.wasm",
            "wit",
            "wit/deps",
            "wit/deps/clocks.wit",
            "wit/deps/filesystem.wit",
            "wit/deps/io.wit",
            "wit/mutator.wit",
        ]
    );
    let wasm = std::fs::read(out.join("satyrn_mutator.wasm")).expect("read");
    assert!(
        wasm == COMPONENT_WASM,
        "the exported wasm is the embedded one"
    );
    for rel in [
        "wit/mutator.wit",
        "wit/deps/clocks.wit",
        "wit/deps/filesystem.wit",
        "wit/deps/io.wit",
    ] {
        assert_eq!(
            std::fs::read(out.join(rel)).expect("read"),
            std::fs::read(root().join(rel)).expect("read"),
            "{rel}"
        );
    }
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).expect("read"))
            .expect("manifest is JSON");
    let stdout: Value = serde_json::from_slice(&run.stdout).expect("stdout is JSON");
    assert_eq!(stdout, manifest, "stdout prints the manifest");
    assert_eq!(manifest["component"]["sha256"], sha256_hex(&wasm));
    assert_eq!(manifest["component"]["bytes"], wasm.len());
    let wit = std::fs::read_to_string(root().join("wit/mutator.wit")).expect("read");
    let package_line = format!(
        "package {}@{};",
        str_of(&manifest["wit"], "package"),
        str_of(&manifest["wit"], "version")
    );
    assert!(wit.lines().any(|l| l == package_line), "{package_line}");
    // The import list is exactly the filesystem capability; the rest carry types only.
    let imports: BTreeMap<String, Vec<String>> = manifest["imports"]
        .as_array()
        .expect("imports")
        .iter()
        .map(|i| (str_of(i, "name").to_string(), strings(&i["items"])))
        .collect();
    let with_items: BTreeSet<&str> = imports
        .iter()
        .filter(|(_, items)| !items.is_empty())
        .map(|(n, _)| n.as_str())
        .filter(|n| !n.starts_with("wasi:io/"))
        .collect();
    assert_eq!(
        with_items,
        BTreeSet::from([
            "wasi:filesystem/preopens@0.2.12",
            "wasi:filesystem/types@0.2.12"
        ]),
        "{imports:?}"
    );
    for (name, items) in &imports {
        let allowed = name.starts_with("wasi:filesystem/")
            || name.starts_with("wasi:io/")
            || (items.is_empty()
                && (name.starts_with("wasi:clocks/wall-clock@")
                    || name.starts_with("satyrn:mutator/types@")));
        assert!(allowed, "unexpected import {name} {items:?}");
    }
    assert_eq!(
        imports["wasi:filesystem/preopens@0.2.12"],
        ["descriptor", "get-directories"]
    );
    // No filesystem call that writes.
    for item in &imports["wasi:filesystem/types@0.2.12"] {
        for writer in [
            "write", "rename", "unlink", "create", "remove", "set-", "link", "sync",
        ] {
            assert!(!item.contains(writer), "{item}");
        }
    }
    // The manifest agrees with the loaded component.
    let loaded = Loaded::new().expect("load");
    let names: Vec<String> = loaded.imports().into_iter().map(|i| i.name).collect();
    assert_eq!(names.len(), imports.len());
    // Exactly the mutator interface of this WIT version, with at least the three
    // functions the shared fixtures call (later versions may add operations).
    let exports = manifest["exports"].as_array().expect("exports");
    assert_eq!(exports.len(), 1, "{exports:?}");
    assert_eq!(
        str_of(&exports[0], "name"),
        format!(
            "satyrn:mutator/mutator@{}",
            str_of(&manifest["wit"], "version")
        )
    );
    let functions: BTreeSet<String> = strings(&exports[0]["items"]).into_iter().collect();
    for f in ["matches", "replace", "revision"] {
        assert!(functions.contains(f), "{f} in {functions:?}");
    }
    let loaded_exports: Vec<Value> = loaded
        .exports()
        .into_iter()
        .map(|e| json!({"name": e.name, "items": e.items}))
        .collect();
    assert_eq!(manifest["exports"], Value::Array(loaded_exports));
}

#[test]
fn export_never_overwrites_and_leaves_nothing_partial() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // Success sibling: a fresh directory.
    let fresh = tmp.path().join("fresh");
    assert!(export(&fresh).status.success());
    // The same directory again: refused, nothing touched.
    let before = snapshot(&fresh);
    let run = export(&fresh);
    assert_eq!(run.status.code(), Some(2), "{run:?}");
    assert!(run.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("refusing to overwrite") && stderr.contains("satyrn_mutator.wasm"),
        "{stderr}"
    );
    assert_eq!(snapshot(&fresh), before);
    // One existing file (even a dangling symlink) stops the whole export.
    let partial = tmp.path().join("partial");
    std::fs::create_dir(&partial).expect("mkdir");
    std::os::unix::fs::symlink("/nonexistent", partial.join("manifest.json")).expect("symlink");
    let run = export(&partial);
    assert_eq!(run.status.code(), Some(2), "{run:?}");
    assert!(
        String::from_utf8_lossy(&run.stderr).contains("manifest.json"),
        "{run:?}"
    );
    assert_eq!(files_under(&partial), ["manifest.json"], "nothing partial");
    // Usage errors exit 2 too.
    for args in [
        &["component"][..],
        &["component", "export"],
        &["component", "import"],
    ] {
        let run = Command::new(host_bin()).args(args).output().expect("run");
        assert_eq!(run.status.code(), Some(2), "{args:?}");
        assert!(run.stdout.is_empty());
    }
}
