//! The temporary a publish writes the new content to, and its name.
//!
//! Where the file system allows it, the temporary is **anonymous** (`O_TMPFILE`): written
//! and fsynced without any name, so a process killed then leaves nothing behind; it gets
//! its name (`linkat`) only right before the rename that commits it. Where the file
//! system has no `O_TMPFILE`, it is a named file created with `O_EXCL`, as every atomic
//! editor does. Every name given is first recorded in the worktree's journal
//! ([`super::journal`]), the only proof the sweep of killed publishes accepts.

use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

use super::journal::{FileId, Journal, Record};
use super::{PublishError, failed};

/// Whether `name` is a publish temporary's name, `.<name>.satyrn-<pid>-<nonce>.tmp`: the one
/// predicate every sweep (this module's, `attempt`'s, a candidate's) uses.
#[must_use]
pub fn is_temporary_name(name: &str) -> bool {
    owner(name).is_some()
}

/// The process id in a temporary's name, or `None` when `name` is not one.
fn owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let (_, tail) = rest.rsplit_once(".satyrn-")?;
    let (pid, nonce) = tail.split_once('-')?;
    let well_formed = !pid.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit())
        && !nonce.is_empty()
        && nonce.bytes().all(|b| b.is_ascii_hexdigit());
    if !well_formed {
        return None;
    }
    // A pid too large for a pid_t names no process: still a temporary, owned by nobody.
    Some(pid.parse().unwrap_or(u32::MAX))
}

/// The most bytes of the target's name used in its temporary's name: with the 34 bytes
/// around it (`.`, `.satyrn-`, a pid of up to 10 digits, `-`, 10 hex digits, `.tmp`),
/// the temporary's name stays well under `NAME_MAX` (255).
const TEMP_STEM_MAX: usize = 200;

/// The part of `leaf` used in its temporaries' names: a prefix of a long leaf (on a
/// character boundary), since a leaf may be up to `NAME_MAX` bytes itself.
pub(super) fn stem(leaf: &str) -> &str {
    truncate_at_char_boundary(leaf, TEMP_STEM_MAX)
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
pub(super) fn truncate_at_char_boundary(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Whether this build was told to behave as on a file system without `O_TMPFILE` and
/// `RENAME_EXCHANGE` (`SATYRN_TEST_PUBLISH_FALLBACK=1`, or `2`, which also takes away
/// `RENAME_NOREPLACE`: see [`forced_no_noreplace`]). The fallbacks otherwise cannot be
/// exercised on this machine's file systems, which all have both. Debug builds only; a
/// release build never reads it.
pub(super) fn forced_fallback() -> bool {
    forced_level() >= 1
}

/// Whether this build was told to behave as on a file system without `RENAME_NOREPLACE`
/// either (`SATYRN_TEST_PUBLISH_FALLBACK=2`): a create then links and unlinks its named
/// temporary, a delete re-checks the target in place. Debug builds only.
pub(super) fn forced_no_noreplace() -> bool {
    forced_level() >= 2
}

fn forced_level() -> u8 {
    #[cfg(debug_assertions)]
    {
        match std::env::var_os("SATYRN_TEST_PUBLISH_FALLBACK") {
            Some(v) if v == "1" => 1,
            Some(v) if v == "2" => 2,
            _ => 0,
        }
    }
    #[cfg(not(debug_assertions))]
    {
        0
    }
}

/// Where a temporary's names are recorded: the journal (if the worktree has one), the
/// worktree-relative directory the temporary is in, and the inode of the target it may come
/// to hold after an exchange (none for a create).
#[derive(Clone, Copy)]
pub(super) struct Proof<'a> {
    /// The worktree's journal.
    pub journal: Option<&'a Journal>,
    /// The temporary's directory, worktree-relative (`""` for the root).
    pub dir: &'a str,
    /// The displaced target, when the name may come to hold it.
    pub displaced: Option<FileId>,
}

impl<'a> Proof<'a> {
    /// Records `name` in this directory as holding the file `file` (or the displaced
    /// target).
    pub(super) fn record(&self, name: &str, file: &OwnedFd) -> Option<Record<'a>> {
        let journal = self.journal?;
        let (dev, id) = FileId::of(file, None)?;
        let ids: Vec<FileId> = std::iter::once(id).chain(self.displaced).collect();
        journal.record(&self.rel(name), dev, &ids)
    }

    /// Records `name`, about to be created exclusively on `dev` (see [`Journal::record`]).
    pub(super) fn record_exclusive(&self, name: &str, dev: u64) -> Option<Record<'a>> {
        self.journal?.record(&self.rel(name), dev, &[])
    }

    /// `name` in this directory, worktree-relative.
    pub(super) fn rel(&self, name: &str) -> String {
        if self.dir.is_empty() {
            name.to_owned()
        } else {
            format!("{}/{name}", self.dir)
        }
    }
}

