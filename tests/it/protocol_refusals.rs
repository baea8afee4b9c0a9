//! The five policy refusals and `MUTATION_FAILED`, each beside a sibling success on the
//! same fixture, and the order in which the gates decide.

use crate::protocol_common::Fixture;
use crate::support::sha256_hex;

const A: &[u8] = b"fn main() {\n    println!(\"hello world\");\n}\n";
const A_EDITED: &[u8] = b"fn main() {\n    println!(\"hello there\");\n}\n";

fn fixture() -> Fixture {
    Fixture::new(
        &[
            ("src/a.txt", A),
            ("src/twice.txt", b"ab ab!\n"),
            ("src/overlap.txt", b"xaaax\n"),
            ("src/latin1.txt", b"caf\xe9 world\n"),
            ("notes.txt", b"hello world\n"),
        ],
        &["src/*.txt"],
    )
}

const WATCH: &[&str] = &[
    "src/a.txt",
    "src/twice.txt",
    "src/overlap.txt",
    "src/latin1.txt",
    "notes.txt",
];
const DIRS: &[&str] = &["", "src"];

#[test]
fn path_undeclared_then_declared_success() {
    let fx = fixture();
    let run = fx.refuse(
        &fx.fresh("notes.txt", "world", "there"),
        "PATH_UNDECLARED",
        WATCH,
        DIRS,
    );
    let message = run.response["message"].as_str().expect("message");
    assert!(
        message.contains("notes.txt"),
        "message names the path: {message}"
    );
    // The pattern is anchored at both ends.
    for path in ["xsrc/a.txt", "src/a.txt.bak"] {
        fx.refuse(
            &fx.request(path, Some(&sha256_hex(A)), "world", "there"),
            "PATH_UNDECLARED",
            WATCH,
            DIRS,
        );
    }
    // `*` crosses `/`: `src/deep/a.txt` is declared (and missing).
    fx.refuse(
        &fx.request("src/deep/a.txt", Some(&sha256_hex(A)), "world", "there"),
        "MUTATION_FAILED",
        WATCH,
        DIRS,
    );
    fx.succeed(
        &fx.fresh("src/a.txt", "world", "there"),
        "src/a.txt",
        A_EDITED,
    );
}

#[test]
fn no_writable_paths_means_nothing_is_declared() {
    let fx = Fixture::new(&[("a.txt", b"hello world\n")], &[]);
    fx.refuse(
        &fx.fresh("a.txt", "world", "there"),
        "PATH_UNDECLARED",
        &["a.txt"],
        &[""],
    );
    let declared = Fixture::new(&[("a.txt", b"hello world\n")], &["a.txt"]);
    declared.succeed(
        &declared.fresh("a.txt", "world", "there"),
        "a.txt",
        b"hello there\n",
    );
}

#[test]
fn revision_unavailable_then_success() {
    let fx = fixture();
    fx.refuse(
        &fx.request("src/a.txt", None, "world", "there"),
        "REVISION_UNAVAILABLE",
        WATCH,
        DIRS,
    );
    fx.succeed(
        &fx.fresh("src/a.txt", "world", "there"),
        "src/a.txt",
        A_EDITED,
    );
}

#[test]
fn revision_stale_then_success() {
    let fx = fixture();
    // A revision of other bytes.
    fx.refuse(
        &fx.request("src/a.txt", Some(&sha256_hex(b"other")), "world", "there"),
        "REVISION_STALE",
        WATCH,
        DIRS,
    );
    // The revision the caller saw before someone else changed the file.
    let seen = fx.sha("src/a.txt");
    std::fs::write(fx.file("src/a.txt"), b"fn main() {}\n// hello world\n").expect("write");
    fx.refuse(
        &fx.request("src/a.txt", Some(&seen), "world", "there"),
        "REVISION_STALE",
        WATCH,
        DIRS,
    );
    fx.succeed(
        &fx.fresh("src/a.txt", "world", "there"),
        "src/a.txt",
        b"fn main() {}\n// hello there\n",
    );
}

#[test]
fn reusing_a_revision_after_an_edit_is_stale() {
    let fx = fixture();
    let seen = fx.sha("src/a.txt");
    fx.succeed(
        &fx.request("src/a.txt", Some(&seen), "world", "there"),
        "src/a.txt",
        A_EDITED,
    );
    fx.refuse(
        &fx.request("src/a.txt", Some(&seen), "there", "again"),
        "REVISION_STALE",
        WATCH,
        DIRS,
    );
}

#[test]
fn anchor_missing_then_success() {
    let fx = fixture();
    for anchor in ["absent", "World", "hello  world", "hello world\r\n"] {
        fx.refuse(
            &fx.fresh("src/a.txt", anchor, "there"),
            "ANCHOR_MISSING",
            WATCH,
            DIRS,
        );
    }
    fx.succeed(
        &fx.fresh("src/a.txt", "world", "there"),
        "src/a.txt",
        A_EDITED,
    );
}

