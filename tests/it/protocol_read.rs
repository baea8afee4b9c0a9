//! The `read` operation through the real binary and component: pages, the truncation
//! notice, and every refusal beside a sibling success (the file unchanged either way).

use std::os::unix::fs::symlink;

use serde_json::{Value, json};

use crate::protocol_common::{Fixture, assert_invalid};
use crate::support::{ProtocolRun, protocol, sha256_hex, snapshot};

fn read(fx: &Fixture, path: &str, offset: Option<u64>, limit: Option<u64>) -> Value {
    let mut req = json!({
        "version": 1, "operation": "read",
        "repo": fx.repo.path(), "contract": fx.contract.path, "path": path,
    });
    if let Some(o) = offset {
        req["offset"] = json!(o);
    }
    if let Some(l) = limit {
        req["limit"] = json!(l);
    }
    req
}

fn ok(req: &Value) -> ProtocolRun {
    let run = protocol(req);
    assert_eq!(run.status, 0, "{run:?}");
    assert!(
        run.stdout.starts_with(
            "{\"version\":1,\"ok\":true,\"code\":\"OK\",\"message\":\"\",\"result\":{\"path\":"
        ),
        "{}",
        run.stdout
    );
    run
}

/// A read refusal: `code`, exit 11, `result: null`, and `watch` unchanged.
fn refused(fx: &Fixture, req: &Value, code: &str, watch: &[&str]) -> ProtocolRun {
    let before: Vec<_> = watch.iter().map(|w| snapshot(&fx.file(w))).collect();
    let run = protocol(req);
    assert_eq!(run.response["code"], code, "{run:?}");
    assert_eq!(run.status, 11, "{run:?}");
    assert_eq!(run.response["ok"], false);
    assert_eq!(run.response["result"], Value::Null);
    assert!(
        !run.response["message"]
            .as_str()
            .expect("message")
            .is_empty()
    );
    for (w, b) in watch.iter().zip(&before) {
        assert_eq!(&snapshot(&fx.file(w)), b, "{w} changed");
    }
    run
}

#[test]
fn a_small_file_is_read_whole() {
    let text = b"first\r\nsecond\n\xc3\xa9t\xc3\xa9";
    let fx = Fixture::new(&[("src/a.txt", text), ("README.md", b"# hi\n")], &["src/*"]);
    let run = ok(&read(&fx, "src/a.txt", None, None));
    assert_eq!(
        run.response["result"],
        json!({
            "path": "src/a.txt", "sha256": sha256_hex(text), "writable": true, "bom": false,
            "offset": 1, "lines": 3, "total_lines": 3, "text": "first\r\nsecond\nété",
            "next_offset": null, "notice": null,
        })
    );
    // Undeclared files can be read; the result says they are not writable.
    let run = ok(&read(&fx, "README.md", None, None));
    assert_eq!(run.response["result"]["writable"], false);
    assert_eq!(run.response["result"]["text"], "# hi\n");
    // A BOM is reported, not returned; the revision covers the whole file.
    let bom = Fixture::new(&[("b.txt", "\u{feff}x\n".as_bytes())], &[]);
    let run = ok(&read(&bom, "b.txt", None, None));
    assert_eq!(run.response["result"]["bom"], true);
    assert_eq!(run.response["result"]["text"], "x\n");
    assert_eq!(
        run.response["result"]["sha256"],
        sha256_hex("\u{feff}x\n".as_bytes())
    );
    // An empty file is one empty page.
    let empty = Fixture::new(&[("e.txt", b"")], &[]);
    let run = ok(&read(&empty, "e.txt", None, None));
    assert_eq!(run.response["result"]["total_lines"], 0);
    assert_eq!(run.response["result"]["lines"], 0);
    assert_eq!(run.response["result"]["text"], "");
}

#[test]
fn long_files_are_paginated_with_a_notice() {
    let text: String = (1..=4500).map(|i| format!("{i}\n")).collect();
    let fx = Fixture::new(&[("n.txt", text.as_bytes())], &["*.txt"]);
    let run = ok(&read(&fx, "n.txt", None, None));
    let r = &run.response["result"];
    assert_eq!(r["lines"], 2000);
    assert_eq!(r["total_lines"], 4500);
    assert_eq!(r["next_offset"], 2001);
    let notice = r["notice"].as_str().expect("notice");
    assert!(
        notice.contains("lines 1-2000 of 4500") && notice.contains("offset=2001"),
        "{notice}"
    );
    assert!(r["text"].as_str().expect("text").ends_with("\n2000\n"));
    let run = ok(&read(&fx, "n.txt", Some(2001), None));
    assert_eq!(run.response["result"]["next_offset"], 4001);
    let run = ok(&read(&fx, "n.txt", Some(4001), Some(10_000)));
    let r = &run.response["result"];
    assert_eq!(r["lines"], 500);
    assert_eq!(r["next_offset"], Value::Null);
    assert_eq!(r["notice"], Value::Null);
    // A limit.
    let run = ok(&read(&fx, "n.txt", Some(10), Some(3)));
    let r = &run.response["result"];
    assert_eq!(r["text"], "10\n11\n12\n");
    assert!(r["notice"].as_str().expect("notice").contains("offset=13"));
    // Past the end: refused, and the last line is the sibling success.
    refused(
        &fx,
        &read(&fx, "n.txt", Some(4501), None),
        "READ_OUT_OF_RANGE",
        &["n.txt"],
    );
    let run = ok(&read(&fx, "n.txt", Some(4500), None));
    assert_eq!(run.response["result"]["text"], "4500\n");
}

