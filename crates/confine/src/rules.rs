//! What a confined command may touch, as Landlock grants: computed once, before it starts.
//!
//! Landlock only grants: a rule on a directory covers everything beneath it, and nothing
//! inside a grant can be taken away. So nothing private may lie beneath a read grant.
//! [`plan`] starts at `/` and, at every directory with something unreadable beneath it,
//! lists that directory (its names stay visible) and grants its entries one by one: an
//! entry with nothing unreadable beneath it as a whole, the others split again, the
//! unreadable ones not at all. Symbolic links get no grant of their own: opening one is
//! decided on its target's path.
//!
//! Unreadable: every path of the worktree that the contract makes private (a private
//! directory with all beneath it), every other name of a private file's inode inside the
//! worktree (a hard link), the credential stores outside it ([`CREDENTIAL_STORES`] under
//! the caller's home, and `--deny-read`), and the directory holding every run's scratch
//! (another run's scratch is never readable; this run's is granted back).

use std::collections::{BTreeSet, HashSet};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use satyrn_mutator_core::fnmatch::PatternSet;

/// The most entries [`symlink_targets`] looks at under one denied path.
pub const MAX_DENIED_ENTRIES: usize = 100_000;

/// Where `path` and every symlink beneath it lead, when that is elsewhere (canonical
/// paths; followed on into the directories they name), and whether every entry was
/// looked at (at most [`MAX_DENIED_ENTRIES`]). With [`Follow::LinksButPrograms`] a symlink
/// to an executable file is left out: it is a program's name for itself (Codex links its
/// own binary as `apply_patch` under `~/.codex/tmp`), not a place data was moved to, and
/// the agent could not run without it.
#[must_use]
pub fn symlink_targets(path: &Path, follow: Follow) -> (Vec<PathBuf>, bool) {
    let mut found: Vec<PathBuf> = Vec::new();
    let mut budget = MAX_DENIED_ENTRIES;
    let mut todo: Vec<PathBuf> = Vec::new();
    let Ok(base) = std::fs::canonicalize(path) else {
        return (found, true);
    };
    if base != path {
        found.push(base.clone());
    }
    let elsewhere = |real: &Path, found: &[PathBuf]| {
        !real.starts_with(path) && !found.iter().any(|f| real.starts_with(f))
    };
    if base.is_dir() {
        todo.push(path.to_path_buf());
    }
    while let Some(dir) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if budget == 0 {
                return (found, false);
            }
            budget -= 1;
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let at = entry.path();
            if kind.is_symlink() {
                let program = follow == Follow::LinksButPrograms
                    && std::fs::metadata(&at).is_ok_and(|m| m.is_file() && m.mode() & 0o111 != 0);
                if !program
                    && let Ok(real) = std::fs::canonicalize(&at)
                    && elsewhere(&real, &found)
                {
                    if real.is_dir() {
                        todo.push(real.clone());
                    }
                    found.push(real);
                }
            } else if kind.is_dir() {
                todo.push(at);
            }
        }
    }
    (found, true)
}

/// The credential stores under the caller's home that a confined command can never read
/// (those that exist; each with all beneath it).
pub const CREDENTIAL_STORES: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".config/gcloud",
    ".config/gh",
    ".kube",
    ".docker/config.json",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials.toml",
    ".cargo/credentials",
    ".Xauthority",
    // The agents' own logins (with `--agent`, each agent's whole directory is unreadable).
    ".claude/.credentials.json",
    ".codex/auth.json",
    ".pi/agent/auth.json",
];

/// The environment variables that point a process at a credential agent or a session
/// bus: removed from the command's environment. Landlock (below ABI 9) does not decide
/// `connect` to a named Unix socket, so a socket inside an unreadable store (an
/// `ssh-agent` socket under `~/.ssh`) stays reachable by its path; without these the
/// command is not told where one is (docs/confinement.md, "What it does not cover").
pub const CREDENTIAL_AGENT_VARS: &[&str] = &[
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "GNOME_KEYRING_CONTROL",
    "DBUS_SESSION_BUS_ADDRESS",
    "KRB5CCNAME",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "TMUX",
    "TMUX_PANE",
    "STY",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XAUTHORITY",
    "XDG_RUNTIME_DIR",
    "DOCKER_HOST",
];

