//! The task contract: a small, strict YAML document.
//!
//! ```yaml
//! id: fix-greeting            # the candidate id (checked against git's ref rules by `deliver`)
//! task: |                     # the task text given to the model
//!   Make the greeting say "hello".
//! writable_paths:             # optional; absent means nothing is writable
//!   - src/greeting.txt
//!   - "docs/*.md"
//! private_paths:              # optional; absent means the default list (secrets)
//!   - "config/secrets/*"
//! scratch_paths:              # optional: directories `confine` lets a command write
//!   - target                  #   (each ignored by git; never part of a candidate)
//! ```
//!
//! Decisions (see `docs/contract.md`): the document is one mapping; `id` and `task` are
//! required non-empty strings; `writable_paths` and `private_paths`, when present, are
//! lists of non-empty strings. An absent `private_paths` is
//! [`DEFAULT_PRIVATE_PATHS`](satyrn_mutator_core::gates::DEFAULT_PRIVATE_PATHS); a present
//! one replaces that default (`[]` makes nothing private). Unknown keys, duplicate keys, anchors, aliases and explicit tags are refused
//! (`CONTRACT_INVALID`), so a typo never silently narrows or widens a contract and no
//! alias can expand. Scalars are never normalized: `id: 007` is refused as a number,
//! `id: "007"` is the string `007`.

use std::fmt;
use std::path::Path;

use satyrn_mutator_core::fnmatch;

use satyrn_code::{Code, Failure};

mod lexical;
pub mod repo;
mod yaml;

use yaml::{Scalar, Value, read_fields};

/// The largest contract file accepted: 1 MiB.
pub const MAX_CONTRACT_BYTES: u64 = 1024 * 1024;

/// A parsed, validated contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contract {
    /// The candidate id, exactly as written.
    pub id: String,
    /// The task text for the model.
    pub task: String,
    /// Python `fnmatch` patterns of the paths the agent may edit; empty when absent.
    pub writable_paths: Vec<String>,
    /// `fnmatch` patterns of the paths the agent may never read, list, search or change
    /// (private wins over writable); the default list when absent.
    pub private_paths: Vec<String>,
    /// Worktree-relative directories (plain paths, not patterns) a command run by
    /// `satyrn-host confine` may write directly: build outputs such as `target` or
    /// `node_modules`. `confine` checks at start that each is ignored by git, so their
    /// contents never reach a candidate. Empty when absent.
    pub scratch_paths: Vec<String>,
}

/// Why a contract was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContractError {
    /// The file cannot be read.
    Unreadable(String),
    /// The file is not a valid contract document.
    Invalid(String),
    /// A required field is missing or malformed.
    MissingField(String),
}

impl ContractError {
    /// The result code of this refusal.
    #[must_use]
    pub fn code(&self) -> Code {
        match self {
            Self::Unreadable(_) => Code::ContractUnreadable,
            Self::Invalid(_) => Code::ContractInvalid,
            Self::MissingField(_) => Code::ContractMissingField,
        }
    }

    fn message(&self) -> &str {
        match self {
            Self::Unreadable(m) | Self::Invalid(m) | Self::MissingField(m) => m,
        }
    }
}

impl fmt::Display for ContractError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for ContractError {}

impl From<ContractError> for Failure {
    fn from(e: ContractError) -> Self {
        Failure::new(e.code(), e.message())
    }
}

/// Reads and validates the contract at `path` (at most [`MAX_CONTRACT_BYTES`]).
///
/// # Errors
///
/// [`ContractError::Unreadable`] when the file cannot be opened or read (missing, a
/// directory, no permission); otherwise as [`parse`].
pub fn load(path: &Path) -> Result<Contract, ContractError> {
    load_with_bytes(path).map(|(contract, _)| contract)
}

/// Like [`load`], also returning the exact bytes that were parsed (read once), so a caller
/// can freeze precisely what it validated.
///
/// # Errors
///
/// As [`load`].
pub fn load_with_bytes(path: &Path) -> Result<(Contract, Vec<u8>), ContractError> {
    let bytes = read_bounded(path).map_err(|e| {
        ContractError::Unreadable(format!("cannot read contract {}: {e}", path.display()))
    })?;
    let bytes = bytes.ok_or_else(|| {
        ContractError::Invalid(format!(
            "contract {} is larger than {MAX_CONTRACT_BYTES} bytes",
            path.display()
        ))
    })?;
    let contract = parse(&bytes)?;
    Ok((contract, bytes))
}

