//! The revision map: every tracked path that the contract declares writable and that is a
//! single-link regular file reached without any symlink, with its SHA-256.
//!
//! Tracked paths come from `git ls-files -z` (NUL-delimited, as bytes); matching and the
//! no-follow walk are the component's (`revisions`: `revision` of many paths in one call),
//! not a second matcher in the host. On a large repository the paths are shared between a
//! few threads, each with its own instance and one call: hashing in the component is most
//! of an attempt's start-up.

use std::collections::BTreeMap;
use std::path::Path;

use satyrn_contract::repo::RepoRoot;
use satyrn_engine::{Loaded, RevisionError};
use satyrn_git::{self as git, Git};

/// The most threads that hash at once: 4 (each runs its own component instance).
pub const MAX_THREADS: usize = 4;

/// Below this many tracked paths the map is built on the calling thread alone: 256.
const PARALLEL_FROM: usize = 256;

/// Builds the map for the worktree at `root`: the tracked paths are split into one
/// contiguous share per thread (as many as the machine's available parallelism, at most
/// [`MAX_THREADS`]), each decided by its own component instance.
///
/// # Errors
///
/// A message when git or the component fails.
pub fn map(
    root: &RepoRoot,
    writable: &[String],
    private: &[String],
) -> Result<BTreeMap<String, String>, String> {
    let tracked = Git::at(root.path())
        .run(&["ls-files", "-z", "--cached", "--full-name"])
        .map_err(|e| format!("listing tracked files failed: {e}"))?;
    let mut seen = std::collections::BTreeSet::new();
    let paths: Vec<&str> = git::split_z(&tracked)
        .into_iter()
        // A path that is not UTF-8 cannot be named in a contract or a request.
        .filter_map(|raw| std::str::from_utf8(raw).ok())
        // An unmerged path is listed once per stage.
        .filter(|path| seen.insert(*path))
        .collect();
    let loaded = Loaded::new().map_err(|e| e.to_string())?;
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .clamp(1, MAX_THREADS);
    if threads == 1 || paths.len() < PARALLEL_FROM {
        return share(&loaded, root, &paths, (writable, private));
    }
    let per_thread = paths.len().div_ceil(threads);
    let shares: Vec<Result<BTreeMap<String, String>, String>> = std::thread::scope(|scope| {
        let workers: Vec<_> = paths
            .chunks(per_thread)
            .map(|chunk| scope.spawn(|| share(&loaded, root, chunk, (writable, private))))
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|_| Err("a revision thread panicked".to_string()))
            })
            .collect()
    });
    let mut revisions = BTreeMap::new();
    for share in shares {
        revisions.append(&mut share?);
    }
    Ok(revisions)
}

/// The revisions of `paths` that are declared writable, not private and editable, from one
/// instance and one call of the component (`revisions`: each directory opened once, each
/// file opened, checked and read with the fewest calls).
fn share(
    loaded: &Loaded,
    root: &RepoRoot,
    paths: &[&str],
    (writable, private): (&[String], &[String]),
) -> Result<BTreeMap<String, String>, String> {
    let mut mutator = loaded.instantiate(root.dir()).map_err(|e| e.to_string())?;
    let results = mutator
        .revisions(paths, writable, private)
        .map_err(|e| e.to_string())?;
    if results.len() != paths.len() {
        return Err(format!(
            "the component returned {} revisions for {} paths",
            results.len(),
            paths.len()
        ));
    }
    let mut revisions = BTreeMap::new();
    for (path, result) in paths.iter().zip(results) {
        match result {
            Ok(sha) => {
                revisions.insert((*path).to_string(), sha);
            }
            Err(
                RevisionError::Undeclared
                | RevisionError::Private
                | RevisionError::NotEditable(_)
                | RevisionError::InvalidRequest(_),
            ) => {}
        }
    }
    Ok(revisions)
}

/// Whether `path` is tracked content the map could name (for messages).
#[must_use]
pub fn describe_empty(repo: &Path) -> String {
    format!(
        "no tracked regular file in {} matches writable_paths (symlinks and hard-linked files are never editable)",
        repo.display()
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::process::Command;

    use satyrn_mutator_core::revision::Revision;

    use super::{PARALLEL_FROM, map};
    use satyrn_contract::repo::RepoRoot;

    fn git(dir: &std::path::Path, args: &[&str]) {
        let status = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .status()
            .expect("git");
        assert!(status.success(), "git {args:?}");
    }

    /// Enough paths that the map is shared between threads: every declared, editable file
    /// is in it exactly once with its revision, and nothing else (an undeclared file, a
    /// symlink, a hard-linked file), whatever slice a path falls in.
    #[test]
    fn the_shared_map_is_the_whole_map() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path();
        git(repo, &["init", "-q", "."]);
        let mut expected = BTreeMap::new();
        for i in 0..(3 * PARALLEL_FROM + 7) {
            let sub = repo.join(format!("d{}", i % 7));
            std::fs::create_dir_all(&sub).expect("mkdir");
            let (name, text) = (format!("d{}/f{i:04}.rs", i % 7), format!("file {i}\n"));
            std::fs::write(repo.join(&name), &text).expect("write");
            expected.insert(name, Revision::of(text.as_bytes()).to_hex());
        }
        std::fs::write(repo.join("notes.md"), "undeclared\n").expect("write");
        std::os::unix::fs::symlink("f0000.rs", repo.join("d0/link.rs")).expect("symlink");
        std::fs::write(repo.join("d1/linked.rs"), "two names\n").expect("write");
        std::fs::hard_link(repo.join("d1/linked.rs"), repo.join("other.md")).expect("link");
        git(repo, &["add", "-A"]);
        git(repo, &["commit", "-qm", "files"]);
        let root = RepoRoot::open(repo).expect("root");
        let revisions = map(&root, &["*.rs".to_string()], &[]).expect("map");
        assert_eq!(revisions, expected);
    }
}