/// The servers of the caller's session a confined command can still reach by a socket's
/// path (Landlock below ABI 9 does not decide `connect` to a named Unix socket), each
/// able to run what it is sent outside the run: a terminal multiplexer (`send-keys` types
/// into its other windows), an X or Wayland display (synthetic key presses), Docker. Read
/// from the caller's environment and the multiplexers' default socket directories; what
/// `confine` warns about at start (docs/confinement.md, "Named Unix sockets").
#[must_use]
pub fn reachable_servers(
    env: impl Fn(&str) -> Option<std::ffi::OsString>,
    uid: u32,
) -> Vec<&'static str> {
    let set = |var: &str| env(var).is_some_and(|v| !v.is_empty());
    let mut found = Vec::new();
    if set("TMUX") || Path::new(&format!("/tmp/tmux-{uid}")).exists() {
        found.push("tmux");
    }
    // screen's socket directories are per login name: one owned by this user.
    let screen_dir = std::fs::read_dir("/run/screen").is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| std::fs::symlink_metadata(e.path()).is_ok_and(|m| m.uid() == uid))
    });
    if set("STY") || screen_dir {
        found.push("GNU screen");
    }
    if set("DISPLAY") || set("WAYLAND_DISPLAY") {
        found.push("the X or Wayland display");
    }
    if Path::new("/var/run/docker.sock").exists() || Path::new("/run/docker.sock").exists() {
        found.push("Docker");
    }
    found
}

/// How a path is granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Grant {
    /// Read and execute everything beneath (a directory) or the file itself.
    Read,
    /// List this directory and every directory beneath it; read no file by this grant.
    List,
    /// Every access, beneath: the scratch directory, the scratch paths, `--home`.
    Write,
    /// Read, write and truncate the device file (`/dev/null`, the terminal), no execute.
    Device,
}

/// The grants of one run.
#[derive(Debug, Default)]
pub struct Plan {
    /// Each path with its grant, in the order found.
    pub grants: Vec<(PathBuf, Grant, Kind)>,
    /// How many worktree paths were made unreadable (private, or another name of one).
    pub private: usize,
    /// The unreadable paths outside the worktree that exist (credential stores, the
    /// scratch parent, `--deny-read`).
    pub outside: Vec<PathBuf>,
    /// What the caller should tell the user (a denied directory too large to search for
    /// symlinks whole).
    pub warnings: Vec<String>,
}

/// How the symlinks of a denied path are followed ([`symlink_targets`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    /// Not at all: the path is denied as it is (another worktree, the scratch parent).
    No,
    /// The path and every symlink beneath it: what they lead to is denied too (the
    /// caller's credential stores, `--deny-read`).
    Links,
    /// As [`Follow::Links`], except a symlink to an executable file, a program's name for
    /// itself (an agent's own directory: Codex links its binary as `apply_patch` there).
    LinksButPrograms,
}

/// A granted path's type: Landlock allows only file rights on a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A directory.
    Dir,
    /// Anything else that is not a symbolic link.
    File,
}

