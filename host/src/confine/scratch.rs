//! A confined run's private directory: `<TMPDIR>/satyrn-confine.<uid>/satyrn-confine-<pid>-…`
//! (an owned directory, [`crate::os::owned_dir`]), holding the command's scratch `home/`
//! and `tmp/` (the only places it may write besides the scratch paths) and the broker's
//! socket `broker.sock` (which it can connect to but not replace).
//!
//! The parent is per user, mode 0700, and unreadable to every confined command: one run's
//! scratch is never visible to another's. Directories of killed runs are swept when a run
//! starts.

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::os::owned_dir;

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
        let parent = std::env::temp_dir().join(format!("satyrn-confine.{uid}"));
        match std::fs::DirBuilder::new().mode(0o700).create(&parent) {
            Ok(()) => std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o700))?,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        let meta = std::fs::symlink_metadata(&parent)?;
        if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o777 != 0o700 {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} is not a directory of this user with mode 0700; remove it",
                    parent.display()
                ),
            ));
        }
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

    /// The broker's socket.
    #[must_use]
    pub fn socket(&self) -> PathBuf {
        self.dir.join("broker.sock")
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
