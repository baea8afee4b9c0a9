//! The search operation: the lines of the worktree's files that match a literal or a
//! regular expression, with a little context and each matched file's revision (so an edit
//! can follow a search directly), one page at a time.
//!
//! Files are visited in the walk's order (`walk.rs`). Skipped, and named with the
//! reason: symlinks (never followed), other non-regular files, files over
//! [`MAX_TEXT_FILE_BYTES`], binary files (a NUL byte), files that are not UTF-8, and files
//! that cannot be read (a hard link, for instance). Private files are never read and
//! never named (they are counted in `hidden`); `.git` is never entered.
//!
//! Work is bounded: the query is at most [`MAX_QUERY_BYTES`]; a regular expression is
//! compiled by `regex-automata` (finite automata only: no backtracking, so matching is
//! linear in the input) with an NFA of at most [`MAX_REGEX_NFA_BYTES`]; one page reads at
//! most [`MAX_SCAN_BYTES`] ([`MAX_REGEX_SCAN_BYTES`] for a regular expression) and shows at
//! most `max_matches` matching lines and [`MAX_PAGE_TEXT_BYTES`] of text, then ends with a
//! cursor at a file boundary.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use regex_automata::Input;
use regex_automata::meta;
use regex_automata::util::syntax;

use crate::fnmatch::{Pattern, PatternSet};
use crate::gates::MAX_TEXT_FILE_BYTES;
use crate::lines::{LineIndex, quote};
use crate::list::{check_cursor, start_gates, start_segments};
use crate::read::{ReadCode, ReadError};
use crate::revision::Revision;
use crate::tree::{EntryKind, Tree, open_path};
use crate::walk::{Visit, WalkEnd, walk};
use crate::worktree::NotEditable;

/// The longest query, in bytes.
pub const MAX_QUERY_BYTES: usize = 1000;
/// Why a regular expression does not compile, for the model: the syntax error with where it
/// is (the pattern and a caret under the place), or that it compiles to more than
/// [`MAX_REGEX_NFA_BYTES`].
fn regex_error(e: &meta::BuildError) -> String {
    if let Some(syntax) = e.syntax_error() {
        return format!("query: not a valid regular expression:\n{syntax}");
    }
    if let Some(limit) = e.size_limit() {
        return format!(
            "query: the regular expression compiles to more than {limit} bytes ({} KiB is the limit); make it simpler, or search for a literal",
            MAX_REGEX_NFA_BYTES / 1024
        );
    }
    format!("query: {e}")
}

/// The largest compiled regular expression (its NFA), in bytes.
pub const MAX_REGEX_NFA_BYTES: usize = 256 * 1024;
/// The most bytes of file content one page reads for a literal query.
pub const MAX_SCAN_BYTES: u64 = 128 * 1024 * 1024;
/// The most bytes of file content one page reads for a regular expression.
pub const MAX_REGEX_SCAN_BYTES: u64 = 32 * 1024 * 1024;
/// The most matching lines one page shows (and the default is [`DEFAULT_MATCHES`]).
pub const MAX_MATCHES: u32 = 500;
/// The default number of matching lines per page.
pub const DEFAULT_MATCHES: u32 = 100;
/// The most matching lines shown for one file; the rest are counted.
pub const MAX_FILE_MATCHES: u32 = 20;
/// The most context lines before and after a match.
pub const MAX_CONTEXT: u32 = 10;
/// The longest line shown, in bytes; longer lines are cut with `…`.
pub const MAX_LINE_BYTES: usize = 300;
/// The most bytes of line text one page shows.
pub const MAX_PAGE_TEXT_BYTES: usize = 64 * 1024;
/// The most skipped files named per page; the rest are counted.
pub const MAX_SKIPPED_LISTED: usize = 100;

