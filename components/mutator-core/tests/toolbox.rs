//! `list`, `search`, `write` and `delete` natively, on generated trees on the real file
//! system, against plain reference models. The component runs the same code through its
//! WASI preopen (`tests/it/protocol_toolbox.rs`).

use std::fs;

use proptest::prelude::*;
use satyrn_mutator_core::delete::{self, DeleteRequest};
use satyrn_mutator_core::gates::RefusalCode;
use satyrn_mutator_core::list::{self, ListRequest};
use satyrn_mutator_core::read::{ReadCode, ReadError};
use satyrn_mutator_core::replace::ReplaceError;
use satyrn_mutator_core::revision::Revision;
use satyrn_mutator_core::search::{self, SearchRequest, SkipReason};
use satyrn_mutator_core::write::{self, WritePlan, WriteRequest};

mod common;
use common::disk::Disk;
use common::tree_model::{expected_list, expected_search, materialize, tree};

fn all_pages(
    disk: &Disk,
    limit: u32,
    writable: &[String],
    private: &[String],
) -> Vec<(String, &'static str, u64, bool)> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..1000 {
        let page = list::list(
            disk,
            &ListRequest {
                path: None,
                pattern: None,
                recursive: true,
                cursor: cursor.as_deref(),
                limit: Some(limit),
                writable_paths: writable,
                private_paths: private,
            },
        )
        .expect("list");
        assert!(page.entries.len() <= limit as usize);
        out.extend(
            page.entries
                .into_iter()
                .map(|e| (e.path, e.kind.as_str(), e.size, e.writable)),
        );
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => return out,
        }
    }
    panic!("the listing did not end");
}

#[path = "common/cases.rs"]
mod cases;

proptest! {
    #![proptest_config(cases::config(64))]

    /// Every page concatenated is the model's walk, whatever the page size; `.git` and
    /// private paths never appear, symlinks appear but are never entered.
    #[test]
    fn list_pages_concatenate_to_the_model(model in tree(), limit in 1u32..7) {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("root");
        fs::create_dir(&root).expect("root");
        materialize(&root, &model);
        let writable = vec!["*.rs".to_string(), "a/*".to_string()];
        let private = vec![".env".to_string(), "*.pem".to_string(), "*/b".to_string()];
        let disk = Disk(root);
        prop_assert_eq!(all_pages(&disk, limit, &writable, &private), expected_list(&model, &writable, &private));
    }

    /// Search, paged by a small `max_matches`, finds exactly the model's matching lines of
    /// the files it may read, and names every symlink it skipped.
    #[test]
    fn search_pages_concatenate_to_the_model(model in tree(), max in 1u32..5) {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("root");
        fs::create_dir(&root).expect("root");
        materialize(&root, &model);
        let private = vec![".env".to_string(), "*.pem".to_string()];
        let disk = Disk(root);
        let mut found: Vec<(String, Vec<u32>, String)> = Vec::new();
        let mut skipped = Vec::new();
        let mut cursor: Option<String> = None;
        for round in 0.. {
            prop_assert!(round < 1000, "the search did not end");
            let page = search::search(&disk, &SearchRequest {
                path: None, query: "needle", regex: false, ignore_case: false, glob: None,
                context: None, max_matches: Some(max), cursor: cursor.as_deref(),
                writable_paths: &[], private_paths: &private,
            }).expect("search");
            for f in page.files {
                prop_assert_eq!(f.omitted, 0);
                found.push((f.path, f.lines.iter().filter(|l| l.matched).map(|l| l.line).collect(), f.revision.to_hex()));
            }
            skipped.extend(page.skipped.into_iter().map(|s| (s.path, s.reason)));
            match page.next_cursor { Some(c) => cursor = Some(c), None => break }
        }
        let (expected, expected_skipped) = expected_search(&model, &private, "needle");
        let expected_skipped: Vec<(String, SkipReason)> =
            expected_skipped.into_iter().map(|p| (p, SkipReason::Symlink)).collect();
        prop_assert_eq!(found, expected);
        prop_assert_eq!(skipped, expected_skipped);
    }
}

fn fixture() -> (tempfile::TempDir, Disk) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    fs::create_dir_all(root.join("src/deep")).expect("mkdir");
    fs::create_dir_all(root.join(".git")).expect("mkdir");
    fs::write(root.join("src/a.rs"), "fn a() {}\nneedle\n").expect("write");
    fs::write(root.join("src/bin.dat"), b"needle\0").expect("write");
    fs::write(root.join("src/latin1.txt"), b"needle \xe9\n").expect("write");
    fs::write(root.join(".env"), "TOKEN=needle\n").expect("write");
    fs::write(root.join(".git/config"), "needle\n").expect("write");
    fs::create_dir(dir.path().join("outside")).expect("mkdir");
    std::os::unix::fs::symlink("../outside", root.join("src/out")).expect("symlink");
    (dir, Disk(root))
}

