//! Python's `fnmatch.fnmatch` on POSIX, reproduced exactly.
//!
//! CPython translates a pattern to a regular expression (`fnmatch.translate`) and matches
//! the whole string with it. This module performs the same translation step by step, but
//! into a small token list instead of a regular expression:
//!
//! - `*` matches any sequence of characters, `/` and newlines included;
//! - `?` matches any one character;
//! - `[seq]` matches one character in `seq`, `[!seq]` one character not in it; ranges
//!   `a-z` are by code point, and CPython's quirks are kept (an empty range such as `z-a`
//!   is dropped and merged with its neighbours, `[z-a]` matches nothing, `[!z-a]` any
//!   character);
//! - a `[` without a closing `]` is a literal `[`;
//! - there are no escapes, no braces and no `**`.
//!
//! Matching goes run by run between the stars ([`Pattern::matches`]): never exponential,
//! linear in the path for runs of plain characters.
//!
//! `tests/fnmatch_differential.rs` compares this module with CPython over thousands of
//! generated pattern/path pairs, `components/mutator-core/tests/fnmatch.rs` the matcher
//! with a dynamic-programming table, and the `path_fnmatch` fuzz target with the
//! backtracking matcher it replaced.

use alloc::string::String;
use alloc::vec::Vec;

/// One step of a translated pattern ([`translate`]). Every token but [`Token::Star`]
/// matches exactly one character.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// This character.
    Literal(char),
    /// `?`: any one character.
    AnyChar,
    /// `*`: any run of characters, `/` included.
    Star,
    /// A bracket expression.
    Class(Class),
    /// CPython's `(?!)`: an empty set, which matches nothing.
    Never,
}

/// A bracket expression after CPython's range clean-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Class {
    /// `[!...]`: the set's complement.
    pub negated: bool,
    /// Inclusive ranges; a single character `c` is `(c, c)`.
    pub ranges: Vec<(char, char)>,
}

impl Class {
    /// Whether `c` is in the set (or, negated, not in it).
    #[must_use]
    pub fn contains(&self, c: char) -> bool {
        self.ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != self.negated
    }
}

/// A compiled pattern, reusable across many paths.
///
/// The pattern is kept as the runs of one-character tokens between its stars. Matching
/// is linear in the path for every run of literal characters, and never worse than the
/// path's length times the longest run (see [`Pattern::matches`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    /// The run before the first star (the whole pattern when it has no star).
    head: Run,
    /// The runs between stars and the run after the last star, if there is a star.
    starred: Option<(Vec<Run>, Run)>,
    /// The pattern holds an empty set (`[z-a]`): it matches nothing.
    never: bool,
}

/// A run of tokens that each match exactly one character.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Run {
    tokens: Vec<Token>,
    /// The run's UTF-8 when every token is a literal character.
    literal: Option<String>,
}

impl Run {
    fn new(tokens: &[Token]) -> Self {
        let literal = tokens
            .iter()
            .map(|t| match t {
                Token::Literal(c) => Some(*c),
                _ => None,
            })
            .collect();
        Self {
            tokens: tokens.to_vec(),
            literal,
        }
    }

    /// Where the run ends when it matches `text` at byte `at` (the run must fit in `text`).
    fn match_at(&self, text: &str, at: usize) -> Option<usize> {
        if let Some(literal) = &self.literal {
            return text[at..]
                .starts_with(literal.as_str())
                .then(|| at + literal.len());
        }
        let mut chars = text[at..].chars();
        let mut end = at;
        for token in &self.tokens {
            let c = chars.next()?;
            if !one_char(token, c) {
                return None;
            }
            end += c.len_utf8();
        }
        Some(end)
    }

    /// The end of the leftmost match of the run in `text` at or after byte `from`.
    /// A literal run is found by `memchr::memmem` (linear time): UTF-8 is
    /// self-synchronizing, so a byte match of a whole-character needle starts and ends on
    /// character boundaries. Any other run is tried at each character boundary.
    fn find(&self, text: &str, from: usize) -> Option<usize> {
        if let Some(literal) = &self.literal {
            return memchr::memmem::find(&text.as_bytes()[from..], literal.as_bytes())
                .map(|i| from + i + literal.len());
        }
        text[from..]
            .char_indices()
            .find_map(|(i, _)| self.match_at(text, from + i))
    }
}

