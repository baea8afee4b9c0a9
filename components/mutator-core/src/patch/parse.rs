//! The `apply_patch` envelope, parsed strictly into file operations ([`super::Patch`]).
//!
//! Grammar (the one OpenAI's models are trained to write):
//!
//! ```text
//! patch   := "*** Begin Patch" LF op* "*** End Patch" LF?
//! op      := add | delete | update
//! add     := "*** Add File: " path LF ("+" text LF)*
//! delete  := "*** Delete File: " path LF
//! update  := "*** Update File: " path LF ("*** Move to: " path LF hunk* | hunk+)
//! hunk    := ("@@" | "@@ " anchor) LF line+ ("*** End of File" LF)?
//! line    := (" " | "-" | "+") text LF
//! ```
//!
//! Leniencies that cost no safety (every one only accepts what a model meant, and what it
//! accepts must still match the file exactly): surrounding whitespace of the whole text and
//! of each marker line; a heredoc wrapper (`<<EOF`, `<<'EOF'` or `<<"EOF"`, optionally after
//! `apply_patch `, closed by a last line `EOF`); a CR before each LF (the patch's own line
//! endings; the file's are kept); a first hunk without `@@`; an empty line inside a hunk
//! taken as an empty context line (models drop its leading space), blank lines between
//! hunks and between operations skipped; an Add File with no line (an empty file).

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::{Hunk, Op, Patch, PatchError, PatchErrorCode};

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File: ";
const DELETE: &str = "*** Delete File: ";
const UPDATE: &str = "*** Update File: ";
const MOVE: &str = "*** Move to: ";
const END_OF_FILE: &str = "*** End of File";

/// One line of the patch with its 1-indexed number.
#[derive(Clone, Copy)]
struct Line<'a> {
    number: usize,
    text: &'a str,
}

fn error(line: usize, code: PatchErrorCode, message: String) -> PatchError {
    PatchError {
        line,
        code,
        message,
    }
}

/// The lines of the envelope, its wrapper removed.
fn envelope(text: &str) -> Vec<Line<'_>> {
    let mut lines: Vec<Line<'_>> = text
        .split('\n')
        .enumerate()
        .map(|(i, l)| Line {
            number: i + 1,
            text: l.strip_suffix('\r').unwrap_or(l),
        })
        .collect();
    // Surrounding blank lines of the whole text.
    while lines.first().is_some_and(|l| l.text.trim().is_empty()) {
        lines.remove(0);
    }
    while lines.last().is_some_and(|l| l.text.trim().is_empty()) {
        lines.pop();
    }
    let heredoc = |l: &str| {
        let l = l.trim();
        let l = l.strip_prefix("apply_patch").map_or(l, str::trim_start);
        matches!(l, "<<EOF" | "<<'EOF'" | "<<\"EOF\"")
    };
    if lines.len() >= 2
        && heredoc(lines[0].text)
        && lines.last().is_some_and(|l| l.text.trim() == "EOF")
    {
        lines.remove(0);
        lines.pop();
    }
    lines
}

/// Parses `text` into a [`Patch`].
///
/// # Errors
///
/// The first malformed line, with its number and a message saying what was expected.
pub fn parse(text: &str) -> Result<Patch, PatchError> {
    let lines = envelope(text);
    let Some(first) = lines.first() else {
        return Err(error(
            1,
            PatchErrorCode::NoBegin,
            "the patch is empty: it must start with `*** Begin Patch`".to_string(),
        ));
    };
    if first.text.trim() != BEGIN {
        return Err(error(
            first.number,
            PatchErrorCode::NoBegin,
            format!(
                "the first line must be `{BEGIN}`, not `{}`",
                first.text.trim()
            ),
        ));
    }
    let last = lines[lines.len() - 1];
    if lines.len() < 2 || last.text.trim() != END {
        return Err(error(
            last.number,
            PatchErrorCode::NoEnd,
            format!(
                "the last line must be `{END}`, not `{}` (is the patch cut short?)",
                last.text.trim()
            ),
        ));
    }
    let body = &lines[1..lines.len() - 1];
    let mut ops = Vec::new();
    let mut at = 0;
    while at < body.len() {
        let line = body[at];
        let header = line.text.trim();
        if header.is_empty() {
            at += 1;
            continue;
        }
        if let Some(path) = header.strip_prefix(ADD.trim_end()) {
            let path = file_path(line, path)?;
            at += 1;
            let mut text = String::new();
            while let Some(next) = body.get(at) {
                let Some(content) = next.text.strip_prefix('+') else {
                    break;
                };
                text.push_str(content);
                text.push('\n');
                at += 1;
            }
            ops.push(Op::Add {
                line: line.number,
                path,
                text,
            });
        } else if let Some(path) = header.strip_prefix(DELETE.trim_end()) {
            ops.push(Op::Delete {
                line: line.number,
                path: file_path(line, path)?,
            });
            at += 1;
        } else if let Some(path) = header.strip_prefix(UPDATE.trim_end()) {
            let path = file_path(line, path)?;
            at += 1;
            let mut move_to = None;
            if let Some(next) = body.get(at)
                && let Some(dest) = next.text.trim().strip_prefix(MOVE.trim_end())
            {
                move_to = Some(file_path(*next, dest)?);
                at += 1;
            }
            let (hunks, used) = hunks(&body[at..], line.number, &path, move_to.is_some())?;
            at += used;
            ops.push(Op::Update {
                line: line.number,
                path,
                move_to,
                hunks,
            });
        } else {
            return Err(error(
                line.number,
                PatchErrorCode::BadHeader,
                format!(
                    "`{header}` is not an operation: expected `*** Add File: PATH`, `*** Delete File: PATH` or `*** Update File: PATH`"
                ),
            ));
        }
    }
    Ok(Patch { ops })
}