/// The new content's file beside the target: anonymous until [`Temporary::name`] links it,
/// then removed on drop unless disarmed; its name's journal record goes after it.
pub(super) struct Temporary<'a> {
    dir: &'a OwnedFd,
    stem: String,
    /// Opened read-write, so the content can be checked after a swap back.
    pub(super) file: OwnedFd,
    name: Option<String>,
    armed: bool,
    proof: Proof<'a>,
    /// Dropped after the name (fields drop after [`Drop::drop`]).
    record: Option<Record<'a>>,
}

impl<'a> Temporary<'a> {
    /// Creates the temporary in `dir` (mode 0600 until the caller sets the target's):
    /// anonymous when the file system supports it, else named.
    pub(super) fn create(
        dir: &'a OwnedFd,
        leaf: &str,
        path: &str,
        proof: Proof<'a>,
    ) -> Result<Self, PublishError> {
        // A leaf may be up to NAME_MAX (255) bytes; the temporary's name adds up to 34
        // bytes around it, so only a prefix of a long leaf is used (on a character
        // boundary), or naming the temporary of a valid file would fail.
        let stem = stem(leaf).to_owned();
        if !forced_fallback() {
            match rustix::fs::openat(
                dir,
                ".",
                OFlags::RDWR | OFlags::TMPFILE | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            ) {
                Ok(file) => {
                    return Ok(Self {
                        dir,
                        stem,
                        file,
                        name: None,
                        armed: true,
                        proof,
                        record: None,
                    });
                }
                // No O_TMPFILE on this file system (EOPNOTSUPP), or in this kernel (which
                // then reads the flag as O_DIRECTORY: EISDIR): a named temporary instead.
                Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL) => {}
                Err(e) => return Err(failed(path, "creating the temporary", e)),
            }
        }
        let mut temp = None;
        let mut record = None;
        let dev = rustix::fs::fstat(dir).map(|st| st.st_dev).unwrap_or(0);
        for_each_candidate_name(&stem, |name| {
            // Recorded before it exists (its inode added once known), so a kill right after
            // the create still leaves it provable.
            let recorded = proof.record_exclusive(name, dev);
            match rustix::fs::openat(
                dir,
                name,
                OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            ) {
                Ok(file) => {
                    if let (Some(r), Some((dev, id))) = (&recorded, FileId::of(&file, None)) {
                        r.prove(&proof.rel(name), dev, id);
                    }
                    temp = Some(file);
                    record = recorded;
                    Ok(true)
                }
                Err(Errno::EXIST) => Ok(false),
                Err(e) => Err(failed(path, "creating the temporary", e)),
            }
        })
        .and_then(|name| {
            Ok(Self {
                dir,
                stem,
                file: temp.ok_or_else(|| no_free_name(path))?,
                name: Some(name),
                armed: true,
                proof,
                record,
            })
        })
    }

    /// The temporary's name, linking the anonymous file into the directory first.
    pub(super) fn name(&mut self, path: &str) -> Result<&str, PublishError> {
        if self.name.is_none() {
            let (dir, file, proof) = (self.dir, &self.file, self.proof);
            let mut record = None;
            let name = for_each_candidate_name(&self.stem, |name| {
                let recorded = proof.record(name, file);
                let linked = link(file, dir, name, path)?;
                if linked {
                    record = recorded;
                }
                Ok(linked)
            })?;
            self.name = Some(name);
            self.record = record;
        }
        Ok(self.name.as_deref().unwrap_or_default())
    }

    /// Gives the content the name `leaf` unless `leaf` exists, of any kind (a dangling
    /// symbolic link included: never followed, never replaced). The anonymous file is linked
    /// there (`linkat`); a named temporary is moved there with `renameat2(RENAME_NOREPLACE)`,
    /// or linked then unlinked where the file system has no `RENAME_NOREPLACE`. `Ok(false)`:
    /// `leaf` exists and nothing changed. After `Ok(true)` the temporary has no name of its
    /// own left (unless unlinking it after a link failed, which is reported on stderr).
    pub(super) fn link_as_new(&mut self, leaf: &str, path: &str) -> Result<bool, PublishError> {
        let Some(name) = self.name.clone() else {
            return link(&self.file, self.dir, leaf, path);
        };
        if !forced_no_noreplace() {
            match rustix::fs::renameat_with(self.dir, &name, self.dir, leaf, RenameFlags::NOREPLACE)
            {
                Ok(()) => {
                    self.name = None;
                    return Ok(true);
                }
                Err(Errno::EXIST) => return Ok(false),
                // No RENAME_NOREPLACE on this file system or kernel: link, then unlink.
                Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {}
                Err(e) => return Err(failed(path, "renaming the temporary to the new file", e)),
            }
        }
        match rustix::fs::linkat(self.dir, &name, self.dir, leaf, AtFlags::empty()) {
            Ok(()) => {}
            Err(Errno::EXIST) => return Ok(false),
            Err(e) => return Err(failed(path, "linking the temporary to the new file", e)),
        }
        if let Err(e) = rustix::fs::unlinkat(self.dir, &name, AtFlags::empty()) {
            let _ = writeln!(
                std::io::stderr(),
                "satyrn-host: `{path}` was created, but removing its temporary name `{name}` failed: {}",
                std::io::Error::from(e)
            );
        }
        self.name = None;
        Ok(true)
    }

    /// Forgets the temporary: its name now belongs to the published file (or is gone).
    pub(super) fn disarm(mut self) {
        self.armed = false;
    }

    /// Removes the temporary's name (if it has one) and returns `error`, extended if the
    /// removal failed.
    pub(super) fn remove_after(mut self, error: PublishError) -> PublishError {
        self.armed = false;
        let Some(name) = self.name.as_deref() else {
            return error;
        };
        match rustix::fs::unlinkat(self.dir, name, AtFlags::empty()) {
            Ok(()) => error,
            Err(e) => PublishError::Failed(format!(
                "{error}; the temporary {name} could not be removed: {}",
                std::io::Error::from(e)
            )),
        }
    }
}

