//! The reference model of satyrn's edit semantics, written plainly, and the proptest
//! strategies that generate files and batches for it. Shared by the core library's test
//! (`components/mutator-core/tests/edit.rs`, native) and the host's test that runs the same
//! cases through the real wasm component (`tests/it/edit_component.rs`).
#![allow(dead_code)]

use proptest::prelude::*;
use std::collections::BTreeSet;

/// One edit, owned.
#[derive(Debug, Clone)]
pub struct E {
    pub insert: bool,
    pub selector: String,
    pub new_text: String,
    pub occurrence: Option<u32>,
}

impl E {
    /// The library's spelling of this edit (the model itself never uses it).
    pub fn op(&self) -> satyrn_mutator_core::edit::EditOp<'_> {
        use satyrn_mutator_core::edit::EditOp;
        if self.insert {
            EditOp::InsertAfter {
                anchor_text: &self.selector,
                new_text: &self.new_text,
                occurrence: self.occurrence,
            }
        } else {
            EditOp::Replace {
                old_text: &self.selector,
                new_text: &self.new_text,
                occurrence: self.occurrence,
            }
        }
    }
}

pub type Codes = Vec<(Option<usize>, &'static str)>;

/// A resolved edit in the model: start, end, new text, whether it is an insertion.
type Span = (usize, usize, String, bool);

/// The reference model: the new file, or each problem as (edit index, code).
pub fn model(text: &str, edits: &[E]) -> Result<String, Codes> {
    let (bom, body) = if let Some(rest) = text.strip_prefix('\u{feff}') {
        ("\u{feff}", rest)
    } else {
        ("", text)
    };
    let chars: Vec<char> = body.chars().collect();
    let mut bare_cr = false;
    let mut crlf = false;
    let mut lf = false;
    for i in 0..chars.len() {
        if chars[i] == '\r' && chars.get(i + 1) != Some(&'\n') {
            bare_cr = true;
        }
        if chars[i] == '\n' {
            if i > 0 && chars[i - 1] == '\r' {
                crlf = true;
            } else {
                lf = true;
            }
        }
    }
    let irregular = bare_cr || (crlf && lf);
    let normalize = |s: &str| -> String {
        if irregular {
            s.to_string()
        } else if crlf {
            s.replace("\r\n", "\n").replace('\n', "\r\n")
        } else if lf {
            s.replace("\r\n", "\n")
        } else {
            s.to_string()
        }
    };
    // (start, end, new text, is insert) or the edit's problem.
    let mut resolved: Vec<Result<Span, &'static str>> = Vec::new();
    for e in edits {
        let breaks = |s: &str| s.contains('\n') || s.contains('\r');
        if e.selector.is_empty() {
            resolved.push(Err("SELECTOR_EMPTY"));
            continue;
        }
        if irregular && (breaks(&e.selector) || breaks(&e.new_text)) {
            resolved.push(Err("LINE_ENDINGS_UNSUPPORTED"));
            continue;
        }
        let selector = normalize(&e.selector);
        let new_text = normalize(&e.new_text);
        if (e.insert && new_text.is_empty()) || (!e.insert && new_text == selector) {
            resolved.push(Err("NO_OP_EDIT"));
            continue;
        }
        let mut at = Vec::new();
        for p in 0..=body.len() {
            if body.is_char_boundary(p) && body[p..].starts_with(selector.as_str()) {
                at.push(p);
            }
        }
        let chosen = match e.occurrence {
            _ if at.is_empty() => Err("ANCHOR_MISSING"),
            None if at.len() > 1 => Err("ANCHOR_AMBIGUOUS"),
            None => Ok(at[0]),
            Some(k) if (k as usize) > at.len() => Err("OCCURRENCE_OUT_OF_RANGE"),
            Some(k) => Ok(at[k as usize - 1]),
        };
        resolved.push(chosen.map(|p| {
            let end = p + selector.len();
            if e.insert {
                (end, end, new_text, true)
            } else {
                (p, end, new_text, false)
            }
        }));
    }
    // The documented span rules, stated on byte sets rather than interval arithmetic: a
    // replacement covers the set of its selected bytes; an insertion is a point p (between
    // byte p-1 and byte p).
    let covered = |s: &Span| -> BTreeSet<usize> { (s.0..s.1).collect() };
    let mut problems = Vec::new();
    for j in 0..resolved.len() {
        match &resolved[j] {
            Err(code) => problems.push((Some(j), *code)),
            Ok(b) => {
                for a in resolved[..j].iter().flatten() {
                    let code = match (a.3, b.3) {
                        // "Two replacements conflict when they share a byte."
                        (false, false) => {
                            (!covered(a).is_disjoint(&covered(b))).then_some("EDITS_OVERLAP")
                        }
                        // "Two insertions conflict at the same point."
                        (true, true) => (a.0 == b.0).then_some("INSERTIONS_COLLIDE"),
                        // "An insertion conflicts with a replacement when it is on the
                        // replacement's start, end or inside it."
                        (true, false) | (false, true) => {
                            let (point, replacement) = if a.3 { (a.0, b) } else { (b.0, a) };
                            let bytes = covered(replacement);
                            let start = replacement.0;
                            let end = replacement.1;
                            let inside = bytes.contains(&point) && point != start;
                            (point == start || point == end || inside)
                                .then_some("INSERTION_IN_REPLACEMENT")
                        }
                    };
                    if let Some(code) = code {
                        problems.push((Some(j), code));
                    }
                }
            }
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    // "The base with each span replaced by (or each point given) its new text, in file
    // order; every other byte kept": walk the base byte by byte.
    let spans: Vec<Span> = resolved.into_iter().flatten().collect();
    let bytes = body.as_bytes();
    let mut out: Vec<u8> = Vec::new();
    for p in 0..=bytes.len() {
        for s in spans.iter().filter(|s| s.3 && s.0 == p) {
            out.extend_from_slice(s.2.as_bytes());
        }
        if p == bytes.len() {
            break;
        }
        if let Some(s) = spans.iter().find(|s| !s.3 && s.0 == p) {
            out.extend_from_slice(s.2.as_bytes());
        }
        if !spans.iter().any(|s| !s.3 && covered(s).contains(&p)) {
            out.push(bytes[p]);
        }
    }
    let out = String::from_utf8(out).expect("spans lie on character boundaries");
    if out == body {
        return Err(vec![(None, "NO_OP_BATCH")]);
    }
    Ok(format!("{bom}{out}"))
}

const LINES: &[&str] = &[
    "fn main() {",
    "    let x = 1;",
    "}",
    "",
    "aa",
    "aaa",
    "é ü 🦀",
    "foo bar",
    "foo  bar",
    "x",
];

const SELECTORS: &[&str] = &[
    "a", "aa", "aaa", "x", "}", "\n", "}\n", "bar\nfoo", "foo bar", "🦀", "é", " ", "fn", "let x",
    "zzz", "",
];

const NEW_TEXTS: &[&str] = &[
    "", "X", "aa", "line\n", "a\r\nb", "🦀\n", "\n", "<SAME>", "<SAME>", "foo",
];

pub fn file() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(prop::sample::select(LINES), 0..9),
        prop::collection::vec(0u8..20, 9),
        any::<bool>(),
        any::<bool>(),
        0u8..10,
    )
        .prop_map(|(lines, endings, final_newline, bom, style)| {
            let mut s = String::new();
            if bom {
                s.push('\u{feff}');
            }
            for (i, line) in lines.iter().enumerate() {
                s.push_str(line);
                if i + 1 < lines.len() || final_newline {
                    // Mostly one style per file; sometimes mixed or with a bare CR.
                    s.push_str(match (style, endings[i]) {
                        (0..=4, _) => "\n",
                        (5..=8, _) => "\r\n",
                        (_, 0..=8) => "\n",
                        (_, 9..=17) => "\r\n",
                        _ => "\r",
                    });
                }
            }
            s
        })
}

pub fn edits_for(text: String) -> impl Strategy<Value = (String, Vec<E>)> {
    let chars: Vec<char> = text.chars().collect();
    let n = chars.len();
    let edit = (
        any::<bool>(),
        prop_oneof![
            prop::sample::select(SELECTORS).prop_map(str::to_string),
            (0..=n, 0usize..12).prop_map(move |(start, len)| {
                chars[start..(start + len).min(n)]
                    .iter()
                    .collect::<String>()
            }),
        ],
        prop::sample::select(NEW_TEXTS),
        prop_oneof![3 => Just(None), 2 => (1u32..4).prop_map(Some)],
        any::<bool>(),
    )
        .prop_map(|(insert, selector, new_text, occurrence, lf)| {
            // Selectors quoted from a CRLF file are sometimes sent with LF endings.
            let selector = if lf {
                selector.replace("\r\n", "\n")
            } else {
                selector
            };
            let new_text = if new_text == "<SAME>" {
                selector.clone()
            } else {
                new_text.to_string()
            };
            E {
                insert,
                selector,
                new_text,
                occurrence,
            }
        });
    (Just(text), prop::collection::vec(edit, 1..6))
}
