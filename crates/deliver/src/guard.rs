//! What the command may not change in the caller's repository, taken before the command
//! runs and compared after it: the shared `.git` that every worktree of a repository uses.
//!
//! A linked worktree shares its repository's refs (`refs/stash` included), configuration,
//! hooks, `info/` and worktree registrations with the caller's checkout, so a command that
//! runs `git stash`, `git branch`, `git config`, `git update-ref`, `git submodule add` or
//! `git worktree add` in its worktree changes the caller's repository. Without the kernel
//! boundary (`satyrn-host confine`) nothing can prevent that; `deliver` detects it and ends
//! with `REPOSITORY_CHANGED`, naming each change and how to undo it, and publishes nothing.
//!
//! A [`Snapshot`] holds:
//!
//! - every ref (`git for-each-ref`: name, object, symbolic target), and the entries of the
//!   stash's reflog (`refs/stash@{n}`, which `git stash pop` drops);
//! - the bytes, kind and mode of the common directory's `HEAD`, `config`, `packed-refs`,
//!   `shallow`, `objects/info/alternates` and `objects/info/grafts`, and of every entry under
//!   `hooks/`, `info/`, `branches/` and `remotes/`; the names under `modules/` with each
//!   one's `config`;
//! - the registrations under `worktrees/`: for every one but this attempt's, its `HEAD`,
//!   `gitdir`, `locked` and `config.worktree`; for this attempt's, its `commondir` and
//!   `config.worktree` (which would redirect or configure `deliver`'s own git);
//! - the object store by identity (size, inode, modification time): every loose object,
//!   every file of `objects/pack/` and `objects/info/`, so an object rewritten in place
//!   (`git show` then prints other bytes under the same id) is named; an object or pack
//!   removed is not a change (`git gc` packs loose objects and drops old packs), a ref whose
//!   object is gone is;
//! - by kind alone, `index`, `FETCH_HEAD` and everything under `logs/` (a FIFO there blocks
//!   the caller's next `git commit`), and every `*.lock` file of the common directory and
//!   of `refs/` (a stale one fails the caller's next update). A lock is a change only when
//!   it appeared and is still there [`LOCK_SETTLE`] later ([`settle_locks`]): a live git,
//!   another `deliver`'s or the caller's own, holds one for a moment, and removes it;
//! - the user's ignore and attributes files (`core.excludesFile`, `core.attributesFile`,
//!   else `$XDG_CONFIG_HOME/git/ignore` and `…/attributes`): an ignore-everything rule
//!   there would silently leave new files out of every later candidate.
//!
//! After the command, [`stash_in_candidate`] also compares the candidate with every entry of
//! the caller's stash: a command that ran `git stash apply` (or popped an entry and stored
//! it again) carries the caller's work in progress, which is not its own.
//!
//! Files are read without following a symlink and without blocking: a FIFO is recorded as
//! a FIFO, never opened for reading, so the comparison runs before any git that could
//! block on one. What may change while the command runs without being the command's doing
//! is allowed: refs created under `refs/satyrn/candidates/` and the registrations of other
//! `deliver` attempts (a series runs attempts side by side). A change the caller made
//! themselves while the command ran (a commit in their checkout) is reported the same way:
//! the two cannot be told apart.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use satyrn_git::{Git, GitError};

/// The most bytes of one file recorded; a longer file is recorded by its size, inode and
/// modification time.
const CONTENT_MAX: u64 = 4 << 20;

/// The most entries recorded under one directory tree; past it, the tree is recorded as
/// "too many entries" (and so changed if the count differs).
const ENTRIES_MAX: usize = 10_000;

/// The ref namespace that other attempts of a series create refs in while this one runs.
const CANDIDATE_REFS: &str = "refs/satyrn/candidates/";

/// The parts of the common directory recorded file by file: its configuration, the main
/// worktree's `HEAD` and the state of a merge, rebase, cherry-pick, revert or bisect in it
/// (a planted `MERGE_HEAD` leaves the caller "still merging").
const FILES: [&str; 20] = [
    "HEAD",
    "description",
    "config",
    "config.worktree",
    "shallow",
    "objects/info/alternates",
    "objects/info/grafts",
    "ORIG_HEAD",
    "MERGE_HEAD",
    "MERGE_MSG",
    "MERGE_MODE",
    "MERGE_AUTOSTASH",
    "AUTO_MERGE",
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "BISECT_LOG",
    "BISECT_START",
    "BISECT_TERMS",
    "BISECT_EXPECTED_REV",
    "BISECT_NAMES",
];

/// Recorded only when they are not regular files (a FIFO would block git): their contents
/// are git's own storage of what is compared logically (the refs), which `git gc` and
/// `git pack-refs` rewrite without changing anything.
const KIND_ONLY: [&str; 4] = ["packed-refs", "info/refs", "index", "FETCH_HEAD"];

/// The directory trees of the common directory recorded entry by entry (`rebase-merge/`
/// and `sequencer/` hold the todo lists a `git rebase --continue` would run;
/// `satyrn-temporaries/` the main worktree's journal of publish temporaries).
const TREES: [&str; 8] = [
    "hooks",
    "info",
    "branches",
    "remotes",
    "rebase-merge",
    "rebase-apply",
    "sequencer",
    "satyrn-temporaries",
];

