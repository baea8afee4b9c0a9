//! What the model is told at the start of a confined run: which tools change files
//! (satyrn's), that every other write fails by design, and what the shell is still for.
//!
//! Written into the file each agent reads as its user-level instructions (in the scratch
//! home, never in the worktree), ahead of the user's own instructions from that file.

/// The first line of the note: how a test (and a reader of a transcript) recognises it.
pub const HEADING: &str = "# satyrn: this session is confined";

/// The one line added to a failed built-in tool's result where the agent lets a hook add
/// one (Claude Code's `PostToolUseFailure`), with `{edit}` for the agent's name of
/// satyrn's `edit` tool.
const HINT: &str = "If this failed with EACCES or EPERM (Permission denied, Operation not permitted), \
                    that is satyrn's confinement, by design: change files with {edit} (or {write}, {delete}) instead; do not retry the write.";

/// The note, with each tool named as `name` names it to the model, and the contract's
/// scratch paths.
#[must_use]
pub fn text(name: &dyn Fn(&str) -> String, scratch_paths: &[String]) -> String {
    let scratch = if scratch_paths.is_empty() {
        "(the contract declares none)".to_owned()
    } else {
        scratch_paths
            .iter()
            .map(|p| format!("`{p}/`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "{HEADING}\n\n\
         The kernel (Linux Landlock, through `satyrn-host confine`) holds every process of this \
         session to the task's contract.\n\n\
         - Change files only with satyrn's tools: {edit} (anchored replacements), {write} (create \
         or replace a whole file), {delete}, and {apply_patch} (several files in one patch, all          together or not at all). They check that the contract declares the path \
         writable and that you read its current revision; a refusal names its reason and how to \
         recover.\n\
         - Read with {read}, {list} and {search}; {boundary} shows the task and the writable \
         patterns. Your own read tools and the shell can read too, except the files the contract \
         keeps private.\n\
         - Every other write fails by design with EACCES or EPERM (\"Permission denied\", \
         \"Operation not permitted\"): your own edit, write and patch tools, shell redirections, \
         `sed -i`, `rm`, `mv`, `git commit`, `git stash`, `git checkout`. Do not retry such a \
         write and do not look for a way around it; there is none. Use {edit} instead.\n\
         - The shell still runs: use it to read code, build and run the tests. Builds and tests \
         may write only to the scratch paths {scratch}, your home and `$TMPDIR`.\n",
        edit = name("edit"),
        write = name("write"),
        delete = name("delete"),
        read = name("read"),
        list = name("list"),
        search = name("search"),
        boundary = name("boundary"),
        apply_patch = name("apply_patch"),
    )
}

/// The hint line ([`HINT`]) with the tools named as `name` names them.
#[must_use]
pub fn hint(name: &dyn Fn(&str) -> String) -> String {
    HINT.replace("{edit}", &name("edit"))
        .replace("{write}", &name("write"))
        .replace("{delete}", &name("delete"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_note_names_every_tool_and_the_scratch_paths() {
        let name = |t: &str| format!("<{t}>");
        let text = super::text(&name, &["target".to_owned()]);
        for tool in [
            "edit",
            "write",
            "delete",
            "read",
            "list",
            "search",
            "boundary",
            "apply_patch",
        ] {
            assert!(text.contains(&format!("<{tool}>")), "{tool} missing");
        }
        assert!(text.starts_with(super::HEADING));
        assert!(text.contains("`target/`"));
        assert!(!text.contains('{'), "an unfilled placeholder: {text}");
        let hint = super::hint(&name);
        assert!(hint.contains("<edit>") && !hint.contains('{'));
    }
}
