//! Every documented size limit of a publishing call is reachable: at the limit the call
//! succeeds, one byte over it is refused with its named code and nothing changes. Large
//! files are sparse (`set_len`), their anchor near the end, so the tests stay quick.

use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;

use serde_json::json;

use crate::protocol_common::{Fixture, assert_invalid, assert_ok, assert_refused, temporaries};
use crate::support::{dir_entries, protocol, protocol_raw, sha256_hex, snapshot};

const MIB: u64 = 1024 * 1024;

/// Makes `path` a sparse file of `len` bytes of NUL (valid UTF-8) ending in `tail`.
fn sparse_with_tail(path: &std::path::Path, len: u64, tail: &[u8]) {
    let mut file = std::fs::File::create(path).expect("create");
    file.set_len(len).expect("set_len");
    file.seek(SeekFrom::Start(len - tail.len() as u64))
        .expect("seek");
    file.write_all(tail).expect("write tail");
}

/// SHA-256 of a large file, by coreutils' `sha256sum` (an independent implementation,
/// and an optimized one, where the test binary's own is a debug build).
fn sha256_of(path: &std::path::Path) -> String {
    let out = std::process::Command::new("sha256sum")
        .arg(path)
        .output()
        .expect("sha256sum runs");
    assert!(out.status.success(), "sha256sum failed");
    String::from_utf8(out.stdout).expect("utf-8")[..64].to_string()
}

/// `replace` works on a file of exactly 256 MiB (`MAX_FILE_BYTES`) — the plan it hands
/// back is larger than wasmtime's default 128 MiB of hostcall data — and refuses one of
/// 256 MiB + 1 byte with `MUTATION_FAILED`, the file unchanged.
#[test]
fn replace_reaches_the_256_mib_limit_and_refuses_one_byte_more() {
    let limit = 256 * MIB;
    let fx = Fixture::new(&[], &["*.bin"]);
    let at = fx.file("at.bin");
    let over = fx.file("over.bin");
    sparse_with_tail(&at, limit, b"ANCHOR\n");
    sparse_with_tail(&over, limit + 1, b"ANCHOR\n");

    let before = snapshot_meta(&over);
    let over_sha = sha256_of(&over);
    let run = protocol(&fx.request("over.bin", Some(&over_sha), "ANCHOR", "CHANGE"));
    assert_refused(&run, "MUTATION_FAILED");
    let message = run.response["message"].as_str().expect("message");
    assert!(message.contains("268435456"), "{message}");
    assert_eq!(snapshot_meta(&over), before);
    assert_eq!(
        sha256_of(&over),
        over_sha,
        "the over-limit file is unchanged"
    );

    let run = protocol(&fx.request("at.bin", Some(&sha256_of(&at)), "ANCHOR", "CHANGE"));
    assert_eq!(run.response["code"], "OK", "{run:?}");
    assert_eq!(run.status, 0);
    assert_eq!(std::fs::metadata(&at).expect("stat").len(), limit);
    let mut tail = vec![0u8; 7];
    {
        use std::io::Read;
        let mut file = std::fs::File::open(&at).expect("open");
        file.seek(SeekFrom::End(-7)).expect("seek");
        file.read_exact(&mut tail).expect("read");
    }
    assert_eq!(tail, b"CHANGE\n");
    assert_eq!(
        run.response["result"]["sha256"],
        sha256_of(&at),
        "the response names the published revision"
    );
    assert!(temporaries(fx.repo.path()).is_empty());
}

/// Size, mode and inode: what must not change (the bytes are compared by hash).
fn snapshot_meta(path: &std::path::Path) -> (u64, u32, u64) {
    let meta = std::fs::metadata(path).expect("stat");
    (meta.len(), meta.mode(), meta.ino())
}