/// Recorded by kind alone, wherever they are below the common directory: git's own
/// bookkeeping whose content changes with ordinary use, but which must stay regular files.
/// (`git gc` rewrites packs and the commit-graph; a ref update appends to its log.)
const KIND_ONLY_TREES: [&str; 3] = ["logs", "objects/pack", "objects/info"];

/// The most loose objects recorded by identity; a larger store records none of them.
const LOOSE_MAX: usize = 200_000;

/// The most stash entries [`stash_in_candidate`] compares with a candidate.
const STASH_COMPARED: usize = 50;

/// The files of another worktree's registration that are recorded.
const OTHER_WORKTREE_FILES: [&str; 4] = ["HEAD", "gitdir", "locked", "config.worktree"];

/// The files of this attempt's own registration that are recorded.
const OWN_WORKTREE_FILES: [&str; 2] = ["commondir", "config.worktree"];

/// One recorded file-system entry.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    /// A regular file: its mode and bytes (or, past [`CONTENT_MAX`], its identity).
    File { mode: u32, content: Content },
    /// A directory (its entries are recorded separately).
    Dir { mode: u32 },
    /// A symbolic link and its target.
    Symlink(Vec<u8>),
    /// A FIFO, socket or device: recorded, never opened.
    Special(&'static str),
    /// A regular file recorded by its existence and mode alone.
    Present { mode: u32 },
    /// More than [`ENTRIES_MAX`] entries below: how many were seen.
    TooMany(usize),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Content {
    Bytes(Vec<u8>),
    Large {
        size: u64,
        ino: u64,
        mtime: i64,
        mtime_nsec: i64,
    },
}

/// The caller's repository as the command may not change it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    refs: BTreeMap<String, String>,
    stash: Vec<String>,
    /// The SHA-256 of the caller's index as `git ls-files --stage -z` lists it (staged
    /// entries, not the stat data a `git status` refreshes): a large index is not held.
    index: Option<satyrn_mutator_core::revision::Revision>,
    /// The refs (name → object) whose object is no longer in the object store.
    missing: Vec<(String, String)>,
    files: BTreeMap<String, Entry>,
    /// Up to five `git status` entries of the caller's checkout when it was not clean.
    dirty: Option<Vec<String>>,
    /// The ignored files and directories of the caller's checkout, as `git status
    /// --ignored` lists them (a directory once, not what it holds).
    ignored: std::collections::BTreeSet<Vec<u8>>,
    /// The names under `worktrees/` that were other attempts' when recorded.
    attempts: std::collections::BTreeSet<String>,
    /// The common directory the files were recorded in.
    common: PathBuf,
}

/// Where a repository's shared state lives.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The common git directory (absolute).
    pub common: PathBuf,
    /// This attempt's registration directory under `worktrees/` (absolute).
    pub own: PathBuf,
}

/// How long a `*.lock` file that appeared while the command ran may take to go away
/// before [`settle_locks`] names it: git holds a lock for one update, so a lock still there
/// after this is left behind, not held by a live git (another `deliver`, the caller's own).
pub const LOCK_SETTLE: Duration = Duration::from_secs(2);

/// One difference between two snapshots, as said to the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    said: String,
    /// For a regular `*.lock` file that appeared: its path, which [`settle_locks`] watches.
    lock: Option<PathBuf>,
}

impl Change {
    fn new(said: String) -> Self {
        Self { said, lock: None }
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.said)
    }
}

