//! The fuzzers' oracle for `satyrn_mutator_core::fnmatch`: the matcher it replaced (one
//! backtracking point over a `Vec<char>`, quadratic but simple), which the CPython
//! differential test (`tests/it/fnmatch_differential.rs`) held to Python's `fnmatch`.
//! The translation of a pattern into tokens is the same code as the library's; only the
//! matching differs, so the fuzzer compares two matching algorithms on the same tokens.
#![allow(dead_code)]

/// One step of a translated pattern. Every token but [`Token::Star`] matches exactly one
/// character.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Literal(char),
    AnyChar,
    Star,
    Class(Class),
    /// CPython's `(?!)`: an empty set, which matches nothing.
    Never,
}

/// A bracket expression after CPython's range clean-up.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Class {
    negated: bool,
    /// Inclusive ranges; a single character `c` is `(c, c)`.
    ranges: Vec<(char, char)>,
}

impl Class {
    fn contains(&self, c: char) -> bool {
        self.ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != self.negated
    }
}

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

fn translate(pattern: &str) -> Vec<Token> {
    let pat: Vec<char> = pattern.chars().collect();
    let n = pat.len();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < n {
        let c = pat[i];
        i += 1;
        match c {
            '*' => {
                if tokens.last() != Some(&Token::Star) {
                    tokens.push(Token::Star);
                }
            }
            '?' => tokens.push(Token::AnyChar),
            '[' => match bracket_end(&pat, i) {
                None => tokens.push(Token::Literal('[')),
                Some(j) => {
                    tokens.push(bracket(&pat, i, j));
                    i = j + 1;
                }
            },
            c => tokens.push(Token::Literal(c)),
        }
    }
    tokens
}

/// The index of the `]` closing a bracket whose contents start at `i`, if any.
fn bracket_end(pat: &[char], i: usize) -> Option<usize> {
    let n = pat.len();
    let mut j = i;
    if j < n && pat[j] == '!' {
        j += 1;
    }
    if j < n && pat[j] == ']' {
        j += 1;
    }
    while j < n && pat[j] != ']' {
        j += 1;
    }
    (j < n).then_some(j)
}

/// Translates the bracket contents `pat[i..j]` as CPython does: first into the text of a
/// regular-expression set (with CPython's chunking of ranges), then that set into a
/// [`Class`]. Going through the same text keeps every quirk of the original.
fn bracket(pat: &[char], i: usize, j: usize) -> Token {
    let stuff: String = if !pat[i..j].contains(&'-') {
        escape_backslashes(&pat[i..j])
    } else {
        let chunks = range_chunks(pat, i, j);
        let escaped: Vec<String> = chunks
            .iter()
            .map(|chunk| {
                let mut s = String::new();
                for &c in chunk {
                    match c {
                        '\\' => s.push_str("\\\\"),
                        '-' => s.push_str("\\-"),
                        c => s.push(c),
                    }
                }
                s
            })
            .collect();
        escaped.join("-")
    };
    // CPython escapes the set operations `&`, `~` and `|`; in our set reader an escaped
    // character is a literal, exactly like an unescaped one, so that step changes nothing.
    if stuff.is_empty() {
        return Token::Never;
    }
    if stuff == "!" {
        return Token::AnyChar;
    }
    let mut set: Vec<char> = stuff.chars().collect();
    let negated = set[0] == '!';
    if negated {
        set.remove(0);
    }
    // A leading `^` or `[` is escaped by CPython; reading it as a literal is the same.
    Token::Class(Class {
        negated,
        ranges: read_set(&set),
    })
}

fn escape_backslashes(chars: &[char]) -> String {
    let mut s = String::new();
    for &c in chars {
        if c == '\\' {
            s.push_str("\\\\");
        } else {
            s.push(c);
        }
    }
    s
}

/// CPython's split of bracket contents at the hyphens that form ranges, followed by its
/// removal of empty ranges (`z-a`).
fn range_chunks(pat: &[char], mut i: usize, j: usize) -> Vec<Vec<char>> {
    let mut chunks: Vec<Vec<char>> = Vec::new();
    let mut k = if pat[i] == '!' { i + 2 } else { i + 1 };
    while let Some(found) = (k..j).find(|&x| pat[x] == '-') {
        chunks.push(pat[i..found].to_vec());
        i = found + 1;
        k = found + 3;
    }
    let chunk = &pat[i..j];
    if chunk.is_empty() {
        if let Some(last) = chunks.last_mut() {
            last.push('-');
        }
    } else {
        chunks.push(chunk.to_vec());
    }
    for k in (1..chunks.len()).rev() {
        let (prev_last, next_first) = (chunks[k - 1].last().copied(), chunks[k].first().copied());
        if let (Some(a), Some(b)) = (prev_last, next_first)
            && a > b
        {
            let next = chunks.remove(k);
            let prev = &mut chunks[k - 1];
            prev.pop();
            prev.extend_from_slice(&next[1..]);
        }
    }
    chunks
}

/// Reads the inside of a regular-expression set (after the optional negation) the way
/// Python's `re` does for the sets `fnmatch` produces: `\c` is the literal `c`, an
/// unescaped `-` between two items is a range, a `]` in first position is a literal.
fn read_set(set: &[char]) -> Vec<(char, char)> {
    let mut ranges = Vec::new();
    let mut pos = 0;
    let next_item = |pos: &mut usize| -> char {
        let c = set[*pos];
        *pos += 1;
        if c == '\\' && *pos < set.len() {
            let escaped = set[*pos];
            *pos += 1;
            escaped
        } else {
            c
        }
    };
    while pos < set.len() {
        let lo = next_item(&mut pos);
        if pos + 1 < set.len() && set[pos] == '-' {
            pos += 1;
            let hi = next_item(&mut pos);
            ranges.push((lo, hi));
        } else {
            ranges.push((lo, lo));
        }
    }
    ranges
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

fn one_char(token: &Token, c: char) -> bool {
    match token {
        Token::Literal(l) => *l == c,
        Token::AnyChar => true,
        Token::Class(class) => class.contains(c),
        Token::Never | Token::Star => false,
    }
}
