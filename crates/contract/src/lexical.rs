//! The characters a contract may hold, and where: rules that YAML parsers disagree on, so
//! that a contract another YAML tool rejects is not accepted here either.
//!
//! - Only YAML's printable characters (`c-printable`: tab, LF, CR, U+0020–U+007E,
//!   U+00A0–U+D7FF, U+E000–U+FFFD, U+10000 and above), without U+2028 and U+2029: YAML 1.1
//!   reads those two (and U+0085, which is not printable here either) as line breaks,
//!   YAML 1.2 as ordinary characters. A control character can still be written as an
//!   escape in a double-quoted string (`"\x01"`).
//! - A tab only inside a quoted scalar, a block scalar (`|`, `>`) or a comment: never as
//!   indentation or separation (`id\t: a`, `task: t\t`) nor inside a plain scalar.
//! - No document-end marker (`...`) before the contract's mapping.
//! - In a flow collection (`[...]`, `{...}`), no plain scalar that starts with an
//!   indicator other than `-` or holds `?` (YAML 1.1 and 1.2 split them differently:
//!   quote them).
//! - An implicit mapping key on one line (`{id\n: a}` is refused).
//! - No empty block scalar, and a block scalar at the very end of the text ends with a
//!   line break (yaml-rust2 reads a line break in both places that YAML does not).

use yaml_rust2::scanner::{Scanner, TScalarStyle, TokenType};

/// Checks the rules above. When the scanner stops at a syntax error, the tab rule is not
/// applied (the token rules only up to the error), so that the parser refuses the text
/// with its own message.
///
/// # Errors
///
/// Why the text breaks a rule, with the line and column of the first offence.
pub(super) fn check(text: &str) -> Result<(), String> {
    let chars: Vec<char> = text.chars().collect();
    if let Some(at) = chars.iter().position(|&c| !printable(c)) {
        let c = chars[at];
        return Err(format!(
            "the contract holds the character U+{:04X} at {}; only YAML's printable characters are allowed (write control characters as escapes in a double-quoted string)",
            u32::from(c),
            position(&chars, at)
        ));
    }
    let Some(scalars) = Tokens::read(text, &chars)? else {
        return Ok(());
    };
    let mut tab_ok = vec![false; chars.len()];
    for (start, end) in scalars {
        tab_ok[start..end].fill(true);
    }
    mark_comments(&chars, &mut tab_ok);
    match (0..chars.len()).find(|&i| chars[i] == '\t' && !tab_ok[i]) {
        Some(at) => Err(format!(
            "the contract has a tab at {}; tabs are allowed only inside quoted or block scalars and comments",
            position(&chars, at)
        )),
        None => Ok(()),
    }
}

/// The token-level rules, and the character ranges of the quoted and block scalars.
struct Tokens<'c> {
    chars: &'c [char],
    ranges: Vec<(usize, usize)>,
    /// The block scalar whose extent ends where the next token starts: its first content
    /// character and its indentation.
    open_block: Option<(usize, usize)>,
    flow_depth: usize,
    seen_content: bool,
    /// An implicit key's first character, until its `:` is read.
    implicit_key: Option<usize>,
    /// The last range pushed is a block scalar's.
    last_was_block: bool,
}