/// One search, as received.
#[derive(Debug, Clone, Copy)]
pub struct SearchRequest<'a> {
    /// The directory (or single file) to search, worktree-relative; `None` is the root.
    pub path: Option<&'a str>,
    /// What to find: a literal, or a regular expression when `regex`. Not empty.
    pub query: &'a str,
    /// Whether `query` is a regular expression (Rust `regex` syntax, multi-line mode:
    /// `^` and `$` match at line boundaries).
    pub regex: bool,
    /// Whether letters match regardless of case (Unicode simple case folding).
    pub ignore_case: bool,
    /// Only files whose worktree-relative path matches this `fnmatch` pattern.
    pub glob: Option<&'a str>,
    /// Lines of context before and after each matching line; `None` is 0, at most
    /// [`MAX_CONTEXT`].
    pub context: Option<u32>,
    /// The most matching lines; `None` is [`DEFAULT_MATCHES`], at most [`MAX_MATCHES`].
    /// Checked at file boundaries: a page ends after the file that reaches it, so one
    /// file's lines are never split across pages (a file shows at most
    /// [`MAX_FILE_MATCHES`] of its matching lines; the rest are counted in `omitted`).
    pub max_matches: Option<u32>,
    /// Resume after this path (a previous page's `next_cursor`).
    pub cursor: Option<&'a str>,
    /// The contract's `writable_paths`, to report each file's `writable`.
    pub writable_paths: &'a [String],
    /// The contract's `private_paths`: never searched.
    pub private_paths: &'a [String],
}

/// One shown line of a matched file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchLine {
    /// Its 1-indexed line number.
    pub line: u32,
    /// Its text without the line ending, cut at [`MAX_LINE_BYTES`].
    pub text: String,
    /// Whether it matches (otherwise it is context).
    pub matched: bool,
}

/// A file with at least one matching line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchFile {
    /// Worktree-relative path.
    pub path: String,
    /// The file's revision: what an `edit` of it names.
    pub revision: Revision,
    /// Whether the contract declares it writable.
    pub writable: bool,
    /// How many of its lines match.
    pub matches: u32,
    /// The shown lines (matching and context), in order.
    pub lines: Vec<SearchLine>,
    /// Matching lines not shown (per-file or per-page limit).
    pub omitted: u32,
}

/// Why a file was not searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// A symbolic link (never followed).
    Symlink,
    /// Larger than [`MAX_TEXT_FILE_BYTES`].
    TooLarge,
    /// Contains a NUL byte.
    Binary,
    /// Not valid UTF-8.
    NotText,
    /// Not a regular file, hard-linked, or unreadable.
    Unavailable,
    /// A directory that could not be opened or read (no permission, the descriptor limit
    /// reached): nothing beneath it was searched.
    DirectoryUnreadable,
}

impl SkipReason {
    /// The protocol's spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Symlink => "symlink",
            Self::TooLarge => "too_large",
            Self::Binary => "binary",
            Self::NotText => "not_text",
            Self::Unavailable => "unavailable",
            Self::DirectoryUnreadable => "directory_unreadable",
        }
    }
}

/// A file that was not searched, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// Worktree-relative path.
    pub path: String,
    /// Why.
    pub reason: SkipReason,
}

/// One page of a search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchPage {
    /// The matched files, in walk order.
    pub files: Vec<SearchFile>,
    /// How many files were searched on this page (matched or not).
    pub files_searched: u32,
    /// Files not searched, with the reason (at most [`MAX_SKIPPED_LISTED`]).
    pub skipped: Vec<Skipped>,
    /// Skipped files beyond those listed.
    pub skipped_omitted: u32,
    /// Private entries left out (never read, never named).
    pub hidden: u32,
    /// Pass as `cursor` for the next page; `None` when the search is complete.
    pub next_cursor: Option<String>,
    /// When the page is not the end, or lines were left out: why, and how to continue.
    pub notice: Option<String>,
}

/// The compiled query.
enum Matcher {
    Literal(alloc::boxed::Box<memchr::memmem::Finder<'static>>),
    Regex(meta::Regex),
}

impl Matcher {
    fn new(request: &SearchRequest<'_>) -> Result<Self, ReadError> {
        let query = request.query;
        if query.is_empty() {
            return Err(ReadError::InvalidRequest(
                "query: must not be empty".to_string(),
            ));
        }
        if query.len() > MAX_QUERY_BYTES {
            return Err(ReadError::InvalidRequest(format!(
                "query: {} bytes long; at most {MAX_QUERY_BYTES} bytes are allowed",
                query.len()
            )));
        }
        if !request.regex && !request.ignore_case {
            return Ok(Self::Literal(alloc::boxed::Box::new(
                memchr::memmem::Finder::new(query.as_bytes()).into_owned(),
            )));
        }
        let pattern = if request.regex {
            String::from(query)
        } else {
            escape(query)
        };
        meta::Builder::new()
            .syntax(
                syntax::Config::new()
                    .case_insensitive(request.ignore_case)
                    .multi_line(true)
                    .crlf(true),
            )
            .configure(
                meta::Config::new()
                    .nfa_size_limit(Some(MAX_REGEX_NFA_BYTES))
                    .dfa_size_limit(Some(MAX_REGEX_NFA_BYTES))
                    .onepass_size_limit(Some(MAX_REGEX_NFA_BYTES))
                    .backtrack(false),
            )
            .build(&pattern)
            .map(Self::Regex)
            .map_err(|e| ReadError::InvalidRequest(regex_error(&e)))
    }

