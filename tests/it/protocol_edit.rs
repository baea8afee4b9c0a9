//! The `edit` operation through the real binary and component: every refusal of a batch
//! beside a sibling success, every diagnostic shape, line endings, BOM and modes.

use std::os::unix::fs::{PermissionsExt, symlink};

use serde_json::{Value, json};

use crate::protocol_common::{Fixture, assert_invalid, mode_of, temporaries};
use crate::support::{ProtocolRun, dir_entries, protocol, sha256_hex, snapshot};

fn request(fx: &Fixture, path: &str, expected: Option<&str>, edits: Value) -> Value {
    json!({
        "version": 1, "operation": "edit",
        "repo": fx.repo.path(), "contract": fx.contract.path,
        "path": path, "expected_sha256": expected, "edits": edits,
    })
}

fn fresh(fx: &Fixture, path: &str, edits: Value) -> Value {
    let sha = fx.sha(path);
    request(fx, path, Some(&sha), edits)
}

fn rep(old: &str, new: &str) -> Value {
    json!({"op": "replace", "old_text": old, "new_text": new})
}

fn rep_at(old: &str, new: &str, occurrence: u32) -> Value {
    json!({"op": "replace", "old_text": old, "new_text": new, "occurrence": occurrence})
}

fn ins(anchor: &str, new: &str) -> Value {
    json!({"op": "insert_after", "anchor_text": anchor, "new_text": new})
}

/// Runs a refused request: `code`, exit 9, the field order, and `watch` and the
/// directories of `watch` unchanged (bytes, mode, inode, links, no temporary).
fn refuse(fx: &Fixture, req: &Value, code: &str, watch: &[&str]) -> ProtocolRun {
    let before: Vec<_> = watch.iter().map(|w| snapshot(&fx.file(w))).collect();
    let dirs: Vec<_> = watch
        .iter()
        .map(|w| {
            let d = fx.file(w).parent().expect("parent").to_path_buf();
            let e = dir_entries(&d);
            (d, e)
        })
        .collect();
    let run = protocol(req);
    assert_eq!(run.response["code"], code, "{run:?}");
    assert_eq!(run.status, 9, "{run:?}");
    assert_eq!(run.response["ok"], false);
    assert!(
        run.stdout.starts_with(&format!(
            "{{\"version\":1,\"ok\":false,\"code\":\"{code}\",\"message\":"
        )),
        "{}",
        run.stdout
    );
    let keys: Vec<&String> = run.response.as_object().expect("object").keys().collect();
    assert_eq!(keys.len(), 5, "{run:?}");
    assert!(
        !run.response["message"]
            .as_str()
            .expect("message")
            .is_empty()
    );
    for (w, b) in watch.iter().zip(&before) {
        assert_eq!(&snapshot(&fx.file(w)), b, "{w} changed although refused");
    }
    for (d, e) in &dirs {
        assert_eq!(&dir_entries(d), e, "{} changed", d.display());
    }
    run
}

/// Runs a successful request: exit 0, `path` holds `expected`, the result's revision is
/// its SHA-256, the mode is kept, no temporary is left.
fn succeed(fx: &Fixture, req: &Value, path: &str, expected: &[u8]) -> ProtocolRun {
    let mode = mode_of(&fx.file(path));
    let run = protocol(req);
    assert_eq!(run.status, 0, "{run:?}");
    assert_eq!(run.response["code"], "OK");
    assert_eq!(run.response["message"], "");
    assert!(
        run.stdout.starts_with(
            "{\"version\":1,\"ok\":true,\"code\":\"OK\",\"message\":\"\",\"result\":{\"path\":"
        ),
        "{}",
        run.stdout
    );
    let bytes = std::fs::read(fx.file(path)).expect("read");
    assert_eq!(
        String::from_utf8_lossy(&bytes),
        String::from_utf8_lossy(expected)
    );
    assert_eq!(bytes, expected);
    assert_eq!(run.response["result"]["path"], path);
    assert_eq!(run.response["result"]["sha256"], sha256_hex(expected));
    assert_eq!(mode_of(&fx.file(path)), mode, "mode kept");
    let dir = fx.file(path).parent().expect("parent").to_path_buf();
    assert!(temporaries(&dir).is_empty());
    run
}