impl<'c> Tokens<'c> {
    /// The ranges of the quoted and block scalars, or `None` when the scanner stops at a
    /// syntax error (the parser then reports it).
    fn read(text: &str, chars: &'c [char]) -> Result<Option<Vec<(usize, usize)>>, String> {
        let mut tokens = Self {
            chars,
            ranges: Vec::new(),
            open_block: None,
            flow_depth: 0,
            seen_content: false,
            implicit_key: None,
            last_was_block: false,
        };
        let mut scanner = Scanner::new(text.chars());
        let lines = line_starts(chars);
        let mut key_at = None;
        loop {
            let token = match scanner.next_token() {
                Ok(Some(token)) => token,
                Ok(None) => break,
                Err(_) => return Ok(None),
            };
            // yaml-rust2 advances a marker's index (and column) by bytes, not characters,
            // over a block scalar's lines; its line is exact and its column exact on any
            // line a token starts on, so the position is rebuilt from those.
            let at = lines
                .get(token.0.line().saturating_sub(1))
                .map_or(chars.len(), |start| start + token.0.col())
                .min(chars.len());
            tokens.close_block(at);
            if let Some(key) = key_at.take() {
                // An implicit key's `Key` token starts where its scalar does.
                if matches!(token.1, TokenType::Scalar(..)) && key == at {
                    tokens.implicit_key = Some(at);
                }
            }
            match token.1 {
                TokenType::Key => key_at = Some(at),
                TokenType::Value => tokens.value(at)?,
                other => tokens.token(other, at)?,
            }
        }
        tokens.close_block(chars.len());
        // yaml-rust2 ends a block scalar whose content runs to the end of the text with a
        // line break that is not there; YAML (and PyYAML, libyaml) does not.
        let last_line = line_start(chars, chars.len());
        let unterminated = last_line < chars.len()
            && tokens
                .ranges
                .last()
                .is_some_and(|&(_, end)| end == chars.len());
        if unterminated && tokens.last_was_block {
            return Err(
                "the contract ends inside a block scalar (`|`, `>`) without a line break; end the file with a newline"
                    .to_string(),
            );
        }
        Ok(Some(tokens.ranges))
    }

    fn token(&mut self, token: TokenType, at: usize) -> Result<(), String> {
        match token {
            TokenType::StreamStart(_)
            | TokenType::StreamEnd
            | TokenType::VersionDirective(..)
            | TokenType::TagDirective(..)
            | TokenType::DocumentStart => {}
            TokenType::DocumentEnd if !self.seen_content => {
                return Err(format!(
                    "the contract has a document-end marker (`...`) at {} before its content",
                    position(self.chars, at)
                ));
            }
            TokenType::FlowSequenceStart | TokenType::FlowMappingStart => {
                self.seen_content = true;
                self.flow_depth += 1;
            }
            TokenType::FlowSequenceEnd | TokenType::FlowMappingEnd => {
                self.flow_depth = self.flow_depth.saturating_sub(1);
            }
            TokenType::Scalar(style, value) => {
                self.seen_content = true;
                match style {
                    TScalarStyle::SingleQuoted | TScalarStyle::DoubleQuoted => {
                        let end = quoted_end(self.chars, at);
                        self.ranges.push((at, end));
                        self.last_was_block = false;
                    }
                    TScalarStyle::Literal | TScalarStyle::Folded
                        if value.chars().all(|c| c == '\n') =>
                    {
                        // yaml-rust2 reads an empty block scalar as line breaks, YAML as
                        // an empty string (unless kept with `|+`).
                        return Err(format!(
                            "the block scalar at {} has no content; write `\"\"` for an empty string",
                            position(self.chars, at)
                        ));
                    }
                    TScalarStyle::Literal | TScalarStyle::Folded => {
                        let indent = at - line_start(self.chars, at);
                        self.open_block = Some((at, indent));
                    }
                    TScalarStyle::Plain if self.flow_depth > 0 => self.flow_plain(&value, at)?,
                    TScalarStyle::Plain => {}
                }
            }
            _ => self.seen_content = true,
        }
        Ok(())
    }

    /// YAML 1.1 ends a plain scalar in a flow collection at `?` and does not start one
    /// with an indicator (but `-`); YAML 1.2 reads both as text, and yaml-rust2 even takes
    /// `[|a]` as text. `[a?]`, `[?a]`, `[:a]`, `[|a]` and the like are therefore refused:
    /// quote such a value.
    fn flow_plain(&self, value: &str, at: usize) -> Result<(), String> {
        let starts_with_indicator = value.starts_with([
            '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@',
            '`',
        ]);
        if starts_with_indicator || value.contains('?') {
            return Err(format!(
                "the plain scalar at {} in a flow collection starts with an indicator or holds `?`, which YAML 1.1 and 1.2 read differently; quote it",
                position(self.chars, at)
            ));
        }
        Ok(())
    }

