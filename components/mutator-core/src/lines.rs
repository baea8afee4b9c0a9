//! Lines of a text: where they start and end, their line-ending style, and short quotes.
//!
//! Lines are separated by LF (`\n`); a CR before the LF belongs to the line ending. Line
//! numbers are 1-indexed. A text of `n` LF characters has `n` lines if it ends with LF (or
//! is empty: 0 lines), otherwise `n + 1`.

use alloc::string::String;
use alloc::vec::Vec;

/// The line-ending style of a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineStyle {
    /// No line break at all.
    None,
    /// Only LF.
    Lf,
    /// Only CRLF.
    Crlf,
    /// Both LF and CRLF.
    Mixed,
    /// At least one CR not followed by LF.
    BareCr,
}

impl LineStyle {
    /// The style of `text`.
    #[must_use]
    pub fn of(text: &str) -> Self {
        let bytes = text.as_bytes();
        let (mut lf, mut crlf) = (false, false);
        for (i, &b) in bytes.iter().enumerate() {
            match b {
                b'\r' if bytes.get(i + 1) != Some(&b'\n') => return Self::BareCr,
                b'\n' if i > 0 && bytes.get(i - 1) == Some(&b'\r') => crlf = true,
                b'\n' => lf = true,
                _ => {}
            }
        }
        match (lf, crlf) {
            (false, false) => Self::None,
            (true, false) => Self::Lf,
            (false, true) => Self::Crlf,
            (true, true) => Self::Mixed,
        }
    }

    /// `text` with its line breaks in this style: every CRLF becomes LF, then (for CRLF
    /// files) every LF becomes CRLF. Bare CRs are kept. For [`LineStyle::None`],
    /// [`LineStyle::Mixed`] and [`LineStyle::BareCr`] the text is returned unchanged.
    #[must_use]
    pub fn normalize(self, text: &str) -> String {
        match self {
            Self::Lf => text.replace("\r\n", "\n"),
            Self::Crlf => text.replace("\r\n", "\n").replace('\n', "\r\n"),
            Self::None | Self::Mixed | Self::BareCr => String::from(text),
        }
    }
}

/// Whether `text` contains a line break character (LF or CR).
#[must_use]
pub fn has_line_break(text: &str) -> bool {
    text.bytes().any(|b| b == b'\n' || b == b'\r')
}

/// The LF positions of a text, for line numbers and line slices.
#[derive(Debug, Clone)]
pub struct LineIndex {
    newlines: Vec<usize>,
    len: usize,
}

impl LineIndex {
    /// Indexes `text`.
    #[must_use]
    pub fn new(text: &str) -> Self {
        Self {
            newlines: memchr::memchr_iter(b'\n', text.as_bytes()).collect(),
            len: text.len(),
        }
    }

    /// The number of lines (see the module documentation).
    #[must_use]
    pub fn total(&self) -> usize {
        let ends_with_lf = self.newlines.last().is_some_and(|&p| p + 1 == self.len);
        if self.len == 0 || ends_with_lf {
            self.newlines.len()
        } else {
            self.newlines.len() + 1
        }
    }

    /// The 1-indexed line that byte `offset` lies on (an offset at the very end of a text
    /// that ends with LF is on the line after the last one).
    #[must_use]
    pub fn line_of(&self, offset: usize) -> usize {
        self.newlines.partition_point(|&p| p < offset) + 1
    }

    /// The byte range of 1-indexed `line`, including its line ending. Lines past the end
    /// are the empty range at the end.
    #[must_use]
    pub fn span(&self, line: usize) -> (usize, usize) {
        let start = match line.checked_sub(2) {
            None => 0,
            Some(i) => self.newlines.get(i).map_or(self.len, |&p| p + 1),
        };
        let end = line
            .checked_sub(1)
            .and_then(|i| self.newlines.get(i))
            .map_or(self.len, |&p| p + 1);
        (start.min(self.len), end.max(start).min(self.len))
    }

    /// The text of 1-indexed `line` without its line ending (`\n` or `\r\n`).
    #[must_use]
    pub fn text<'t>(&self, text: &'t str, line: usize) -> &'t str {
        let (start, end) = self.span(line);
        let full = text.get(start..end).unwrap_or_default();
        let full = full.strip_suffix('\n').unwrap_or(full);
        full.strip_suffix('\r').unwrap_or(full)
    }
}

/// `text` cut to at most `max` bytes on a character boundary, with `…` when cut.
#[must_use]
pub fn quote(text: &str, max: usize) -> String {
    if text.len() <= max {
        return String::from(text);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = String::from(text.get(..end).unwrap_or_default());
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn styles() {
        assert_eq!(LineStyle::of("a"), LineStyle::None);
        assert_eq!(LineStyle::of("a\nb"), LineStyle::Lf);
        assert_eq!(LineStyle::of("a\r\nb\r\n"), LineStyle::Crlf);
        assert_eq!(LineStyle::of("a\r\nb\n"), LineStyle::Mixed);
        assert_eq!(LineStyle::of("a\rb\n"), LineStyle::BareCr);
        assert_eq!(LineStyle::of("a\r"), LineStyle::BareCr);
        assert_eq!(LineStyle::Crlf.normalize("a\nb\r\nc"), "a\r\nb\r\nc");
        assert_eq!(LineStyle::Lf.normalize("a\nb\r\nc"), "a\nb\nc");
    }

    #[test]
    fn lines() {
        let t = "ab\r\ncd\nef";
        let idx = LineIndex::new(t);
        assert_eq!(idx.total(), 3);
        assert_eq!(idx.line_of(0), 1);
        assert_eq!(idx.line_of(4), 2);
        assert_eq!(idx.text(t, 1), "ab");
        assert_eq!(idx.text(t, 3), "ef");
        assert_eq!(idx.text(t, 4), "");
        assert_eq!(LineIndex::new("").total(), 0);
        assert_eq!(LineIndex::new("a\n").total(), 1);
        assert_eq!(quote("héllo", 2), "h…");
    }
}