    fn find(&self, hay: &[u8], from: usize) -> Option<usize> {
        match self {
            Self::Literal(f) => f.find(&hay[from..]).map(|at| from + at),
            Self::Regex(r) => r
                .find(Input::new(hay).span(from..hay.len()))
                .map(|m| m.start()),
        }
    }

    fn scan_budget(&self) -> u64 {
        match self {
            Self::Literal(_) => MAX_SCAN_BYTES,
            Self::Regex(_) => MAX_REGEX_SCAN_BYTES,
        }
    }
}

/// `text` with every character that is special in a regular expression escaped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The 1-indexed numbers of the lines of `hay` on which `matcher` matches.
fn matching_lines(matcher: &Matcher, hay: &[u8]) -> Vec<u32> {
    let mut lines = Vec::new();
    if hay.is_empty() {
        return lines;
    }
    let (mut counted_to, mut line) = (0usize, 1u32);
    let mut from = 0;
    while from <= hay.len() {
        let Some(at) = matcher.find(hay, from) else {
            break;
        };
        let line_start = memchr::memrchr(b'\n', &hay[..at]).map_or(0, |i| i + 1);
        line = line.saturating_add(
            u32::try_from(memchr::memchr_iter(b'\n', &hay[counted_to..line_start]).count())
                .unwrap_or(u32::MAX),
        );
        counted_to = line_start;
        lines.push(line);
        match memchr::memchr(b'\n', &hay[at..]) {
            Some(i) => from = at + i + 1,
            None => break,
        }
        // A match of the empty string at the very end of a text that ends with LF is on
        // no line.
        if from == hay.len() {
            break;
        }
    }
    lines
}

struct Page {
    matcher: Matcher,
    glob: Option<Pattern>,
    writable: PatternSet,
    context: u32,
    max_matches: u32,
    scanned: u64,
    shown_matches: u32,
    text_bytes: usize,
    out: SearchPage,
}

impl Page {
    fn full(&self) -> bool {
        self.shown_matches >= self.max_matches
            || self.text_bytes >= MAX_PAGE_TEXT_BYTES
            || self.scanned >= self.matcher.scan_budget()
    }

    fn skip(&mut self, path: &str, reason: SkipReason) {
        if self.out.skipped.len() < MAX_SKIPPED_LISTED {
            self.out.skipped.push(Skipped {
                path: path.to_string(),
                reason,
            });
        } else {
            self.out.skipped_omitted = self.out.skipped_omitted.saturating_add(1);
        }
    }

    /// Searches one entry; [`Visit::Stop`] (before reading it) when the page is full.
    fn visit<T: Tree + ?Sized>(
        &mut self,
        tree: &T,
        dir: &T::Dir,
        name: &str,
        kind: EntryKind,
        size: Option<u64>,
        path: &str,
    ) -> Visit {
        if kind == EntryKind::Directory || self.glob.as_ref().is_some_and(|g| !g.matches(path)) {
            return Visit::Continue;
        }
        if self.full() {
            return Visit::Stop;
        }
        match kind {
            EntryKind::Symlink => return self.skipped(path, SkipReason::Symlink),
            EntryKind::Other => return self.skipped(path, SkipReason::Unavailable),
            EntryKind::File | EntryKind::Directory => {}
        }
        if size.is_some_and(|size| size > MAX_TEXT_FILE_BYTES) {
            return self.skipped(path, SkipReason::TooLarge);
        }
        let Ok(bytes) = tree.read_file(dir, name, path, MAX_TEXT_FILE_BYTES) else {
            // The walk reads no sizes (one inspection less per file): only a file that could
            // not be read is inspected, to tell a large file from an unreadable one.
            let large = matches!(
                tree.stat(dir, name, path),
                Ok(Some((EntryKind::File, size))) if size > MAX_TEXT_FILE_BYTES
            );
            let reason = if large {
                SkipReason::TooLarge
            } else {
                SkipReason::Unavailable
            };
            return self.skipped(path, reason);
        };
        self.scanned = self.scanned.saturating_add(bytes.len() as u64);
        if memchr::memchr(0, &bytes).is_some() {
            return self.skipped(path, SkipReason::Binary);
        }
        let Ok(text) = core::str::from_utf8(&bytes) else {
            return self.skipped(path, SkipReason::NotText);
        };
        self.out.files_searched = self.out.files_searched.saturating_add(1);
        let matched = matching_lines(&self.matcher, bytes.as_slice());
        if !matched.is_empty() {
            self.add(path, text, &matched);
        }
        Visit::Continue
    }

