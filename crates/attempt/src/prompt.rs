//! The prompt given to Pi: the contract's task, the writable patterns, the writable files
//! (up to a bound), and the rules. Nothing else: no plan, no hidden tests, no reference patch.
//!
//! The prompt stays small whatever the repository: at most [`MAX_TASK_BYTES`] of task, the
//! first [`MAX_LISTED_FILES`] writable files in byte order (and at most
//! [`MAX_LISTING_BYTES`] of them), the first [`MAX_LISTED_PATTERNS`] patterns, and the total
//! counts. Beyond the bound it tells the model how to find files: every path that matches a
//! writable pattern is editable (and may be created), and `ls`, `find`, `grep` and `read`
//! take any path. It reaches Pi on its standard
//! input, so no path or task text can be read as an option.

use std::fmt::Write;

/// The longest task accepted: 100 KiB. A longer one is refused before Pi starts.
pub const MAX_TASK_BYTES: usize = 100 * 1024;
/// At most this many writable files are listed by name.
pub const MAX_LISTED_FILES: usize = 200;
/// At most this many bytes of file names are listed.
pub const MAX_LISTING_BYTES: usize = 16 * 1024;
/// At most this many writable patterns are listed.
pub const MAX_LISTED_PATTERNS: usize = 50;

/// Why no prompt can be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the task is {task_bytes} bytes, over the {MAX_TASK_BYTES}-byte limit of a prompt; shorten the task"
)]
pub struct PromptError {
    /// The task's size in bytes.
    pub task_bytes: usize,
}

/// Builds the prompt. `writable` must be sorted (byte order); `patterns` are the contract's
/// `writable_paths`.
///
/// # Errors
///
/// [`PromptError`] when `task` (without trailing whitespace) is longer than
/// [`MAX_TASK_BYTES`].
pub fn build(task: &str, patterns: &[String], writable: &[&str]) -> Result<String, PromptError> {
    let task = task.trim_end();
    if task.len() > MAX_TASK_BYTES {
        return Err(PromptError {
            task_bytes: task.len(),
        });
    }
    let mut prompt = String::from("Task:\n");
    prompt.push_str(task);
    prompt.push_str("\n\nFiles you may edit (every other file is read-only):\n");
    let mut listed = 0;
    let mut listing_bytes = 0;
    for path in writable.iter().take(MAX_LISTED_FILES) {
        if listing_bytes + path.len() > MAX_LISTING_BYTES {
            break;
        }
        listing_bytes += path.len();
        listed += 1;
        prompt.push_str("- ");
        prompt.push_str(path);
        prompt.push('\n');
    }
    let bounded = listed < writable.len();
    if bounded {
        let _ = writeln!(
            prompt,
            "- ... and {} more: {} files in all. Every tracked file that matches a writable pattern below is editable.",
            writable.len() - listed,
            writable.len()
        );
    }
    prompt
        .push_str("\nWritable patterns of the task contract (fnmatch; `*` matches across `/`):\n");
    for pattern in patterns.iter().take(MAX_LISTED_PATTERNS) {
        let _ = writeln!(prompt, "- {pattern}");
    }
    if patterns.len() > MAX_LISTED_PATTERNS {
        let _ = writeln!(
            prompt,
            "- ... and {} more patterns",
            patterns.len() - MAX_LISTED_PATTERNS
        );
    }
    prompt.push_str(
        "\nRules:\n\
         - You may read any file in the repository with the read tool, and find files with ls, find and grep.\n\
         - To change a file use the edit tool; to create a file, or rewrite a whole file you have read, use write; \
         to remove a file you have read, use delete. There is no other way to write.\n\
         - You may create, change and delete only files whose path matches a writable pattern below; every other path is read-only, \
         and private files (secrets) are never shown.\n\
         - Read a file before editing it. An edit names exact text of the file: it replaces it, or inserts after it; \
         when the text occurs more than once, say which occurrence. All edits of one call apply together or not at all.\n\
         - A refused edit changes nothing and says why, with line numbers; fix the edit (or read the file again) and retry.\n",
    );
    if bounded {
        prompt.push_str(
            "- Not every editable file is listed: to find one, use find or grep, or read the files the task or the listed files name \
             (paths are relative to the repository root); a change to a path that is not writable is refused, not applied.\n",
        );
    }
    prompt.push_str("- Stop when the task is done.\n");
    Ok(prompt)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patterns() -> Vec<String> {
        vec!["src/*.rs".to_string()]
    }

    #[test]
    fn lists_the_task_files_patterns_and_rules_only() {
        let p = build("-Make it say hello.\n", &patterns(), &["a.rs", "src/b.rs"]).expect("prompt");
        assert!(p.starts_with("Task:\n-Make it say hello.\n\nFiles you may edit"));
        assert!(p.contains("\n- a.rs\n- src/b.rs\n\nWritable patterns"));
        assert!(p.contains("\n- src/*.rs\n\nRules:\n"));
        assert!(p.ends_with("- Stop when the task is done.\n"));
        assert!(!p.contains("more:"), "a short list is complete");
        for tool in [
            "read tool",
            "ls, find and grep",
            "edit tool",
            "use write",
            "use delete",
        ] {
            assert!(p.contains(tool), "the rules name {tool}");
        }
        assert!(p.contains(
            "You may create, change and delete only files whose path matches a writable pattern"
        ));
    }

    #[test]
    fn the_listing_is_bounded_by_count_and_bytes_and_says_so() {
        let names: Vec<String> = (0..20_000)
            .map(|i| format!("d{}/f{i:05}.rs", i % 100))
            .collect();
        let mut sorted: Vec<&str> = names.iter().map(String::as_str).collect();
        sorted.sort_unstable();
        let p = build("t", &patterns(), &sorted).expect("prompt");
        let listed = p.lines().filter(|l| l.starts_with("- d")).count();
        assert_eq!(listed, MAX_LISTED_FILES);
        assert!(p.contains(&format!(
            "- ... and {} more: 20000 files in all.",
            20_000 - MAX_LISTED_FILES
        )));
        assert!(p.contains("Not every editable file is listed"));
        assert!(p.len() < 8 * 1024, "{} bytes", p.len());
        let long: Vec<String> = (0..100)
            .map(|i| format!("{i:03}{}", "x".repeat(1000)))
            .collect();
        let long: Vec<&str> = long.iter().map(String::as_str).collect();
        let p = build("t", &patterns(), &long).expect("prompt");
        assert_eq!(p.lines().filter(|l| l.ends_with("xxx")).count(), 16);
        let many: Vec<String> = (0..60).map(|i| format!("p{i}/*")).collect();
        let p = build("t", &many, &["a"]).expect("prompt");
        assert!(p.contains("- p49/*\n- ... and 10 more patterns\n"));
    }

    #[test]
    fn a_task_at_the_limit_is_accepted_and_one_byte_over_refused() {
        let at = "t".repeat(MAX_TASK_BYTES);
        assert!(build(&format!("{at}\n\n"), &patterns(), &["a"]).is_ok());
        let over = format!("{at}u");
        assert_eq!(
            build(&over, &patterns(), &["a"]),
            Err(PromptError {
                task_bytes: MAX_TASK_BYTES + 1
            })
        );
    }
}
