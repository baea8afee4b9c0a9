//! `search`'s edges natively, on the real file system: a start path that is a file, a
//! symlink, a FIFO or missing; the request limits (query length, context, `max_matches`);
//! what is skipped and why (FIFOs, files over the text limit, more skipped files than are
//! named); a file with more matching lines than are shown; and the page notice.

use std::fs;

use satyrn_mutator_core::gates::MAX_TEXT_FILE_BYTES;
use satyrn_mutator_core::read::{ReadCode, ReadError};
use satyrn_mutator_core::search::{
    self, MAX_CONTEXT, MAX_FILE_MATCHES, MAX_QUERY_BYTES, MAX_SKIPPED_LISTED, SearchPage,
    SearchRequest, SkipReason,
};

mod common;
use common::disk::Disk;

fn request(query: &str) -> SearchRequest<'_> {
    SearchRequest {
        path: None,
        query,
        regex: false,
        ignore_case: false,
        glob: None,
        context: None,
        max_matches: None,
        cursor: None,
        writable_paths: &[],
        private_paths: &[],
    }
}

fn tree() -> (tempfile::TempDir, Disk) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    fs::create_dir_all(root.join("src")).expect("mkdir");
    fs::write(root.join("src/a.rs"), "needle one\nother\nneedle two\n").expect("write");
    fs::write(root.join("src/b.rs"), "needle three\n").expect("write");
    std::os::unix::fs::symlink("a.rs", root.join("src/link.rs")).expect("symlink");
    (dir, Disk(root))
}

fn unavailable(outcome: Result<SearchPage, ReadError>) -> String {
    match outcome {
        Err(ReadError::Refused {
            code: ReadCode::Unavailable,
            message,
        }) => message,
        other => panic!("expected UNAVAILABLE, got {other:?}"),
    }
}

fn invalid(outcome: Result<SearchPage, ReadError>) -> String {
    match outcome {
        Err(ReadError::InvalidRequest(message)) => message,
        other => panic!("expected INVALID_REQUEST, got {other:?}"),
    }
}

#[test]
fn a_start_path_is_searched_when_a_file_or_directory_and_refused_otherwise() {
    let (dir, disk) = tree();
    let fifo = dir.path().join("root/src/pipe");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(status.success());

    let one = search::search(
        &disk,
        &SearchRequest {
            path: Some("src/a.rs"),
            ..request("needle")
        },
    )
    .expect("a file");
    let paths: Vec<&str> = one.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["src/a.rs"]);
    assert_eq!(one.files[0].matches, 2);
    assert!(one.next_cursor.is_none());

    let all = search::search(
        &disk,
        &SearchRequest {
            path: Some("src"),
            ..request("needle")
        },
    )
    .expect("a directory");
    let paths: Vec<&str> = all.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["src/a.rs", "src/b.rs"]);
    let skipped: Vec<(&str, &str)> = all
        .skipped
        .iter()
        .map(|s| (s.path.as_str(), s.reason.as_str()))
        .collect();
    assert_eq!(
        skipped,
        [("src/link.rs", "symlink"), ("src/pipe", "unavailable")]
    );

    let at = |path| {
        search::search(
            &disk,
            &SearchRequest {
                path: Some(path),
                ..request("needle")
            },
        )
    };
    assert_eq!(
        unavailable(at("src/link.rs")),
        "`src/link.rs` is a symbolic link; satyrn never follows symbolic links"
    );
    assert_eq!(
        unavailable(at("src/pipe")),
        "`src/pipe` is neither a directory nor a regular file"
    );
    assert_eq!(
        unavailable(at("src/missing.rs")),
        "`src/missing.rs` does not exist"
    );
    // A file start path with a cursor has nothing more to give.
    let resumed = search::search(
        &disk,
        &SearchRequest {
            path: Some("src/a.rs"),
            cursor: Some("src/a.rs"),
            ..request("needle")
        },
    )
    .expect("resumed");
    assert!(resumed.files.is_empty());
}

#[test]
fn the_request_limits_are_refused_one_over_and_accepted_at() {
    let (_dir, disk) = tree();
    let longest = "n".repeat(MAX_QUERY_BYTES);
    search::search(&disk, &request(&longest)).expect("the longest query");
    let over = "n".repeat(MAX_QUERY_BYTES + 1);
    assert_eq!(
        invalid(search::search(&disk, &request(&over))),
        format!(
            "query: {} bytes long; at most {MAX_QUERY_BYTES} bytes are allowed",
            over.len()
        )
    );
    search::search(
        &disk,
        &SearchRequest {
            context: Some(MAX_CONTEXT),
            ..request("needle")
        },
    )
    .expect("the widest context");
    assert_eq!(
        invalid(search::search(
            &disk,
            &SearchRequest {
                context: Some(MAX_CONTEXT + 1),
                ..request("needle")
            }
        )),
        format!(
            "context: at most {MAX_CONTEXT} lines, got {}",
            MAX_CONTEXT + 1
        )
    );
    search::search(
        &disk,
        &SearchRequest {
            max_matches: Some(1),
            ..request("needle")
        },
    )
    .expect("one match");
    assert_eq!(
        invalid(search::search(
            &disk,
            &SearchRequest {
                max_matches: Some(0),
                ..request("needle")
            }
        )),
        "max_matches: must be at least 1"
    );
}