fn read_bounded(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    // Non-blocking, so a FIFO (or a device) given as the contract is refused at once
    // instead of blocking the open until a writer appears.
    let file = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let kind = file.metadata()?.file_type();
    if kind.is_dir() {
        return Err(std::io::Error::other("it is a directory"));
    }
    if !kind.is_file() {
        return Err(std::io::Error::other("it is not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(MAX_CONTRACT_BYTES + 1).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= MAX_CONTRACT_BYTES).then_some(bytes))
}

/// Parses contract bytes.
///
/// # Errors
///
/// [`ContractError::Invalid`] for bytes that are not UTF-8, characters or tabs that YAML
/// parsers disagree on and a document-end marker before the mapping (see
/// `contract/lexical.rs`), YAML syntax errors, a document that is not one mapping, unknown
/// or duplicate keys, anchors, aliases and tags;
/// [`ContractError::MissingField`] when `id` or `task` is missing, empty or not a string, or
/// `writable_paths` or `private_paths` is present but not a list of non-empty strings.
pub fn parse(bytes: &[u8]) -> Result<Contract, ContractError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| ContractError::Invalid("the contract is not UTF-8 text".to_string()))?;
    lexical::check(text).map_err(ContractError::Invalid)?;
    let fields = read_fields(text)?;
    let mut id = None;
    let mut task = None;
    let mut writable_paths = None;
    let mut private_paths = None;
    let mut scratch_paths = None;
    for (key, value) in fields {
        let slot = match key.as_str() {
            "id" => &mut id,
            "task" => &mut task,
            "writable_paths" => &mut writable_paths,
            "private_paths" => &mut private_paths,
            "scratch_paths" => &mut scratch_paths,
            other => {
                return Err(ContractError::Invalid(format!(
                    "unknown contract key `{other}` (known keys: id, task, writable_paths, private_paths, scratch_paths)"
                )));
            }
        };
        if slot.is_some() {
            return Err(ContractError::Invalid(format!(
                "duplicate contract key `{key}`"
            )));
        }
        *slot = Some(value);
    }
    let id = required_string("id", id)?;
    let task = required_string("task", task)?;
    let writable_paths = pattern_list("writable_paths", writable_paths)?.unwrap_or_default();
    let private_paths = pattern_list("private_paths", private_paths)?.unwrap_or_else(|| {
        satyrn_mutator_core::gates::DEFAULT_PRIVATE_PATHS
            .iter()
            .map(|p| (*p).to_string())
            .collect()
    });
    let scratch_paths = directory_list("scratch_paths", scratch_paths)?;
    Ok(Contract {
        id,
        task,
        writable_paths,
        private_paths,
        scratch_paths,
    })
}

/// A field that, when present, is a list of non-empty strings (`None` when absent).
fn string_list(name: &str, value: Option<Value>) -> Result<Option<Vec<String>>, ContractError> {
    let wrong =
        || ContractError::MissingField(format!("`{name}` must be a list of non-empty strings"));
    match value {
        None => Ok(None),
        Some(Value::List(items)) => items
            .into_iter()
            .map(|item| match item {
                Scalar::Str(s) if !s.is_empty() => Ok(s),
                _ => Err(wrong()),
            })
            .collect::<Result<_, _>>()
            .map(Some),
        Some(_) => Err(wrong()),
    }
}

/// A field that, when present, is a list of worktree-relative directory paths: each a
/// path satyrn's tools could name ([`satyrn_mutator_core::path::segments`]), not inside
/// `.git`, no pattern characters (`*?[`), no duplicates. Empty when absent.
fn directory_list(name: &str, value: Option<Value>) -> Result<Vec<String>, ContractError> {
    let Some(paths) = string_list(name, value)? else {
        return Ok(Vec::new());
    };
    for (i, path) in paths.iter().enumerate() {
        let shown = satyrn_mutator_core::path::shown(path);
        let segments = satyrn_mutator_core::path::segments(path).map_err(|e| {
            ContractError::Invalid(format!(
                "`{name}` entry `{shown}` is not a worktree path: {e}"
            ))
        })?;
        if satyrn_mutator_core::path::is_git_admin(&segments) {
            return Err(ContractError::Invalid(format!(
                "`{name}` entry `{shown}` is inside `.git`, which is never writable"
            )));
        }
        if path.contains(['*', '?', '[']) {
            return Err(ContractError::Invalid(format!(
                "`{name}` entry `{shown}` is a pattern; name the directory itself (`target`, `web/node_modules`)"
            )));
        }
        if paths[..i].contains(path) {
            return Err(ContractError::Invalid(format!(
                "`{name}` names `{shown}` twice"
            )));
        }
    }
    Ok(paths)
}

/// A field that, when present, is a list of non-empty strings, each a pattern that can
/// match some worktree-relative path ([`fnmatch::unmatchable`]: `secrets/`, `/s/*` or
/// `./s/*` would protect or allow nothing while looking as if they did).
fn pattern_list(name: &str, value: Option<Value>) -> Result<Option<Vec<String>>, ContractError> {
    let Some(patterns) = string_list(name, value)? else {
        return Ok(None);
    };
    for pattern in &patterns {
        if let Some(why) = fnmatch::unmatchable(pattern) {
            let fix = match why.intended(pattern) {
                Some(intended) => format!("write `{intended}`"),
                None => "remove it".to_owned(),
            };
            return Err(ContractError::Invalid(format!(
                "`{name}` pattern `{}` can never match a file: {}; {fix} (patterns match worktree-relative paths such as `src/main.rs`, and `*` also matches `/`)",
                satyrn_mutator_core::path::shown(pattern),
                why.reason()
            )));
        }
    }
    Ok(Some(patterns))
}

fn required_string(name: &str, value: Option<Value>) -> Result<String, ContractError> {
    match value {
        Some(Value::Scalar(Scalar::Str(s))) if !s.is_empty() => Ok(s),
        None => Err(ContractError::MissingField(format!(
            "the contract has no `{name}`"
        ))),
        Some(_) => Err(ContractError::MissingField(format!(
            "`{name}` must be a non-empty string"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Contract {
        parse(text.as_bytes()).unwrap()
    }

    fn err(text: &str) -> ContractError {
        parse(text.as_bytes()).unwrap_err()
    }

    #[test]
    fn reads_a_full_contract() {
        let c = ok("id: fix-1\ntask: |\n  do it\nwritable_paths:\n  - src/*.rs\n  - 'a b'\n");
        assert_eq!(c.id, "fix-1");
        assert_eq!(c.task, "do it\n");
        assert_eq!(c.writable_paths, ["src/*.rs", "a b"]);
    }

    #[test]
    fn absent_writable_paths_is_empty() {
        assert!(ok("id: a\ntask: t\n").writable_paths.is_empty());
        // fuzz/regressions/contract/crash-4ce3…: an explicit key, no `writable_paths`;
        // the same contract with `writable_paths: []` is equal.
        let explicit = ok("? id\n: a\ntask: t\n");
        assert_eq!(explicit.id, "a");
        assert_eq!(explicit, ok("id: \"a\"\ntask: \"t\"\nwritable_paths: []\n"));
        assert!(
            ok("id: a\ntask: t\nwritable_paths: []\n")
                .writable_paths
                .is_empty()
        );
    }

    #[test]
    fn missing_or_malformed_fields() {
        for text in [
            "task: t\n",
            "id: a\n",
            "id: ''\ntask: t\n",
            "id: 7\ntask: t\n",
            "id: [a]\ntask: t\n",
            "id: a\ntask: t\nwritable_paths: src\n",
            "id: a\ntask: t\nwritable_paths:\n",
            "id: a\ntask: t\nwritable_paths: ['']\n",
            "id: a\ntask: t\nwritable_paths: [1]\n",
            "id: a\ntask: t\nwritable_paths: [[a]]\n",
            "id: a\ntask: t\nwritable_paths: {a: b}\n",
        ] {
            assert!(
                matches!(err(text), ContractError::MissingField(_)),
                "{text:?}"
            );
        }
        assert_eq!(ok("id: '7'\ntask: t\n").id, "7");
    }

    #[test]
    fn patterns_that_can_never_match_are_refused_with_the_intended_form() {
        for (list, pattern, said) in [
            ("private_paths", "secrets/", "write `secrets/*`"),
            ("private_paths", "/s2/*", "write `s2/*`"),
            ("private_paths", "./s3/*", "write `s3/*`"),
            ("writable_paths", "src//a.rs", "write `src/a.rs`"),
            ("writable_paths", "src/./a.rs", "write `src/a.rs`"),
            ("writable_paths", "../x/*", "remove it"),
            ("writable_paths", "src\\a.rs", "write `src/a.rs`"),
            // Seen through a one-character bracket expression, and the rest the second
            // adversarial review found accepted.
            ("private_paths", "secrets[/]", "write `secrets/*`"),
            ("private_paths", "[/]x", "write `x`"),
            ("writable_paths", "a/[.]/b", "write `a/b`"),
            ("writable_paths", "a/[.][.]/b", "remove it"),
            ("writable_paths", ".git/*", "remove it"),
            ("private_paths", "secrets\0", "remove it"),
            ("private_paths", " secrets/*", "write `secrets/*`"),
            ("private_paths", "secrets/* ", "write `secrets/*`"),
        ] {
            let text = format!("id: c\ntask: t\n{list}:\n  - {pattern:?}\n");
            match err(&text) {
                ContractError::Invalid(m) => {
                    let shown = satyrn_mutator_core::path::shown(pattern);
                    assert!(m.contains(&format!("`{list}` pattern `{shown}`")), "{m}");
                    assert!(m.contains(said), "{pattern}: {m}");
                }
                other => panic!("{pattern}: {other:?}"),
            }
        }
        // The siblings: the intended forms, and patterns that only look odd, load.
        for pattern in [
            "secrets/*",
            "s2/*",
            "*/",
            "*.",
            ".env",
            "a/.b",
            "[/.]x",
            "[!/]x",
            "*",
            "a/.gitx",
        ] {
            let pattern = if pattern == "*/" { "*/x" } else { pattern };
            let text = format!("id: c\ntask: t\nprivate_paths:\n  - {pattern:?}\n");
            assert_eq!(ok(&text).private_paths, [pattern], "{pattern}");
        }
    }

    #[test]
    fn invalid_documents() {
        for text in [
            "",
            "- a\n",
            "just text\n",
            "id: a\ntask: t\nextra: 1\n",
            "id: a\nid: b\ntask: t\n",
            "id: &x a\ntask: *x\n",
            "id: !!str a\ntask: t\n",
            "id: a\ntask: t\n---\nid: b\n",
            "id: a\ntask: [unclosed\n",
            "? [a]\n: b\n",
        ] {
            assert!(matches!(err(text), ContractError::Invalid(_)), "{text:?}");
        }
        assert!(matches!(
            parse(b"id: \xff\n"),
            Err(ContractError::Invalid(_))
        ));
    }

    /// Contracts that yaml-rust2 alone accepted (found by comparing it with PyYAML over
    /// mutated contracts), each with the spelling that every YAML parser reads the same,
    /// which is accepted with the value it means.
    #[test]
    fn what_other_yaml_parsers_refuse_is_invalid() {
        let cases: &[(&str, &str, &str)] = &[
            // A control character inside a flow sequence (and anywhere else).
            (
                "id: a\ntask: t\nwritable_paths: [a\x01b]\n",
                "U+0001",
                "id: a\ntask: t\nwritable_paths: [\"a\\x01b\"]\n",
            ),
            (
                "id: a\ntask: t\nwritable_paths: [\"a\x1bb\"]\n",
                "U+001B",
                "id: a\ntask: t\nwritable_paths: [\"a\\eb\"]\n",
            ),
            ("id: a\x7f\ntask: t\n", "U+007F", "id: a\ntask: t\n"),
            ("id: a\ntask: \0\n", "U+0000", "id: a\ntask: \"\\0\"\n"),
            ("id: a\ntask: t # \x01\n", "U+0001", "id: a\ntask: t # c\n"),
            (
                "id: a\ntask: |\n  x\x02\n",
                "U+0002",
                "id: a\ntask: |\n  x\n",
            ),
            // YAML 1.1 reads U+2028 as a line break, YAML 1.2 as a character.
            (
                "id: a\ntask: t\u{2028}u\n",
                "U+2028",
                "id: a\ntask: \"t\\Lu\"\n",
            ),
            // A tab before a mapping colon, in block and flow style.
            (
                "id\t: a\ntask: t\n",
                "tab at line 1, column 3",
                "id: a\ntask: t\n",
            ),
            (
                "{id: a, task\t: t}\n",
                "tab at line 1, column 13",
                "{id: a, task: t}\n",
            ),
            // Tabs as separation or inside a plain scalar; fine in quotes, blocks, comments.
            (
                "id: a\ntask: t\t\n",
                "tab at line 2, column 8",
                "id: a\ntask: t # c\tc\n",
            ),
            (
                "id: a\ntask: t\nwritable_paths: [a\tb]\n",
                "tab at line 3",
                "id: a\ntask: |\n  \tt\nwritable_paths: [\"a\tb\"]\n",
            ),
            // A document-end marker before the content.
            (
                "...\nid: a\ntask: t\n",
                "document-end marker",
                "id: a\ntask: t\n...\n",
            ),
            (
                "...\n---\nid: a\ntask: t\n",
                "document-end marker",
                "---\nid: a\ntask: t\n",
            ),
            // Flow plain scalars that YAML 1.1 splits or refuses.
            (
                "id: a\ntask: t\nwritable_paths: [a, ?b]\n",
                "flow collection",
                "id: a\ntask: t\nwritable_paths: [a, '?b']\n",
            ),
            (
                "id: a\ntask: t\nwritable_paths: [a?]\n",
                "flow collection",
                "id: a\ntask: t\nwritable_paths: [\"a?\"]\n",
            ),
            (
                "{id: |a, task: t}\n",
                "flow collection",
                "{id: \"|a\", task: t}\n",
            ),
            (
                "{id: :a, task: t}\n",
                "flow collection",
                "{id: ':a', task: t}\n",
            ),
            // An implicit key over two lines.
            (
                "{id\n  : a, task: t}\n",
                "spans more than one line",
                "{id: a, task: t}\n",
            ),
            // yaml-rust2 reads an empty block scalar as "\n", YAML as "".
            ("id: a\ntask: |\n", "no content", "id: a\ntask: |\n  t\n"),
            // yaml-rust2 adds a line break the text does not have.
            (
                "id: a\ntask: |\n  t\n  ",
                "without a line break",
                "id: a\ntask: |\n  t\n",
            ),
            (
                "id: a\ntask: |\n  t",
                "without a line break",
                "id: a\ntask: \"t\"",
            ),
        ];
        for (bad, why, good) in cases {
            match err(bad) {
                ContractError::Invalid(m) => assert!(m.contains(why), "{bad:?}: {m}"),
                other => panic!("{bad:?}: {other:?}"),
            }
            assert!(parse(good.as_bytes()).is_ok(), "{good:?}");
        }
        assert_eq!(ok("{id: \"|a\", task: ':t'}\n").id, "|a");
        assert_eq!(
            ok("id: a\ntask: t\nwritable_paths: [\"a\\x01b\", \"a\tb\", '?b']\n").writable_paths,
            ["a\u{1}b", "a\tb", "?b"]
        );
        assert_eq!(ok("id: a\ntask: |\n  \tt\n").task, "\tt\n");
        assert_eq!(ok("id: a\ntask: >-\n  x\n  y\n").task, "x y");
        assert_eq!(
            ok("id: a\ntask: t\u{2029}\n".replace('\u{2029}', "").as_str()).task,
            "t"
        );
    }

    #[test]
    fn positions_count_characters_after_non_ascii_block_scalars() {
        // yaml-rust2's marker index counts bytes over block scalar lines; the checks must
        // not shift: this contract is valid and has no tab outside a block scalar.
        let text =
            "id: é\ntask: |\n  héllo wörld ✓ ✓ ✓\n  \ttab\nwritable_paths: [\"é/*\", ü]\n# fin\t\n";
        let c = ok(text);
        assert_eq!(c.task, "héllo wörld ✓ ✓ ✓\n\ttab\n");
        assert_eq!(c.writable_paths, ["é/*", "ü"]);
        let shifted = "id: é\ntask: |\n  ✓✓✓✓✓✓\nwritable_paths: [a\tb]\n";
        let message = err(shifted).to_string();
        assert!(message.contains("tab at line 4, column 19"), "{message}");
    }

    #[test]
    fn alias_bomb_is_refused_without_expanding() {
        let mut text = String::from("a: &a [x, x]\n");
        for i in 0..30 {
            text.push_str(&format!("b{i}: &b{i} [*a, *a]\n"));
        }
        assert!(matches!(err(&text), ContractError::Invalid(_)));
    }
}