/// What [`plan`] works from.
#[derive(Debug)]
pub struct Inputs<'a> {
    /// The worktree root (absolute, as resolved by the caller).
    pub worktree: &'a Path,
    /// The worktree's private paths, as [`private_in_worktree`] found them.
    pub private: &'a [PathBuf],
    /// Absolute paths never readable (credential stores, the scratch parent, extras), each
    /// with how far its symlinks are followed; those that do not exist are skipped.
    pub deny: &'a [(PathBuf, Follow)],
    /// Absolute directories every access is granted on (the run's scratch, scratch paths,
    /// `--home`).
    pub write: &'a [PathBuf],
    /// Device files and directories granted [`Grant::Device`] when they exist.
    pub devices: &'a [PathBuf],
    /// The mount table (`/proc/self/mountinfo`, read once by the caller).
    pub mounts: &'a [super::mounts::Mount],
    /// The per-user directory of every run's scratch (this run's home and `TMPDIR` lie
    /// beneath it, fresh and empty).
    pub scratch_parent: &'a Path,
    /// Absolute directories granted [`Grant::Read`] whole even when they lie under an
    /// unreadable path (the common git directory inside the caller's own checkout).
    pub read_back: &'a [PathBuf],
}

/// Computes the grants. Reads the file system (the directories above each unreadable
/// path, the scratch paths); no other effect.
///
/// # Errors
///
/// An I/O error reading a directory on the way (the worktree's, or one above an
/// unreadable path).
pub fn plan(inputs: &Inputs<'_>) -> io::Result<Plan> {
    let mut unreadable: BTreeSet<PathBuf> = BTreeSet::new();
    let private_count = inputs.private.len();
    unreadable.extend(inputs.private.iter().cloned());
    let mut outside = Vec::new();
    let mut warnings = Vec::new();
    for (path, follow) in inputs.deny {
        if std::fs::symlink_metadata(path).is_ok() {
            unreadable.insert(path.clone());
            outside.push(path.clone());
            if *follow == Follow::No {
                continue;
            }
            // A symlink (`~/.ssh` → elsewhere), a path through one, or a symlink inside
            // (`~/.codex/sessions` → elsewhere): what it names is unreadable under its own
            // path too.
            let (targets, complete) = symlink_targets(path, *follow);
            if !complete {
                warnings.push(format!(
                    "{} holds more than {MAX_DENIED_ENTRIES} entries: only the first were searched for symlinks to elsewhere, whose targets are unreadable; a symlink beyond them leads to a readable place",
                    path.display()
                ));
            }
            for real in targets {
                if unreadable.insert(real.clone()) {
                    outside.push(real);
                }
            }
        }
    }
    // The same files under another mount (a bind mount, a second mount of the file
    // system) are unreadable there too: Landlock decides on the path used.
    let mounts = inputs.mounts;
    let aliases: Vec<PathBuf> = unreadable
        .iter()
        .flat_map(|p| super::mounts::aliases(mounts, p))
        .collect();
    unreadable.extend(aliases);
    for dir in inputs.write {
        if let Some(hidden) = unreadable.iter().find(|p| p.starts_with(dir)) {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} is unreadable but lies in the writable {}, whose grant would make it readable",
                    hidden.display(),
                    dir.display()
                ),
            ));
        }
    }
    // Every write grant but the run's own fresh scratch (`--home` included): a directory
    // beneath another is walked as part of it, so no name is counted twice.
    let checked: Vec<&PathBuf> = inputs
        .write
        .iter()
        .filter(|d| !d.starts_with(inputs.scratch_parent))
        .collect();
    let outermost: Vec<&PathBuf> = checked
        .iter()
        .filter(|d| !checked.iter().any(|o| o != *d && d.starts_with(o)))
        .copied()
        .collect();
    refuse_mount_points(&outermost, mounts)?;
    refuse_outside_links(&outermost)?;
    let mut plan = Plan {
        private: private_count,
        outside,
        warnings,
        ..Plan::default()
    };
    // Write grants are added to, not carved out of, the reads: they may lie under an
    // unreadable directory (the run's own scratch under the scratch parent).
    let root = Path::new("/");
    let hidden: HashSet<&Path> = unreadable.iter().map(PathBuf::as_path).collect();
    split(root, &unreadable, &hidden, &mut plan.grants)?;
    for dir in inputs.read_back {
        plan.grants.push((dir.clone(), Grant::Read, Kind::Dir));
    }
    for dir in inputs.write {
        plan.grants.push((dir.clone(), Grant::Write, Kind::Dir));
    }
    for device in inputs.devices {
        if let Ok(meta) = std::fs::metadata(device) {
            let kind = if meta.is_dir() { Kind::Dir } else { Kind::File };
            plan.grants.push((device.clone(), Grant::Device, kind));
        }
    }
    Ok(plan)
}

