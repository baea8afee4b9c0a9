//! Many revisions in one call: what [`crate::replace::revision`] gives for each path, with
//! fewer file-system calls per path.
//!
//! The rules are those of `revision`, path by path and in the same order: the path's shape,
//! `.git`, private, declared (the patterns translated once for the whole call), then the
//! file itself — reached one segment at a time without following a symlink, a single-link
//! regular file of at most [`MAX_TEXT_FILE_BYTES`]. Two things make it cheaper:
//!
//! - the directories of consecutive paths are shared: a path's parent chain is reused
//!   from the previous path's as far as their segments agree (so paths sorted by bytes,
//!   as `git ls-files` lists them, open each directory once). Each directory is opened
//!   exactly as `revision` opens it, by [`Tree::open_dir`];
//! - the file is read by [`Tree::read_file`]: inspected without following a symlink (so a
//!   FIFO or device is refused unopened, as `revision` refuses it), opened without
//!   following one, checked again on the opened descriptor, read up to the size it had.
//!   Whatever was opened is what is checked and hashed.
//!
//! At most [`MAX_KEPT_DIRS`] directories are kept open; a deeper path's further
//! directories are opened one after another and each closed once the next is open, as
//! `revision` walks, so no depth of tree runs the process out of descriptors.
//!
//! A directory kept open from an earlier path is the directory that was at that path when
//! it was opened, as it would be during one path's walk: the map is what the worktree held
//! while it was computed, and every edit checks its revision again.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::fnmatch::PatternSet;
use crate::gates::{MAX_TEXT_FILE_BYTES, is_private_in};
use crate::path::{self, is_git_admin};
use crate::replace::RevisionError;
use crate::revision::Revision;
use crate::tree::Tree;
use crate::worktree::NotEditable;

/// The revision of each of `paths`, in order: for every path exactly the result
/// [`crate::replace::revision`] gives (the same error variant; the same message for every
/// file kind `revision` names, see the module docs).
///
/// The worktree's root is opened once; when that fails, every path that passes the policy
/// gates gets that failure as [`RevisionError::NotEditable`].
pub fn revisions<T: Tree + ?Sized, S: AsRef<str>>(
    tree: &T,
    paths: &[S],
    writable_paths: &[String],
    private_paths: &[String],
) -> Vec<Result<Revision, RevisionError>> {
    let writable = PatternSet::new(writable_paths);
    let private = PatternSet::new(private_paths);
    let root = tree.root();
    let mut open = OpenDirs::default();
    paths
        .iter()
        .map(|path| {
            let path = path.as_ref();
            let segments = path::segments(path)
                .map_err(|e| RevisionError::InvalidRequest(format!("path: {e}")))?;
            if is_git_admin(&segments) {
                return Err(RevisionError::Undeclared);
            }
            if is_private_in(path, &private) {
                return Err(RevisionError::Private);
            }
            if !writable.matches(path) {
                return Err(RevisionError::Undeclared);
            }
            let root = root
                .as_ref()
                .map_err(|e| RevisionError::NotEditable(e.0.clone()))?;
            let Some((leaf, dirs)) = segments.split_last() else {
                return Err(RevisionError::InvalidRequest(String::from("path: empty")));
            };
            let parent = open
                .reach(tree, root, dirs)
                .map_err(|e| RevisionError::NotEditable(e.0))?;
            tree.read_file(parent.get(), leaf, path, MAX_TEXT_FILE_BYTES)
                .map(|bytes| Revision::of(&bytes))
                .map_err(|e| RevisionError::NotEditable(e.0))
        })
        .collect()
}

/// The most directories of a parent chain kept open between paths (per call: one call per
/// thread of the attempt's map).
pub const MAX_KEPT_DIRS: usize = 64;

/// The directories of the previous path's parent chain, outermost first, each with its
/// segment (at most [`MAX_KEPT_DIRS`]).
struct OpenDirs<D> {
    chain: Vec<(String, D)>,
}

impl<D> Default for OpenDirs<D> {
    fn default() -> Self {
        Self { chain: Vec::new() }
    }
}

/// A path's parent directory: one of the kept chain, or opened beneath it for this path.
enum Parent<'a, D> {
    Kept(&'a D),
    Deep(D),
}

impl<D> Parent<'_, D> {
    fn get(&self) -> &D {
        match self {
            Self::Kept(dir) => dir,
            Self::Deep(dir) => dir,
        }
    }
}

impl<D> OpenDirs<D> {
    /// The directory at `dirs` beneath `root`: the kept chain as far as it agrees with
    /// `dirs`, then each further segment opened by [`Tree::open_dir`] (kept up to
    /// [`MAX_KEPT_DIRS`], beyond that each closed once the next is open). On a failure the
    /// chain keeps what was reached, and the failure names the segment.
    fn reach<'a, T: Tree<Dir = D> + ?Sized>(
        &'a mut self,
        tree: &T,
        root: &'a D,
        dirs: &[&str],
    ) -> Result<Parent<'a, D>, NotEditable> {
        let kept = self
            .chain
            .iter()
            .zip(dirs)
            .take_while(|((name, _), segment)| name == *segment)
            .count();
        self.chain.truncate(kept);
        let shown = |depth: usize| dirs[..=depth].join("/");
        let keep_to = dirs.len().min(MAX_KEPT_DIRS);
        for (depth, segment) in dirs.iter().enumerate().take(keep_to).skip(kept) {
            let parent = self.chain.last().map_or(root, |(_, dir)| dir);
            let dir = tree.open_dir(parent, segment, &shown(depth))?;
            self.chain.push((String::from(*segment), dir));
        }
        let last = self.chain.last().map_or(root, |(_, dir)| dir);
        let mut deep: Option<D> = None;
        for (depth, segment) in dirs.iter().enumerate().skip(keep_to) {
            let parent = deep.as_ref().unwrap_or(last);
            deep = Some(tree.open_dir(parent, segment, &shown(depth))?);
        }
        Ok(deep.map_or(Parent::Kept(last), Parent::Deep))
    }
}