/// `edit` works on a file of exactly 16 MiB and refuses 16 MiB + 1 byte.
#[test]
fn edit_reaches_the_16_mib_limit_and_refuses_one_byte_more() {
    let limit = 16 * MIB;
    let fx = Fixture::new(&[], &["*.bin"]);
    let at = fx.file("at.bin");
    let over = fx.file("over.bin");
    sparse_with_tail(&at, limit, b"ANCHOR\n");
    sparse_with_tail(&over, limit + 1, b"ANCHOR\n");
    let edit = |path: &str, sha: &str| {
        json!({
            "version": 1, "operation": "edit",
            "repo": fx.repo.path(), "contract": fx.contract.path,
            "path": path, "expected_sha256": sha,
            "edits": [{"op": "replace", "old_text": "ANCHOR", "new_text": "CHANGE"}],
        })
    };
    let before = (snapshot_meta(&over), sha256_of(&over));
    let run = protocol(&edit("over.bin", &before.1));
    assert_refused(&run, "MUTATION_FAILED");
    assert!(
        run.response["message"]
            .as_str()
            .expect("message")
            .contains("16777216"),
        "{run:?}"
    );
    assert_eq!((snapshot_meta(&over), sha256_of(&over)), before);
    let run = protocol(&edit("at.bin", &sha256_of(&at)));
    assert_eq!(run.response["code"], "OK", "{run:?}");
    assert_eq!(run.response["result"]["sha256"], sha256_of(&at));
    assert_eq!(std::fs::metadata(&at).expect("stat").len(), limit);
}

/// A request of exactly 64 MiB (`MAX_REQUEST_BYTES`) is read and applied; one byte more
/// is `INVALID_REQUEST` before anything is looked at.
#[test]
fn a_request_of_exactly_64_mib_is_applied_and_one_byte_more_is_invalid() {
    const LIMIT: usize = 64 * 1024 * 1024;
    let fx = Fixture::new(&[("a.txt", b"hello world\n")], &["a.txt"]);
    let sha = sha256_hex(b"hello world\n");
    // The request with an empty new_text, then padded to exactly LIMIT bytes with the
    // new text (ASCII, so one byte of JSON each).
    let skeleton = fx.request("a.txt", Some(&sha), "world", "").to_string();
    let pad = LIMIT - skeleton.len();
    let request = fx
        .request("a.txt", Some(&sha), "world", &"n".repeat(pad))
        .to_string();
    assert_eq!(request.len(), LIMIT);
    let mut over = fx
        .request("a.txt", Some(&sha), "world", &"n".repeat(pad + 1))
        .to_string()
        .into_bytes();
    assert_eq!(over.len(), LIMIT + 1);
    let before = snapshot(&fx.file("a.txt"));
    let run = protocol_raw(&over);
    assert_invalid(&run);
    assert_eq!(snapshot(&fx.file("a.txt")), before);
    assert_eq!(dir_entries(fx.repo.path()), [".git", "a.txt"]);
    over.clear();
    let run = protocol_raw(request.as_bytes());
    let expected = format!("hello {}\n", "n".repeat(pad));
    assert_ok(&run, "a.txt", expected.as_bytes());
    assert_eq!(
        std::fs::read(fx.file("a.txt")).expect("read"),
        expected.as_bytes()
    );
}