impl Drop for Temporary<'_> {
    fn drop(&mut self) {
        if let (true, Some(name)) = (self.armed, self.name.as_deref()) {
            let _ = rustix::fs::unlinkat(self.dir, name, AtFlags::empty());
        }
    }
}

fn no_free_name(path: &str) -> PublishError {
    PublishError::Failed(format!("`{path}`: no free temporary name in its directory"))
}

/// Calls `take` with up to 64 fresh temporary names until it returns `Ok(true)`; returns
/// that name.
pub(super) fn for_each_candidate_name(
    stem: &str,
    mut take: impl FnMut(&str) -> Result<bool, PublishError>,
) -> Result<String, PublishError> {
    let pid = std::process::id();
    for attempt in 0u32..64 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let name = format!(".{stem}.satyrn-{pid}-{nanos:08x}{attempt:02x}.tmp");
        if take(&name)? {
            return Ok(name);
        }
    }
    Err(PublishError::Failed(
        "no free temporary name in the target's directory".to_string(),
    ))
}

/// Gives the anonymous `file` the name `name` in `dir`; `Ok(false)` when the name is taken.
pub(super) fn link(
    file: &OwnedFd,
    dir: &OwnedFd,
    name: &str,
    path: &str,
) -> Result<bool, PublishError> {
    // AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; without it the kernel answers ENOENT and the
    // magic link in /proc does the same without privilege.
    let linked = match rustix::fs::linkat(file, "", dir, name, AtFlags::EMPTY_PATH) {
        Err(Errno::NOENT | Errno::PERM) => {
            let proc_path = format!(
                "/proc/self/fd/{}",
                std::os::fd::AsRawFd::as_raw_fd(&file.as_fd())
            );
            rustix::fs::linkat(
                rustix::fs::CWD,
                proc_path.as_str(),
                dir,
                name,
                AtFlags::SYMLINK_FOLLOW,
            )
        }
        other => other,
    };
    match linked {
        Ok(()) => Ok(true),
        Err(Errno::EXIST) => Ok(false),
        Err(e) => Err(failed(path, "naming the temporary", e)),
    }
}