fn writable() -> Vec<String> {
    vec!["src/*".to_string(), ".env".to_string()]
}

fn private() -> Vec<String> {
    vec![".env".to_string()]
}

#[test]
fn search_names_what_it_skipped_and_hides_private_files() {
    let (_dir, disk) = fixture();
    let page = search::search(
        &disk,
        &SearchRequest {
            path: None,
            query: "needle",
            regex: false,
            ignore_case: false,
            glob: None,
            context: Some(1),
            max_matches: None,
            cursor: None,
            writable_paths: &writable(),
            private_paths: &private(),
        },
    )
    .expect("search");
    let paths: Vec<&str> = page.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["src/a.rs"]);
    assert_eq!(
        page.files[0].lines.len(),
        2,
        "the match and one line of context"
    );
    assert!(page.files[0].writable);
    let skipped: Vec<(&str, SkipReason)> = page
        .skipped
        .iter()
        .map(|s| (s.path.as_str(), s.reason))
        .collect();
    assert_eq!(
        skipped,
        [
            ("src/bin.dat", SkipReason::Binary),
            ("src/latin1.txt", SkipReason::NotText),
            ("src/out", SkipReason::Symlink)
        ]
    );
    assert_eq!(page.hidden, 1, ".env is hidden, not named");
    assert!(page.next_cursor.is_none());
}

#[test]
fn list_and_search_refuse_private_git_and_symlinked_starts() {
    let (_dir, disk) = fixture();
    let list_of = |path: &str| {
        list::list(
            &disk,
            &ListRequest {
                path: Some(path),
                pattern: None,
                recursive: false,
                cursor: None,
                limit: None,
                writable_paths: &[],
                private_paths: &private(),
            },
        )
    };
    assert!(matches!(
        list_of(".git"),
        Err(ReadError::Refused {
            code: ReadCode::Unavailable,
            ..
        })
    ));
    assert!(matches!(
        list_of("src/out"),
        Err(ReadError::Refused {
            code: ReadCode::Unavailable,
            ..
        })
    ));
    assert!(matches!(
        list_of(".env"),
        Err(ReadError::Refused {
            code: ReadCode::Private,
            ..
        })
    ));
    assert!(matches!(list_of("../x"), Err(ReadError::InvalidRequest(_))));
    let page = list_of("src").expect("a plain directory lists");
    let paths: Vec<&str> = page.entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "src/a.rs",
            "src/bin.dat",
            "src/deep",
            "src/latin1.txt",
            "src/out"
        ]
    );
}

#[test]
fn a_hostile_regular_expression_is_refused_or_bounded() {
    let (_dir, disk) = fixture();
    for query in ["(a*)*b", "((((((a|aa)*)*)*)*)*)c", "[\\w\\W]{1000}x"] {
        let outcome = search::search(
            &disk,
            &SearchRequest {
                path: None,
                query,
                regex: true,
                ignore_case: true,
                glob: None,
                context: None,
                max_matches: None,
                cursor: None,
                writable_paths: &[],
                private_paths: &[],
            },
        );
        match outcome {
            Ok(page) => assert!(page.files.is_empty(), "{query}"),
            Err(ReadError::InvalidRequest(m)) => assert!(m.starts_with("query:"), "{m}"),
            Err(e) => panic!("{query}: {e:?}"),
        }
    }
}

fn write_req<'a>(
    path: &'a str,
    expected: Option<&'a str>,
    w: &'a [String],
    p: &'a [String],
) -> WriteRequest<'a> {
    WriteRequest {
        path,
        writable_paths: w,
        private_paths: p,
        expected_sha256: expected,
        content: "new\n",
    }
}

fn code(e: ReplaceError) -> RefusalCode {
    match e {
        ReplaceError::Refused(r) => r.code,
        ReplaceError::InvalidRequest(m) => panic!("invalid request: {m}"),
    }
}