fn problems(run: &ProtocolRun) -> Vec<(Value, String)> {
    run.response["result"]["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .map(|p| {
            (
                p["index"].clone(),
                p["code"].as_str().expect("code").to_string(),
            )
        })
        .collect()
}

const CODE: &[u8] = b"fn a() {\n    foo();\n}\nfn b() {\n    foo();\n}\nfn c() {\n    foo();\n}\n";

#[test]
fn ambiguous_lists_every_match_then_occurrence_succeeds() {
    let fx = Fixture::new(&[("src/a.rs", CODE)], &["src/*.rs"]);
    let run = refuse(
        &fx,
        &fresh(&fx, "src/a.rs", json!([rep("foo();", "bar();")])),
        "ANCHOR_AMBIGUOUS",
        &["src/a.rs"],
    );
    let p = &run.response["result"]["problems"][0];
    assert_eq!(
        *p,
        json!({
            "index": 0, "code": "ANCHOR_AMBIGUOUS", "message": p["message"],
            "match_count": 3,
            "matches": [
                {"occurrence": 1, "line": 2, "text": "    foo();"},
                {"occurrence": 2, "line": 5, "text": "    foo();"},
                {"occurrence": 3, "line": 8, "text": "    foo();"},
            ],
            "near_miss": null, "conflicts_with": null,
        })
    );
    assert_eq!(run.response["result"]["problems_omitted"], 0);
    let message = p["message"].as_str().expect("message");
    assert!(
        message.contains("occurrence") && message.contains("line 5"),
        "{message}"
    );
    // Out of range lists the same matches.
    let run = refuse(
        &fx,
        &fresh(&fx, "src/a.rs", json!([rep_at("foo();", "bar();", 4)])),
        "OCCURRENCE_OUT_OF_RANGE",
        &["src/a.rs"],
    );
    let p = &run.response["result"]["problems"][0];
    assert_eq!(p["match_count"], 3);
    assert_eq!(p["matches"].as_array().expect("matches").len(), 3);
    // The retry with an occurrence succeeds and reports what changed.
    let expected =
        String::from_utf8_lossy(CODE).replacen("    foo();\n}\nfn c", "    bar();\n}\nfn c", 1);
    let run = succeed(
        &fx,
        &fresh(&fx, "src/a.rs", json!([rep_at("foo();", "bar();", 2)])),
        "src/a.rs",
        expected.as_bytes(),
    );
    assert_eq!(
        run.response["result"],
        json!({
            "path": "src/a.rs", "sha256": sha256_hex(expected.as_bytes()),
            "changed": [{"start_line": 5, "end_line": 5}],
            "preview": [{"start_line": 3, "end_line": 7, "text": "}\nfn b() {\n    bar();\n}\nfn c() {\n"}],
            "preview_omitted_lines": 0,
        })
    );
}

#[test]
fn more_than_eight_matches_lists_eight() {
    let text = "x\n".repeat(12);
    let fx = Fixture::new(&[("a.txt", text.as_bytes())], &["*.txt"]);
    let run = refuse(
        &fx,
        &fresh(&fx, "a.txt", json!([rep("x", "y")])),
        "ANCHOR_AMBIGUOUS",
        &["a.txt"],
    );
    let p = &run.response["result"]["problems"][0];
    assert_eq!(p["match_count"], 12);
    assert_eq!(p["matches"].as_array().expect("matches").len(), 8);
    assert_eq!(
        p["matches"][7],
        json!({"occurrence": 8, "line": 8, "text": "x"})
    );
    succeed(
        &fx,
        &fresh(&fx, "a.txt", json!([rep_at("x", "y", 12)])),
        "a.txt",
        format!("{}y\n", "x\n".repeat(11)).as_bytes(),
    );
}

