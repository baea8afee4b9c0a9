//! The prompt given to Pi: the contract's task, the sorted writable files, and the rules.
//! Nothing else: no plan, no hidden tests, no reference patch.

/// Builds the prompt. `writable` must be sorted. The text never starts with `-` or `@`,
/// which Pi's argument parser would misread.
#[must_use]
pub fn build(task: &str, writable: &[&str]) -> String {
    let mut prompt = String::from("Task:\n");
    prompt.push_str(task.trim_end());
    prompt.push_str("\n\nFiles you may edit (every other file is read-only):\n");
    for path in writable {
        prompt.push_str("- ");
        prompt.push_str(path);
        prompt.push('\n');
    }
    prompt.push_str(
        "\nRules:\n\
         - You may read any file in the repository with the read tool.\n\
         - To change a file you must use the edit tool; there is no other way to write.\n\
         - You cannot create, delete or rename files; only the files listed above can be edited.\n\
         - Read a file before editing it. An edit names exact text of the file: it replaces it, or inserts after it; \
         when the text occurs more than once, say which occurrence. All edits of one call apply together or not at all.\n\
         - A refused edit changes nothing and says why, with line numbers; fix the edit (or read the file again) and retry.\n\
         - Stop when the task is done.\n",
    );
    prompt
}

#[cfg(test)]
mod tests {
    use super::build;

    #[test]
    fn lists_the_task_files_and_rules_only() {
        let p = build("-Make it say hello.\n", &["a.rs", "src/b.rs"]);
        assert!(p.starts_with("Task:\n-Make it say hello.\n\nFiles you may edit"));
        assert!(p.contains("\n- a.rs\n- src/b.rs\n"));
        assert!(p.contains("Stop when the task is done."));
    }
}
