//! Paths as agents write them (`.`, `./src/a.rs`, `src/`, an absolute path inside the
//! worktree), made canonical in every operation's arguments before any gate, by the one rule
//! of [`satyrn_mutator_core::path::as_agents_write`]. The agent-facing front ends use it:
//! the MCP server for every tool, and a `protocol` request that asks for it with
//! `"paths": "agent"` (Pi's tools do); otherwise `protocol` stays strict.

use super::{
    ChangeSetArgs, DeleteArgs, EditArgs, ListArgs, PatchArgs, ReadArgs, ReplaceArgs, SearchArgs,
    WriteArgs,
};
use satyrn_mutator_core::path::as_agents_write;

/// Arguments whose paths an agent wrote.
pub trait AgentPaths {
    /// Rewrites every path of the arguments to its canonical worktree-relative form, given
    /// `root`, the worktree's absolute path as the agent sees it (no trailing `/`). A shape
    /// the rule does not cover is left as written, for the strict checks to refuse. An
    /// optional directory that names the root itself becomes absent (the default: the root).
    fn as_agents_write(&mut self, root: &str);
}

fn required(path: &mut String, root: &str) {
    let canonical = as_agents_write(path, root);
    if canonical.len() != path.len() {
        *path = canonical.to_owned();
    }
}

fn optional(path: &mut Option<String>, root: &str) {
    if let Some(p) = path {
        required(p, root);
        if p.is_empty() {
            *path = None;
        }
    }
}

impl AgentPaths for ReadArgs {
    fn as_agents_write(&mut self, root: &str) {
        required(&mut self.path, root);
    }
}

impl AgentPaths for ReplaceArgs {
    fn as_agents_write(&mut self, root: &str) {
        required(&mut self.path, root);
    }
}

impl AgentPaths for EditArgs {
    fn as_agents_write(&mut self, root: &str) {
        required(&mut self.path, root);
    }
}

impl AgentPaths for ListArgs {
    fn as_agents_write(&mut self, root: &str) {
        optional(&mut self.path, root);
    }
}

impl AgentPaths for SearchArgs {
    fn as_agents_write(&mut self, root: &str) {
        optional(&mut self.path, root);
    }
}

impl AgentPaths for WriteArgs {
    fn as_agents_write(&mut self, root: &str) {
        required(&mut self.path, root);
    }
}

impl AgentPaths for DeleteArgs {
    fn as_agents_write(&mut self, root: &str) {
        required(&mut self.path, root);
    }
}

impl AgentPaths for ChangeSetArgs {
    fn as_agents_write(&mut self, root: &str) {
        for entry in &mut self.ops {
            required(&mut entry.path, root);
            if let Some(to) = &mut entry.to {
                required(to, root);
            }
        }
    }
}

impl AgentPaths for PatchArgs {
    /// The patch's own paths are taken at decision time (`agent_root`); the revisions'
    /// and views' keys here.
    fn as_agents_write(&mut self, root: &str) {
        self.expected_sha256 = canonical_keys(std::mem::take(&mut self.expected_sha256), root);
        self.seen = canonical_keys(std::mem::take(&mut self.seen), root);
        self.agent_root = Some(root.to_owned());
    }
}

fn canonical_keys<V>(
    map: std::collections::BTreeMap<String, V>,
    root: &str,
) -> std::collections::BTreeMap<String, V> {
    map.into_iter()
        .map(|(path, value)| (as_agents_write(&path, root).to_owned(), value))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::AgentPaths;
    use crate::{ListArgs, PatchArgs, ReadArgs};

    #[test]
    fn every_spelling_of_one_file_becomes_its_canonical_path_and_the_root_the_default() {
        for raw in ["src/a.rs", "./src/a.rs", "/w/repo/src/a.rs", "src/a.rs/"] {
            let mut args = ReadArgs {
                path: raw.to_owned(),
                offset: None,
                limit: None,
            };
            args.as_agents_write("/w/repo");
            assert_eq!(args.path, "src/a.rs", "{raw}");
        }
        for raw in [".", "./", "/w/repo", "/w/repo/"] {
            let mut args = ListArgs {
                path: Some(raw.to_owned()),
                pattern: None,
                recursive: false,
                cursor: None,
                limit: None,
            };
            args.as_agents_write("/w/repo");
            assert_eq!(args.path, None, "{raw}");
        }
        let mut args = ReadArgs {
            path: "/w/repository/x".to_owned(),
            offset: None,
            limit: None,
        };
        args.as_agents_write("/w/repo");
        assert_eq!(
            args.path, "/w/repository/x",
            "left for the strict rules to refuse"
        );
    }

    #[test]
    fn a_patch_takes_its_root_and_canonical_revision_keys() {
        let mut args = PatchArgs {
            patch: String::new(),
            expected_sha256: [("./a".to_owned(), "x".to_owned())].into(),
            seen: [("/w/b".to_owned(), crate::Seen::Part)].into(),
            agent_root: None,
        };
        args.as_agents_write("/w");
        assert_eq!(args.expected_sha256.keys().collect::<Vec<_>>(), ["a"]);
        assert_eq!(args.seen.keys().collect::<Vec<_>>(), ["b"]);
        assert_eq!(args.agent_root.as_deref(), Some("/w"));
    }
}