#[test]
fn overlapping_occurrences_are_counted_honestly() {
    let fx = Fixture::new(&[("a.txt", b"aaa\n")], &["*.txt"]);
    let run = refuse(
        &fx,
        &fresh(&fx, "a.txt", json!([rep("aa", "b")])),
        "ANCHOR_AMBIGUOUS",
        &["a.txt"],
    );
    assert_eq!(run.response["result"]["problems"][0]["match_count"], 2);
    refuse(
        &fx,
        &fresh(&fx, "a.txt", json!([rep_at("aa", "b", 3)])),
        "OCCURRENCE_OUT_OF_RANGE",
        &["a.txt"],
    );
    succeed(
        &fx,
        &fresh(&fx, "a.txt", json!([rep_at("aa", "b", 2)])),
        "a.txt",
        b"ab\n",
    );
    succeed(
        &fx,
        &fresh(&fx, "a.txt", json!([rep("ab", "ba")])),
        "a.txt",
        b"ba\n",
    );
}

#[test]
fn missing_selectors_name_their_near_miss() {
    let fx = Fixture::new(
        &[(
            "a.py",
            b"def f(x,  y):\n    return x + y\n\nprint(f(1, 2))\n",
        )],
        &["*.py"],
    );
    let watch = &["a.py"];
    // A whitespace-only difference, quoting the file's exact text.
    let run = refuse(
        &fx,
        &fresh(&fx, "a.py", json!([rep("def f(x, y):", "def g(x, y):")])),
        "ANCHOR_MISSING",
        watch,
    );
    let p = &run.response["result"]["problems"][0];
    assert_eq!(
        p["near_miss"],
        json!({"kind": "whitespace", "line": 1, "text": "def f(x,  y):"})
    );
    assert!(
        p["message"]
            .as_str()
            .expect("m")
            .contains("`def f(x,  y):`")
    );
    // Several lines: where the closest candidate diverges.
    let run = refuse(
        &fx,
        &fresh(
            &fx,
            "a.py",
            json!([rep("def f(x,  y):\n    return x - y\n", "")]),
        ),
        "ANCHOR_MISSING",
        watch,
    );
    assert_eq!(
        run.response["result"]["problems"][0]["near_miss"],
        json!({"kind": "diverges", "selector_line": 2, "selector_text": "    return x - y", "line": 2, "text": "    return x + y"})
    );
    // The longest present prefix.
    let run = refuse(
        &fx,
        &fresh(&fx, "a.py", json!([rep("print(f(3, 4))", "")])),
        "ANCHOR_MISSING",
        watch,
    );
    assert_eq!(
        run.response["result"]["problems"][0]["near_miss"],
        json!({"kind": "prefix", "line": 4, "prefix": "print(f(", "matched_chars": 8, "selector_chars": 14, "text": "print(f(1, 2))"})
    );
    // Nothing near at all.
    let run = refuse(
        &fx,
        &fresh(&fx, "a.py", json!([rep("§", "")])),
        "ANCHOR_MISSING",
        watch,
    );
    assert_eq!(
        run.response["result"]["problems"][0]["near_miss"],
        Value::Null
    );
    // The corrected edit succeeds.
    succeed(
        &fx,
        &fresh(
            &fx,
            "a.py",
            json!([
                rep("def f(x,  y):", "def f(x, y):"),
                rep("print(f(1, 2))", "print(f(3, 4))")
            ]),
        ),
        "a.py",
        b"def f(x, y):\n    return x + y\n\nprint(f(3, 4))\n",
    );
}

