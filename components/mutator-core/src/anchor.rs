//! Exact-byte anchors: counting and literal replacement.

use alloc::vec::Vec;
use memchr::memmem;

/// How often an anchor occurs, counting overlapping occurrences (`aa` occurs twice in
/// `aaa`), and stopping at two: more is never needed to decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Occurrences {
    /// The anchor is absent.
    None,
    /// Exactly one occurrence, at this byte offset.
    One(usize),
    /// Two or more occurrences.
    Many,
}

/// Counts `needle` in `haystack` as exact bytes. An empty needle counts as [`Occurrences::Many`].
#[must_use]
pub fn occurrences(haystack: &[u8], needle: &[u8]) -> Occurrences {
    if needle.is_empty() {
        return Occurrences::Many;
    }
    let finder = memmem::Finder::new(needle);
    let Some(first) = finder.find(haystack) else {
        return Occurrences::None;
    };
    match finder.find(&haystack[first + 1..]) {
        Some(_) => Occurrences::Many,
        None => Occurrences::One(first),
    }
}

/// `haystack` with `len` bytes at `at` replaced by `replacement`, literally.
///
/// # Panics
///
/// If `at + len` is beyond `haystack`; callers pass an offset from [`occurrences`].
#[must_use]
pub fn splice(haystack: &[u8], at: usize, len: usize, replacement: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len() - len + replacement.len());
    out.extend_from_slice(&haystack[..at]);
    out.extend_from_slice(replacement);
    out.extend_from_slice(&haystack[at + len..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_overlaps_honestly() {
        assert_eq!(occurrences(b"aaa", b"aa"), Occurrences::Many);
        assert_eq!(occurrences(b"aab", b"aa"), Occurrences::One(0));
        assert_eq!(occurrences(b"xab", b"b"), Occurrences::One(2));
        assert_eq!(occurrences(b"abc", b"d"), Occurrences::None);
        assert_eq!(occurrences(b"ab", b"abc"), Occurrences::None);
    }

    #[test]
    fn splices_literally() {
        assert_eq!(splice(b"a-b", 1, 1, b"$1\\0&"), b"a$1\\0&b");
        assert_eq!(splice(b"abc", 0, 3, b""), b"");
    }
}