/// `changes` less every lock file that a live git released by `until`: each new regular
/// `*.lock` is watched (every 5 ms) until it is gone or `until` passes; one still there then
/// stays a change. Returns at once when `changes` holds no such lock.
#[must_use]
pub fn settle_locks(mut changes: Vec<Change>, until: Instant) -> Vec<Change> {
    loop {
        changes.retain(|change| {
            change
                .lock
                .as_ref()
                .is_none_or(|path| std::fs::symlink_metadata(path).is_ok())
        });
        if changes.iter().all(|change| change.lock.is_none()) || Instant::now() >= until {
            return changes;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

impl Snapshot {
    /// Records `layout`'s shared state, reading refs through `repo` (which should carry the
    /// attempt's deadline after the command ran: a FIFO at `packed-refs` then turns into
    /// [`GitError::TimedOut`], but [`Snapshot::changes`] of the files, compared first,
    /// already names it).
    ///
    /// # Errors
    ///
    /// [`GitError`] when git cannot list the refs or the stash's reflog.
    pub fn take(repo: &Git, layout: &Layout) -> Result<Self, GitError> {
        let mut snapshot = Self::files_only(layout);
        snapshot.refs = refs_of(repo)?;
        if snapshot.refs.contains_key("refs/stash") {
            snapshot.stash = stash_of(repo)?;
        }
        snapshot.index = Some(satyrn_mutator_core::revision::Revision::of(
            &repo.run(&["ls-files", "--stage", "-z"])?,
        ));
        snapshot.missing = missing_objects(repo, &snapshot.refs)?;
        snapshot.dirty = satyrn_git::root::dirty_entries(repo)?;
        snapshot.ignored = ignored_of(repo)?;
        Ok(snapshot)
    }

    /// Records only the files (no git runs): what [`Snapshot::file_changes`] compares.
    #[must_use]
    pub fn files_only(layout: &Layout) -> Self {
        let files = files_of(layout);
        Self {
            refs: BTreeMap::new(),
            stash: Vec::new(),
            index: None,
            missing: Vec::new(),
            dirty: None,
            ignored: std::collections::BTreeSet::new(),
            attempts: attempt_registrations(&files),
            files,
            common: layout.common.clone(),
        }
    }

    /// The differences of the recorded files between `self` (before) and `after`.
    #[must_use]
    pub fn file_changes(&self, after: &Self) -> Vec<Change> {
        let mut siblings = self.attempts.clone();
        siblings.extend(after.attempts.iter().cloned());
        let sibling = |path: &str| {
            path.strip_prefix("worktrees/")
                .map(|rest| rest.split('/').next().unwrap_or(rest))
                .is_some_and(|name| siblings.contains(name))
        };
        let mut changes = Vec::new();
        for (path, before) in &self.files {
            if sibling(path) {
                continue;
            }
            match after.files.get(path) {
                None if is_storage(path) || is_lock(path) => {}
                None => changes.push(Change::new(format!("{} was removed", shown(path)))),
                // Re-hashed by `rewritten_objects` (git freshens an object's time).
                Some(Entry::File { .. })
                    if is_loose_object(path) && matches!(before, Entry::File { .. }) => {}
                Some(now) if now != before => {
                    changes.push(Change::new(format!(
                        "{} {}",
                        shown(path),
                        describe(before, now)
                    )));
                }
                Some(_) => {}
            }
        }
        for (path, now) in &after.files {
            if self.files.contains_key(path) || sibling(path) {
                continue;
            }
            let ordinary = matches!(
                now,
                Entry::File { .. } | Entry::Present { .. } | Entry::Dir { .. }
            );
            if ordinary && is_storage(path) {
                continue; // a new object, pack or log of the command's own commits
            }
            let lock = matches!(now, Entry::Present { .. }) && is_lock(path);
            changes.push(Change {
                said: match now {
                    Entry::Special(kind) => format!("{} was created as {kind}", shown(path)),
                    _ if lock => format!(
                        "{} was created and left behind (it fails the caller's next git that takes it; undo: rm it once no git runs)",
                        shown(path)
                    ),
                    _ => format!("{} was created", shown(path)),
                },
                lock: lock.then(|| self.common.join(path)),
            });
        }
        changes
    }

    /// The loose objects whose identity changed between `self` (before) and `after` and
    /// whose bytes no longer hash to their name: rewritten in place, so that the caller's
    /// history now reads other content. Each changed one is re-hashed by git (`cat-file`,
    /// then `hash-object`); past 100 of them the rest are named unchecked.
    ///
    /// # Errors
    ///
    /// [`GitError`] when git cannot read or hash an object.
    pub fn rewritten_objects(&self, after: &Self, repo: &Git) -> Result<Vec<Change>, GitError> {
        const CHECKED: usize = 100;
        let changed: Vec<&String> = self
            .files
            .iter()
            .filter(|(path, before)| {
                is_loose_object(path)
                    && after
                        .files
                        .get(*path)
                        .is_some_and(|now| now != *before && matches!(now, Entry::File { .. }))
            })
            .map(|(path, _)| path)
            .collect();
        let mut changes = Vec::new();
        for (n, path) in changed.iter().enumerate() {
            let oid: String = path.trim_start_matches("objects/").replace('/', "");
            if n >= CHECKED {
                changes.push(Change::new(format!(
                    "{} changed (one of more than {CHECKED} objects that changed; not re-hashed)",
                    shown(path)
                )));
                continue;
            }
            let kind = repo.line(&["cat-file", "-t", &oid]);
            let rehashed = kind.and_then(|kind| {
                let bytes = repo.run(&["cat-file", &kind, &oid])?;
                repo.cmd(&["hash-object", "-t", &kind, "--stdin"])
                    .stdin(&bytes)
                    .run()
            });
            match rehashed {
                Ok(hash) if String::from_utf8_lossy(&hash).trim() == oid => {}
                Ok(hash) => changes.push(Change::new(format!(
                    "the object {oid} was rewritten: its bytes now hash to {} (every commit that holds it now reads other content; only confinement prevents this: restore it from a clone, or run git fsck)",
                    String::from_utf8_lossy(&hash).trim()
                ))),
                Err(e @ (GitError::TimedOut { .. } | GitError::Interrupted { .. })) => {
                    return Err(e);
                }
                Err(_) => changes.push(Change::new(format!(
                    "the object {oid} was rewritten and can no longer be read"
                ))),
            }
        }
        Ok(changes)
    }

    /// Every difference between `self` (before) and `after`: files, refs and stash entries,
    /// each with how to undo it where git can.
    #[must_use]
    pub fn changes(&self, after: &Self) -> Vec<Change> {
        let mut changes = self.file_changes(after);
        for (name, before) in &self.refs {
            match after.refs.get(name) {
                None => changes.push(Change::new(format!(
                    "ref {name} was deleted (it was {before}; restore: git update-ref {name} {before})"
                ))),
                Some(now) if now != before => changes.push(Change::new(format!(
                    "ref {name} moved from {before} to {now} (restore: git update-ref {name} {before} {now})"
                ))),
                Some(_) => {}
            }
        }
        for (name, now) in &after.refs {
            if !self.refs.contains_key(name) && !name.starts_with(CANDIDATE_REFS) {
                changes.push(Change::new(format!(
                    "ref {name} was created at {now} (undo: git update-ref -d {name} {now})"
                )));
            }
        }
        for entry in &self.stash {
            if !after.stash.contains(entry) {
                changes.push(Change::new(format!(
                    "stash entry {entry} was dropped (restore: git stash store -m restored {entry})"
                )));
            }
        }
        for entry in &after.stash {
            if !self.stash.contains(entry) {
                changes.push(Change::new(format!("stash entry {entry} was added")));
            }
        }
        if self.index != after.index {
            changes.push(Change::new(
                "the index of the caller's worktree changed: what is staged there is not what it was"
                    .to_owned(),
            ));
        }
        if let (None, Some(entries)) = (&self.dirty, &after.dirty) {
            changes.push(Change::new(format!(
                "the caller's checkout changed: {} (git status there shows it; the command wrote outside its worktree)",
                entries
                    .iter()
                    .map(|e| satyrn_mutator_core::path::shown(e).into_owned())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        for gone in self.ignored.difference(&after.ignored).take(5) {
            changes.push(Change::new(format!(
                "the caller's ignored {} was removed from their checkout (git clean, or rm, outside the worktree; git cannot restore it)",
                satyrn_mutator_core::path::shown(&String::from_utf8_lossy(gone))
            )));
        }
        for (name, object) in &after.missing {
            if !self.missing.contains(&(name.clone(), object.clone())) {
                changes.push(Change::new(format!(
                    "the object {object} of ref {name} is gone from the object store"
                )));
            }
        }
        changes
    }
}

/// The refs of `repo`: name → object id, or `-> target` for a symbolic ref.
fn refs_of(repo: &Git) -> Result<BTreeMap<String, String>, GitError> {
    let out = repo.run(&[
        "for-each-ref",
        "--format=%(refname)%00%(objectname)%00%(symref)",
    ])?;
    let mut refs = BTreeMap::new();
    for line in out.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let mut fields = line.split(|b| *b == 0);
        let name = String::from_utf8_lossy(fields.next().unwrap_or_default()).into_owned();
        let object = String::from_utf8_lossy(fields.next().unwrap_or_default()).into_owned();
        let symref = String::from_utf8_lossy(fields.next().unwrap_or_default()).into_owned();
        let value = if symref.is_empty() {
            object
        } else {
            format!("-> {symref}")
        };
        refs.insert(name, value);
    }
    Ok(refs)
}

/// The ignored entries of the caller's checkout (`git status --ignored`, a directory once).
fn ignored_of(repo: &Git) -> Result<std::collections::BTreeSet<Vec<u8>>, GitError> {
    let out = repo.run(&[
        "status",
        "--porcelain=v1",
        "-z",
        "--ignored=traditional",
        "--untracked-files=normal",
        "--ignore-submodules=all",
    ])?;
    Ok(satyrn_git::split_z(&out)
        .into_iter()
        .filter_map(|e| e.strip_prefix(b"!! ").map(<[u8]>::to_vec))
        .collect())
}

/// The commits of the stash's reflog, newest first.
fn stash_of(repo: &Git) -> Result<Vec<String>, GitError> {
    let out = repo.run(&[
        "log",
        "--walk-reflogs",
        "--no-decorate",
        "--format=%H",
        "refs/stash",
        "--",
    ])?;
    Ok(String::from_utf8_lossy(&out)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect())
}

/// The recorded files of `layout`, by path relative to the common directory.
fn files_of(layout: &Layout) -> BTreeMap<String, Entry> {
    let mut files = BTreeMap::new();
    for name in FILES {
        record(&layout.common, name, &mut files);
    }
    for name in KIND_ONLY {
        if let Some(entry @ (Entry::Special(_) | Entry::Symlink(_))) =
            read_entry(&layout.common.join(name))
        {
            files.insert(name.to_owned(), entry);
        }
    }
    for tree in TREES {
        record_tree(&layout.common, tree, &mut files);
    }
    let mut configs: Vec<PathBuf> = vec![
        layout.common.join("config"),
        layout.common.join("config.worktree"),
        layout.own.join("config.worktree"),
    ];
    configs.extend(user_configs());
    for config in &configs {
        record_absolute(config, &mut files);
        for included in includes_of(config) {
            record_absolute(&included, &mut files);
        }
    }
    record_modules(&layout.common, &mut files);
    for tree in KIND_ONLY_TREES {
        record_tree_with(&layout.common, tree, &mut files, kind_only);
    }
    record_loose_objects(&layout.common, &mut files);
    record_locks(&layout.common, &mut files);
    for file in user_ignore_and_attributes(&configs) {
        record_absolute(&file, &mut files);
    }
    let own_name = layout.own.file_name().map(|n| n.as_bytes().to_vec());
    if let Ok(entries) = std::fs::read_dir(layout.common.join("worktrees")) {
        for entry in entries.flatten().take(ENTRIES_MAX) {
            let name = entry.file_name();
            let rel = format!("worktrees/{}", String::from_utf8_lossy(name.as_bytes()));
            let own = own_name.as_deref() == Some(name.as_bytes());
            let wanted: &[&str] = if own {
                &OWN_WORKTREE_FILES
            } else {
                &OTHER_WORKTREE_FILES
            };
            if !own {
                record(&layout.common, &rel, &mut files);
            }
            for file in wanted {
                record(&layout.common, &format!("{rel}/{file}"), &mut files);
            }
        }
    }
    files
}

/// The user's and the system's git configuration files, as git finds them
/// (`GIT_CONFIG_GLOBAL`, else `~/.gitconfig` and `$XDG_CONFIG_HOME/git/config`;
/// `GIT_CONFIG_SYSTEM`, else `/etc/gitconfig`, unless `GIT_CONFIG_NOSYSTEM`).
fn user_configs() -> Vec<PathBuf> {
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let mut found = Vec::new();
    match env("GIT_CONFIG_GLOBAL") {
        Some(global) => found.push(PathBuf::from(global)),
        None => {
            if let Some(home) = env("HOME") {
                found.push(Path::new(&home).join(".gitconfig"));
            }
            match env("XDG_CONFIG_HOME") {
                Some(xdg) => found.push(Path::new(&xdg).join("git/config")),
                None => {
                    if let Some(home) = env("HOME") {
                        found.push(Path::new(&home).join(".config/git/config"));
                    }
                }
            }
        }
    }
    if env("GIT_CONFIG_NOSYSTEM").is_none() {
        found.push(
            env("GIT_CONFIG_SYSTEM").map_or_else(|| PathBuf::from("/etc/gitconfig"), PathBuf::from),
        );
    }
    found
}

/// The files `config` includes (`[include]` or `[includeIf …]` sections' `path`), one
/// level deep: absolute, `~/`-relative, or relative to the file's own directory.
fn includes_of(config: &Path) -> Vec<PathBuf> {
    config_paths(
        config,
        |section| section == "include" || section == "includeif",
        "path",
    )
}

/// The values of `key` (lower case) in the sections of `config` that `section` accepts (by
/// their lower-case name before any subsection), as paths: absolute, `~/`-relative, or
/// relative to the file's own directory.
fn config_paths(config: &Path, section: impl Fn(&str) -> bool, key: &str) -> Vec<PathBuf> {
    let Some(Entry::File {
        content: Content::Bytes(bytes),
        ..
    }) = read_entry(config)
    else {
        return Vec::new();
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut inside = false;
    let mut found = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix('[') {
            let name: String = header
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            inside = section(&name.to_ascii_lowercase());
            continue;
        }
        if !inside {
            continue;
        }
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        if !name.trim().eq_ignore_ascii_case(key) {
            continue;
        }
        let value = value.trim().trim_matches('"');
        let path = if let Some(rest) = value.strip_prefix("~/") {
            match std::env::var_os("HOME") {
                Some(home) => Path::new(&home).join(rest),
                None => continue,
            }
        } else if Path::new(value).is_absolute() {
            PathBuf::from(value)
        } else {
            config.parent().unwrap_or(Path::new("/")).join(value)
        };
        found.push(path);
    }
    found
}

/// Records the file at the absolute `path` under its own path as the key.
fn record_absolute(path: &Path, files: &mut BTreeMap<String, Entry>) {
    if let Some(entry) = read_entry(path) {
        files.insert(path.to_string_lossy().into_owned(), entry);
    }
}

/// A recorded key as said to the user: an absolute path as it is, one in the common
/// directory under `.git/`.
fn shown(key: &str) -> String {
    if key.starts_with('/') {
        key.to_owned()
    } else {
        format!(".git/{key}")
    }
}

/// The refs among `refs` whose object is missing from the object store
/// (`git cat-file --batch-check`).
fn missing_objects(
    repo: &Git,
    refs: &BTreeMap<String, String>,
) -> Result<Vec<(String, String)>, GitError> {
    let objects: Vec<(&String, &String)> =
        refs.iter().filter(|(_, v)| !v.starts_with("-> ")).collect();
    if objects.is_empty() {
        return Ok(Vec::new());
    }
    let mut input = String::new();
    for (_, object) in &objects {
        input.push_str(object);
        input.push('\n');
    }
    let out = repo
        .cmd(&["cat-file", "--batch-check=%(objectname)"])
        .stdin(input.as_bytes())
        .run()?;
    let answers = String::from_utf8_lossy(&out);
    Ok(objects
        .iter()
        .zip(answers.lines())
        .filter(|(_, answer)| answer.ends_with(" missing"))
        .map(|((name, object), _)| ((*name).clone(), (*object).clone()))
        .collect())
}

/// Records `modules/` one level deep, with each module's `config`.
fn record_modules(common: &Path, files: &mut BTreeMap<String, Entry>) {
    record(common, "modules", files);
    let Ok(entries) = std::fs::read_dir(common.join("modules")) else {
        return;
    };
    for entry in entries.flatten().take(ENTRIES_MAX) {
        let rel = format!(
            "modules/{}",
            String::from_utf8_lossy(entry.file_name().as_bytes())
        );
        record(common, &rel, files);
        record(common, &format!("{rel}/config"), files);
    }
}

/// Records `rel` and, when it is a directory, everything below it (no symlink followed),
/// up to [`ENTRIES_MAX`] entries.
fn record_tree(common: &Path, rel: &str, files: &mut BTreeMap<String, Entry>) {
    record_tree_with(common, rel, files, read_entry);
}

/// [`record_tree`] with `read` making each entry; a path already recorded (by [`FILES`],
/// with its content) is kept as it is.
fn record_tree_with(
    common: &Path,
    rel: &str,
    files: &mut BTreeMap<String, Entry>,
    read: fn(&Path) -> Option<Entry>,
) {
    let mut pending = vec![rel.to_owned()];
    let mut seen = 0usize;
    let record = |dir: &str, files: &mut BTreeMap<String, Entry>| -> Option<Entry> {
        if let Some(kept) = files.get(dir) {
            return Some(kept.clone());
        }
        let entry = read(&common.join(dir))?;
        files.insert(dir.to_owned(), entry.clone());
        Some(entry)
    };
    while let Some(dir) = pending.pop() {
        if !matches!(record(&dir, files), Some(Entry::Dir { .. })) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(common.join(&dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > ENTRIES_MAX {
                files.insert(format!("{rel}/…"), Entry::TooMany(seen));
                continue;
            }
            let child = format!(
                "{dir}/{}",
                String::from_utf8_lossy(entry.file_name().as_bytes())
            );
            if KIND_ONLY.contains(&child.as_str()) {
                continue; // recorded by its kind alone (`files_of`)
            }
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                pending.push(child);
            } else {
                record(&child, files);
            }
        }
    }
}

/// [`read_entry`], with a regular file recorded by its existence and mode alone.
fn kind_only(path: &Path) -> Option<Entry> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if meta.is_file() {
        return Some(Entry::Present {
            mode: meta.mode() & 0o7777,
        });
    }
    read_entry(path)
}

/// Records every loose object (`objects/xx/…`) by identity (size, inode, modification
/// time), or none of them in a store of more than [`LOOSE_MAX`]: [`rewritten_objects`]
/// then re-hashes those whose identity changed.
fn record_loose_objects(common: &Path, files: &mut BTreeMap<String, Entry>) {
    let Ok(dirs) = std::fs::read_dir(common.join("objects")) else {
        return;
    };
    let mut loose = Vec::new();
    for dir in dirs.flatten() {
        let name = dir.file_name();
        let name = name.as_bytes();
        if name.len() != 2 || !name.iter().all(u8::is_ascii_hexdigit) {
            continue;
        }
        let Ok(objects) = std::fs::read_dir(dir.path()) else {
            continue;
        };
        for object in objects.flatten() {
            let Ok(meta) = object.metadata() else {
                continue;
            };
            loose.push((
                format!(
                    "objects/{}/{}",
                    String::from_utf8_lossy(name),
                    String::from_utf8_lossy(object.file_name().as_bytes())
                ),
                if meta.is_file() {
                    Entry::File {
                        mode: meta.mode() & 0o7777,
                        content: large(&meta),
                    }
                } else {
                    read_entry(&object.path()).unwrap_or(Entry::Special("an unknown file"))
                },
            ));
            if loose.len() > LOOSE_MAX {
                return;
            }
        }
    }
    files.extend(loose);
}

impl Snapshot {
    /// The caller's stash entries when recorded (newest first).
    #[must_use]
    pub fn stash(&self) -> &[String] {
        &self.stash
    }
}

/// The changes of the caller's stash entries that the candidate `commit` holds, as
/// [`Change`]s: a path that an entry changed (its tracked, staged or untracked part) whose
/// blob in the candidate is exactly the entry's, where the base `base` had another. A
/// command that ran `git stash apply` (or popped an entry and stored it back) carries the
/// caller's work in progress into a candidate that is not its own. The first
/// [`STASH_COMPARED`] entries are compared.
///
/// # Errors
///
/// [`GitError`] when git cannot read an entry, the candidate or the base.
pub fn stash_in_candidate(
    repo: &Git,
    stash: &[String],
    base: &str,
    commit: &str,
) -> Result<Vec<Change>, GitError> {
    let mut changes = Vec::new();
    for (n, entry) in stash.iter().take(STASH_COMPARED).enumerate() {
        let mut stashed: BTreeMap<Vec<u8>, String> = BTreeMap::new();
        for parent in ["^1", "^2", "^3"] {
            let (from, to) = if parent == "^1" {
                (format!("{entry}^1"), entry.clone())
            } else {
                let part = format!("{entry}{parent}");
                if repo
                    .output(&["rev-parse", "--verify", "-q", &format!("{part}^{{commit}}")])?
                    .status
                    .success()
                {
                    (format!("{entry}^1"), part)
                } else {
                    continue;
                }
            };
            let args = ["diff-tree", "-r", "-z", "--no-renames", &from, &to];
            let out = repo.run(&args)?;
            let fields = satyrn_git::split_z(&out);
            for pair in fields.chunks(2) {
                let [meta, path] = pair else { continue };
                let meta = String::from_utf8_lossy(meta);
                let mut words = meta.split_whitespace();
                let new = words.nth(3).unwrap_or_default();
                let status = words.next().unwrap_or_default();
                if status != "D" && !new.chars().all(|c| c == '0') {
                    stashed.insert(path.to_vec(), new.to_owned());
                }
            }
        }
        if stashed.is_empty() {
            continue;
        }
        let blobs = |tree: &str| -> Result<BTreeMap<Vec<u8>, String>, GitError> {
            let mut args: Vec<&std::ffi::OsStr> =
                ["ls-tree", "-r", "-z", "--full-tree", tree, "--"]
                    .map(std::ffi::OsStr::new)
                    .to_vec();
            args.extend(stashed.keys().map(|p| std::ffi::OsStr::from_bytes(p)));
            let out = repo
                .cmd(&args)
                .envs(&[("GIT_LITERAL_PATHSPECS", "1")])
                .run()?;
            Ok(satyrn_git::split_z(&out)
                .into_iter()
                .filter_map(|record| {
                    let tab = record.iter().position(|b| *b == b'\t')?;
                    let meta = String::from_utf8_lossy(&record[..tab]);
                    let oid = meta.split_whitespace().nth(2)?.to_owned();
                    Some((record[tab + 1..].to_vec(), oid))
                })
                .collect())
        };
        let (in_candidate, in_base) = (blobs(commit)?, blobs(base)?);
        for (path, blob) in &stashed {
            if in_candidate.get(path) == Some(blob) && in_base.get(path) != Some(blob) {
                changes.push(Change::new(format!(
                    "the candidate holds the caller's stashed change of {} (stash@{{{n}}}, {entry}): the command applied the caller's stash; nothing was published (the stash itself is unchanged)",
                    satyrn_mutator_core::path::shown(&String::from_utf8_lossy(path))
                )));
            }
        }
    }
    Ok(changes)
}

/// Whether `key` lies in git's storage that ordinary use adds to and `git gc` removes from:
/// loose objects and the trees of [`KIND_ONLY_TREES`].
fn is_storage(key: &str) -> bool {
    is_loose_object(key)
        || KIND_ONLY_TREES.iter().any(|tree| {
            key.strip_prefix(tree)
                .is_some_and(|rest| rest.starts_with('/'))
        })
}

/// Whether `key` names a lock file that [`record_locks`] records.
fn is_lock(key: &str) -> bool {
    key.ends_with(".lock") && (!key.contains('/') || key.starts_with("refs/"))
}

/// Whether `key` names a loose object (`objects/xx/…`).
fn is_loose_object(key: &str) -> bool {
    key.strip_prefix("objects/")
        .and_then(|rest| rest.split_once('/'))
        .is_some_and(|(dir, _)| dir.len() == 2 && dir.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Records every `*.lock` file at the top of the common directory and below `refs/` (other
/// attempts' candidate refs aside), and every entry below `refs/` that is neither a regular
/// file nor a directory: a lock left behind fails the caller's next update of what it locks.
fn record_locks(common: &Path, files: &mut BTreeMap<String, Entry>) {
    if let Ok(entries) = std::fs::read_dir(common) {
        for entry in entries.flatten().take(ENTRIES_MAX) {
            let name = String::from_utf8_lossy(entry.file_name().as_bytes()).into_owned();
            if name.ends_with(".lock") {
                record_kind(common, &name, files);
            }
        }
    }
    let mut pending = vec!["refs".to_owned()];
    let mut seen = 0usize;
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(common.join(&dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > ENTRIES_MAX {
                return;
            }
            let child = format!(
                "{dir}/{}",
                String::from_utf8_lossy(entry.file_name().as_bytes())
            );
            if format!("{child}/").starts_with(CANDIDATE_REFS) {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                pending.push(child);
            } else if child.ends_with(".lock") || !kind.is_file() {
                record_kind(common, &child, files);
            }
        }
    }
}

/// The first of the user's and the system's git configuration, ignore and attributes files
/// (as [`Snapshot`] records them) that is neither a regular file nor a directory, with its
/// kind: every git that reads it (each one `deliver` runs) would wait on it for ever.
/// Checked before any git runs.
#[must_use]
pub fn special_user_file() -> Option<(PathBuf, &'static str)> {
    let configs = user_configs();
    let mut files: Vec<PathBuf> = configs.clone();
    for config in &configs {
        files.extend(includes_of(config));
    }
    files.extend(user_ignore_and_attributes(&configs));
    files.into_iter().find_map(|path| match read_entry(&path) {
        Some(Entry::Special(kind)) => Some((path, kind)),
        _ => None,
    })
}

/// The user's ignore and attributes files, as git finds them: `core.excludesFile` and
/// `core.attributesFile` of `configs` (the last one set wins, as in git), else
/// `$XDG_CONFIG_HOME/git/ignore` and `…/git/attributes` (`~/.config/git/…`).
fn user_ignore_and_attributes(configs: &[PathBuf]) -> Vec<PathBuf> {
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let xdg = env("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|home| Path::new(&home).join(".config")));
    let mut found = Vec::new();
    for (key, default) in [
        ("excludesfile", "git/ignore"),
        ("attributesfile", "git/attributes"),
    ] {
        let set = configs
            .iter()
            .flat_map(|config| {
                let mut all = config_paths(config, |section| section == "core", key);
                for included in includes_of(config) {
                    all.extend(config_paths(&included, |section| section == "core", key));
                }
                all
            })
            .last();
        match set {
            Some(path) => found.push(path),
            None => found.extend(xdg.as_ref().map(|xdg| xdg.join(default))),
        }
    }
    found
}

/// Records the entry at `common/rel` by [`kind_only`] (nothing when it does not exist).
fn record_kind(common: &Path, rel: &str, files: &mut BTreeMap<String, Entry>) {
    if let Some(entry) = kind_only(&common.join(rel)) {
        files.insert(rel.to_owned(), entry);
    }
}

/// Records the entry at `common/rel` (nothing when it does not exist) and returns it.
fn record(common: &Path, rel: &str, files: &mut BTreeMap<String, Entry>) -> Option<Entry> {
    let entry = read_entry(&common.join(rel))?;
    files.insert(rel.to_owned(), entry.clone());
    Some(entry)
}

/// The entry at `path`, read without following a symlink and without blocking.
fn read_entry(path: &Path) -> Option<Entry> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let kind = meta.file_type();
    let mode = meta.mode() & 0o7777;
    if kind.is_symlink() {
        let target = std::fs::read_link(path).unwrap_or_default();
        return Some(Entry::Symlink(std::os::unix::ffi::OsStringExt::into_vec(
            target.into_os_string(),
        )));
    }
    if kind.is_dir() {
        return Some(Entry::Dir { mode });
    }
    if !kind.is_file() {
        return Some(Entry::Special(super::scan::special_kind(kind)));
    }
    if meta.len() > CONTENT_MAX {
        return Some(Entry::File {
            mode,
            content: large(&meta),
        });
    }
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    let mut bytes = Vec::new();
    let read = opened.and_then(|f| {
        let meta = f.metadata()?;
        if !meta.is_file() {
            return Err(std::io::Error::other("not a regular file"));
        }
        f.take(CONTENT_MAX + 1).read_to_end(&mut bytes)
    });
    Some(match read {
        Ok(_) => Entry::File {
            mode,
            content: Content::Bytes(bytes),
        },
        // Unreadable (or swapped for something else): recorded by identity.
        Err(_) => Entry::File {
            mode,
            content: large(&meta),
        },
    })
}

fn large(meta: &std::fs::Metadata) -> Content {
    Content::Large {
        size: meta.len(),
        ino: meta.ino(),
        mtime: meta.mtime(),
        mtime_nsec: meta.mtime_nsec(),
    }
}

/// The names under `worktrees/` that are other `deliver` attempts': whose `gitdir` lies in
/// a `deliver` attempt's directory (`…/satyrn-deliver-…/worktree/.git`), or that have no
/// `gitdir` yet, or an empty one (`git worktree add` writes it last, `remove` removes it
/// first: a half-made registration, which `git worktree prune` removes).
fn attempt_registrations(files: &BTreeMap<String, Entry>) -> std::collections::BTreeSet<String> {
    files
        .keys()
        .filter_map(|path| {
            let name = path.strip_prefix("worktrees/")?;
            if name.contains('/') {
                return None;
            }
            let attempt = match files.get(&format!("worktrees/{name}/gitdir")) {
                None => true,
                // Empty: being written (`git worktree add` creates it, then writes it).
                Some(Entry::File {
                    content: Content::Bytes(bytes),
                    ..
                }) => {
                    bytes.trim_ascii().is_empty()
                        || is_attempt_gitdir(Path::new(std::ffi::OsStr::from_bytes(
                            bytes.trim_ascii_end(),
                        )))
                }
                Some(_) => false,
            };
            attempt.then(|| name.to_owned())
        })
        .collect()
}

/// Whether `gitdir` is `…/satyrn-deliver-<pid>-<n>-<9 digits>/worktree/.git`: a worktree
/// `deliver` made (its own directory's exact shape; the directory may already be gone, as a
/// finishing sibling removes it right after its registration).
fn is_attempt_gitdir(gitdir: &Path) -> bool {
    let mut up = gitdir.components().rev();
    let (Some(dot_git), Some(worktree), Some(parent)) = (up.next(), up.next(), up.next()) else {
        return false;
    };
    dot_git.as_os_str() == ".git"
        && worktree.as_os_str() == "worktree"
        && satyrn_os::owned_dir::named_pid(parent.as_os_str(), satyrn_os::owned_dir::DELIVER)
            .is_some()
}

/// How an entry changed, as the end of a sentence.
fn describe(before: &Entry, now: &Entry) -> String {
    match (before, now) {
        (
            Entry::File {
                mode: a,
                content: x,
            },
            Entry::File {
                mode: b,
                content: y,
            },
        ) => {
            if x == y {
                format!("changed mode from {a:o} to {b:o}")
            } else {
                "changed".to_owned()
            }
        }
        (Entry::Dir { mode: a }, Entry::Dir { mode: b })
        | (Entry::Present { mode: a }, Entry::Present { mode: b }) => {
            format!("changed mode from {a:o} to {b:o}")
        }
        (_, Entry::Special(kind)) => format!("was replaced by {kind}"),
        (Entry::Symlink(_), Entry::Symlink(_)) => "now points elsewhere".to_owned(),
        (_, Entry::Symlink(_)) => "was replaced by a symbolic link".to_owned(),
        (_, Entry::TooMany(n)) => format!("now holds more than {n} entries"),
        _ => "changed kind".to_owned(),
    }
}
