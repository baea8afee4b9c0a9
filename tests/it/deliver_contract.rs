//! Every candidate checked against its contract: 28 shapes a command can leave by writing
//! around satyrn's tools, each refused `OUTSIDE_CONTRACT` with the caller's repository
//! unchanged, and a conforming sibling published. Real git, real shell commands.

use serde_json::Value;

use crate::deliver_support::*;
use crate::support::ContractFile;

const WRITABLE: &[&str] = &["src/*.rs", "docs/*.md"];

fn base() -> FixedRepo {
    FixedRepo::with_files(&[
        ("src/main.rs", b"fn main() {}\n"),
        ("src/lib.rs", b"pub fn f() {}\n"),
        ("README.md", b"# readme\n"),
        ("docs/guide.md", b"# guide\n"),
        ("deploy.key", b"secret\n"),
        ("run.sh", b"echo run\n"),
    ])
}

/// `(path, change, code)` of each entry of the receipt's `outside_contract`, sorted.
fn breaches(run: &Run) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = run.receipt["outside_contract"]
        .as_array()
        .unwrap_or_else(|| panic!("no outside_contract: {}", run.stdout))
        .iter()
        .map(|b| {
            let field = |k: &str| b[k].as_str().expect("string").to_owned();
            assert!(!field("detail").is_empty(), "{b}");
            (field("path"), field("change"), field("code"))
        })
        .collect();
    out.sort();
    out
}

/// A command, and the `(path, change, code)` entries its candidate must be refused with.
type Shape<'a> = (&'a str, Vec<(String, &'a str, &'a str)>);

const P: &str = "PATH_PRIVATE";
const U: &str = "PATH_UNDECLARED";