    /// A `:` closing an implicit key: the key must be on one line.
    fn value(&mut self, at: usize) -> Result<(), String> {
        self.seen_content = true;
        if let Some(key) = self.implicit_key.take()
            && self
                .chars
                .get(key..at)
                .is_some_and(|between| between.iter().any(|c| matches!(c, '\n' | '\r')))
        {
            return Err(format!(
                "the mapping key at {} spans more than one line; an implicit key must be on one line",
                position(self.chars, key)
            ));
        }
        Ok(())
    }

    /// Ends the open block scalar where the next token starts: its content is every line
    /// indented at least as far as its first line, from that indentation on. The
    /// less-indented lines before the next token are comments or blank.
    fn close_block(&mut self, at: usize) {
        let Some((start, indent)) = self.open_block.take() else {
            return;
        };
        let mut line = line_start(self.chars, start);
        while line < at {
            let end = (line..at)
                .find(|&i| matches!(self.chars[i], '\n' | '\r'))
                .map_or(at, |i| i + 1);
            let indented =
                line + indent <= end && self.chars[line..line + indent].iter().all(|&c| c == ' ');
            if indented {
                self.ranges.push((line + indent, end));
                self.last_was_block = true;
            }
            line = end;
        }
    }
}

/// The index of each line's first character; lines end at LF, CRLF or a lone CR, as
/// yaml-rust2 counts them.
fn line_starts(chars: &[char]) -> Vec<usize> {
    let mut starts = vec![0];
    for (i, &c) in chars.iter().enumerate() {
        if c == '\n' || (c == '\r' && chars.get(i + 1) != Some(&'\n')) {
            starts.push(i + 1);
        }
    }
    starts
}

fn line_start(chars: &[char], at: usize) -> usize {
    chars[..at]
        .iter()
        .rposition(|&c| matches!(c, '\n' | '\r'))
        .map_or(0, |i| i + 1)
}

/// YAML's `c-printable`, less the characters YAML 1.1 and 1.2 disagree on.
fn printable(c: char) -> bool {
    matches!(c,
        '\t' | '\n' | '\r'
        | '\u{20}'..='\u{7e}'
        | '\u{a0}'..='\u{2027}'
        | '\u{202a}'..='\u{d7ff}'
        | '\u{e000}'..='\u{fffd}'
        | '\u{10000}'..)
}

/// The index just past the closing quote of the quoted scalar opening at `start` (the
/// end of the text if it is unterminated: the parser refuses that).
fn quoted_end(chars: &[char], start: usize) -> usize {
    let Some(&quote) = chars.get(start) else {
        return chars.len();
    };
    let mut i = start + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' if quote == '"' => i += 2,
            '\'' if quote == '\'' && chars.get(i + 1) == Some(&'\'') => i += 2,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    chars.len()
}

/// Marks every comment: a `#` at the start of a line or after whitespace, outside the
/// scalars already marked, up to the end of its line.
fn mark_comments(chars: &[char], marked: &mut [bool]) {
    let mut i = 0;
    while i < chars.len() {
        let starts_comment = chars[i] == '#'
            && !marked[i]
            && (i == 0 || matches!(chars[i - 1], ' ' | '\t' | '\n' | '\r'));
        if starts_comment {
            while i < chars.len() && !matches!(chars[i], '\n' | '\r') {
                marked[i] = true;
                i += 1;
            }
        } else {
            i += 1;
        }
    }
}

/// `line L, column C` (1-based, in characters) of the character at `at`.
fn position(chars: &[char], at: usize) -> String {
    let before = &chars[..at];
    let line = before.iter().filter(|&&c| c == '\n').count() + 1;
    let column = at - before.iter().rposition(|&c| c == '\n').map_or(0, |i| i + 1) + 1;
    format!("line {line}, column {column}")
}