/// A batch of exactly 1000 edits (`MAX_EDITS`) is applied; 1001 is `INVALID_REQUEST`.
#[test]
fn a_batch_of_1000_edits_is_applied_and_1001_is_invalid() {
    let text: String = (0..1001).map(|i| format!("item {i:04};\n")).collect();
    let fx = Fixture::new(&[("list.txt", text.as_bytes())], &["*.txt"]);
    let sha = sha256_hex(text.as_bytes());
    let batch = |n: usize| {
        let edits: Vec<serde_json::Value> = (0..n)
            .map(|i| json!({"op": "replace", "old_text": format!("item {i:04};"), "new_text": format!("ITEM {i:04};")}))
            .collect();
        json!({
            "version": 1, "operation": "edit",
            "repo": fx.repo.path(), "contract": fx.contract.path,
            "path": "list.txt", "expected_sha256": sha, "edits": edits,
        })
    };
    let before = snapshot(&fx.file("list.txt"));
    assert_invalid(&protocol(&batch(1001)));
    assert_eq!(snapshot(&fx.file("list.txt")), before);
    let run = protocol(&batch(1000));
    assert_eq!(run.response["code"], "OK", "{run:?}");
    let expected: String = (0..1001)
        .map(|i| {
            if i < 1000 {
                format!("ITEM {i:04};\n")
            } else {
                format!("item {i:04};\n")
            }
        })
        .collect();
    assert_eq!(
        std::fs::read(fx.file("list.txt")).expect("read"),
        expected.as_bytes()
    );
}

/// A line of exactly one page (51 200 bytes with its LF) is read; one byte more is
/// `READ_TOO_LARGE`.
#[test]
fn a_line_of_exactly_one_page_is_read_and_one_byte_more_is_too_large() {
    const PAGE: usize = 51_200;
    let at = format!("{}\n", "a".repeat(PAGE - 1));
    let over = format!("{}\n", "b".repeat(PAGE));
    let fx = Fixture::new(
        &[("at.txt", at.as_bytes()), ("over.txt", over.as_bytes())],
        &[],
    );
    let read = |path: &str| {
        protocol(&json!({
            "version": 1, "operation": "read",
            "repo": fx.repo.path(), "contract": fx.contract.path, "path": path,
        }))
    };
    let run = read("over.txt");
    assert_eq!(run.response["code"], "READ_TOO_LARGE", "{run:?}");
    assert_eq!(run.status, 11);
    let run = read("at.txt");
    assert_eq!(run.response["code"], "OK", "{run:?}");
    assert_eq!(run.response["result"]["text"], at);
    assert_eq!(
        run.response["result"]["next_offset"],
        serde_json::Value::Null
    );
}

/// An `edit` request against `fx`'s `f.txt` at its current revision.
fn edit_request(fx: &Fixture, edits: Vec<serde_json::Value>) -> serde_json::Value {
    json!({
        "version": 1, "operation": "edit",
        "repo": fx.repo.path(), "contract": fx.contract.path,
        "path": "f.txt", "expected_sha256": fx.sha("f.txt"), "edits": edits,
    })
}

fn rep(old: &str, new: &str) -> serde_json::Value {
    json!({"op": "replace", "old_text": old, "new_text": new})
}

/// Runs a batch that must be refused, checks the file is unchanged, returns the result.
fn refused_batch(fx: &Fixture, edits: Vec<serde_json::Value>) -> serde_json::Value {
    let before = snapshot(&fx.file("f.txt"));
    let run = protocol(&edit_request(fx, edits));
    assert_eq!(run.status, 9, "{run:?}");
    assert_eq!(snapshot(&fx.file("f.txt")), before);
    run.response
}

/// At most 100 problems are listed: 100 are all listed, the 101st is counted in
/// `problems_omitted`.
#[test]
fn a_refused_batch_lists_100_problems_and_counts_the_101st() {
    let fx = Fixture::new(&[("f.txt", b"hello\n")], &["f.txt"]);
    for (n, listed, omitted) in [(100, 100, 0), (101, 100, 1)] {
        let response = refused_batch(&fx, vec![rep("", "x"); n]);
        let result = &response["result"];
        assert_eq!(
            result["problems"].as_array().expect("problems").len(),
            listed
        );
        assert_eq!(result["problems_omitted"], omitted, "{n} problems");
    }
}