/// Refuses a mount point beneath the writable directories `dirs`: a bind mount of the
/// worktree's `src/` at `target/sub` would make `src/` writable through the grant.
fn refuse_mount_points(dirs: &[&PathBuf], mounts: &[super::mounts::Mount]) -> io::Result<()> {
    for dir in dirs {
        if let Some(m) = mounts
            .iter()
            .find(|m| m.point.starts_with(dir) && m.point != **dir)
        {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} is a mount point inside the writable {}; a write through it would change what is mounted there (unmount it)",
                    m.point.display(),
                    dir.display()
                ),
            ));
        }
    }
    Ok(())
}

/// Refuses a regular file beneath the writable directories `dirs` (the scratch paths,
/// `--home`) that has a name outside them: a hard link to a tracked file (or to any file
/// elsewhere) would let the command change that file through the write grant. Names are
/// counted per inode across `dirs`: a build's own hard links (cargo links `target/debug/x`
/// to its copy in `deps/`) have every name inside and pass.
fn refuse_outside_links(dirs: &[&PathBuf]) -> io::Result<()> {
    let mut names: std::collections::HashMap<(u64, u64), (u64, u64, PathBuf)> =
        std::collections::HashMap::new();
    let mut stack: Vec<PathBuf> = dirs.iter().map(|d| (*d).clone()).collect();
    while let Some(dir) = stack.pop() {
        for (entry, file_type) in entries_of(&dir)? {
            if file_type.is_dir() {
                stack.push(entry.path());
            } else if file_type.is_file() {
                let Some(meta) = gone_is_empty(entry.metadata(), &entry.path())? else {
                    continue;
                };
                if meta.nlink() > 1 {
                    let seen = names.entry((meta.dev(), meta.ino())).or_insert((
                        meta.nlink(),
                        0,
                        entry.path(),
                    ));
                    seen.1 += 1;
                }
            }
        }
    }
    if let Some((_, _, path)) = names.values().find(|(links, seen, _)| seen < links) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} in a writable directory (a scratch path or --home) is a hard link to a file with a name outside it; a write through it would change that file (remove the link)",
                path.display()
            ),
        ));
    }
    Ok(())
}

/// `dir` has something unreadable beneath it: list it, grant its entries one by one.
fn split(
    dir: &Path,
    unreadable: &BTreeSet<PathBuf>,
    hidden: &HashSet<&Path>,
    out: &mut Vec<(PathBuf, Grant, Kind)>,
) -> io::Result<()> {
    out.push((dir.to_path_buf(), Grant::List, Kind::Dir));
    for (entry, file_type) in entries_of(dir)? {
        let path = entry.path();
        if hidden.contains(path.as_path()) || file_type.is_symlink() {
            continue;
        }
        let kind = if file_type.is_dir() {
            Kind::Dir
        } else {
            Kind::File
        };
        if kind == Kind::Dir && has_beneath(unreadable, &path) {
            split(&path, unreadable, hidden, out)?;
        } else {
            out.push((path, Grant::Read, kind));
        }
    }
    Ok(())
}

/// Whether some path of `set` lies strictly beneath `dir`. Paths order by components, so
/// `dir`'s descendants follow it directly.
fn has_beneath(set: &BTreeSet<PathBuf>, dir: &Path) -> bool {
    set.range(dir.to_path_buf()..)
        .find(|p| p.as_path() != dir)
        .is_some_and(|p| p.starts_with(dir))
}

