//! The text a model reads for the toolbox tools' results (the structured content carries
//! the same result as JSON).

use satyrn_mutator_core::path::shown;

use satyrn_operation::{ListResult, SearchResult, WriteResult};

/// One entry per line: `path/` for a directory, `path -> (symlink)` for a symlink,
/// `path (N bytes)` for a file, `[writable]` when the contract declares it. Every name from
/// the worktree is [`shown`] (a control, bidirectional or invisible character escaped).
pub fn list(listed: &ListResult) -> String {
    let mut text = String::new();
    for e in &listed.entries {
        let path = shown(&e.path);
        let line = match e.kind {
            "directory" => format!("{path}/"),
            "symlink" => format!("{path} (symlink, not followed)"),
            "file" => format!("{path} ({} bytes)", e.size),
            _ => format!("{path} (special file)"),
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
    if listed.unreadable > 0 {
        text.push_str(&format!(
            "{} entries could not be read.\n",
            listed.unreadable
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
        text.push_str(&format!("{} (sha256 {})\n", shown(&f.path), f.sha256));
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
        text.push_str(&format!("skipped {} ({})\n", shown(&s.path), s.reason));
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
    format!(
        "{verb} {} (sha256 {}).",
        shown(&written.path),
        written.sha256
    )
}

/// A published change set: one line per path.
pub fn change_set(done: &satyrn_operation::ChangeSetResult) -> String {
    let mut text = format!(
        "Changed {} file{} together:",
        done.files.len(),
        if done.files.len() == 1 { "" } else { "s" }
    );
    for file in &done.files {
        let status = match file.status {
            satyrn_operation::FileStatus::Created => "created",
            satyrn_operation::FileStatus::Modified => "modified",
            satyrn_operation::FileStatus::Deleted => "deleted",
        };
        let from = file
            .moved_from
            .as_ref()
            .map_or(String::new(), |from| format!(", moved from {from}"));
        match &file.sha256 {
            Some(sha) => {
                text.push_str(&format!("\n- {} ({status}{from}, sha256 {sha})", file.path))
            }
            None => text.push_str(&format!("\n- {} ({status})", file.path)),
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use satyrn_operation::ListedEntry;

    /// The cases every rendering (this one and the Pi package's) is held to.
    const SHOWN_NAMES: &str = include_str!("../../../tests/fixtures/shown-names.json");

    #[test]
    fn names_are_shown_as_the_shared_cases_say() {
        let cases: serde_json::Value = serde_json::from_str(SHOWN_NAMES).expect("fixture");
        let cases = cases["cases"].as_array().expect("cases");
        assert!(cases.len() > 10);
        for case in cases {
            let (name, expected) = (
                case[0].as_str().expect("name"),
                case[1].as_str().expect("shown"),
            );
            assert_eq!(shown(name), expected, "{name:?}");
        }
    }

    /// A name with a line feed is one entry on one line, never a fake second entry.
    #[test]
    fn a_listed_name_with_a_line_feed_stays_on_its_line() {
        let entry = |path: &str| ListedEntry {
            path: path.to_string(),
            kind: "file",
            size: 1,
            writable: false,
        };
        let listed = ListResult {
            entries: vec![
                entry("a.txt\nsecrets.txt (9 bytes) [writable]"),
                entry("b.txt"),
            ],
            next_cursor: None,
            hidden: 0,
            unreadable: 0,
            notice: None,
        };
        let text = list(&listed);
        assert_eq!(
            text,
            "a.txt\\u{000A}secrets.txt (9 bytes) [writable] (1 bytes)\nb.txt (1 bytes)\n"
        );
    }
}