#[test]
fn every_skip_reason_has_its_wire_name() {
    let names: Vec<&str> = [
        SkipReason::Symlink,
        SkipReason::TooLarge,
        SkipReason::Binary,
        SkipReason::NotText,
        SkipReason::Unavailable,
    ]
    .iter()
    .map(|r| r.as_str())
    .collect();
    assert_eq!(
        names,
        ["symlink", "too_large", "binary", "not_text", "unavailable"]
    );
}

#[test]
fn a_file_over_the_text_limit_is_skipped_as_too_large_and_one_at_it_is_searched() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    fs::create_dir(&root).expect("mkdir");
    let mut at_limit = b"needle\n".to_vec();
    at_limit.resize(usize::try_from(MAX_TEXT_FILE_BYTES).expect("size"), b'\n');
    fs::write(root.join("at.txt"), &at_limit).expect("write");
    let mut over = at_limit.clone();
    over.push(b'\n');
    fs::write(root.join("over.txt"), &over).expect("write");
    let page = search::search(&Disk(root), &request("needle")).expect("search");
    let paths: Vec<&str> = page.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["at.txt"]);
    let skipped: Vec<(&str, SkipReason)> = page
        .skipped
        .iter()
        .map(|s| (s.path.as_str(), s.reason))
        .collect();
    assert_eq!(skipped, [("over.txt", SkipReason::TooLarge)]);
}

#[test]
fn more_matching_lines_than_shown_are_counted_and_said() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    fs::create_dir(&root).expect("mkdir");
    let total = MAX_FILE_MATCHES + 5;
    let text: String = (0..total).map(|i| format!("needle {i}\n")).collect();
    fs::write(root.join("many.txt"), text).expect("write");
    let page = search::search(&Disk(root), &request("needle")).expect("search");
    let file = &page.files[0];
    assert_eq!((file.matches, file.omitted), (total, 5));
    assert_eq!(file.lines.len(), MAX_FILE_MATCHES as usize);
    let notice = page.notice.expect("a notice");
    assert!(
        notice.contains(&format!(
            "5 matching lines were not shown (at most {MAX_FILE_MATCHES} per file)"
        )),
        "{notice}"
    );
}

#[test]
fn more_skipped_files_than_named_are_counted_and_a_full_page_says_how_to_go_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    fs::create_dir(&root).expect("mkdir");
    for i in 0..=MAX_SKIPPED_LISTED {
        std::os::unix::fs::symlink("x", root.join(format!("l{i:04}"))).expect("symlink");
    }
    fs::write(root.join("m1.txt"), "needle\n").expect("write");
    fs::write(root.join("m2.txt"), "needle\n").expect("write");
    let disk = Disk(root);
    let page = search::search(
        &disk,
        &SearchRequest {
            max_matches: Some(1),
            ..request("needle")
        },
    )
    .expect("search");
    assert_eq!(page.skipped.len(), MAX_SKIPPED_LISTED);
    assert_eq!(page.skipped_omitted, 1);
    assert_eq!(page.files.len(), 1);
    let cursor = page.next_cursor.expect("more follow");
    let notice = page.notice.expect("a notice");
    assert!(
        notice.contains("More files follow (the page is full)"),
        "{notice}"
    );
    assert!(notice.contains(&format!("cursor=\"{cursor}\"")), "{notice}");
    let rest = search::search(
        &disk,
        &SearchRequest {
            max_matches: Some(1),
            cursor: Some(&cursor),
            ..request("needle")
        },
    )
    .expect("the rest");
    let paths: Vec<&str> = rest.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["m2.txt"]);
    assert!(rest.next_cursor.is_none());
}

#[test]
fn a_regular_expression_that_does_not_compile_says_where_or_which_limit() {
    let (_dir, disk) = tree();
    let regex = |query: &str| {
        let mut r = request(query);
        r.regex = true;
        invalid(search::search(&disk, &r))
    };
    let syntax = regex("a(b");
    assert!(
        syntax.starts_with("query: not a valid regular expression:"),
        "{syntax}"
    );
    assert!(
        syntax.contains("a(b\n     ^") && syntax.contains("unclosed group"),
        "{syntax}"
    );
    let big = regex("((a{100}){100}){50}");
    assert!(
        big.starts_with("query: the regular expression compiles to more than 262144 bytes (256 KiB is the limit)"),
        "{big}"
    );
    // The sibling: a valid expression searches.
    let mut r = request("needle (one|two)");
    r.regex = true;
    let page = search::search(&disk, &r).expect("searched");
    assert_eq!(page.files.len(), 1);
}