    fn skipped(&mut self, path: &str, reason: SkipReason) -> Visit {
        self.skip(path, reason);
        Visit::Continue
    }

    fn add(&mut self, path: &str, text: &str, matched: &[u32]) {
        let index = LineIndex::new(text);
        let total = u32::try_from(index.total()).unwrap_or(u32::MAX);
        let count = u32::try_from(matched.len()).unwrap_or(u32::MAX);
        let shown = count.min(MAX_FILE_MATCHES);
        let mut lines = Vec::new();
        let mut next_line = 1u32;
        for &m in matched.iter().take(shown as usize) {
            let first = m.saturating_sub(self.context).max(next_line);
            let last = m.saturating_add(self.context).min(total.max(m));
            for line in first..=last {
                let raw = index.text(text, line as usize);
                let raw = if line == 1 {
                    raw.strip_prefix('\u{feff}').unwrap_or(raw)
                } else {
                    raw
                };
                let text = quote(raw, MAX_LINE_BYTES);
                self.text_bytes = self.text_bytes.saturating_add(text.len());
                lines.push(SearchLine {
                    line,
                    text,
                    matched: matched.binary_search(&line).is_ok(),
                });
            }
            next_line = last.saturating_add(1);
        }
        self.shown_matches = self.shown_matches.saturating_add(shown);
        self.out.files.push(SearchFile {
            path: path.to_string(),
            revision: Revision::of(text.as_bytes()),
            writable: self.writable.matches(path),
            matches: count,
            lines,
            omitted: count - shown,
        });
    }

