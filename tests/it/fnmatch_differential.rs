//! `satyrn_mutator_core::fnmatch` against CPython's `fnmatch.fnmatch`, over thousands of
//! generated pattern/path pairs and every short path for a list of tricky patterns; a
//! sample of the same pairs also goes through the real component's `matches` export.

use std::io::{Read, Write};
use std::process::{Command, Stdio};

use satyrn_mutator_core::fnmatch::fnmatch;

/// Characters that stress the rules: every metacharacter, the range and negation
/// characters, a backslash, a separator, a dot, plain letters, a non-ASCII letter and a
/// newline.
const ALPHABET: &[char] = &[
    '*', '?', '[', ']', '!', '-', '^', '\\', '/', '.', 'a', 'b', 'c', 'x', 'z', 'é', '\n',
];

const TRICKY: &[&str] = &[
    "[z-a]",
    "[!z-a]",
    "[b-a-a]",
    "[]]",
    "[!]]",
    "[a-]",
    "[-a]",
    "[!]",
    "[",
    "[[]",
    "[\\]",
    "**",
    "{a,b}",
    "[a-c-e]",
    "[b-a!x]",
    "[]-a]",
    "[!-]",
    "[^a]",
    "[a-a]",
    "[--/]",
    "[]a]",
    "[!]a-]",
    "a[",
    "[a",
    "]",
    "[]",
    "[!",
    "*[*]*",
    "?*?",
    "*/*",
    "[\\-z]",
    "[a-\\]",
    "[z-a-c]",
    "[c-a-b-a]",
    "[x-é]",
    "[\n]",
    "*a*a*",
    "[é-é]",
    "[*-?]",
    "[.-/]",
    "[a-c]-[!x]",
    "[&&]",
    "[~|]",
    "[a&&b]",
    "[[:alpha:]]",
];

/// xorshift64*: a tiny deterministic generator, so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).expect("fits")
    }

    fn char(&mut self) -> char {
        ALPHABET[self.below(ALPHABET.len())]
    }
}

/// A path shaped after `pattern`, so a good share of the pairs match.
fn path_for(rng: &mut Rng, pattern: &str) -> String {
    let mut path = String::new();
    for c in pattern.chars() {
        match (c, rng.below(6)) {
            ('*', _) => {
                for _ in 0..rng.below(4) {
                    path.push(rng.char());
                }
            }
            (_, 0) => path.push(rng.char()),
            (_, 1) => {}
            ('[' | ']' | '!' | '-' | '?', _) if rng.below(2) == 0 => path.push(rng.char()),
            (c, _) => path.push(c),
        }
    }
    if rng.below(8) == 0 {
        path.push(rng.char());
    }
    path
}

fn pairs() -> Vec<(String, String)> {
    let mut rng = Rng(0x5eed_f00d_dead_beef);
    let mut pairs = Vec::new();
    for _ in 0..6000 {
        let len = rng.below(9);
        let pattern: String = (0..len).map(|_| rng.char()).collect();
        let path = if rng.below(4) == 0 {
            (0..rng.below(7)).map(|_| rng.char()).collect()
        } else {
            path_for(&mut rng, &pattern)
        };
        pairs.push((pattern, path));
    }
    // Every path of up to two characters against each tricky pattern.
    let mut short: Vec<String> = vec![String::new()];
    for &a in ALPHABET {
        short.push(a.to_string());
        for &b in ALPHABET {
            short.push([a, b].iter().collect());
        }
    }
    for pattern in TRICKY {
        for path in &short {
            pairs.push(((*pattern).to_string(), path.clone()));
        }
        for _ in 0..20 {
            let path = path_for(&mut rng, pattern);
            pairs.push(((*pattern).to_string(), path));
        }
    }
    pairs
}

const PYTHON: &str = r#"
import fnmatch, json, sys
out = []
for line in sys.stdin.buffer.read().decode("utf-8").split("\n"):
    if line:
        pattern, name = json.loads(line)
        out.append("1" if fnmatch.fnmatch(name, pattern) else "0")
sys.stdout.write("".join(out))
"#;

/// CPython's verdict for every pair, from one python3 process.
fn cpython(pairs: &[(String, String)]) -> Vec<bool> {
    let mut child = Command::new("python3")
        .args(["-I", "-c", PYTHON])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 is on PATH");
    let mut input = String::new();
    for (pattern, path) in pairs {
        input.push_str(&serde_json::to_string(&(pattern, path)).expect("json"));
        input.push('\n');
    }
    let mut stdin = child.stdin.take().expect("stdin");
    // Python reads everything before writing, so writing first cannot deadlock.
    stdin.write_all(input.as_bytes()).expect("write pairs");
    drop(stdin);
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut out)
        .expect("read verdicts");
    assert!(child.wait().expect("wait").success(), "python3 failed");
    assert_eq!(out.len(), pairs.len(), "one verdict per pair");
    out.bytes().map(|b| b == b'1').collect()
}

fn describe(pattern: &str, path: &str, expected: bool) -> String {
    format!("fnmatch.fnmatch({path:?}, {pattern:?}) is {expected} in CPython")
}

#[test]
fn rust_fnmatch_agrees_with_cpython() {
    let pairs = pairs();
    assert!(pairs.len() >= 5000);
    let expected = cpython(&pairs);
    let matched = expected.iter().filter(|&&b| b).count();
    // The generator must exercise both outcomes substantially.
    assert!(
        matched > pairs.len() / 20 && matched < pairs.len() / 2,
        "{matched} of {} pairs match",
        pairs.len()
    );
    let mismatches: Vec<String> = pairs
        .iter()
        .zip(&expected)
        .filter(|((pattern, path), e)| fnmatch(path, pattern) != **e)
        .map(|((pattern, path), &e)| describe(pattern, path, e))
        .collect();
    assert!(
        mismatches.is_empty(),
        "{} of {} pairs disagree with CPython, e.g.:\n{}",
        mismatches.len(),
        pairs.len(),
        mismatches
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn component_matches_agrees_with_cpython() {
    let all = pairs();
    // Every 13th pair: a few hundred, random and tricky alike.
    let sample: Vec<(String, String)> = all.into_iter().step_by(13).collect();
    assert!(sample.len() >= 300);
    let expected = cpython(&sample);
    let repo = crate::support::Repo::with_files(&[]);
    let dir = std::os::fd::OwnedFd::from(std::fs::File::open(repo.path()).expect("open"));
    let mut mutator = satyrn_engine::Loaded::new()
        .expect("load")
        .instantiate(&dir)
        .expect("instantiate");
    let mut mismatches = Vec::new();
    for ((pattern, path), &e) in sample.iter().zip(&expected) {
        let got = mutator
            .matches(path, std::slice::from_ref(pattern))
            .expect("no trap");
        if got != e {
            mismatches.push(describe(pattern, path, e));
        }
    }
    assert!(
        mismatches.is_empty(),
        "the component disagrees with CPython:\n{}",
        mismatches.join("\n")
    );
}
