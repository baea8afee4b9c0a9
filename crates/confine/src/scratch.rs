//! A confined run's private directory: `<TMPDIR>/satyrn-confine.<uid>/satyrn-confine-<pid>-…`
//! (an owned directory, [`satyrn_os::owned_dir`]), holding the command's scratch `home/`
//! and `tmp/` (the only places it may write besides the scratch paths) and the broker's
//! socket `broker.sock` (which it can connect to but not replace).
//!
//! The parent is per user, mode 0700, and unreadable to every confined command: one run's
//! scratch is never visible to another's. Directories of killed runs are swept when a run
//! starts.

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use satyrn_os::owned_dir;

/// Where every run's directory of this user lies: `<TMPDIR>/satyrn-confine.<uid>` (it
/// may not exist yet).
#[must_use]
pub fn parent_path() -> PathBuf {
    let uid = rustix::process::getuid().as_raw();
    std::env::temp_dir().join(format!("satyrn-confine.{uid}"))
}

/// One run's directory.
#[derive(Debug)]
pub struct RunDir {
    parent: PathBuf,
    dir: PathBuf,
}

impl RunDir {
    /// Creates the per-user parent when absent (refusing one that is a symlink, not ours or
    /// not 0700), sweeps the directories killed runs left there, and creates this run's
    /// directory with `home/` and `tmp/` (0700).
    ///
    /// # Errors
    ///
    /// The operating-system error, or `PermissionDenied` for a parent that is not safely
    /// ours.
    pub fn create() -> io::Result<Self> {
        let uid = rustix::process::getuid().as_raw();
        let parent = parent_path();
        private_parent(&parent, uid)?;
        for note in owned_dir::sweep(&parent, owned_dir::CONFINE) {
            use std::io::Write;
            let _ = writeln!(io::stderr(), "satyrn-host confine: {note}");
        }
        let dir = owned_dir::create(&parent, owned_dir::CONFINE)?;
        for sub in ["home", "tmp"] {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(dir.join(sub))?;
        }
        Ok(Self { parent, dir })
    }

    /// The per-user parent of every run's directory.
    #[must_use]
    pub fn parent(&self) -> &Path {
        &self.parent
    }

    /// The command's scratch home.
    #[must_use]
    pub fn home(&self) -> PathBuf {
        self.dir.join("home")
    }

    /// The command's `TMPDIR`.
    #[must_use]
    pub fn tmp(&self) -> PathBuf {
        self.dir.join("tmp")
    }

    /// The broker's socket: `broker.sock` in the run's directory, or, when that path is too
    /// long for a Unix socket address (108 bytes with its NUL: a deep `TMPDIR`), a short
    /// one in `/tmp/satyrn-broker.<uid>` (created 0700, refused when not safely ours),
    /// named after this run's directory.
    ///
    /// # Errors
    ///
    /// The operating-system error of creating the short directory, or `PermissionDenied`.
    pub fn socket(&self) -> io::Result<PathBuf> {
        const SUN_PATH_MAX: usize = 107;
        use std::os::unix::ffi::OsStrExt;
        let long = self.dir.join("broker.sock");
        if long.as_os_str().as_bytes().len() <= SUN_PATH_MAX {
            return Ok(long);
        }
        let uid = rustix::process::getuid().as_raw();
        let short_dir = PathBuf::from(format!("/tmp/satyrn-broker.{uid}"));
        private_parent(&short_dir, uid)?;
        let name = self.dir.file_name().map_or_else(
            || format!("{}.sock", std::process::id()),
            |n| format!("{}.sock", n.to_string_lossy()),
        );
        Ok(short_dir.join(name))
    }

    /// Removes the run's directory and all it holds, or with `keep` says where it is.
    /// Directories the command made unreadable are made readable first.
    pub fn remove(self, keep: bool) {
        use std::io::Write;
        if keep {
            owned_dir::forget(&self.dir, owned_dir::CONFINE);
            let _ = writeln!(
                io::stderr(),
                "satyrn-host confine: scratch kept at {}",
                self.dir.display()
            );
            return;
        }
        if std::fs::remove_dir_all(&self.dir).is_err() {
            open_up(&self.dir);
            if let Err(e) = std::fs::remove_dir_all(&self.dir) {
                let _ = writeln!(
                    io::stderr(),
                    "satyrn-host confine: cannot remove {}: {e}; a later confine removes it",
                    self.dir.display()
                );
            }
        }
    }
}

/// Creates `dir` (mode 0700) when absent; refuses one that is a symlink, not a directory,
/// not `uid`'s or not exactly 0700.
fn private_parent(dir: &Path, uid: u32) -> io::Result<()> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o777 != 0o700 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a directory of this user with mode 0700; remove it",
                dir.display()
            ),
        ));
    }
    Ok(())
}

/// Gives every directory beneath `dir` (no symlink followed) mode 0700, so it can be
/// emptied.
fn open_up(dir: &Path) {
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                open_up(&entry.path());
            }
        }
    }
}
