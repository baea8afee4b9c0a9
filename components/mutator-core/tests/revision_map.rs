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

#[path = "common/cases.rs"]
mod cases;

proptest! {
    #![proptest_config(cases::config(128))]

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

/// A [`Disk`] whose open directories are counted while they live.
struct Counting {
    disk: Disk,
    live: std::rc::Rc<std::cell::Cell<usize>>,
    most: std::cell::Cell<usize>,
}

struct Counted {
    path: std::path::PathBuf,
    live: std::rc::Rc<std::cell::Cell<usize>>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.live.set(self.live.get() - 1);
    }
}

impl Counting {
    fn counted(&self, path: std::path::PathBuf) -> Counted {
        self.live.set(self.live.get() + 1);
        self.most.set(self.most.get().max(self.live.get()));
        Counted {
            path,
            live: self.live.clone(),
        }
    }
}

use satyrn_mutator_core::tree::{Entries, EntryKind, Tree};
use satyrn_mutator_core::worktree::NotEditable;

impl Tree for Counting {
    type Dir = Counted;
    fn root(&self) -> Result<Counted, NotEditable> {
        Ok(self.counted(self.disk.root()?))
    }
    fn open_dir(&self, dir: &Counted, name: &str, shown: &str) -> Result<Counted, NotEditable> {
        Ok(self.counted(self.disk.open_dir(&dir.path, name, shown)?))
    }
    fn entries(&self, dir: &Counted, shown: &str) -> Result<Entries, NotEditable> {
        self.disk.entries(&dir.path, shown)
    }
    fn stat(
        &self,
        dir: &Counted,
        name: &str,
        shown: &str,
    ) -> Result<Option<(EntryKind, u64)>, NotEditable> {
        self.disk.stat(&dir.path, name, shown)
    }
    fn read_file(
        &self,
        dir: &Counted,
        name: &str,
        shown: &str,
        max_len: u64,
    ) -> Result<Vec<u8>, NotEditable> {
        self.disk.read_file(&dir.path, name, shown, max_len)
    }
}

/// A tree deeper than the kept chain: every file's revision is still `revision`'s, and no
/// more than `MAX_KEPT_DIRS` + 3 directories (the root, the kept chain, one deep one and
/// the next being opened) are ever open at once, whatever the depth.
#[test]
fn a_tree_deeper_than_the_kept_chain_keeps_few_directories_open() {
    use satyrn_mutator_core::revision_map::MAX_KEPT_DIRS;
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    let depth = MAX_KEPT_DIRS * 3;
    let mut paths = Vec::new();
    let mut rel = String::new();
    for level in 0..depth {
        rel.push_str(if rel.is_empty() { "d" } else { "/d" });
        std::fs::create_dir_all(root.join(&rel)).expect("mkdir");
        if level % 7 == 0 || level + 1 == depth {
            let file = format!("{rel}/f{level}.txt");
            std::fs::write(root.join(&file), format!("{level}\n")).expect("write");
            paths.push(file);
        }
    }
    paths.push("top.txt".to_string());
    std::fs::write(root.join("top.txt"), "top\n").expect("write");
    paths.sort();
    let writable = vec!["*".to_string()];
    let counting = Counting {
        disk: Disk(root.clone()),
        live: std::rc::Rc::new(std::cell::Cell::new(0)),
        most: std::cell::Cell::new(0),
    };
    let batched = revisions(&counting, &paths, &writable, &[]);
    let disk = Disk(root);
    for (path, got) in paths.iter().zip(&batched) {
        let one = replace::revision(&disk, path, &writable, &[]);
        assert!(one.is_ok(), "{path}: {one:?}");
        assert_eq!(got, &one, "{path}");
    }
    assert_eq!(
        counting.live.get(),
        0,
        "every directory is closed after the call"
    );
    assert!(
        counting.most.get() <= MAX_KEPT_DIRS + 3,
        "{} directories were open at once for a tree {depth} deep",
        counting.most.get()
    );
    assert!(
        counting.most.get() > MAX_KEPT_DIRS,
        "the chain is kept up to its bound"
    );
}