impl Pattern {
    /// Translates `pattern` the way CPython's `fnmatch.translate` does. Never fails:
    /// every string is a valid pattern.
    #[must_use]
    pub fn new(pattern: &str) -> Self {
        let tokens = translate(pattern);
        let never = tokens.contains(&Token::Never);
        let mut runs = tokens.split(|t| *t == Token::Star).map(Run::new);
        let head = runs.next().unwrap_or_else(|| Run::new(&[]));
        let mut rest: Vec<Run> = runs.collect();
        let starred = rest.pop().map(|tail| (rest, tail));
        Self {
            head,
            starred,
            never,
        }
    }

    /// The longest run of plain characters (no star, `?` or bracket between them) that
    /// every name the pattern matches contains; `None` when the pattern has none.
    fn required(&self) -> Option<String> {
        let runs = core::iter::once(&self.head).chain(
            self.starred
                .iter()
                .flat_map(|(middle, tail)| middle.iter().chain(core::iter::once(tail))),
        );
        let mut best = String::new();
        for run in runs {
            for segment in run.tokens.split(|t| !matches!(t, Token::Literal(_))) {
                if segment.len() > best.chars().count() {
                    best = segment
                        .iter()
                        .filter_map(|t| match t {
                            Token::Literal(c) => Some(*c),
                            _ => None,
                        })
                        .collect();
                }
            }
        }
        (!best.is_empty()).then_some(best)
    }

    /// Whether the whole of `name` matches the pattern.
    ///
    /// Every token but a star matches exactly one character, so the run before the first
    /// star must match at the start, the run after the last star must match the last
    /// characters, and each run between stars is taken at its leftmost match after the
    /// previous one (a later match could only leave less room for the runs after it).
    /// The work is therefore linear in `name` for literal runs and at most
    /// `name.len()` × the run's length for runs with `?` or `[...]`: never exponential.
    #[must_use]
    pub fn matches(&self, name: &str) -> bool {
        if self.never {
            return false;
        }
        let Some(mut at) = self.head.match_at(name, 0) else {
            return false;
        };
        let Some((middle, tail)) = &self.starred else {
            return at == name.len();
        };
        let Some(tail_start) = start_of_last_chars(name, tail.tokens.len()) else {
            return false;
        };
        if tail_start < at || tail.match_at(name, tail_start).is_none() {
            return false;
        }
        let window = &name[..tail_start];
        for run in middle {
            match run.find(window, at) {
                Some(end) => at = end,
                None => return false,
            }
        }
        true
    }
}

/// The byte offset where the last `count` characters of `text` start, if it has that many.
fn start_of_last_chars(text: &str, count: usize) -> Option<usize> {
    if count == 0 {
        return Some(text.len());
    }
    text.char_indices().rev().nth(count - 1).map(|(i, _)| i)
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

/// Why a pattern can never match a worktree-relative path (`src/main.rs`: `/`-separated,
/// no leading or trailing `/`, no empty, `.` or `..` segment, no backslash), so a contract
/// holding it would protect, or allow, nothing while looking as if it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unmatchable {
    /// It starts with `/` (`/secrets/*`).
    LeadingSlash,
    /// It starts with `./` (`./secrets/*`).
    LeadingDot,
    /// It ends with `/` (`secrets/`).
    TrailingSlash,
    /// It has an empty segment (`a//b`).
    EmptySegment,
    /// It has a `.` segment (`a/./b`).
    DotSegment,
    /// It has a `..` segment (`../x`, `a/../b`).
    DotDotSegment,
    /// It contains a backslash (`a\\b`).
    Backslash,
    /// It contains a NUL character, which no path holds.
    Nul,
    /// It starts or ends with white space (`" secrets/*"`), almost always a slip.
    SurroundingSpace,
    /// It reaches into `.git` (any case), which satyrn never reads or writes.
    GitAdmin,
}