#[test]
fn every_shape_outside_the_contract_is_refused_and_a_conforming_one_is_published() {
    let repo = base();
    let root = repo.path();
    let embedded = "mkdir vendor && cd vendor && git init -q && git -c user.name=a -c user.email=a@example.invalid commit -q --allow-empty -m x";
    let many: Vec<(String, &str, &str)> = (1..=25)
        .map(|i| (format!("f{i}.txt"), "added", U))
        .collect();
    let shapes: Vec<Shape> = vec![
        ("echo x > .env", vec![(".env".into(), "added", P)]),
        ("echo x > src/.env", vec![("src/.env".into(), "added", P)]),
        (
            "echo k > src/id_rsa",
            vec![("src/id_rsa".into(), "added", P)],
        ),
        (
            "echo x >> README.md",
            vec![("README.md".into(), "modified", U)],
        ),
        ("rm README.md", vec![("README.md".into(), "deleted", U)]),
        ("echo x > notes.txt", vec![("notes.txt".into(), "added", U)]),
        (
            "echo x > src/main.py",
            vec![("src/main.py".into(), "added", U)],
        ),
        ("chmod +x run.sh", vec![("run.sh".into(), "mode", U)]),
        (
            "echo '* text' > .gitattributes",
            vec![(".gitattributes".into(), "added", U)],
        ),
        (
            "echo target > .gitignore",
            vec![(".gitignore".into(), "added", U)],
        ),
        (embedded, vec![("vendor".into(), "gitlink", U)]),
        (
            "mv README.md src/readme.rs",
            vec![("README.md".into(), "deleted", U)],
        ),
        ("ln -s README.md link", vec![("link".into(), "added", U)]),
        ("rm deploy.key", vec![("deploy.key".into(), "deleted", P)]),
        (
            "echo y >> deploy.key",
            vec![("deploy.key".into(), "modified", P)],
        ),
        (
            "mkdir -p src/sub && echo x > src/sub/.npmrc",
            vec![("src/sub/.npmrc".into(), "added", P)],
        ),
        (
            "rm README.md && ln -s docs/guide.md README.md",
            vec![("README.md".into(), "type", U)],
        ),
        (
            "mkdir -p .github/workflows && echo x > .github/workflows/ci.yml",
            vec![(".github/workflows/ci.yml".into(), "added", U)],
        ),
        (
            "printf '[submodule \"x\"]\\n' > .gitmodules",
            vec![(".gitmodules".into(), "added", U)],
        ),
        (
            "echo x > src/main.rs.orig",
            vec![("src/main.rs.orig".into(), "added", U)],
        ),
        // Declared by `src/*.rs`, but no satyrn tool can name a path with a backslash.
        (
            "echo x > 'src/a\\b.rs'",
            vec![("src/a\\b.rs".into(), "added", U)],
        ),
        // Private wins over writable: `src/*.rs` matches both.
        (
            "mkdir -p src/.ssh && echo x > src/.ssh/id.rs",
            vec![("src/.ssh/id.rs".into(), "added", P)],
        ),
        (
            "echo x > src/id_rsa.rs",
            vec![("src/id_rsa.rs".into(), "added", P)],
        ),
        ("touch Makefile", vec![("Makefile".into(), "added", U)]),
        (
            "mkdir build && echo x > build/out.o",
            vec![("build/out.o".into(), "added", U)],
        ),
        // Declared, but a new name with a bidirectional override is one `write` refuses.
        (
            "echo x > \"$(printf 'src/a\\342\\200\\256b.rs')\"",
            vec![("src/a\u{202e}b.rs".into(), "added", "INVALID_REQUEST")],
        ),
        // A declared change beside two undeclared ones: only those two are named.
        (
            "echo a > x1 && echo b > x2 && echo c >> src/main.rs",
            vec![("x1".into(), "added", U), ("x2".into(), "added", U)],
        ),
        ("for i in $(seq 1 25); do echo $i > f$i.txt; done", many),
    ];
    assert_eq!(shapes.len(), 28);
    let mut refused = 0;
    for (i, (script, expected)) in shapes.iter().enumerate() {
        let before = Caller::capture(&root);
        let contract = ContractFile::new(&format!("shape-{i}"), WRITABLE);
        let run = deliver(&root, &contract.path, &sh(script));
        assert_discarded(&run, "OUTSIDE_CONTRACT");
        let mut want: Vec<(String, String, String)> = expected
            .iter()
            .map(|(p, c, k)| (p.clone(), (*c).to_owned(), (*k).to_owned()))
            .collect();
        want.sort();
        assert_eq!(breaches(&run), want, "{script}: {}", run.stdout);
        let message = run.receipt["message"].as_str().expect("message");
        assert!(message.ends_with("; nothing was published"), "{message}");
        before.assert_unchanged(&root, None);
        refused += 1;
    }
    eprintln!(
        "{refused} of {} shapes outside the contract refused",
        shapes.len()
    );
    let message = |script: &str| {
        let contract = ContractFile::new("count", WRITABLE);
        let run = deliver(&root, &contract.path, &sh(script));
        run.receipt["message"].as_str().expect("message").to_owned()
    };
    let long = message("for i in $(seq 1 25); do echo $i > f$i.txt; done");
    assert!(long.starts_with("the candidate changes 25 paths the contract does not allow: `f1.txt` (added, not a writable path); "), "{long}");
    assert!(
        long.contains("; and 5 more; nothing was published"),
        "{long}"
    );
    assert!(
        message("rm deploy.key")
            .contains("a path the contract does not allow: `deploy.key` (deleted, private)")
    );

    // The sibling: declared edits, a declared new file, a declared mode change.
    let before = Caller::capture(&root);
    let contract = ContractFile::new("conforming", WRITABLE);
    let run = deliver(
        &root,
        &contract.path,
        &sh(
            "echo more >> src/main.rs && echo new > docs/new.md && chmod +x src/lib.rs && rm docs/guide.md",
        ),
    );
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    assert!(
        run.receipt.get("outside_contract").is_none(),
        "{}",
        run.stdout
    );
    assert_eq!(
        run.receipt["paths"],
        serde_json::json!(["docs/guide.md", "docs/new.md", "src/lib.rs", "src/main.rs"])
    );
    let name = "refs/satyrn/candidates/conforming/head";
    assert_eq!(run.receipt["candidate_ref"], Value::from(name));
    before.assert_unchanged(&root, Some(name));
}