#[test]
fn anchor_ambiguous_then_success() {
    let fx = fixture();
    fx.refuse(
        &fx.fresh("src/twice.txt", "ab", "cd"),
        "ANCHOR_AMBIGUOUS",
        WATCH,
        DIRS,
    );
    // Overlapping occurrences count: `aa` occurs twice in `aaa`.
    fx.refuse(
        &fx.fresh("src/overlap.txt", "aa", "b"),
        "ANCHOR_AMBIGUOUS",
        WATCH,
        DIRS,
    );
    fx.succeed(
        &fx.fresh("src/twice.txt", "ab!", "cd!"),
        "src/twice.txt",
        b"ab cd!\n",
    );
    fx.succeed(
        &fx.fresh("src/overlap.txt", "xaaa", "y"),
        "src/overlap.txt",
        b"yx\n",
    );
}

#[test]
fn mutation_failed_missing_file_then_success() {
    let fx = fixture();
    fx.refuse(
        &fx.request("src/missing.txt", Some(&sha256_hex(b"")), "a", "b"),
        "MUTATION_FAILED",
        WATCH,
        DIRS,
    );
    assert!(
        !fx.file("src/missing.txt").exists(),
        "a refusal creates nothing"
    );
    fx.succeed(
        &fx.fresh("src/a.txt", "world", "there"),
        "src/a.txt",
        A_EDITED,
    );
}

#[test]
fn mutation_failed_not_utf8_then_success() {
    let fx = fixture();
    fx.refuse(
        &fx.fresh("src/latin1.txt", "world", "there"),
        "MUTATION_FAILED",
        WATCH,
        DIRS,
    );
    std::fs::write(fx.file("src/latin1.txt"), "café world\n").expect("write");
    fx.succeed(
        &fx.fresh("src/latin1.txt", "world", "there"),
        "src/latin1.txt",
        "café there\n".as_bytes(),
    );
}

// ---- gate order ----

#[test]
fn order_undeclared_before_revision_unavailable() {
    let fx = fixture();
    fx.refuse(
        &fx.request("notes.txt", None, "world", "there"),
        "PATH_UNDECLARED",
        WATCH,
        DIRS,
    );
}

#[test]
fn order_undeclared_before_any_file_access() {
    let fx = fixture();
    // Does not exist: still PATH_UNDECLARED, not MUTATION_FAILED.
    fx.refuse(
        &fx.request("missing.txt", Some(&sha256_hex(b"x")), "a", "b"),
        "PATH_UNDECLARED",
        WATCH,
        DIRS,
    );
    fx.refuse(
        &fx.request("missing.txt", None, "a", "b"),
        "PATH_UNDECLARED",
        WATCH,
        DIRS,
    );
    // Stale revision and missing anchor: the path decides first.
    fx.refuse(
        &fx.request("notes.txt", Some(&sha256_hex(b"x")), "absent", "b"),
        "PATH_UNDECLARED",
        WATCH,
        DIRS,
    );
}

#[test]
fn order_revision_unavailable_before_file_access() {
    let fx = fixture();
    // A declared path that does not exist, with no revision.
    fx.refuse(
        &fx.request("src/missing.txt", None, "a", "b"),
        "REVISION_UNAVAILABLE",
        WATCH,
        DIRS,
    );
    // A declared non-UTF-8 file with no revision and a missing anchor.
    fx.refuse(
        &fx.request("src/latin1.txt", None, "absent", "b"),
        "REVISION_UNAVAILABLE",
        WATCH,
        DIRS,
    );
}

#[test]
fn order_file_access_before_revision_compare() {
    let fx = fixture();
    fx.refuse(
        &fx.request("src/missing.txt", Some(&sha256_hex(b"x")), "a", "b"),
        "MUTATION_FAILED",
        WATCH,
        DIRS,
    );
}

#[test]
fn order_stale_before_utf8_and_anchors() {
    let fx = fixture();
    let stale = sha256_hex(b"not the content");
    for (path, anchor) in [
        ("src/a.txt", "absent"),
        ("src/twice.txt", "ab"),
        ("src/latin1.txt", "world"),
    ] {
        fx.refuse(
            &fx.request(path, Some(&stale), anchor, "z"),
            "REVISION_STALE",
            WATCH,
            DIRS,
        );
    }
}

#[test]
fn order_utf8_before_anchors() {
    let fx = fixture();
    fx.refuse(
        &fx.fresh("src/latin1.txt", "absent", "z"),
        "MUTATION_FAILED",
        WATCH,
        DIRS,
    );
}

#[test]
fn git_administrative_files_are_never_writable_even_under_star() {
    // A contract that declares everything still cannot edit `.git/…` (hooks, config) or a
    // linked worktree's `.git` pointer, in any letter case.
    let fx = Fixture::new(&[("a.txt", b"hello world\n")], &["*"]);
    std::fs::write(fx.file(".git/description"), b"hello world\n").expect("write");
    let watch = &["a.txt", ".git/config", ".git/description"];
    for path in [".git/config", ".git/description", ".GIT/description"] {
        let run = fx.refuse(
            &fx.request(path, Some(&sha256_hex(b"hello world\n")), "world", "there"),
            "PATH_UNDECLARED",
            watch,
            &["", ".git"],
        );
        let message = run.response["message"].as_str().expect("message");
        assert!(message.contains(".git"), "{message}");
    }
    fx.succeed(
        &fx.fresh("a.txt", "world", "there"),
        "a.txt",
        b"hello there\n",
    );
}
