//! What an MCP session has seen of each file: the revision of its last read, search hit or
//! edit, and whether the agent saw all of that revision or only part of it — the base a
//! later call without `expected_sha256` uses, and whether a `write` over it or a `delete`
//! of it may go ahead ([`satyrn_operation::Seen`]).
//!
//! A read page covers its lines; pages of one revision add up, so reading every page of a
//! long file is a whole view. A search hit shows a few lines: part. An edit's result is
//! whole when the view it was made on was whole (the agent knows what it changed); a write's
//! is whole (the agent wrote every byte). Anything of another revision starts afresh.

use std::collections::HashMap;

use satyrn_operation::{ReadResult, Seen};

/// One path's record.
#[derive(Debug, Clone, PartialEq, Eq)]
struct View {
    sha256: String,
    /// Line ranges seen, 1-based and inclusive, sorted and disjoint.
    lines: Vec<(u32, u32)>,
    /// Every line was seen (or the agent wrote them).
    whole: bool,
}

/// The views of one session, by path.
#[derive(Debug, Default)]
pub struct Views(HashMap<String, View>);

impl Views {
    /// The revision last seen of `path`, and how much of it.
    #[must_use]
    pub fn base(&self, path: &str) -> Option<(String, Seen)> {
        self.0.get(path).map(|v| {
            let seen = if v.whole { Seen::Whole } else { Seen::Part };
            (v.sha256.clone(), seen)
        })
    }

    /// A read page: its lines are now seen, added to what was seen of the same revision.
    pub fn read(&mut self, page: &ReadResult) {
        let view = self.fresh(&page.path, &page.sha256);
        if page.lines > 0 {
            add(&mut view.lines, page.offset, page.offset + page.lines - 1);
        }
        view.whole = view.whole || covers(&view.lines, page.total_lines);
    }

    /// A search hit: the revision is known, a few of its lines seen.
    pub fn hit(&mut self, path: &str, sha256: &str) {
        self.fresh(path, sha256);
    }

    /// An edit from `base` to `sha256`: whole if the view of `base` was whole.
    pub fn edited(&mut self, path: &str, base: Option<&str>, sha256: &str) {
        let whole = self
            .0
            .get(path)
            .is_some_and(|v| v.whole && Some(v.sha256.as_str()) == base);
        self.0.insert(
            path.to_owned(),
            View {
                sha256: sha256.to_owned(),
                lines: Vec::new(),
                whole,
            },
        );
    }

    /// A write: every byte of `sha256` is the agent's.
    pub fn wrote(&mut self, path: &str, sha256: &str) {
        self.took(path, sha256, true);
    }

    /// `path` now holds `sha256`, seen whole or not (a moved file is seen as its source was).
    pub fn took(&mut self, path: &str, sha256: &str, whole: bool) {
        self.0.insert(
            path.to_owned(),
            View {
                sha256: sha256.to_owned(),
                lines: Vec::new(),
                whole,
            },
        );
    }

    /// The file is gone.
    pub fn forget(&mut self, path: &str) {
        self.0.remove(path);
    }

    /// The view of `path` at `sha256`, started afresh when it was of another revision.
    fn fresh(&mut self, path: &str, sha256: &str) -> &mut View {
        let view = self.0.entry(path.to_owned()).or_insert_with(|| View {
            sha256: sha256.to_owned(),
            lines: Vec::new(),
            whole: false,
        });
        if view.sha256 != sha256 {
            *view = View {
                sha256: sha256.to_owned(),
                lines: Vec::new(),
                whole: false,
            };
        }
        view
    }
}

/// Adds `[start, end]` to the sorted, disjoint `ranges`, merging what touches it.
fn add(ranges: &mut Vec<(u32, u32)>, start: u32, end: u32) {
    let (mut start, mut end) = (start, end);
    let mut kept = Vec::with_capacity(ranges.len() + 1);
    for &(a, b) in ranges.iter() {
        if b.saturating_add(1) < start || end.saturating_add(1) < a {
            kept.push((a, b));
        } else {
            start = start.min(a);
            end = end.max(b);
        }
    }
    kept.push((start, end));
    kept.sort_unstable();
    *ranges = kept;
}

/// Whether `ranges` cover lines 1 to `total` (an empty file is covered by any read).
fn covers(ranges: &[(u32, u32)], total: u32) -> bool {
    total == 0 || ranges.first().is_some_and(|&(a, b)| a <= 1 && b >= total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(offset: u32, lines: u32, total: u32, sha: &str) -> ReadResult {
        ReadResult {
            path: "a.txt".into(),
            sha256: sha.into(),
            writable: true,
            bom: false,
            offset,
            lines,
            total_lines: total,
            text: String::new(),
            next_offset: None,
            notice: None,
        }
    }

    #[test]
    fn pages_add_up_to_a_whole_view_of_one_revision() {
        let mut v = Views::default();
        v.read(&page(1, 2000, 3000, "s1"));
        assert_eq!(v.base("a.txt"), Some(("s1".into(), Seen::Part)));
        v.read(&page(2001, 1000, 3000, "s1"));
        assert_eq!(v.base("a.txt"), Some(("s1".into(), Seen::Whole)));
        // Another revision starts afresh; a page of it is part again.
        v.read(&page(1, 10, 3000, "s2"));
        assert_eq!(v.base("a.txt"), Some(("s2".into(), Seen::Part)));
        // A gap leaves it part; closing the gap makes it whole.
        v.read(&page(2000, 1001, 3000, "s2"));
        assert_eq!(v.base("a.txt"), Some(("s2".into(), Seen::Part)));
        v.read(&page(11, 1989, 3000, "s2"));
        assert_eq!(v.base("a.txt"), Some(("s2".into(), Seen::Whole)));
    }

    #[test]
    fn hits_are_part_writes_whole_and_edits_keep_what_their_base_was() {
        let mut v = Views::default();
        v.hit("a.txt", "s1");
        assert_eq!(v.base("a.txt"), Some(("s1".into(), Seen::Part)));
        v.edited("a.txt", Some("s1"), "s2");
        assert_eq!(v.base("a.txt"), Some(("s2".into(), Seen::Part)));
        v.wrote("a.txt", "s3");
        assert_eq!(v.base("a.txt"), Some(("s3".into(), Seen::Whole)));
        v.edited("a.txt", Some("s3"), "s4");
        assert_eq!(v.base("a.txt"), Some(("s4".into(), Seen::Whole)));
        // A hit of the same revision keeps the whole view.
        v.hit("a.txt", "s4");
        assert_eq!(v.base("a.txt"), Some(("s4".into(), Seen::Whole)));
        v.forget("a.txt");
        assert_eq!(v.base("a.txt"), None);
        v.read(&page(1, 0, 0, "empty"));
        assert_eq!(v.base("a.txt"), Some(("empty".into(), Seen::Whole)));
    }
}
