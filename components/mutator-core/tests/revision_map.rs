//! `revision_map::revisions` natively, on generated trees on the real file system: for
//! every path, in any order (so the shared directory chain is left, re-entered and cut
//! short by a symlink or a file), exactly what `replace::revision` gives one path at a
//! time. The component runs the same code through its WASI preopen
//! (`tests/it/revisions_component.rs`).

use proptest::prelude::*;
use satyrn_mutator_core::replace;
use satyrn_mutator_core::revision_map::revisions;

mod common;
use common::disk::Disk;
use common::tree_model::{materialize, tree};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn revisions_is_revision_path_by_path(
        model in tree(),
        picks in prop::collection::vec((any::<prop::sample::Index>(), 0..3usize), 0..60),
        private in prop::sample::subsequence(vec![".env", "a", "key.pem"], 0..2),
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("root");
        std::fs::create_dir(&root).expect("mkdir");
        materialize(&root, &model);
        let known: Vec<String> = model.keys().map(|s| s.join("/")).collect();
        // Existing paths in a random order, some repeated, some with a missing leaf or
        // one segment more (beneath a file or a symlink), and a few malformed ones.
        let mut paths: Vec<String> = vec!["".into(), "a//b".into(), "../a".into()];
        for (index, variant) in picks {
            if known.is_empty() {
                break;
            }
            let path = index.get(&known);
            paths.push(match variant {
                0 => path.clone(),
                1 => format!("{path}/x.rs"),
                _ => format!("{path}.missing"),
            });
        }
        let private: Vec<String> = private.into_iter().map(String::from).collect();
        let disk = Disk(root);
        for writable in [vec!["*".to_string()], vec!["*.txt".to_string(), "a/*".to_string()]] {
            let batched = revisions(&disk, &paths, &writable, &private);
            prop_assert_eq!(batched.len(), paths.len());
            for (path, got) in paths.iter().zip(batched) {
                let one = replace::revision(&disk, path, &writable, &private);
                prop_assert_eq!(got, one, "`{}`", path);
            }
        }
    }
}