/// An ambiguous selector lists its first 8 matches: 8 occurrences are all listed, a 9th is
/// counted but not listed.
#[test]
fn an_ambiguous_selector_lists_8_matches_and_counts_the_9th() {
    for (n, listed) in [(8usize, 8usize), (9, 8)] {
        let fx = Fixture::new(&[("f.txt", "dup\n".repeat(n).as_bytes())], &["f.txt"]);
        let response = refused_batch(&fx, vec![rep("dup", "one")]);
        let problem = &response["result"]["problems"][0];
        assert_eq!(problem["code"], "ANCHOR_AMBIGUOUS");
        assert_eq!(problem["match_count"], n);
        assert_eq!(
            problem["matches"].as_array().expect("matches").len(),
            listed
        );
    }
}

/// Occurrences are counted up to 10 000: 9999 is exact, 10 000 and 10 001 are "at least
/// 10000".
#[test]
fn occurrences_are_counted_exactly_below_10000_and_at_least_from_it() {
    for (n, exact) in [(9999usize, true), (10_000, false), (10_001, false)] {
        let fx = Fixture::new(&[("f.txt", "dup\n".repeat(n).as_bytes())], &["f.txt"]);
        let response = refused_batch(&fx, vec![rep("dup", "one")]);
        let problem = &response["result"]["problems"][0];
        assert_eq!(problem["match_count"], n.min(10_000), "{n}");
        let message = problem["message"].as_str().expect("message");
        assert_eq!(message.contains("at least"), !exact, "{n}: {message}");
    }
}

/// Near misses are searched for the first 16 missing selectors of a batch: the 16th has
/// one, the 17th none.
#[test]
fn near_misses_are_given_for_16_missing_selectors_and_not_the_17th() {
    let fx = Fixture::new(&[("f.txt", b"alpha beta\n")], &["f.txt"]);
    let edits: Vec<serde_json::Value> = (0..17)
        .map(|i| rep(&format!("alpha gamma {i}"), "x"))
        .collect();
    let response = refused_batch(&fx, edits);
    let problems = response["result"]["problems"].as_array().expect("problems");
    assert_eq!(problems.len(), 17);
    assert_eq!(problems[15]["code"], "ANCHOR_MISSING");
    assert_ne!(
        problems[15]["near_miss"],
        serde_json::Value::Null,
        "{:?}",
        problems[15]
    );
    assert_eq!(
        problems[16]["near_miss"],
        serde_json::Value::Null,
        "{:?}",
        problems[16]
    );
}

/// An `edit` whose result would be over 16 MiB — a file no tool could read or edit again —
/// is `RESULT_TOO_LARGE`, the file unchanged; the sibling: a result of exactly 16 MiB.
#[test]
fn an_edit_whose_result_would_be_over_16_mib_is_refused_by_name() {
    let limit = 16 * MIB;
    let fx = Fixture::new(&[], &["*.bin"]);
    let path = fx.file("grow.bin");
    sparse_with_tail(&path, 8 * MIB, b"ANCHOR\n");
    let edit = |sha: &str, new_text: &str| {
        json!({
            "version": 1, "operation": "edit",
            "repo": fx.repo.path(), "contract": fx.contract.path,
            "path": "grow.bin", "expected_sha256": sha,
            "edits": [{"op": "replace", "old_text": "ANCHOR", "new_text": new_text}],
        })
    };
    let before = (snapshot_meta(&path), sha256_of(&path));
    let grown = usize::try_from(limit - 8 * MIB + 7).expect("fits");
    let run = protocol(&edit(&before.1, &"x".repeat(grown)));
    assert_refused(&run, "RESULT_TOO_LARGE");
    let message = run.response["message"].as_str().expect("message");
    assert!(
        message.contains("16777217 bytes, over the 16777216"),
        "{message}"
    );
    assert_eq!((snapshot_meta(&path), sha256_of(&path)), before);
    let run = protocol(&edit(&before.1, &"x".repeat(grown - 1)));
    assert_eq!(run.response["code"], "OK", "{run:?}");
    assert_eq!(std::fs::metadata(&path).expect("stat").len(), limit);
}