#[test]
fn every_problem_of_a_batch_is_reported_at_once() {
    let fx = Fixture::new(&[("a.txt", b"one two three\none\n")], &["*.txt"]);
    let run = refuse(
        &fx,
        &fresh(
            &fx,
            "a.txt",
            json!([
                rep("", "x"),
                rep("two", "two"),
                ins("three", ""),
                rep("one", "1"),
                rep("threx", "4"),
                rep_at("one", "1", 5),
                rep("two", "2"),
                rep("o t", "?"),
                ins("one t", "!"),
                ins("hree", "#"),
                ins("three", "%"),
            ]),
        ),
        "SELECTOR_EMPTY",
        &["a.txt"],
    );
    let expected: Vec<(Value, String)> = [
        (0, "SELECTOR_EMPTY"),
        (1, "NO_OP_EDIT"),
        (2, "NO_OP_EDIT"),
        (3, "ANCHOR_AMBIGUOUS"),
        (4, "ANCHOR_MISSING"),
        (5, "OCCURRENCE_OUT_OF_RANGE"),
        (7, "EDITS_OVERLAP"),
        (8, "INSERTION_IN_REPLACEMENT"),
        (10, "INSERTIONS_COLLIDE"),
    ]
    .iter()
    .map(|(i, c)| (json!(i), (*c).to_string()))
    .collect();
    assert_eq!(problems(&run), expected, "{run:?}");
    let list = &run.response["result"]["problems"];
    assert_eq!(list[6]["conflicts_with"], 6);
    assert_eq!(list[7]["conflicts_with"], 6);
    assert_eq!(list[8]["conflicts_with"], 9);
    assert_eq!(list[3]["match_count"], 2);
    assert_eq!(list[4]["near_miss"]["kind"], "prefix");
    let message = run.response["message"].as_str().expect("message");
    assert!(
        message.contains("9 problems") && message.contains("edits[0]"),
        "{message}"
    );
    // One corrected retry succeeds.
    succeed(
        &fx,
        &fresh(
            &fx,
            "a.txt",
            json!([rep_at("one", "1", 2), rep("two", "2"), ins("three", "!")]),
        ),
        "a.txt",
        b"one 2 three!\n1\n",
    );
}

#[test]
fn each_conflict_alone_and_its_sibling_success() {
    let fx = Fixture::new(&[("a.txt", b"alpha beta gamma\n")], &["*.txt"]);
    let w = &["a.txt"];
    refuse(
        &fx,
        &fresh(
            &fx,
            "a.txt",
            json!([rep("alpha beta", "x"), rep("beta gamma", "y")]),
        ),
        "EDITS_OVERLAP",
        w,
    );
    refuse(
        &fx,
        &fresh(&fx, "a.txt", json!([rep("beta", "x"), rep("beta", "y")])),
        "EDITS_OVERLAP",
        w,
    );
    refuse(
        &fx,
        &fresh(&fx, "a.txt", json!([ins("alpha", "1"), ins("alpha", "2")])),
        "INSERTIONS_COLLIDE",
        w,
    );
    // On the replacement's end, on its start, inside it.
    refuse(
        &fx,
        &fresh(&fx, "a.txt", json!([rep("beta", "B"), ins("beta", "!")])),
        "INSERTION_IN_REPLACEMENT",
        w,
    );
    refuse(
        &fx,
        &fresh(&fx, "a.txt", json!([ins("alpha ", "!"), rep("beta", "B")])),
        "INSERTION_IN_REPLACEMENT",
        w,
    );
    refuse(
        &fx,
        &fresh(
            &fx,
            "a.txt",
            json!([rep("alpha beta", "B"), ins("alp", "!")]),
        ),
        "INSERTION_IN_REPLACEMENT",
        w,
    );
    refuse(
        &fx,
        &fresh(&fx, "a.txt", json!([rep("beta", "beta")])),
        "NO_OP_EDIT",
        w,
    );
    refuse(
        &fx,
        &fresh(&fx, "a.txt", json!([ins("beta", "")])),
        "NO_OP_EDIT",
        w,
    );
    refuse(
        &fx,
        &fresh(
            &fx,
            "a.txt",
            json!([{"op": "insert_after", "anchor_text": "", "new_text": "x"}]),
        ),
        "SELECTOR_EMPTY",
        w,
    );
    // Each edit changes something, but together they change nothing.
    let run = refuse(
        &fx,
        &fresh(
            &fx,
            "a.txt",
            json!([rep("alpha", "alpha beta"), rep(" beta", "")]),
        ),
        "NO_OP_BATCH",
        w,
    );
    assert_eq!(run.response["result"]["problems"][0]["index"], Value::Null);
    // Adjacent replacements and an insertion next to (not on) a replacement succeed.
    succeed(
        &fx,
        &fresh(
            &fx,
            "a.txt",
            json!([rep("alpha", "A"), rep(" beta", "_B"), ins("gamma", "!")]),
        ),
        "a.txt",
        b"A_B gamma!\n",
    );
}

