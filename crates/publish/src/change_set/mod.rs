//! The writer of change sets: every file of a set published all together or not at all,
//! even when the process is killed at any instant (and, given fsync semantics, after a
//! power loss).
//!
//! The order (`docs/architecture.md`, "Publishing a change set", has the argument):
//!
//! 1. **Recover** what a killed publish left ([`recover`], run by the lock's taker).
//! 2. **Check**, writing nothing: each path's directories are walked without following a
//!    symbolic link; an existing base must be the single-link regular file with the
//!    decided revision; a new path must not exist.
//! 3. **Prepare**: each new content is written to an anonymous temporary (`O_TMPFILE`) in
//!    its directory (for a new path in directories still to be made, the deepest one that
//!    exists), with its permission bits, and its write-out started. A kill here leaves
//!    nothing.
//! 4. **Intent**: the record ([`record`]) names every path, its temporary name and the
//!    identities (device, inode, birth) of its new and its base file, and the directories
//!    to make; it is written, fsynced, and its directory fsynced. Then every temporary is
//!    fsynced (mostly in the record's journal commit: [`super::start_writeback`]).
//! 5. The directories are made, the temporaries named.
//! 6. **Commit**, in path order: a replacement exchanges names with its temporary
//!    (`RENAME_EXCHANGE`: the base stays under the temporary name, and is re-checked); a new
//!    file is renamed into place (`RENAME_NOREPLACE`); a deletion renames the base aside to
//!    its temporary name (`RENAME_NOREPLACE`, re-checked). Every directory is fsynced.
//! 7. **Mark**: the record is renamed committed and its directory fsynced — the
//!    linearization point.
//! 8. **Finish**: the displaced bases are removed, their directories fsynced once each,
//!    then the record.
//!
//! A failure before the mark rolls back ([`settle::roll_back`]); after it, only finishing
//! is left. A record is settled the same way by whoever next takes the worktree lock.
//! Needs `O_TMPFILE`, `RENAME_EXCHANGE` and `RENAME_NOREPLACE` (every local Linux file
//! system satyrn is tested on has them) and a git directory to hold the record; without
//! them a change set is refused and nothing is written (single-file writes still work).

use std::io::Write;
use std::os::fd::OwnedFd;

use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags};
use rustix::io::Errno;
use satyrn_mutator_core::revision::Revision;

use super::commit::{still_the_target, unchanged};
use super::journal::FileId;
use super::{
    PublishError, Target, check_target, checked_segments, failed, start_writeback, write_all,
};
use satyrn_os::signals::HeldSignals;

mod record;
mod settle;
mod trust;

pub use record::RECORDS_DIR;
use record::{Content, Entry, Id, Kind, Record, Records, State};
pub use trust::Boundary;

/// What a recovery did: each record's outcome as said on stderr, and how many records it
/// had to keep (one it may not act on, or could not settle: the worktree may hold a mix of
/// that set, and a candidate must not be built from it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovered {
    /// One line per record, as written to stderr.
    pub said: Vec<String>,
    /// The records kept unsettled.
    pub kept: usize,
}

impl Recovered {
    fn say(&mut self, message: String) {
        let _ = writeln!(std::io::stderr(), "satyrn-host: {message}");
        self.said.push(message);
    }
}

/// One path of a decided change set.
#[derive(Debug, Clone, Copy)]
pub struct SetChange<'a> {
    /// The worktree-relative path.
    pub path: &'a str,
    /// The revision the decision read (`None`: the path did not exist).
    pub base: Option<&'a Revision>,
    /// The new content (`None`: remove the path).
    pub content: Option<&'a [u8]>,
    /// The path (of this set) whose base's permission bits a new file takes.
    pub mode_from: Option<&'a str>,
}

/// The permission bits of a new file that takes no other file's.
const FILE_MODE: u32 = 0o644;
/// The mode asked of every created directory (the umask applies).
const DIR_MODE: u32 = 0o755;

