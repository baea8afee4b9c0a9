//! Generated worktrees and the reference model of `list` and `search` over them, shared
//! by the native property tests (`tests/toolbox.rs`) and the same tests through the real
//! component (`tests/it/toolbox_component.rs`). The model is plain: the `BTreeMap` of
//! segment lists is already in the walk's order.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use proptest::prelude::*;
use satyrn_mutator_core::gates::is_private;

/// One generated entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    Dir,
    File(String),
    Symlink,
}

/// A generated tree: paths (segment lists) to nodes; every parent is a `Dir`.
pub type Model = BTreeMap<Vec<String>, Node>;

const NAMES: &[&str] = &[
    "a", "b", "a.txt", ".env", "x.rs", ".git", "key.pem", "B", "é",
];
const WORDS: &[&str] = &[
    "fn main",
    "needle",
    "let x",
    "Needle here",
    "",
    "needle needle",
];
/// Where every generated symlink points (outside the root).
pub const LINK_TARGET: &str = "../../outside";

pub fn tree() -> impl Strategy<Value = Model> {
    let entry = (
        prop::collection::vec(0..NAMES.len(), 1..4),
        0..6usize,
        prop::collection::vec(0..WORDS.len(), 0..6),
    );
    prop::collection::vec(entry, 0..40).prop_map(|entries| {
        let mut model = BTreeMap::new();
        for (segments, kind, words) in entries {
            let path: Vec<String> = segments.iter().map(|&i| NAMES[i].to_string()).collect();
            let parents_ok = (1..path.len()).all(|n| match model.get(&path[..n]) {
                None | Some(Node::Dir) => true,
                Some(_) => false,
            });
            if !parents_ok || model.contains_key(&path) {
                continue;
            }
            for n in 1..path.len() {
                model.entry(path[..n].to_vec()).or_insert(Node::Dir);
            }
            let lines: Vec<&str> = words.iter().map(|&w| WORDS[w]).collect();
            let node = match kind {
                0 => Node::Dir,
                1 => Node::Symlink,
                _ => Node::File(lines.join("\n")),
            };
            model.insert(path, node);
        }
        model
    })
}

pub fn materialize(root: &Path, model: &Model) {
    for (segments, node) in model {
        let path = root.join(segments.join("/"));
        match node {
            Node::Dir => fs::create_dir_all(&path).expect("mkdir"),
            Node::File(text) => fs::write(&path, text).expect("write"),
            Node::Symlink => std::os::unix::fs::symlink(LINK_TARGET, &path).expect("symlink"),
        }
    }
}

pub fn hidden_from_walk(segments: &[String], private: &[String]) -> bool {
    segments.iter().any(|s| s.eq_ignore_ascii_case(".git"))
        || (1..=segments.len()).any(|n| is_private(&segments[..n].join("/"), private))
}

/// The model's listing: (path, kind, size, writable) in walk order.
pub fn expected_list(
    model: &Model,
    writable: &[String],
    private: &[String],
) -> Vec<(String, &'static str, u64, bool)> {
    model
        .iter()
        .filter(|(s, _)| !hidden_from_walk(s, private))
        .map(|(s, node)| {
            let path = s.join("/");
            let (kind, size) = match node {
                Node::Dir => ("directory", 0),
                Node::File(t) => ("file", t.len() as u64),
                Node::Symlink => ("symlink", LINK_TARGET.len() as u64),
            };
            let writable =
                kind == "file" && satyrn_mutator_core::fnmatch::matches_any(&path, writable);
            (path, kind, size, writable)
        })
        .collect()
}

/// A matched file: path, matching line numbers, revision (hex).
pub type Found = (String, Vec<u32>, String);

/// The model's search for a literal: the matched files (path, matching line numbers,
/// revision hex) and the skipped symlinks, in walk order.
pub fn expected_search(
    model: &Model,
    private: &[String],
    needle: &str,
) -> (Vec<Found>, Vec<String>) {
    let mut found = Vec::new();
    let mut skipped = Vec::new();
    for (segments, node) in model {
        if hidden_from_walk(segments, private) {
            continue;
        }
        match node {
            Node::File(text) => {
                let lines: Vec<u32> = text
                    .split('\n')
                    .enumerate()
                    .filter(|(_, l)| l.contains(needle))
                    .map(|(i, _)| i as u32 + 1)
                    .collect();
                if !lines.is_empty() {
                    let sha = satyrn_mutator_core::revision::Revision::of(text.as_bytes()).to_hex();
                    found.push((segments.join("/"), lines, sha));
                }
            }
            Node::Symlink => skipped.push(segments.join("/")),
            Node::Dir => {}
        }
    }
    (found, skipped)
}