#[test]
fn crlf_files_get_crlf_edits_and_keep_everything_else() {
    let fx = Fixture::new(&[("w.txt", b"one\r\ntwo\r\nthree")], &["*.txt"]);
    // LF selectors and new text are normalized to CRLF; no final newline stays so.
    let run = succeed(
        &fx,
        &fresh(
            &fx,
            "w.txt",
            json!([rep("one\ntwo\n", "1\n2\n2b\n"), ins("three", "\nfour")]),
        ),
        "w.txt",
        b"1\r\n2\r\n2b\r\nthree\r\nfour",
    );
    assert_eq!(
        run.response["result"]["changed"],
        json!([{"start_line": 1, "end_line": 5}])
    );
    // A CRLF selector on an LF file is normalized too.
    let lf = Fixture::new(&[("l.txt", b"a\nb\n")], &["*.txt"]);
    succeed(
        &lf,
        &fresh(&lf, "l.txt", json!([rep("a\r\nb", "c\r\nd")])),
        "l.txt",
        b"c\nd\n",
    );
}

#[test]
fn bom_and_final_newline_shape_are_preserved() {
    let fx = Fixture::new(&[("b.txt", "\u{feff}first\nlast".as_bytes())], &["*.txt"]);
    succeed(
        &fx,
        &fresh(
            &fx,
            "b.txt",
            json!([rep("first", "1st"), rep("last", "end")]),
        ),
        "b.txt",
        "\u{feff}1st\nend".as_bytes(),
    );
    // A selector cannot reach into the BOM: it is not part of the text.
    refuse(
        &fx,
        &fresh(&fx, "b.txt", json!([rep("\u{feff}1st", "x")])),
        "ANCHOR_MISSING",
        &["b.txt"],
    );
}

#[test]
fn mixed_endings_refuse_normalized_edits_only() {
    let fx = Fixture::new(&[("m.txt", b"a\r\nb\nc\rd\n")], &["*.txt"]);
    let run = refuse(
        &fx,
        &fresh(&fx, "m.txt", json!([rep("a\nb", "x")])),
        "LINE_ENDINGS_UNSUPPORTED",
        &["m.txt"],
    );
    assert!(
        run.response["message"]
            .as_str()
            .expect("m")
            .contains("carriage return")
    );
    refuse(
        &fx,
        &fresh(&fx, "m.txt", json!([rep("b", "x\ny")])),
        "LINE_ENDINGS_UNSUPPORTED",
        &["m.txt"],
    );
    // An edit within one line needs no normalization: every other byte is kept.
    succeed(
        &fx,
        &fresh(&fx, "m.txt", json!([rep("b", "B"), ins("d", "!")])),
        "m.txt",
        b"a\r\nB\nc\rd!\n",
    );
    let mixed = Fixture::new(&[("m.txt", b"a\r\nb\n")], &["*.txt"]);
    let run = refuse(
        &mixed,
        &fresh(&mixed, "m.txt", json!([ins("a", "\nz")])),
        "LINE_ENDINGS_UNSUPPORTED",
        &["m.txt"],
    );
    assert!(
        run.response["message"]
            .as_str()
            .expect("m")
            .contains("mixes")
    );
    succeed(
        &mixed,
        &fresh(&mixed, "m.txt", json!([ins("a", "z")])),
        "m.txt",
        b"az\r\nb\n",
    );
}