impl Unmatchable {
    /// Why, as the end of a sentence ("… can never match a file: it ends with `/`").
    #[must_use]
    pub fn reason(self) -> &'static str {
        match self {
            Self::LeadingSlash => "it starts with `/`, and paths are relative to the worktree",
            Self::LeadingDot => "it starts with `./`, and paths are written without it",
            Self::TrailingSlash => "it ends with `/`, and a file's path never does",
            Self::EmptySegment => "it has an empty segment (`//`)",
            Self::DotSegment => "it has a `.` segment",
            Self::DotDotSegment => "it has a `..` segment, and paths never leave the worktree",
            Self::Backslash => "it contains a backslash, and only `/` separates segments",
            Self::Nul => "it contains a NUL character, which no path holds",
            Self::SurroundingSpace => {
                "it starts or ends with white space (a name that really does cannot be declared)"
            }
            Self::GitAdmin => "it reaches into `.git`, which satyrn never reads or writes",
        }
    }

    /// The pattern the author most likely meant (`secrets/` → `secrets/*`), when there is
    /// one.
    #[must_use]
    pub fn intended(self, pattern: &str) -> Option<String> {
        let spelled = single_brackets_spelled_out(pattern);
        let pattern = spelled.as_str();
        let fixed = match self {
            Self::LeadingSlash => String::from(pattern.trim_start_matches('/')),
            Self::LeadingDot => {
                let mut rest = pattern;
                while let Some(r) = rest.strip_prefix("./") {
                    rest = r.trim_start_matches('/');
                }
                String::from(rest)
            }
            Self::TrailingSlash => {
                let mut fixed = String::from(pattern.trim_end_matches('/'));
                fixed.push_str("/*");
                fixed
            }
            Self::EmptySegment | Self::DotSegment => {
                let kept: Vec<&str> = pattern
                    .split('/')
                    .filter(|s| !s.is_empty() && *s != ".")
                    .collect();
                kept.join("/")
            }
            Self::Backslash => pattern.replace('\\', "/"),
            Self::SurroundingSpace => String::from(pattern.trim()),
            Self::DotDotSegment | Self::Nul | Self::GitAdmin => return None,
        };
        (!fixed.is_empty() && fixed != pattern && unmatchable(&fixed).is_none()).then_some(fixed)
    }
}

/// `Some(why)` when `pattern` can never match a worktree-relative path: it needs a `/` at
/// the start or end, a `//`, a `.` or `..` segment or a backslash, none of which such a path
/// has. (Wildcards do not help: `*` can supply a `/` but not remove one.)
#[must_use]
pub fn unmatchable(pattern: &str) -> Option<Unmatchable> {
    if pattern.contains('\0') {
        return Some(Unmatchable::Nul);
    }
    if pattern.trim() != pattern {
        return Some(Unmatchable::SurroundingSpace);
    }
    // A bracket expression of one character (`[/]`, `[.]`) is that character: the shape
    // checks below see through it.
    let pattern = &single_brackets_spelled_out(pattern);
    if pattern.contains('\\') {
        return Some(Unmatchable::Backslash);
    }
    if pattern.starts_with('/') {
        return Some(Unmatchable::LeadingSlash);
    }
    if pattern.starts_with("./") {
        return Some(Unmatchable::LeadingDot);
    }
    if pattern.ends_with('/') {
        return Some(Unmatchable::TrailingSlash);
    }
    for segment in pattern.split('/') {
        match segment {
            "" => return Some(Unmatchable::EmptySegment),
            "." => return Some(Unmatchable::DotSegment),
            ".." => return Some(Unmatchable::DotDotSegment),
            s if s.eq_ignore_ascii_case(".git") => return Some(Unmatchable::GitAdmin),
            _ => {}
        }
    }
    None
}