/// Debug builds only: `SATYRN_TEST_KILL_AT=N` sends this process `SIGKILL` at the N-th
/// step of a change set's publish (every step that changes the file system is one), so a
/// test can kill it at each instant of the timeline; `SATYRN_TEST_STOP_AT=N` stops it
/// (`SIGSTOP`) there instead, so a test can kill it at a chosen delay after. A release
/// build never reads either.
fn step() {
    #[cfg(debug_assertions)]
    {
        use rustix::process::{Signal, getpid, kill_process};
        use std::sync::atomic::{AtomicU32, Ordering};
        static STEP: AtomicU32 = AtomicU32::new(0);
        let n = STEP.fetch_add(1, Ordering::Relaxed) + 1;
        let at = |var: &str| std::env::var(var).is_ok_and(|v| v == n.to_string());
        if at("SATYRN_TEST_KILL_AT") {
            let _ = kill_process(getpid(), Signal::KILL);
        }
        if at("SATYRN_TEST_STOP_AT") {
            let _ = kill_process(getpid(), Signal::STOP);
        }
    }
}

/// Settles every change-set record a killed publish left under `root` (rolled back when
/// not committed, forward when committed) and says each on stderr. The caller holds the
/// worktree lock. Fails nothing. A record is acted on only when every field is one this
/// worktree's publish could have written, within `boundary` ([`trust`]); one that is not, one
/// that cannot be read whole, and one whose settling did not reach its end state are kept
/// (and said, and counted in [`Recovered::kept`]); an intent cut short while it was written
/// (before anything it names was done) is removed. A record of another root (a copied
/// worktree's) is left alone.
pub fn recover(root: &OwnedFd, boundary: Boundary<'_>) -> Recovered {
    super::journal::git_dir_of(root)
        .map_or_else(Recovered::default, |git| recover_in(root, &git, boundary))
}

/// [`recover`] with the worktree's git directory given (`deliver` knows its attempt's).
pub fn recover_with_git_dir(
    root: &OwnedFd,
    git_dir: &std::path::Path,
    boundary: Boundary<'_>,
) -> Recovered {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::open(git_dir, flags, Mode::empty()) {
        Ok(git) => recover_in(root, &git, boundary),
        Err(_) => Recovered::default(),
    }
}

fn recover_in(root: &OwnedFd, git: &OwnedFd, boundary: Boundary<'_>) -> Recovered {
    let mut done = Recovered::default();
    let listed = Records::open(git, false).and_then(|records| {
        records
            .map(|records| records.found().map(|listing| (records, listing)))
            .transpose()
    });
    let (records, listing) = match listed {
        Ok(None) => return done,
        Ok(Some(listed)) => listed,
        Err(e) => {
            // Whether a killed publish left a record cannot be told: as if one were kept.
            done.kept = 1;
            done.say(format!("the change-set records in `{RECORDS_DIR}` of the worktree's git directory cannot be read ({e}); whether a change set was left half published cannot be told"));
            return done;
        }
    };
    let Some((dev, root_id)) = FileId::of(root, None) else {
        return done;
    };
    if listing.unexamined > 0 {
        done.kept += listing.unexamined;
        done.say(format!(
            "{} change-set records in `{RECORDS_DIR}` of the worktree's git directory are kept unexamined: a recovery reads at most {} records and {} MiB (a killed publish leaves one; the rest were put there by something else)",
            listing.unexamined,
            record::MAX_EXAMINED,
            record::RECORD_MAX >> 20,
        ));
    }
    for found in listing.found {
        let name = format!("`{}`", found.id);
        let kept = |why: String| format!("the change-set record {name} is kept, untouched: {why}");
        let (message, settled) = match (&found.content, found.state) {
            (Content::Record(record), state) => {
                match trust::check(record, dev, Id::from(root_id), boundary) {
                    // Another root's (a copied worktree's): not ours to settle or report.
                    Err(_) if record.root != Id::from(root_id) => continue,
                    Err(why) => (kept(why), false),
                    Ok(()) if state == State::Intent => {
                        let settled = settle::roll_back(root, record);
                        let message = if settled {
                            format!("rolled back the change set of {} files a killed satyrn-host left unfinished", record.entries.len())
                        } else {
                            kept(format!("rolling back its change set of {} files did not finish (a file is unreachable, or was changed since); the worktree may hold part of it", record.entries.len()))
                        };
                        (message, settled)
                    }
                    Ok(()) => {
                        let settled = records.sync() && settle::roll_forward(root, record);
                        let message = if settled {
                            format!("finished the committed change set of {} files a killed satyrn-host left", record.entries.len())
                        } else {
                            kept(format!("finishing its committed change set of {} files did not finish (a displaced file is left)", record.entries.len()))
                        };
                        (message, settled)
                    }
                }
            }
            (Content::Torn, State::Intent) => (
                "removed a change-set record a killed satyrn-host left half written (nothing it names existed yet)".to_owned(),
                true,
            ),
            (Content::Torn, State::Committed) => (kept("it is cut short".to_owned()), false),
            (Content::Unusable(why), _) => (kept(why.clone()), false),
        };
        if settled {
            records.remove(&found.id, found.state);
        } else {
            done.kept += 1;
        }
        done.say(message);
    }
    done
}