    fn finish(mut self, end: WalkEnd) -> SearchPage {
        self.out.hidden = end.hidden;
        let named = u32::try_from(end.unopened.len()).unwrap_or(u32::MAX);
        for dir in &end.unopened {
            self.skip(dir, SkipReason::DirectoryUnreadable);
        }
        // Directories beyond those the walk named, and names the protocol cannot carry.
        let unnamed = end.unreadable.saturating_sub(named);
        self.out.next_cursor = end.next_cursor;
        let omitted: u32 = self.out.files.iter().map(|f| f.omitted).sum();
        let mut notes = Vec::new();
        if let Some(c) = &self.out.next_cursor {
            let why = if end.budget_spent {
                "the walk's entry limit was reached"
            } else if self.scanned >= self.matcher.scan_budget() {
                "the page's read budget was spent"
            } else {
                "the page is full"
            };
            notes.push(format!(
                "More files follow ({why}). Call search again with cursor=\"{c}\" to continue."
            ));
        }
        if unnamed > 0 {
            notes.push(format!(
                "{unnamed} entries could not be searched and are not named (directories that could not be opened, names that are not UTF-8 or too long)."
            ));
        }
        if omitted > 0 {
            notes.push(format!(
                "{omitted} matching lines were not shown (at most {MAX_FILE_MATCHES} per file); read the file, or search it alone with a narrower query."
            ));
        }
        self.out.notice = (!notes.is_empty()).then(|| format!("[{}]", notes.join(" ")));
        self.out
    }
}

/// Searches one page.
///
/// # Errors
///
/// [`ReadError::InvalidRequest`] for a malformed path, cursor or query (empty, too long,
/// an invalid or too large regular expression), a context over [`MAX_CONTEXT`] or a zero
/// `max_matches`; [`ReadError::Refused`]: [`ReadCode::Private`] for a private start path,
/// [`ReadCode::Unavailable`] for one inside `.git`, missing, reached through a symlink or
/// neither a directory nor a regular file.
pub fn search<T: Tree + ?Sized>(
    tree: &T,
    request: &SearchRequest<'_>,
) -> Result<SearchPage, ReadError> {
    let segments = start_segments("path", request.path)?;
    check_cursor(request.cursor)?;
    let context = request.context.unwrap_or(0);
    if context > MAX_CONTEXT {
        return Err(ReadError::InvalidRequest(format!(
            "context: at most {MAX_CONTEXT} lines, got {context}"
        )));
    }
    if request.max_matches == Some(0) {
        return Err(ReadError::InvalidRequest(
            "max_matches: must be at least 1".to_string(),
        ));
    }
    let matcher = Matcher::new(request)?;
    let shown = segments.join("/");
    let private = PatternSet::new(request.private_paths);
    start_gates(&shown, &segments, &private)?;
    let unavailable = |e: NotEditable| ReadError::Refused {
        code: ReadCode::Unavailable,
        message: e.0,
    };
    let mut page = Page {
        matcher,
        glob: request.glob.map(Pattern::new),
        writable: PatternSet::new(request.writable_paths),
        context,
        max_matches: request
            .max_matches
            .unwrap_or(DEFAULT_MATCHES)
            .min(MAX_MATCHES),
        scanned: 0,
        shown_matches: 0,
        text_bytes: 0,
        out: SearchPage {
            files: Vec::new(),
            files_searched: 0,
            skipped: Vec::new(),
            skipped_omitted: 0,
            hidden: 0,
            next_cursor: None,
            notice: None,
        },
    };
    if let Some((leaf, parents)) = segments.split_last() {
        let parent = open_path(tree, parents).map_err(unavailable)?;
        match tree.stat(&parent, leaf, &shown).map_err(unavailable)? {
            Some((EntryKind::File, size)) => {
                if request.cursor.is_none() {
                    page.glob = None;
                    let _ = page.visit(tree, &parent, leaf, EntryKind::File, Some(size), &shown);
                }
                return Ok(page.finish(WalkEnd::default()));
            }
            Some((EntryKind::Directory, _)) => {}
            Some((EntryKind::Symlink, _)) => {
                return Err(unavailable(NotEditable(format!(
                    "`{shown}` is a symbolic link; satyrn never follows symbolic links"
                ))));
            }
            Some((EntryKind::Other, _)) => {
                return Err(unavailable(NotEditable(format!(
                    "`{shown}` is neither a directory nor a regular file"
                ))));
            }
            None => {
                return Err(unavailable(NotEditable(format!(
                    "`{shown}` does not exist"
                ))));
            }
        }
    }
    let start = open_path(tree, &segments).map_err(unavailable)?;
    let end = walk(
        tree,
        start,
        &shown,
        true,
        request.cursor,
        &private,
        |dir, entry, path| page.visit(tree, dir, &entry.name, entry.kind, None, path),
    )
    .map_err(unavailable)?;
    Ok(page.finish(end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(query: &str, regex: bool, ignore_case: bool, hay: &str) -> Vec<u32> {
        let request = SearchRequest {
            path: None,
            query,
            regex,
            ignore_case,
            glob: None,
            context: None,
            max_matches: None,
            cursor: None,
            writable_paths: &[],
            private_paths: &[],
        };
        let matcher = Matcher::new(&request).expect("query");
        matching_lines(&matcher, hay.as_bytes())
    }

    #[test]
    fn each_matching_line_counts_once() {
        assert_eq!(lines("a", false, false, "a a\nb\na\n"), [1, 3]);
        assert_eq!(lines("A", false, true, "a\nb\nxa"), [1, 3]);
        assert_eq!(lines("^b", true, false, "ab\nb\nbb\n"), [2, 3]);
        assert_eq!(lines("x*", true, false, "a\nb\n"), [1, 2]);
        assert_eq!(lines("x*", true, false, "a\nb"), [1, 2]);
        assert_eq!(lines("a.c", false, false, "abc\na.c\n"), [2]);
        assert_eq!(lines("a.c", false, true, "abc\nA.C\n"), [2]);
        assert_eq!(lines("$", true, false, ""), Vec::<u32>::new());
    }

    #[test]
    fn bad_queries_are_named() {
        for (query, regex) in [("", false), ("(", true), ("a{100000}", true)] {
            let request = SearchRequest {
                path: None,
                query,
                regex,
                ignore_case: false,
                glob: None,
                context: None,
                max_matches: None,
                cursor: None,
                writable_paths: &[],
                private_paths: &[],
            };
            assert!(matches!(
                Matcher::new(&request),
                Err(ReadError::InvalidRequest(_))
            ));
        }
        assert_eq!(escape("a.b*"), "a\\.b\\*");
    }
}