/// `pattern` with every bracket expression that holds exactly one character and is not
/// negated (`[/]`, `[.]`, `[a]`) written as that character.
fn single_brackets_spelled_out(pattern: &str) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '['
            && let (Some(&c), Some(&']')) = (chars.get(i + 1), chars.get(i + 2))
            && c != '!'
            && c != '^'
            && c != ']'
        {
            out.push(c);
            i += 3;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

/// A list of patterns translated once, for matching many names (a walk of the worktree).
///
/// Every pattern with a plain character must find its longest run of plain characters in
/// a name it matches (each of those tokens matches exactly that character, and the run's
/// tokens match consecutive characters), so one Aho-Corasick pass over the name finds the
/// few patterns worth trying; a pattern of stars, `?` and brackets only is tried on every
/// name. A walk of 20,000 names against the 50 default private patterns thus runs about
/// one automaton pass per name instead of 50 matches.
#[derive(Debug, Clone)]
pub struct PatternSet {
    patterns: Vec<Pattern>,
    /// The patterns without a plain character: tried on every name.
    unfiltered: Vec<usize>,
    /// Each distinct required literal's patterns, in the finder's pattern order.
    by_literal: Vec<Vec<usize>>,
    finder: Option<aho_corasick::AhoCorasick>,
}

impl PatternSet {
    /// The set for matching a few names (one path and its parents): every pattern
    /// translated, no finder built (building one costs more than trying each pattern on a
    /// few names). Matches exactly as [`Self::new`].
    #[must_use]
    pub fn few_names<S: AsRef<str>>(patterns: &[S]) -> Self {
        let patterns: Vec<Pattern> = patterns.iter().map(|p| Pattern::new(p.as_ref())).collect();
        Self {
            unfiltered: (0..patterns.len())
                .filter(|&i| !patterns[i].never)
                .collect(),
            patterns,
            by_literal: Vec::new(),
            finder: None,
        }
    }

    /// Translates every pattern and builds the finder of their literals.
    #[must_use]
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Self {
        let patterns: Vec<Pattern> = patterns.iter().map(|p| Pattern::new(p.as_ref())).collect();
        let mut unfiltered = Vec::new();
        let mut literals: Vec<String> = Vec::new();
        let mut by_literal: Vec<Vec<usize>> = Vec::new();
        for (i, pattern) in patterns.iter().enumerate() {
            if pattern.never {
                continue;
            }
            match pattern.required() {
                None => unfiltered.push(i),
                Some(literal) => match literals.iter().position(|l| *l == literal) {
                    Some(at) => by_literal[at].push(i),
                    None => {
                        literals.push(literal);
                        by_literal.push(alloc::vec![i]);
                    }
                },
            }
        }
        let finder = if literals.is_empty() {
            None
        } else {
            match aho_corasick::AhoCorasick::new(&literals) {
                Ok(finder) => Some(finder),
                Err(_) => {
                    // Too large for the automaton: every pattern is tried, as before.
                    unfiltered.extend(by_literal.drain(..).flatten());
                    unfiltered.sort_unstable();
                    None
                }
            }
        };
        Self {
            patterns,
            unfiltered,
            by_literal,
            finder,
        }
    }

    /// Whether `name` matches at least one pattern (as [`matches_any`]).
    #[must_use]
    pub fn matches(&self, name: &str) -> bool {
        if self
            .unfiltered
            .iter()
            .any(|&i| self.patterns[i].matches(name))
        {
            return true;
        }
        let Some(finder) = &self.finder else {
            return false;
        };
        finder.find_overlapping_iter(name).any(|found| {
            self.by_literal[found.pattern().as_usize()]
                .iter()
                .any(|&i| self.patterns[i].matches(name))
        })
    }

    /// Whether the set has no pattern.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }
}

/// Translates `pattern` into tokens the way CPython's `fnmatch.translate` does (the one
/// translation: [`Pattern`] matches these tokens, and the fuzzers' backtracking oracle
/// matches the same ones). Never fails: every string is a valid pattern.
#[must_use]
pub fn translate(pattern: &str) -> Vec<Token> {
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

/// Whether the one-character `token` matches `c` (a star or an empty set matches no
/// single character).
#[must_use]
pub fn one_char(token: &Token, c: char) -> bool {
    match token {
        Token::Literal(l) => *l == c,
        Token::AnyChar => true,
        Token::Class(class) => class.contains(c),
        Token::Never | Token::Star => false,
    }
}

#[cfg(test)]
mod tests {
    use super::fnmatch;

    #[test]
    fn stars_cross_slashes() {
        assert!(fnmatch("src/a/b.rs", "src/*.rs"));
        assert!(fnmatch("src/a/b.rs", "*"));
        assert!(!fnmatch("src/a/b.rs", "src/*.py"));
        assert!(fnmatch("a\nb", "a*b"));
    }

    #[test]
    fn question_mark_and_sets() {
        assert!(fnmatch("a1", "a?"));
        assert!(!fnmatch("a", "a?"));
        assert!(fnmatch("b", "[abc]"));
        assert!(!fnmatch("d", "[abc]"));
        assert!(fnmatch("d", "[!abc]"));
        assert!(fnmatch("m", "[a-z]"));
        assert!(!fnmatch("M", "[a-z]"));
        assert!(fnmatch("]", "[]]"));
        assert!(fnmatch("-", "[a-]"));
    }

    #[test]
    fn cpython_quirks() {
        assert!(fnmatch("[", "["));
        assert!(fnmatch("[ab", "[ab"));
        assert!(fnmatch("[!]", "[!]"));
        assert!(!fnmatch("a", "[z-a]"));
        assert!(fnmatch("a", "[!z-a]"));
        assert!(fnmatch("a", "[b-a-a]"));
        assert!(fnmatch("x", "[b-a!]"));
        assert!(!fnmatch("x", "[b-a!x]"));
        assert!(fnmatch("\\", "[\\]"));
        assert!(fnmatch("*", "[*]"));
        assert!(!fnmatch("a", "[*]"));
        assert!(fnmatch("{a,b}", "{a,b}"));
        assert!(fnmatch("a/b", "**"));
    }
}