/// Every absolute path of the worktree that is private (a private directory is one entry,
/// its contents not walked), and every other name inside the worktree of a private file's
/// inode. Everything is walked, `.git` directories included (a second walk only when a
/// private file has other names).
///
/// # Errors
///
/// An I/O error reading a directory of the worktree.
pub fn private_in_worktree(worktree: &Path, private_paths: &[String]) -> io::Result<Vec<PathBuf>> {
    let patterns = PatternSet::new(private_paths);
    let mut found = Vec::new();
    let mut linked = HashSet::new();
    if patterns.is_empty() {
        return Ok(found);
    }
    let mut stack = vec![(worktree.to_path_buf(), String::new())];
    while let Some((dir, rel)) = stack.pop() {
        for (entry, file_type) in entries_of(&dir)? {
            // A name that is not UTF-8 is matched in its lossy spelling: a pattern such as
            // `*.key` still matches `k\xff.key`.
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let rel_path = if rel.is_empty() {
                name.into_owned()
            } else {
                format!("{rel}/{name}")
            };
            // Its parents were matched on the way down (a private directory is not entered).
            if patterns.matches(&rel_path) {
                if file_type.is_file() {
                    let Some(meta) = gone_is_empty(entry.metadata(), &entry.path())? else {
                        continue;
                    };
                    if meta.nlink() > 1 {
                        linked.insert((meta.dev(), meta.ino()));
                    }
                }
                found.push(entry.path());
            } else if file_type.is_dir() {
                stack.push((entry.path(), rel_path));
            }
        }
    }
    if !linked.is_empty() {
        other_names(worktree, &linked, &mut found)?;
    }
    Ok(found)
}

/// Adds every regular file of the worktree whose inode is in `inodes` and that is not
/// already in `found`.
fn other_names(
    worktree: &Path,
    inodes: &HashSet<(u64, u64)>,
    found: &mut Vec<PathBuf>,
) -> io::Result<()> {
    let known: HashSet<PathBuf> = found.iter().cloned().collect();
    let mut stack = vec![worktree.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for (entry, file_type) in entries_of(&dir)? {
            let path = entry.path();
            if file_type.is_dir() {
                if !known.contains(&path) {
                    stack.push(path);
                }
            } else if file_type.is_file() {
                let Some(meta) = gone_is_empty(entry.metadata(), &path)? else {
                    continue;
                };
                if inodes.contains(&(meta.dev(), meta.ino())) && !known.contains(&path) {
                    found.push(path);
                }
            }
        }
    }
    Ok(())
}

/// The entries of `dir` with their types, read once; `dir` or an entry that vanished while
/// it was read is no entry (another process's temporary file in `/tmp`).
fn entries_of(dir: &Path) -> io::Result<Vec<(std::fs::DirEntry, std::fs::FileType)>> {
    let Some(entries) = gone_is_empty(std::fs::read_dir(dir), dir)? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for entry in entries {
        let Some(entry) = gone_is_empty(entry, dir)? else {
            continue;
        };
        if let Some(file_type) = gone_is_empty(entry.file_type(), &entry.path())? {
            out.push((entry, file_type));
        }
    }
    Ok(out)
}

/// `Ok(None)` for what vanished while it was looked at (another process's temporary file in
/// `/tmp`): nothing there to grant or to hide. Any other error names `path`.
fn gone_is_empty<T>(result: io::Result<T>, path: &Path) -> io::Result<Option<T>> {
    match result {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_strict_descendants_count_as_beneath() {
        let set: BTreeSet<PathBuf> = ["/a/b/c", "/a/bc"].iter().map(PathBuf::from).collect();
        assert!(has_beneath(&set, Path::new("/a")));
        assert!(has_beneath(&set, Path::new("/a/b")));
        assert!(!has_beneath(&set, Path::new("/a/b/c")));
        assert!(!has_beneath(&set, Path::new("/a/bc")));
        assert!(!has_beneath(&set, Path::new("/x")));
    }
}