#[test]
fn write_creates_only_what_does_not_exist_and_overwrites_only_what_was_seen() {
    let (_dir, disk) = fixture();
    let (w, p) = (writable(), private());
    match write::decide(&disk, &write_req("src/new/dir/n.rs", None, &w, &p)).expect("create") {
        WritePlan::Create {
            path,
            content,
            next,
        } => {
            assert_eq!(path, "src/new/dir/n.rs");
            assert_eq!(content, "new\n");
            assert_eq!(next, Revision::of(b"new\n"));
        }
        other => panic!("{other:?}"),
    }
    for (path, expected) in [
        ("src/a.rs", RefusalCode::TargetExists),
        ("src/deep", RefusalCode::TargetExists),
        ("src/out", RefusalCode::TargetExists),
        ("src/out/x.rs", RefusalCode::MutationFailed),
        ("src/a.rs/x", RefusalCode::MutationFailed),
        (".env", RefusalCode::PathPrivate),
        ("other.rs", RefusalCode::PathUndeclared),
        (".git/hooks/pre-commit", RefusalCode::PathUndeclared),
    ] {
        let refused = write::decide(&disk, &write_req(path, None, &w, &p)).expect_err(path);
        assert_eq!(code(refused), expected, "{path}");
    }
    let seen = Revision::of(b"fn a() {}\nneedle\n").to_hex();
    let stale = Revision::of(b"other").to_hex();
    assert!(matches!(
        write::decide(&disk, &write_req("src/a.rs", Some(&seen), &w, &p)),
        Ok(WritePlan::Overwrite(plan)) if plan.new_content == b"new\n"
    ));
    let refused =
        write::decide(&disk, &write_req("src/a.rs", Some(&stale), &w, &p)).expect_err("stale");
    assert_eq!(code(refused), RefusalCode::RevisionStale);
    let refused =
        write::decide(&disk, &write_req("src/deep", Some(&seen), &w, &p)).expect_err("dir");
    assert_eq!(code(refused), RefusalCode::MutationFailed);
}

#[test]
fn delete_needs_the_revision_of_a_regular_file() {
    let (_dir, disk) = fixture();
    let (w, p) = (writable(), private());
    let seen = Revision::of(b"fn a() {}\nneedle\n").to_hex();
    let req = |path: &'static str, expected: Option<&str>| {
        delete::decide(
            &disk,
            &DeleteRequest {
                path,
                writable_paths: &w,
                private_paths: &p,
                expected_sha256: expected
                    .map(|s| Box::leak(s.to_string().into_boxed_str()) as &str),
            },
        )
    };
    let plan = req("src/a.rs", Some(&seen)).expect("delete");
    assert_eq!(plan.path, "src/a.rs");
    assert_eq!(plan.base.to_hex(), seen);
    assert_eq!(
        code(req("src/a.rs", None).expect_err("none")),
        RefusalCode::RevisionUnavailable
    );
    assert_eq!(
        code(req("src/a.rs", Some(&"0".repeat(64))).expect_err("stale")),
        RefusalCode::RevisionStale
    );
    assert_eq!(
        code(req("src/out", Some(&seen)).expect_err("symlink")),
        RefusalCode::MutationFailed
    );
    assert_eq!(
        code(req("src/deep", Some(&seen)).expect_err("dir")),
        RefusalCode::MutationFailed
    );
    assert_eq!(
        code(req(".env", Some(&seen)).expect_err("private")),
        RefusalCode::PathPrivate
    );
    assert_eq!(
        code(req("README", Some(&seen)).expect_err("undeclared")),
        RefusalCode::PathUndeclared
    );
}

