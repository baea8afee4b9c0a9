//! Path shape and `fnmatch` (`satyrn_mutator_core::{path, fnmatch}`): the input's first
//! line is a path, every further line a pattern.
//!
//! Checked: `path::segments` accepts exactly the paths of the documented shape (at most
//! 4096 bytes, segments of 1 to 255 bytes, none `.` or `..`, no NUL or backslash, not
//! absolute) and splits them losslessly; a refusal's message never quotes the path; and
//! the run-by-run matcher agrees with the backtracking matcher it replaced
//! (`fuzz/oracle/fnmatch_backtracking.rs`, held to CPython by the differential test) on
//! every pattern, compiled once or per call, and as a `PatternSet` (its literal prefilter).
use satyrn_mutator_core::fnmatch::{self, Pattern};
use satyrn_mutator_core::path::{self, MAX_PATH_BYTES, MAX_SEGMENT_BYTES};

#[path = "../oracle/fnmatch_backtracking.rs"]
mod oracle;

/// The target's checks on one input; panics on a violation.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut lines = text.split('\n');
    let path = lines.next().unwrap_or_default();
    let patterns: Vec<&str> = lines.collect();
    check_shape(path);
    for pattern in &patterns {
        let expected = oracle::fnmatch(path, pattern);
        assert_eq!(
            Pattern::new(pattern).matches(path),
            expected,
            "fnmatch({path:?}, {pattern:?})"
        );
        assert_eq!(fnmatch::fnmatch(path, pattern), expected);
    }
    let expected = oracle::matches_any(path, &patterns);
    assert_eq!(fnmatch::matches_any(path, &patterns), expected);
    assert_eq!(
        fnmatch::PatternSet::new(&patterns).matches(path),
        expected,
        "the set's literal prefilter, {path:?} against {patterns:?}"
    );
    assert_eq!(
        fnmatch::PatternSet::few_names(&patterns).matches(path),
        expected,
        "the set without a prefilter, {path:?} against {patterns:?}"
    );
}

fn check_shape(path: &str) {
    let well_formed = !path.is_empty()
        && path.len() <= MAX_PATH_BYTES
        && !path.starts_with('/')
        && !path.contains(['\0', '\\'])
        && path
            .split('/')
            .all(|s| !s.is_empty() && s != "." && s != ".." && s.len() <= MAX_SEGMENT_BYTES);
    match path::segments(path) {
        Ok(segments) => {
            assert!(well_formed, "{path:?} was accepted");
            assert_eq!(segments.join("/"), path);
        }
        Err(e) => {
            assert!(!well_formed, "{path:?} was refused: {e}");
            let message = e.to_string();
            assert!(message.len() < 120, "{message}");
            if path.len() > 8 && !path.contains(['\0', '\\']) {
                assert!(!message.contains(path), "{message} quotes the path");
            }
        }
    }
}
