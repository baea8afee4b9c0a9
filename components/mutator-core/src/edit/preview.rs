//! What a successful batch reports: the changed line ranges of the new content and a
//! bounded preview of each changed region with its context.

use alloc::string::String;
use alloc::vec::Vec;

use super::{Hunk, LineRange, MAX_PREVIEW_BYTES, MAX_QUOTE_BYTES, PREVIEW_CONTEXT, count};
use crate::lines::{LineIndex, quote};

pub(super) fn changed_ranges(inserted: &[(usize, usize)], lines: &LineIndex) -> Vec<LineRange> {
    let total = lines.total().max(1);
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for &(from, to) in inserted {
        let start = lines.line_of(from).min(total);
        let end = if to > from {
            lines.line_of(to - 1)
        } else {
            start
        }
        .clamp(start, total);
        match ranges.last_mut() {
            Some(prev) if start <= prev.1 + 1 => prev.1 = prev.1.max(end),
            _ => ranges.push((start, end)),
        }
    }
    ranges
        .into_iter()
        .map(|(s, e)| LineRange {
            start_line: count(s),
            end_line: count(e),
        })
        .collect()
}

pub(super) fn preview(out: &str, lines: &LineIndex, changed: &[LineRange]) -> (Vec<Hunk>, u32) {
    let total = lines.total();
    if total == 0 {
        return (Vec::new(), 0);
    }
    let mut regions: Vec<(usize, usize)> = Vec::new();
    for r in changed {
        let start = usize::try_from(r.start_line)
            .unwrap_or(1)
            .saturating_sub(PREVIEW_CONTEXT)
            .max(1);
        let end = usize::try_from(r.end_line)
            .unwrap_or(total)
            .saturating_add(PREVIEW_CONTEXT)
            .min(total);
        match regions.last_mut() {
            Some(prev) if start <= prev.1 + 1 => prev.1 = prev.1.max(end),
            _ => regions.push((start, end)),
        }
    }
    let mut budget = MAX_PREVIEW_BYTES;
    let mut omitted = 0usize;
    let mut hunks = Vec::new();
    for (start, end) in regions {
        let mut text = String::new();
        let mut shown = start;
        for line in start..=end {
            let mut quoted = quote(lines.text(out, line), MAX_QUOTE_BYTES);
            quoted.push('\n');
            if omitted > 0 || quoted.len() > budget {
                omitted += 1;
                continue;
            }
            budget -= quoted.len();
            text.push_str(&quoted);
            shown = line;
        }
        if !text.is_empty() {
            hunks.push(Hunk {
                start_line: count(start),
                end_line: count(shown),
                text,
            });
        }
    }
    (hunks, count(omitted))
}