#[test]
fn write_refuses_content_over_the_limit_and_a_special_file_in_the_way() {
    let (dir, disk) = fixture();
    let (w, p) = (writable(), private());
    let limit = usize::try_from(satyrn_mutator_core::gates::MAX_TEXT_FILE_BYTES).expect("size");
    let at = "x".repeat(limit);
    let over = "x".repeat(limit + 1);
    let with = |content| WriteRequest {
        content,
        ..write_req("src/new.rs", None, &w, &p)
    };
    assert!(matches!(
        write::decide(&disk, &with(at.as_str())),
        Ok(WritePlan::Create { .. })
    ));
    match write::decide(&disk, &with(over.as_str())) {
        Err(ReplaceError::InvalidRequest(m)) => assert_eq!(
            m,
            format!(
                "content: {} bytes; at most {limit} bytes are allowed",
                limit + 1
            )
        ),
        other => panic!("{other:?}"),
    }
    let fifo = dir.path().join("root/src/pipe");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo")
            .success()
    );
    match write::decide(&disk, &write_req("src/pipe/x.rs", None, &w, &p)) {
        Err(ReplaceError::Refused(r)) => {
            assert_eq!(r.code, RefusalCode::MutationFailed);
            assert_eq!(r.message, "`src/pipe` is not a directory");
        }
        other => panic!("{other:?}"),
    }
    match write::decide(&disk, &write_req("src/pipe", None, &w, &p)) {
        Err(ReplaceError::Refused(r)) => {
            assert_eq!(r.code, RefusalCode::TargetExists);
            assert!(r.message.contains("(a special file)"), "{}", r.message);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn list_refuses_a_zero_limit_and_lists_with_one() {
    let (_dir, disk) = fixture();
    let with = |limit| ListRequest {
        path: None,
        pattern: None,
        recursive: false,
        cursor: None,
        limit: Some(limit),
        writable_paths: &[],
        private_paths: &[],
    };
    assert!(matches!(
        list::list(&disk, &with(0)),
        Err(ReadError::InvalidRequest(m)) if m == "limit: must be at least 1"
    ));
    let page = list::list(&disk, &with(1)).expect("one entry");
    assert_eq!(page.entries.len(), 1);
    assert!(page.next_cursor.is_some());
}

#[test]
fn a_private_path_is_refused_to_read_with_its_own_code() {
    use satyrn_mutator_core::read::{self, ReadRequest};
    let (_dir, disk) = fixture();
    let private = private();
    let request = |path| ReadRequest {
        path,
        writable_paths: &[],
        private_paths: &private,
        offset: None,
        limit: None,
    };
    match read::read(&disk, &request(".env")) {
        Err(ReadError::Refused { code, message }) => {
            assert_eq!(code.as_str(), "PATH_PRIVATE");
            assert!(message.contains(".env"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    read::read(&disk, &request("src/a.rs")).expect("the sibling reads");
}

/// A [`Disk`] that counts how many entries were inspected one by one (`stat`).
struct StatCounting {
    disk: Disk,
    stats: std::cell::Cell<usize>,
}

impl satyrn_mutator_core::tree::Tree for StatCounting {
    type Dir = std::path::PathBuf;

    fn root(&self) -> Result<Self::Dir, satyrn_mutator_core::worktree::NotEditable> {
        self.disk.root()
    }

    fn open_dir(
        &self,
        dir: &Self::Dir,
        name: &str,
        shown: &str,
    ) -> Result<Self::Dir, satyrn_mutator_core::worktree::NotEditable> {
        self.disk.open_dir(dir, name, shown)
    }

    fn entries(
        &self,
        dir: &Self::Dir,
        shown: &str,
    ) -> Result<satyrn_mutator_core::tree::Entries, satyrn_mutator_core::worktree::NotEditable>
    {
        self.disk.entries(dir, shown)
    }

    fn stat(
        &self,
        dir: &Self::Dir,
        name: &str,
        shown: &str,
    ) -> Result<
        Option<(satyrn_mutator_core::tree::EntryKind, u64)>,
        satyrn_mutator_core::worktree::NotEditable,
    > {
        self.stats.set(self.stats.get() + 1);
        self.disk.stat(dir, name, shown)
    }

    fn read_file(
        &self,
        dir: &Self::Dir,
        name: &str,
        shown: &str,
        max_len: u64,
    ) -> Result<Vec<u8>, satyrn_mutator_core::worktree::NotEditable> {
        self.disk.read_file(dir, name, shown, max_len)
    }
}

/// A page of a large directory inspects only the entries it shows (LOW 16 of the second
/// hardening round: every page of a 300,000-entry directory used to `stat` all of them),
/// and still gives each shown file its size.
#[test]
fn a_list_page_inspects_only_its_own_entries() {
    let dir = tempfile::tempdir().expect("tempdir");
    for i in 0..2_000 {
        fs::write(dir.path().join(format!("f{i:05}.txt")), "x".repeat(i % 7)).expect("write");
    }
    let tree = StatCounting {
        disk: Disk(dir.path().to_path_buf()),
        stats: std::cell::Cell::new(0),
    };
    let mut cursor: Option<String> = None;
    for page_number in 0..3 {
        tree.stats.set(0);
        let page = list::list(
            &tree,
            &ListRequest {
                path: None,
                pattern: None,
                recursive: false,
                cursor: cursor.as_deref(),
                limit: Some(3),
                writable_paths: &[],
                private_paths: &[],
            },
        )
        .expect("page");
        assert_eq!(page.entries.len(), 3);
        assert_eq!(tree.stats.get(), 3, "page {page_number}");
        for e in &page.entries {
            let i: usize = e.path[1..6].parse().expect("index");
            assert_eq!(e.size, (i % 7) as u64, "{}", e.path);
        }
        cursor = page.next_cursor;
    }
}
