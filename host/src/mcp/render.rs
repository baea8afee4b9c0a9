//! The text a model reads for the toolbox tools' results (the structured content carries
//! the same result as JSON).

use crate::operation::{ListResult, SearchResult, WriteResult};

/// One entry per line: `path/` for a directory, `path -> (symlink)` for a symlink,
/// `path (N bytes)` for a file, `[writable]` when the contract declares it.
pub fn list(listed: &ListResult) -> String {
    let mut text = String::new();
    for e in &listed.entries {
        let line = match e.kind {
            "directory" => format!("{}/", e.path),
            "symlink" => format!("{} (symlink, not followed)", e.path),
            "file" => format!("{} ({} bytes)", e.path, e.size),
            _ => format!("{} (special file)", e.path),
        };
        text.push_str(&line);
        if e.writable {
            text.push_str(" [writable]");
        }
        text.push('\n');
    }
    if listed.entries.is_empty() {
        text.push_str("(no entries)\n");
    }
    if listed.hidden > 0 {
        text.push_str(&format!(
            "{} private entries are not shown.\n",
            listed.hidden
        ));
    }
    if let Some(notice) = &listed.notice {
        text.push_str(notice);
        text.push('\n');
    }
    text
}

/// Per matched file: `path (sha256 …)`, then `N: text` for a matching line and `N- text`
/// for context, as `grep -n` prints them; then what was skipped.
pub fn search(found: &SearchResult) -> String {
    let mut text = String::new();
    for f in &found.files {
        text.push_str(&format!("{} (sha256 {})\n", f.path, f.sha256));
        for l in &f.lines {
            let mark = if l.matched { ':' } else { '-' };
            text.push_str(&format!("{}{mark} {}\n", l.line, l.text));
        }
        if f.omitted > 0 {
            text.push_str(&format!("({} more matching lines not shown)\n", f.omitted));
        }
    }
    if found.files.is_empty() {
        text.push_str(&format!(
            "No match in {} searched files.\n",
            found.files_searched
        ));
    }
    for s in &found.skipped {
        text.push_str(&format!("skipped {} ({})\n", s.path, s.reason));
    }
    if found.skipped_omitted > 0 {
        text.push_str(&format!("{} more files skipped\n", found.skipped_omitted));
    }
    if let Some(notice) = &found.notice {
        text.push_str(notice);
        text.push('\n');
    }
    text
}

/// `Created path` or `Wrote path`, with the new revision.
pub fn write(written: &WriteResult) -> String {
    let verb = if written.created { "Created" } else { "Wrote" };
    format!("{verb} {} (sha256 {}).", written.path, written.sha256)
}
