//! The fuzzers' oracle for `satyrn_mutator_core::fnmatch`: the matcher it replaced (one
//! backtracking point over a `Vec<char>`, quadratic but simple), which the CPython
//! differential test (`tests/it/fnmatch_differential.rs`) held to Python's `fnmatch`.
//! The translation of a pattern into tokens is the library's own ([`translate`]), so the
//! fuzzer compares two matching algorithms on the same tokens; a translation bug shows in
//! the CPython differential test, which checks the library end to end.
#![allow(dead_code)]

use satyrn_mutator_core::fnmatch::{Token, one_char, translate};

/// A compiled pattern, reusable across many paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    tokens: Vec<Token>,
}

impl Pattern {
    /// Translates `pattern` the way CPython's `fnmatch.translate` does. Never fails:
    /// every string is a valid pattern.
    #[must_use]
    pub fn new(pattern: &str) -> Self {
        Self {
            tokens: translate(pattern),
        }
    }

    /// Whether the whole of `name` matches the pattern.
    #[must_use]
    pub fn matches(&self, name: &str) -> bool {
        let text: Vec<char> = name.chars().collect();
        match_tokens(&self.tokens, &text)
    }
}

/// `fnmatch.fnmatch(name, pattern)` on POSIX (where `os.path.normcase` is the identity).
#[must_use]
pub fn fnmatch(name: &str, pattern: &str) -> bool {
    Pattern::new(pattern).matches(name)
}

/// Whether `name` matches at least one of `patterns`.
#[must_use]
pub fn matches_any<S: AsRef<str>>(name: &str, patterns: &[S]) -> bool {
    patterns.iter().any(|p| fnmatch(name, p.as_ref()))
}

/// Matches `text` against `tokens` in full. Every token but `Star` consumes exactly one
/// character, so the classic single-backtrack-point algorithm is exact and linear in
/// practice.
fn match_tokens(tokens: &[Token], text: &[char]) -> bool {
    let (mut t, mut s) = (0, 0);
    let mut backtrack: Option<(usize, usize)> = None;
    while s < text.len() {
        match tokens.get(t) {
            Some(Token::Star) => {
                backtrack = Some((t, s));
                t += 1;
                continue;
            }
            Some(token) if one_char(token, text[s]) => {
                t += 1;
                s += 1;
                continue;
            }
            _ => {}
        }
        match backtrack {
            Some((star_t, star_s)) => {
                t = star_t + 1;
                s = star_s + 1;
                backtrack = Some((star_t, star_s + 1));
            }
            None => return false,
        }
    }
    tokens[t..].iter().all(|token| *token == Token::Star)
}