/// The path after a marker (`*** Add File:` …): surrounding whitespace removed; empty is
/// an error.
fn file_path(line: Line<'_>, rest: &str) -> Result<String, PatchError> {
    let path = rest.trim();
    if path.is_empty() {
        return Err(error(
            line.number,
            PatchErrorCode::BadHeader,
            format!("`{}` names no path", line.text.trim()),
        ));
    }
    Ok(path.to_string())
}

/// Whether `line` ends an Update's hunks (another operation, or the end).
fn is_operation(line: &str) -> bool {
    let t = line.trim();
    t.starts_with(ADD.trim_end())
        || t.starts_with(DELETE.trim_end())
        || t.starts_with(UPDATE.trim_end())
}

/// The hunks of one Update, and how many lines they took.
fn hunks(
    lines: &[Line<'_>],
    op_line: usize,
    path: &str,
    renamed: bool,
) -> Result<(Vec<Hunk>, usize), PatchError> {
    let mut hunks: Vec<Hunk> = Vec::new();
    let mut at = 0;
    loop {
        // Blank lines between hunks.
        while lines.get(at).is_some_and(|l| l.text.trim().is_empty()) {
            at += 1;
        }
        let Some(line) = lines.get(at) else { break };
        if is_operation(line.text) {
            break;
        }
        let trimmed = line.text.trim();
        let (anchor, start) = if trimmed == "@@" {
            (None, at + 1)
        } else if let Some(anchor) = trimmed.strip_prefix("@@ ") {
            (Some(anchor.trim().to_string()), at + 1)
        } else if hunks.is_empty() && matches!(line.text.chars().next(), Some(' ' | '-' | '+')) {
            // A first hunk without `@@`.
            (None, at)
        } else {
            return Err(error(
                line.number,
                PatchErrorCode::BadHunkLine,
                format!(
                    "`{}` is neither a hunk (`@@` or `@@ ANCHOR`) nor an operation",
                    line.text
                ),
            ));
        };
        let mut hunk = Hunk {
            line: line.number,
            anchor,
            old: Vec::new(),
            new: Vec::new(),
            end_of_file: false,
        };
        let mut body = 0;
        at = start;
        while let Some(l) = lines.get(at) {
            if l.text.trim() == END_OF_FILE {
                hunk.end_of_file = true;
                at += 1;
                break;
            }
            if is_operation(l.text) || l.text.trim_start().starts_with("@@") {
                break;
            }
            match l.text.chars().next() {
                Some(' ') => {
                    hunk.old.push(l.text[1..].to_string());
                    hunk.new.push(l.text[1..].to_string());
                }
                Some('-') => hunk.old.push(l.text[1..].to_string()),
                Some('+') => hunk.new.push(l.text[1..].to_string()),
                None => {
                    // An empty context line whose leading space the model dropped,
                    // unless only blank lines remain before the next hunk.
                    let rest_blank = lines[at..].iter().take_while(|n| n.text.is_empty()).count();
                    let after = lines.get(at + rest_blank);
                    if after.is_none_or(|n| {
                        is_operation(n.text) || n.text.trim_start().starts_with("@@")
                    }) {
                        at += rest_blank;
                        break;
                    }
                    hunk.old.push(String::new());
                    hunk.new.push(String::new());
                }
                Some(_) => {
                    return Err(error(
                        l.number,
                        PatchErrorCode::BadHunkLine,
                        format!(
                            "`{}`: a hunk line starts with ` ` (context), `-` (removed) or `+` (added)",
                            l.text
                        ),
                    ));
                }
            }
            body += 1;
            at += 1;
        }
        if body == 0 {
            return Err(error(
                hunk.line,
                PatchErrorCode::EmptyHunk,
                "the hunk has no line".to_string(),
            ));
        }
        hunks.push(hunk);
    }
    if hunks.is_empty() && !renamed {
        return Err(error(
            op_line,
            PatchErrorCode::EmptyUpdate,
            format!("`*** Update File: {path}` has no hunk"),
        ));
    }
    Ok((hunks, at))
}
