//! The path length limits through every entry point of the library (`replace::decide`,
//! `edit::decide`, `read::read`, `replace::revision`): a path at the limit reaches the
//! file, one byte over is an invalid request whose message does not quote the path.

use satyrn_mutator_core::edit::{self, EditError, EditOp, EditRequest};
use satyrn_mutator_core::path::{MAX_PATH_BYTES, MAX_SEGMENT_BYTES};
use satyrn_mutator_core::read::{self, ReadError, ReadRequest};
use satyrn_mutator_core::replace::{self, ReplaceError, ReplaceRequest, RevisionError};
use satyrn_mutator_core::revision::Revision;
use satyrn_mutator_core::worktree::{NotEditable, Worktree};

const HELLO: &[u8] = b"hello world\n";

/// One file at `path`.
struct One(String);

impl Worktree for One {
    fn read_regular(&self, segments: &[&str], _max_len: u64) -> Result<Vec<u8>, NotEditable> {
        if segments.join("/") == self.0 {
            Ok(HELLO.to_vec())
        } else {
            Err(NotEditable("does not exist".into()))
        }
    }
}

/// A path of exactly `len` bytes whose segments are at most `segment` bytes, made of
/// `fill` (an ASCII letter).
fn path_of(len: usize, segment: usize, fill: char) -> String {
    let mut path = String::new();
    while path.len() < len {
        if !path.is_empty() {
            path.push('/');
        }
        let room = (len - path.len()).min(segment);
        let take = if len - path.len() - room == 1 {
            room - 1
        } else {
            room
        };
        path.extend(std::iter::repeat_n(fill, take));
    }
    assert_eq!(path.len(), len);
    path
}

/// Every entry point's verdict on `path` in a worktree holding it: `Ok` when the path
/// reached the file, else each invalid-request message.
fn verdicts(path: &str) -> Result<(), Vec<String>> {
    let worktree = One(path.to_string());
    let writable = vec!["*".to_string()];
    let sha = Revision::of(HELLO).to_hex();
    let mut messages = Vec::new();
    match replace::decide(
        &worktree,
        &ReplaceRequest {
            path,
            writable_paths: &writable,
            private_paths: &[],
            expected_sha256: Some(&sha),
            old_text: "world",
            new_text: "there",
        },
    ) {
        Ok(plan) => assert_eq!(plan.new_content, b"hello there\n"),
        Err(ReplaceError::InvalidRequest(m)) => messages.push(m),
        Err(other) => panic!("replace: {other}"),
    }
    let ops = [EditOp::Replace {
        old_text: "world",
        new_text: "there",
        occurrence: None,
    }];
    match edit::decide(
        &worktree,
        &EditRequest {
            path,
            writable_paths: &writable,
            private_paths: &[],
            expected_sha256: Some(&sha),
            edits: &ops,
        },
    ) {
        Ok(plan) => assert_eq!(plan.plan.new_content, b"hello there\n"),
        Err(EditError::InvalidRequest(m)) => messages.push(m),
        Err(other) => panic!("edit: {other:?}"),
    }
    match read::read(
        &worktree,
        &ReadRequest {
            path,
            writable_paths: &writable,
            private_paths: &[],
            offset: None,
            limit: None,
        },
    ) {
        Ok(page) => assert_eq!(page.text.as_bytes(), HELLO),
        Err(ReadError::InvalidRequest(m)) => messages.push(m),
        Err(other) => panic!("read: {other:?}"),
    }
    match replace::revision(&worktree, path, &writable, &[]) {
        Ok(revision) => assert_eq!(revision.to_hex(), sha),
        Err(RevisionError::InvalidRequest(m)) => messages.push(m),
        Err(other) => panic!("revision: {other:?}"),
    }
    if messages.is_empty() {
        Ok(())
    } else {
        assert_eq!(messages.len(), 4, "every entry point agrees: {messages:?}");
        Err(messages)
    }
}

fn assert_refused(path: &str, expected: &str) {
    let messages = verdicts(path).expect_err("refused");
    for m in messages {
        assert_eq!(m, format!("path: {expected}"));
        assert!(!m.contains("xxxxxxxx"), "the path is not quoted: {m}");
    }
}

#[test]
fn segment_at_the_limit_reaches_the_file_and_one_byte_more_is_invalid() {
    let at = format!("dir/{}", "x".repeat(MAX_SEGMENT_BYTES));
    assert_eq!(verdicts(&at), Ok(()));
    let over = format!("dir/{}", "x".repeat(MAX_SEGMENT_BYTES + 1));
    assert_refused(
        &over,
        "segment 2 of the path is 256 bytes long; at most 255 bytes are allowed",
    );
}

#[test]
fn path_at_the_limit_reaches_the_file_and_one_byte_more_is_invalid() {
    let at = path_of(MAX_PATH_BYTES, MAX_SEGMENT_BYTES, 'x');
    assert_eq!(verdicts(&at), Ok(()));
    let over = path_of(MAX_PATH_BYTES + 1, MAX_SEGMENT_BYTES, 'x');
    assert_refused(
        &over,
        "the path is 4097 bytes long; at most 4096 bytes are allowed",
    );
}

#[test]
fn a_ten_megabyte_path_is_refused_by_its_length() {
    let huge = path_of(10 * 1024 * 1024, MAX_SEGMENT_BYTES, 'x');
    assert_refused(
        &huge,
        "the path is 10485760 bytes long; at most 4096 bytes are allowed",
    );
}