/// One path, checked and prepared.
struct Prepared<'c> {
    change: &'c SetChange<'c>,
    leaf: String,
    /// The worktree-relative directory of the path.
    dir_rel: String,
    /// The path's directory, when it exists.
    dir: Option<OwnedFd>,
    /// The deepest existing directory of the path (its directory, when it exists).
    home: OwnedFd,
    home_rel: String,
    /// The directories to make, worktree-relative, parents first.
    missing: Vec<String>,
    /// The base, checked.
    target: Option<Target>,
    /// The new content's anonymous file.
    temp: Option<OwnedFd>,
    temp_name: String,
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

/// Publishes a decided change set under `root`, all together or not at all. The caller
/// holds the worktree lock ([`satyrn_os::lock::WorktreeLock`]), has run [`recover`] under it
/// (the operation layer's lock does both) and has given each path once.
///
/// Process-global effects, from the first temporary until the record is settled: the
/// termination signals are held and `SIGXFSZ` ignored, as in [`super::publish`].
///
/// # Errors
///
/// [`PublishError::Stale`] when a base changed or went away since the decision (at the
/// check or at the commit); [`PublishError::Exists`] when a new path exists; and
/// [`PublishError::Failed`] for an unsafe path, a symbolic link on the way, a file system
/// without what the publish needs, no git directory, or any write, sync or rename that
/// fails before the mark. In every case the worktree is as it was (every name done rolled
/// back).
pub fn publish_set(root: &OwnedFd, changes: &[SetChange<'_>]) -> Result<(), PublishError> {
    let git = super::journal::git_dir_of(root).ok_or_else(|| {
        PublishError::Failed(
            "the worktree has no git directory of its own to hold a change set's intent record; nothing was written (change the files one at a time)".to_owned(),
        )
    })?;
    let _ = super::swept(root);
    let records = Records::open(&git, true)
        .ok()
        .flatten()
        .ok_or_else(|| {
            PublishError::Failed(format!(
                "cannot make or open the directory `{RECORDS_DIR}` in the worktree's git directory (a change set's intent record is written there; anything else of that name must be removed first); nothing was written"
            ))
        })?;
    let held = HeldSignals::hold();
    let outcome = publish_checked(root, &records, changes);
    drop(held);
    outcome
}

fn publish_checked(
    root: &OwnedFd,
    records: &Records,
    changes: &[SetChange<'_>],
) -> Result<(), PublishError> {
    let mut prepared = Vec::with_capacity(changes.len());
    for change in changes {
        prepared.push(check(root, change)?);
    }
    let (dev, root_id) = FileId::of(root, None).ok_or_else(|| {
        PublishError::Failed(
            "the worktree's root cannot be inspected; nothing was written".to_owned(),
        )
    })?;
    let modes: Vec<(&str, Mode)> = prepared
        .iter()
        .filter_map(|p| p.target.as_ref().map(|t| (p.change.path, t.mode)))
        .collect();
    let mut entries = Vec::with_capacity(prepared.len());
    let mut made: Vec<String> = Vec::new();
    for p in &mut prepared {
        let mode = p
            .change
            .mode_from
            .and_then(|from| {
                modes
                    .iter()
                    .find(|(path, _)| *path == from)
                    .map(|(_, m)| *m)
            })
            .or_else(|| p.target.as_ref().map(|t| t.mode))
            .unwrap_or_else(|| Mode::from_raw_mode(FILE_MODE));
        let new = match p.change.content {
            Some(content) => Some(fill(p, mode, content, dev)?),
            None => {
                if p.target.is_some() {
                    p.temp_name = free_name(&p.home, &p.leaf, p.change.path)?;
                }
                None
            }
        };
        let base = p
            .target
            .as_ref()
            .and_then(|t| FileId::of(&t.file, None))
            .map(|(_, id)| Id::from(id));
        let kind = match (p.target.is_some(), new.is_some()) {
            (true, true) => Kind::Replace,
            (false, true) => Kind::Create,
            (true, false) => Kind::Delete,
            (false, false) => continue,
        };
        if p.target.is_some() && base.is_none() {
            return Err(PublishError::Failed(format!(
                "`{}`: the file's identity cannot be read",
                p.change.path
            )));
        }
        for dir in &p.missing {
            if !made.contains(dir) {
                made.push(dir.clone());
            }
        }
        entries.push(Entry {
            path: p.change.path.to_owned(),
            kind,
            home: if kind == Kind::Delete {
                p.dir_rel.clone()
            } else {
                p.home_rel.clone()
            },
            temp: p.temp_name.clone(),
            new,
            base,
        });
    }
    let record = Record {
        version: 1,
        dev,
        root: Id::from(root_id),
        entries,
        made,
    };
    step();
    let id = records
        .write_intent(&record)
        .map_err(|e| failed("the change set", "writing its intent record", e))?;
    step();
    if let Err(e) = sync_temporaries(&prepared) {
        records.remove(&id, State::Intent);
        return Err(e);
    }
    // Not settled (a file unreachable now): the record stays, for the next lock to finish.
    let undo = |e: PublishError| {
        if settle::roll_back(root, &record) {
            records.remove(&id, State::Intent);
        }
        e
    };
    make_dirs(root, &record.made).map_err(undo)?;
    for p in &prepared {
        name(p).map_err(undo)?;
    }
    let mut synced: Vec<&OwnedFd> = Vec::new();
    for p in &mut prepared {
        let dir = commit_one(root, p).map_err(undo)?;
        p.dir = Some(dir);
        step();
    }
    for p in &prepared {
        for dir in [p.dir.as_ref(), Some(&p.home)].into_iter().flatten() {
            if !synced.iter().any(|d| same_dir(d, dir)) {
                rustix::fs::fsync(dir)
                    .map_err(|e| failed(p.change.path, "syncing its directory", e))
                    .map_err(undo)?;
                synced.push(dir);
            }
        }
    }
    step();
    let durable = records
        .commit(&id)
        .map_err(|e| failed("the change set", "marking its record committed", e))
        .map_err(undo)?;
    step();
    // Committed. Until the mark is durable no displaced base may go: a power loss could
    // still undo the mark, and rolling back needs them. The next lock finishes it.
    if durable && settle::roll_forward(root, &record) {
        step();
        records.remove(&id, State::Committed);
    }
    Ok(())
}

fn same_dir(a: &OwnedFd, b: &OwnedFd) -> bool {
    match (rustix::fs::fstat(a), rustix::fs::fstat(b)) {
        (Ok(a), Ok(b)) => a.st_dev == b.st_dev && a.st_ino == b.st_ino,
        _ => false,
    }
}

/// Checks one path, writing nothing: its directories (no symbolic link followed), its base
/// (the decided revision) or its absence.
fn check<'c>(root: &OwnedFd, change: &'c SetChange<'c>) -> Result<Prepared<'c>, PublishError> {
    let path = change.path;
    let segments = checked_segments(path, "publish")?;
    let Some((leaf, dirs)) = segments.split_last() else {
        return Err(PublishError::Failed("empty path".to_owned()));
    };
    let mut home = super::dup_root(root, path)?;
    let mut home_rel = String::new();
    let mut missing = Vec::new();
    for (depth, segment) in dirs.iter().enumerate() {
        if !missing.is_empty() {
            missing.push(dirs[..=depth].join("/"));
            continue;
        }
        match rustix::fs::openat(
            &home,
            *segment,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(dir) => {
                home = dir;
                home_rel = join(&home_rel, segment);
            }
            Err(Errno::NOENT) => missing.push(dirs[..=depth].join("/")),
            Err(_) => {
                // The writers' own message for a symbolic link or a file on the way.
                super::open_segment(&home, segment, path)?;
            }
        }
    }
    let target = match change.base {
        Some(base) => {
            if !missing.is_empty() {
                return Err(PublishError::Stale(format!(
                    "`{path}` was removed since it was read; read it again"
                )));
            }
            Some(check_target(&home, leaf, base, path)?)
        }
        None => {
            if missing.is_empty() {
                match rustix::fs::statat(&home, *leaf, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(_) => {
                        return Err(PublishError::Exists(format!(
                            "`{path}` was created by another writer since the change set was decided; read it and decide again"
                        )));
                    }
                    Err(Errno::NOENT) => {}
                    Err(e) => return Err(failed(path, "inspecting the target", e)),
                }
            }
            None
        }
    };
    let dir = if missing.is_empty() {
        Some(
            rustix::io::fcntl_dupfd_cloexec(&home, 0)
                .map_err(|e| failed(path, "duplicating a descriptor", e))?,
        )
    } else {
        None
    };
    Ok(Prepared {
        change,
        leaf: (*leaf).to_owned(),
        dir_rel: dirs.join("/"),
        dir,
        home,
        home_rel,
        missing,
        target,
        temp: None,
        temp_name: String::new(),
    })
}

/// Writes the new content to an anonymous temporary in the path's home directory with
/// `mode`, syncs it, and chooses the temporary's name; returns its identity. For a
/// deletion, only the name (the base's aside name) is chosen, in [`check`]'s caller.
fn fill(p: &mut Prepared<'_>, mode: Mode, content: &[u8], dev: u64) -> Result<Id, PublishError> {
    let path = p.change.path;
    if super::temporary::forced_fallback() {
        return Err(no_support(path, "O_TMPFILE"));
    }
    let file = match rustix::fs::openat(
        &p.home,
        ".",
        OFlags::RDWR | OFlags::TMPFILE | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    ) {
        Ok(file) => file,
        Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL) => {
            return Err(no_support(path, "O_TMPFILE"));
        }
        Err(e) => return Err(failed(path, "creating the temporary", e)),
    };
    rustix::fs::fchmod(&file, mode).map_err(|e| failed(path, "setting the mode", e))?;
    if rustix::process::geteuid().is_root()
        && let Some(t) = &p.target
    {
        let _ = rustix::fs::fchown(&file, Some(t.uid), Some(t.gid));
        rustix::fs::fchmod(&file, mode).map_err(|e| failed(path, "setting the mode", e))?;
    }
    write_all(&file, content).map_err(|e| failed(path, "writing the temporary", e))?;
    // Synced with the others, after the record ([`sync_temporaries`]).
    start_writeback(&file);
    let (file_dev, id) = FileId::of(&file, None).ok_or_else(|| {
        PublishError::Failed(format!("`{path}`: the temporary's identity cannot be read"))
    })?;
    if file_dev != dev {
        return Err(PublishError::Failed(format!(
            "`{path}` is on another file system than the worktree root; a change set stays on one"
        )));
    }
    p.temp = Some(file);
    p.temp_name = free_name(&p.home, &p.leaf, path)?;
    Ok(Id::from(id))
}

/// Syncs every new content's temporary, before any name changes. Their write-out was
/// started as each was filled, and the record's sync has most likely committed the journal
/// transaction that holds them all, so these are cheap; each is still an fsync of its own.
/// Nothing is named yet: a failure leaves the intent with nothing to undo.
fn sync_temporaries(prepared: &[Prepared<'_>]) -> Result<(), PublishError> {
    for p in prepared {
        if let Some(temp) = &p.temp {
            rustix::fs::fsync(temp)
                .map_err(|e| failed(p.change.path, "syncing the temporary", e))?;
        }
    }
    Ok(())
}

fn no_support(path: &str, what: &str) -> PublishError {
    PublishError::Failed(format!(
        "`{path}`: its file system has no {what}, which publishing a change set all or nothing needs; nothing was written (change the files one at a time)"
    ))
}

/// A temporary name for `leaf` that nothing in `dir` has now.
fn free_name(dir: &OwnedFd, leaf: &str, path: &str) -> Result<String, PublishError> {
    super::temporary::for_each_candidate_name(super::temporary::stem(leaf), |name| {
        match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Err(Errno::NOENT) => Ok(true),
            Ok(_) => Ok(false),
            Err(e) => Err(failed(path, "inspecting a temporary name", e)),
        }
    })
}

/// Makes the directories `made` (parents first), each fsynced into its parent.
fn make_dirs(root: &OwnedFd, made: &[String]) -> Result<(), PublishError> {
    for rel in made {
        let (parent, name) = rel.rsplit_once('/').unwrap_or(("", rel.as_str()));
        let segments: Vec<&str> = if parent.is_empty() {
            Vec::new()
        } else {
            parent.split('/').collect()
        };
        let dir = super::open_parent(root, &segments, rel)?;
        match rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(DIR_MODE)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(failed(rel, "creating the directory", e)),
        }
        // Refuses anything but a real directory, a symbolic link swapped in included.
        super::open_segment(&dir, name, rel)?;
        rustix::fs::fsync(&dir).map_err(|e| failed(rel, "syncing its parent", e))?;
        step();
    }
    Ok(())
}

