//! `list` and `search` through the real wasm component, on the generated trees and against
//! the reference model that the core library's native property tests use
//! (`components/mutator-core/tests/common/tree_model.rs`): the shipped artifact, walking its
//! read-only WASI preopen, is held to the same model.

use proptest::prelude::*;
use satyrn_engine::{ListRequest, Loaded, SearchRequest, SkipReason};
use satyrn_operation::kind_name;

#[path = "../../components/mutator-core/tests/common/tree_model.rs"]
mod tree_model;

use tree_model::{expected_list, expected_search, materialize, tree};

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_string()).collect()
}

proptest! {
    #![proptest_config(crate::cases::config(24))]

    #[test]
    fn list_and_search_through_the_component_match_the_model(
        model in tree(),
        limit in 1u32..5,
        max in 1u32..4,
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("root");
        std::fs::create_dir(&root).expect("root");
        materialize(&root, &model);
        // The worktree's directory as the one preopen (the model's own `.git` entries
        // stand for git's administrative directory).
        let fd = std::os::fd::OwnedFd::from(std::fs::File::open(&root).expect("open root"));
        let loaded = Loaded::new().expect("engine");
        let mut mutator = loaded.instantiate(&fd).expect("instantiate");
        let writable = strings(&["*.rs", "a/*"]);
        let private = strings(&[".env", "*.pem", "*/b"]);

        let mut listed = Vec::new();
        let mut cursor = None;
        for round in 0.. {
            prop_assert!(round < 1000, "the listing did not end");
            let page = mutator
                .list(&ListRequest {
                    path: None,
                    pattern: None,
                    recursive: true,
                    cursor: cursor.take(),
                    limit: Some(limit),
                    writable_paths: writable.clone(),
                    private_paths: private.clone(),
                })
                .expect("no trap")
                .expect("list");
            prop_assert!(page.entries.len() <= limit as usize);
            listed.extend(
                page.entries
                    .into_iter()
                    .map(|e| (e.path, kind_name(e.kind), e.size, e.writable)),
            );
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        prop_assert_eq!(listed, expected_list(&model, &writable, &private));

        let mut found = Vec::new();
        let mut skipped = Vec::new();
        let mut cursor = None;
        for round in 0.. {
            prop_assert!(round < 1000, "the search did not end");
            let page = mutator
                .search(&SearchRequest {
                    path: None,
                    query: "needle".to_string(),
                    regex: false,
                    ignore_case: false,
                    glob: None,
                    context: None,
                    max_matches: Some(max),
                    cursor: cursor.take(),
                    writable_paths: writable.clone(),
                    private_paths: private.clone(),
                })
                .expect("no trap")
                .expect("search");
            for f in page.files {
                let lines: Vec<u32> = f.lines.iter().filter(|l| l.matched).map(|l| l.line).collect();
                found.push((f.path, lines, f.sha256));
            }
            for s in page.skipped {
                prop_assert!(matches!(s.reason, SkipReason::Symlink), "{:?}", s);
                skipped.push(s.path);
            }
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        let (expected_found, expected_skipped) = expected_search(&model, &private, "needle");
        prop_assert_eq!(found, expected_found);
        prop_assert_eq!(skipped, expected_skipped);
    }
}