#[test]
fn gates_refuse_as_replace_does() {
    let fx = Fixture::new(
        &[
            ("src/a.txt", b"hello world\n"),
            ("notes.md", b"hello world\n"),
            ("src/latin1.txt", b"caf\xe9\n"),
        ],
        &["src/*.txt", "*HEAD", "*.md"],
    );
    let w = &["src/a.txt", "src/latin1.txt"];
    let undeclared = Fixture::new(&[("a.txt", b"x\n")], &["src/*"]);
    refuse(
        &undeclared,
        &fresh(&undeclared, "a.txt", json!([rep("x", "y")])),
        "PATH_UNDECLARED",
        &["a.txt"],
    );
    refuse(
        &fx,
        &request(
            &fx,
            ".git/HEAD",
            Some(&sha256_hex(b"")),
            json!([rep("x", "y")]),
        ),
        "PATH_UNDECLARED",
        w,
    );
    refuse(
        &fx,
        &request(&fx, "src/a.txt", None, json!([rep("world", "there")])),
        "REVISION_UNAVAILABLE",
        w,
    );
    let stale = sha256_hex(b"something else");
    let run = refuse(
        &fx,
        &request(
            &fx,
            "src/a.txt",
            Some(&stale),
            json!([rep("world", "there")]),
        ),
        "REVISION_STALE",
        w,
    );
    let current = fx.sha("src/a.txt");
    assert_eq!(run.response["result"], json!({"current_sha256": current}));
    assert!(
        run.response["message"]
            .as_str()
            .expect("m")
            .contains(&current)
    );
    refuse(
        &fx,
        &fresh(&fx, "src/latin1.txt", json!([rep("caf", "cafe")])),
        "MUTATION_FAILED",
        w,
    );
    refuse(
        &fx,
        &request(
            &fx,
            "src/missing.txt",
            Some(&current),
            json!([rep("a", "b")]),
        ),
        "MUTATION_FAILED",
        w,
    );
    // Symlink (leaf), hard link.
    symlink("a.txt", fx.file("src/link.txt")).expect("symlink");
    refuse(
        &fx,
        &request(
            &fx,
            "src/link.txt",
            Some(&current),
            json!([rep("world", "there")]),
        ),
        "MUTATION_FAILED",
        w,
    );
    assert!(fx.file("src/link.txt").is_symlink());
    std::fs::write(fx.file("src/h.txt"), b"hello world\n").expect("write");
    std::fs::hard_link(fx.file("src/h.txt"), fx.file("h2.bin")).expect("link");
    refuse(
        &fx,
        &fresh(&fx, "src/h.txt", json!([rep("world", "there")])),
        "MUTATION_FAILED",
        &["src/h.txt", "h2.bin"],
    );
    std::fs::remove_file(fx.file("h2.bin")).expect("unlink");
    succeed(
        &fx,
        &fresh(&fx, "src/h.txt", json!([rep("world", "there")])),
        "src/h.txt",
        b"hello there\n",
    );
    // The sibling success through the same gates; the exec bit is kept.
    std::fs::set_permissions(fx.file("src/a.txt"), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    succeed(
        &fx,
        &fresh(&fx, "src/a.txt", json!([rep("world", "there")])),
        "src/a.txt",
        b"hello there\n",
    );
    assert_eq!(mode_of(&fx.file("src/a.txt")) & 0o777, 0o755);
}

#[test]
fn files_over_the_edit_limit_are_refused() {
    let limit = 16 * 1024 * 1024;
    let mut big = vec![b'x'; limit];
    big.extend_from_slice(b"\nend\n");
    let fx = Fixture::new(
        &[("big.txt", &big), ("ok.txt", &big[big.len() - limit..])],
        &["*.txt"],
    );
    let run = refuse(
        &fx,
        &fresh(&fx, "big.txt", json!([rep("end", "END")])),
        "MUTATION_FAILED",
        &["big.txt"],
    );
    assert!(
        run.response["message"]
            .as_str()
            .expect("m")
            .contains("16777216"),
        "{run:?}"
    );
    let mut expected = big[big.len() - limit..].to_vec();
    let n = expected.len();
    expected[n - 4..n - 1].copy_from_slice(b"END");
    succeed(
        &fx,
        &fresh(&fx, "ok.txt", json!([rep("end", "END")])),
        "ok.txt",
        &expected,
    );
}

#[test]
fn the_preview_is_capped_and_says_what_it_omitted() {
    let text: String = (0..400)
        .map(|i| format!("line {i:04} {}\n", "x".repeat(60)))
        .collect();
    let fx = Fixture::new(&[("p.txt", text.as_bytes())], &["*.txt"]);
    let edits: Vec<Value> = (0..400)
        .step_by(4)
        .map(|i| rep(&format!("line {i:04}"), &format!("LINE {i:04}")))
        .collect();
    let mut expected = text.clone();
    for i in (0..400).step_by(4) {
        expected = expected.replace(&format!("line {i:04}"), &format!("LINE {i:04}"));
    }
    let run = succeed(
        &fx,
        &fresh(&fx, "p.txt", json!(edits)),
        "p.txt",
        expected.as_bytes(),
    );
    let result = &run.response["result"];
    assert_eq!(result["changed"].as_array().expect("changed").len(), 100);
    let shown: usize = result["preview"]
        .as_array()
        .expect("preview")
        .iter()
        .map(|h| h["text"].as_str().expect("text").len())
        .sum();
    assert!(shown <= 8192, "{shown}");
    let omitted = result["preview_omitted_lines"].as_u64().expect("omitted");
    assert!(omitted > 0);
    let lines_shown: u64 = result["preview"]
        .as_array()
        .expect("preview")
        .iter()
        .map(|h| h["end_line"].as_u64().expect("e") - h["start_line"].as_u64().expect("s") + 1)
        .sum();
    assert_eq!(
        lines_shown + omitted,
        399,
        "lines 1-399 are one merged region"
    );
}

#[test]
fn malformed_edit_requests_are_invalid() {
    let fx = Fixture::new(&[("a.txt", b"hello\n")], &["*.txt"]);
    let sha = fx.sha("a.txt");
    let base = request(&fx, "a.txt", Some(&sha), json!([rep("hello", "bye")]));
    let cases: Vec<Value> = vec![
        json!([]),
        json!("not an array"),
        json!([{"op": "delete", "old_text": "hello"}]),
        json!([{"op": "replace", "old_text": "hello"}]),
        json!([{"op": "replace", "old_text": "hello", "new_text": "x", "extra": 1}]),
        json!([{"op": "replace", "old_text": "hello", "new_text": "x", "occurrence": 0}]),
        json!([{"op": "replace", "old_text": "hello", "new_text": "x", "occurrence": -1}]),
        json!([{"op": "replace", "old_text": "hello", "new_text": "x", "occurrence": 1.5}]),
        json!([{"op": "insert_after", "old_text": "hello", "new_text": "x"}]),
        json!([{"old_text": "hello", "new_text": "x"}]),
        json!(["replace"]),
    ];
    for edits in cases {
        let mut req = base.clone();
        req["edits"] = edits.clone();
        let run = protocol(&req);
        assert_invalid(&run);
        assert_eq!(
            std::fs::read(fx.file("a.txt")).expect("read"),
            b"hello\n",
            "{edits}"
        );
    }
    // Missing `edits`, and a duplicate key inside an edit.
    let mut req = base.clone();
    req.as_object_mut().expect("object").remove("edits");
    assert_invalid(&protocol(&req));
    let raw = base.to_string().replace(
        "\"new_text\":\"bye\"",
        "\"new_text\":\"bye\",\"new_text\":\"other\"",
    );
    assert!(raw.contains("\"other\""));
    assert_invalid(&crate::support::protocol_raw(raw.as_bytes()));
    // 1001 edits are too many.
    let mut req = base.clone();
    req["edits"] = json!(vec![rep("hello", "bye"); 1001]);
    assert_invalid(&protocol(&req));
    // The well-formed sibling, with `occurrence: null` meaning none.
    succeed(
        &fx,
        &request(
            &fx,
            "a.txt",
            Some(&sha),
            json!([{"op": "replace", "old_text": "hello", "new_text": "bye", "occurrence": null}]),
        ),
        "a.txt",
        b"bye\n",
    );
}

#[test]
fn a_revision_from_read_is_what_edit_needs() {
    let fx = Fixture::new(&[("r.txt", b"alpha\nbeta\n")], &["*.txt"]);
    let read = protocol(&json!({
        "version": 1, "operation": "read",
        "repo": fx.repo.path(), "contract": fx.contract.path, "path": "r.txt",
    }));
    assert_eq!(read.status, 0, "{read:?}");
    let sha = read.response["result"]["sha256"]
        .as_str()
        .expect("sha")
        .to_string();
    succeed(
        &fx,
        &request(
            &fx,
            "r.txt",
            Some(&sha),
            json!([ins("alpha\n", "between\n")]),
        ),
        "r.txt",
        b"alpha\nbetween\nbeta\n",
    );
}