/// Names the temporary of a replacement or a creation (a deletion's name is its rename).
fn name(p: &Prepared<'_>) -> Result<(), PublishError> {
    let Some(file) = &p.temp else {
        return Ok(());
    };
    if !super::temporary::link(file, &p.home, &p.temp_name, p.change.path)? {
        return Err(PublishError::Failed(format!(
            "`{}`: its temporary name `{}` was taken meanwhile",
            p.change.path, p.temp_name
        )));
    }
    step();
    Ok(())
}

/// Commits one path; returns its directory.
fn commit_one(root: &OwnedFd, p: &mut Prepared<'_>) -> Result<OwnedFd, PublishError> {
    let path = p.change.path;
    let leaf = p.leaf.as_str();
    match (&p.target, p.change.content) {
        (Some(target), Some(_)) => {
            let dir = dir_of(p)?;
            still_the_target(&dir, leaf, path, target)?;
            match rustix::fs::renameat_with(
                &dir,
                p.temp_name.as_str(),
                &dir,
                leaf,
                RenameFlags::EXCHANGE,
            ) {
                Ok(()) => {}
                Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {
                    return Err(no_support(path, "RENAME_EXCHANGE"));
                }
                Err(e) => return Err(failed(path, "exchanging the temporary and the target", e)),
            }
            let base = p
                .change
                .base
                .ok_or_else(|| PublishError::Failed(format!("`{path}`: no base")))?;
            still_the_target(&dir, &p.temp_name, path, target)?;
            unchanged(path, base, target)?;
            Ok(dir)
        }
        (None, Some(_)) => {
            let segments: Vec<&str> = if p.dir_rel.is_empty() {
                Vec::new()
            } else {
                p.dir_rel.split('/').collect()
            };
            let dir = super::open_parent(root, &segments, path)?;
            match rustix::fs::renameat_with(
                &p.home,
                p.temp_name.as_str(),
                &dir,
                leaf,
                RenameFlags::NOREPLACE,
            ) {
                Ok(()) => Ok(dir),
                Err(Errno::EXIST) => Err(PublishError::Exists(format!(
                    "`{path}` was created by another writer meanwhile; read it and decide again"
                ))),
                Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {
                    Err(no_support(path, "RENAME_NOREPLACE"))
                }
                Err(e) => Err(failed(path, "renaming the temporary to the new file", e)),
            }
        }
        (Some(target), None) => {
            let dir = dir_of(p)?;
            let base = p
                .change
                .base
                .ok_or_else(|| PublishError::Failed(format!("`{path}`: no base")))?;
            still_the_target(&dir, leaf, path, target)?;
            match rustix::fs::renameat_with(
                &dir,
                leaf,
                &dir,
                p.temp_name.as_str(),
                RenameFlags::NOREPLACE,
            ) {
                Ok(()) => {}
                Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {
                    return Err(no_support(path, "RENAME_NOREPLACE"));
                }
                Err(Errno::NOENT) => {
                    return Err(PublishError::Stale(format!(
                        "`{path}` was removed or renamed meanwhile (by a writer that does not take satyrn's lock); read it again"
                    )));
                }
                Err(e) => return Err(failed(path, "renaming the target aside", e)),
            }
            still_the_target(&dir, &p.temp_name, path, target)?;
            unchanged(path, base, target)?;
            Ok(dir)
        }
        (None, None) => dir_of(p),
    }
}

fn dir_of(p: &Prepared<'_>) -> Result<OwnedFd, PublishError> {
    let dir = p.dir.as_ref().unwrap_or(&p.home);
    rustix::io::fcntl_dupfd_cloexec(dir, 0)
        .map_err(|e| failed(p.change.path, "duplicating a descriptor", e))
}
