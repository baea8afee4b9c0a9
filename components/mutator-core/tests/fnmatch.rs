//! `fnmatch` against a plain dynamic-programming matcher, over generated patterns made of
//! literals, `*`, `?` and simple sets (`[ab]`, `[!ab]`), and paths over a small alphabet
//! (ASCII, a two-byte and a four-byte character, `/`), long enough to hold several runs.
//!
//! The CPython differential test (`tests/it/fnmatch_differential.rs`) covers the set
//! quirks on short inputs; this one covers the run-by-run matcher on longer ones.

use proptest::prelude::*;
use satyrn_mutator_core::fnmatch::{Pattern, PatternSet, fnmatch};

const CHARS: &[char] = &['a', 'b', 'é', '𝄞', '/'];

/// One pattern token, as the reference sees it.
#[derive(Debug, Clone)]
enum Tok {
    Lit(char),
    Any,
    Star,
    Set { negated: bool, members: Vec<char> },
}

impl Tok {
    fn spell(&self) -> String {
        match self {
            Self::Lit(c) => c.to_string(),
            Self::Any => "?".to_string(),
            Self::Star => "*".to_string(),
            Self::Set { negated, members } => {
                let mut s = String::from("[");
                if *negated {
                    s.push('!');
                }
                s.extend(members);
                s.push(']');
                s
            }
        }
    }

    fn one(&self, c: char) -> bool {
        match self {
            Self::Lit(l) => *l == c,
            Self::Any => true,
            Self::Star => unreachable!("stars are handled by the table"),
            Self::Set { negated, members } => members.contains(&c) != *negated,
        }
    }
}

/// The textbook table: `m[i][j]` is whether the first `i` tokens match the first `j`
/// characters.
fn reference(tokens: &[Tok], text: &str) -> bool {
    let text: Vec<char> = text.chars().collect();
    let mut m = vec![vec![false; text.len() + 1]; tokens.len() + 1];
    m[0][0] = true;
    for (i, tok) in tokens.iter().enumerate() {
        for j in 0..=text.len() {
            m[i + 1][j] = match tok {
                Tok::Star => m[i][j] || (j > 0 && m[i + 1][j - 1]),
                _ => j > 0 && m[i][j - 1] && tok.one(text[j - 1]),
            };
        }
    }
    m[tokens.len()][text.len()]
}

fn tok() -> impl Strategy<Value = Tok> {
    let ch = prop::sample::select(CHARS);
    prop_oneof![
        4 => ch.clone().prop_map(Tok::Lit),
        1 => Just(Tok::Any),
        2 => Just(Tok::Star),
        1 => (any::<bool>(), prop::collection::vec(prop::sample::select(&['a', 'b', 'é'][..]), 1..3))
            .prop_map(|(negated, members)| Tok::Set { negated, members }),
    ]
}

/// A path shaped after the pattern (so that many match), then randomly disturbed.
fn text_for(tokens: &[Tok], picks: &[u8]) -> String {
    let mut out = String::new();
    let mut k = 0;
    let mut pick = || {
        k += 1;
        picks[k % picks.len()]
    };
    for t in tokens {
        match t {
            Tok::Lit(c) => out.push(*c),
            Tok::Any => out.push(CHARS[usize::from(pick()) % CHARS.len()]),
            Tok::Star => {
                for _ in 0..pick() % 5 {
                    out.push(CHARS[usize::from(pick()) % CHARS.len()]);
                }
            }
            Tok::Set { members, .. } => out.push(members[usize::from(pick()) % members.len()]),
        }
        if pick() % 11 == 0 {
            out.push(CHARS[usize::from(pick()) % CHARS.len()]);
        }
    }
    out
}

#[path = "common/cases.rs"]
mod cases;

proptest! {
    #![proptest_config(cases::config(4000))]

    #[test]
    fn matcher_agrees_with_the_table(
        tokens in prop::collection::vec(tok(), 0..14),
        picks in prop::collection::vec(any::<u8>(), 1..40),
        free in prop::collection::vec(prop::sample::select(CHARS), 0..30),
        shaped in any::<bool>(),
    ) {
        let pattern: String = tokens.iter().map(Tok::spell).collect();
        let text = if shaped { text_for(&tokens, &picks) } else { free.into_iter().collect() };
        prop_assert_eq!(
            fnmatch(&text, &pattern),
            reference(&tokens, &text),
            "fnmatch({:?}, {:?})", text, pattern
        );
    }

    /// The set's literal prefilter never changes an answer, nor does leaving it out: a set of generated patterns
    /// (some sharing literals, some with none) against names shaped after each of them.
    #[test]
    fn a_set_agrees_with_trying_every_pattern(
        sets in prop::collection::vec(prop::collection::vec(tok(), 0..10), 1..8),
        picks in prop::collection::vec(any::<u8>(), 1..40),
        free in prop::collection::vec(prop::sample::select(CHARS), 0..30),
    ) {
        let patterns: Vec<String> = sets
            .iter()
            .map(|tokens| tokens.iter().map(Tok::spell).collect())
            .collect();
        let set = PatternSet::new(&patterns);
        let few = PatternSet::few_names(&patterns);
        let mut names: Vec<String> = sets.iter().map(|t| text_for(t, &picks)).collect();
        names.push(free.into_iter().collect());
        for name in &names {
            let expected = sets.iter().any(|tokens| reference(tokens, name));
            prop_assert_eq!(set.matches(name), expected, "{:?} against {:?}", name, patterns);
            prop_assert_eq!(few.matches(name), expected, "few names: {:?} against {:?}", name, patterns);
        }
    }
}

#[test]
fn runs_are_found_in_order_and_never_overlap_the_ends() {
    assert!(fnmatch("ab", "a*b"));
    assert!(!fnmatch("a", "a*a"));
    assert!(fnmatch("aa", "a*a"));
    assert!(!fnmatch("aba", "*ab*ba*"));
    assert!(fnmatch("abba", "*ab*ba*"));
    assert!(fnmatch("x/é/𝄞", "*/?/𝄞"));
    assert!(!fnmatch("x/é/𝄞", "*/??/𝄞"));
    assert!(fnmatch("aXbXc", "*[X]b[X]*"));
    assert!(!fnmatch("abc", "[z-a]*"));
    let p = Pattern::new("*a*a*a*a*a*a*a*a*b");
    assert!(!p.matches(&"a".repeat(4096)));
    assert!(p.matches(&format!("{}b", "a".repeat(4095))));
}