#[test]
fn the_byte_budget_truncates_and_says_so() {
    let line = format!("{}\n", "y".repeat(99));
    let text = line.repeat(1000);
    let fx = Fixture::new(&[("w.txt", text.as_bytes())], &["*.txt"]);
    let run = ok(&read(&fx, "w.txt", None, None));
    let r = &run.response["result"];
    assert_eq!(r["lines"], 512, "51200 bytes of 100-byte lines");
    assert_eq!(r["text"].as_str().expect("text").len(), 51200);
    let notice = r["notice"].as_str().expect("notice");
    assert!(
        notice.contains("51200-byte") && notice.contains("offset=513"),
        "{notice}"
    );
}

#[test]
fn refusals_beside_sibling_successes() {
    let outside = tempfile::tempdir().expect("tempdir");
    std::fs::write(outside.path().join("secret.txt"), b"secret\n").expect("write");
    let fx = Fixture::new(
        &[
            ("ok.txt", b"fine\n"),
            ("dir/ok.txt", b"fine too\n"),
            ("latin1.txt", b"caf\xe9\n"),
            ("bin.txt", b"a\0b\n"),
        ],
        &["*"],
    );
    let w = &["ok.txt", "dir/ok.txt", "latin1.txt", "bin.txt"];
    symlink("ok.txt", fx.file("leaf.txt")).expect("symlink");
    symlink("dir", fx.file("alias")).expect("symlink");
    symlink(outside.path().join("secret.txt"), fx.file("abs.txt")).expect("symlink");
    symlink(outside.path(), fx.file("outdir")).expect("symlink");
    for path in [
        "leaf.txt",
        "alias/ok.txt",
        "abs.txt",
        "outdir/secret.txt",
        "missing.txt",
        "dir",
    ] {
        let run = refused(&fx, &read(&fx, path, None, None), "READ_UNAVAILABLE", w);
        assert!(!run.stdout.contains("secret\\n"), "{run:?}");
    }
    // `.git` is never read.
    let run = refused(
        &fx,
        &read(&fx, ".git/config", None, None),
        "READ_UNAVAILABLE",
        w,
    );
    assert!(
        run.response["message"]
            .as_str()
            .expect("m")
            .contains(".git")
    );
    // Hard links are refused as for edits.
    std::fs::write(fx.file("h.txt"), b"linked\n").expect("write");
    std::fs::hard_link(fx.file("h.txt"), fx.file("dir/h2.txt")).expect("link");
    refused(&fx, &read(&fx, "h.txt", None, None), "READ_UNAVAILABLE", w);
    std::fs::remove_file(fx.file("dir/h2.txt")).expect("unlink");
    assert_eq!(
        ok(&read(&fx, "h.txt", None, None)).response["result"]["text"],
        "linked\n"
    );
    // Absolute and `..` paths are malformed requests.
    for path in ["/etc/passwd", "../x", "dir/../ok.txt"] {
        let run = protocol(&read(&fx, path, None, None));
        assert_invalid(&run);
    }
    for (offset, limit) in [(Some(0), None), (None, Some(0))] {
        assert_invalid(&protocol(&read(&fx, "ok.txt", offset, limit)));
    }
    let mut extra = read(&fx, "ok.txt", None, None);
    extra["old_text"] = json!("x");
    assert_invalid(&protocol(&extra));
    let mut wrong = read(&fx, "ok.txt", None, None);
    wrong["offset"] = json!("1");
    assert_invalid(&protocol(&wrong));
    refused(
        &fx,
        &read(&fx, "latin1.txt", None, None),
        "READ_NOT_TEXT",
        w,
    );
    let run = refused(&fx, &read(&fx, "bin.txt", None, None), "READ_NOT_TEXT", w);
    assert!(run.response["message"].as_str().expect("m").contains("NUL"));
    // The siblings.
    assert_eq!(
        ok(&read(&fx, "ok.txt", None, None)).response["result"]["text"],
        "fine\n"
    );
    assert_eq!(
        ok(&read(&fx, "dir/ok.txt", Some(1), Some(1))).response["result"]["text"],
        "fine too\n"
    );
}

#[test]
fn over_budget_files_and_lines_are_refused() {
    let limit = 16 * 1024 * 1024;
    let mut big = "z\n".repeat(limit / 2).into_bytes();
    big.push(b'z');
    let long = format!("short\n{}\nshort\n", "L".repeat(60 * 1024));
    let fx = Fixture::new(
        &[
            ("big.txt", &big),
            ("fits.txt", &big[1..]),
            ("long.txt", long.as_bytes()),
        ],
        &[],
    );
    let w = &["big.txt", "long.txt"];
    let run = refused(
        &fx,
        &read(&fx, "big.txt", None, None),
        "READ_UNAVAILABLE",
        w,
    );
    assert!(
        run.response["message"]
            .as_str()
            .expect("m")
            .contains("16777216")
    );
    let run = ok(&read(&fx, "fits.txt", Some(5), Some(1)));
    assert_eq!(run.response["result"]["total_lines"], limit / 2 + 1);
    assert_eq!(run.response["result"]["text"], "z\n");
    // A line larger than a page cannot be returned; the lines around it can.
    let run = refused(
        &fx,
        &read(&fx, "long.txt", Some(2), None),
        "READ_TOO_LARGE",
        w,
    );
    assert!(
        run.response["message"]
            .as_str()
            .expect("m")
            .contains("line 2")
    );
    let run = ok(&read(&fx, "long.txt", None, None));
    assert_eq!(run.response["result"]["text"], "short\n");
    assert_eq!(run.response["result"]["next_offset"], 2);
    assert_eq!(
        ok(&read(&fx, "long.txt", Some(3), None)).response["result"]["text"],
        "short\n"
    );
}
