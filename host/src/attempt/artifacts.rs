//! Artifact destinations (`SATYRN_ATTEMPT_TRANSCRIPT`, `SATYRN_ATTEMPT_PATCH`): checked and
//! pinned before Pi starts, published without ever overwriting.
//!
//! A destination must be an absolute path whose parent is an existing directory outside
//! every registered worktree and outside git's administrative and common directories
//! (compared by file-system identity, see [`crate::fsid`]), and whose name does not exist
//! yet (not even as a dangling symlink). The parent is opened and pinned by descriptor
//! during preparation. Publishing writes a sibling temporary, fsyncs it, and `linkat`s it
//! to the name relative to the pinned descriptor — `linkat` never replaces an existing
//! name and never follows a symlink there — then removes the temporary and fsyncs the
//! directory. Every failure is an [`ArtifactError`]; nothing is ever overwritten.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use crate::fsid::{self, Identity};

/// Why an artifact destination was refused or its publication failed (`ATTEMPT_FAILED`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactError(pub String);

impl fmt::Display for ArtifactError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ArtifactError {}

/// A checked destination with its parent directory pinned.
#[derive(Debug)]
pub struct Destination {
    variable: &'static str,
    path: PathBuf,
    parent_path: PathBuf,
    parent: OwnedFd,
    parent_id: Identity,
    name: OsString,
}

impl Destination {
    /// Checks the destination named by `variable` (`path` is its value) against the
    /// `forbidden` directories (worktrees, git directories) and pins its parent.
    ///
    /// # Errors
    ///
    /// [`ArtifactError`] for a relative path, a path without a file name, a parent that is
    /// missing or not a directory, a destination inside a forbidden directory, or a name
    /// that already exists (symlinks included).
    pub fn prepare(
        variable: &'static str,
        path: &Path,
        forbidden: &[PathBuf],
    ) -> Result<Self, ArtifactError> {
        let refuse = |why: String| ArtifactError(format!("{variable}={}: {why}", path.display()));
        if !path.is_absolute() {
            return Err(refuse("must be an absolute path".to_string()));
        }
        let (Some(parent_path), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(refuse("names no file".to_string()));
        };
        if name == OsStr::new(".") || name == OsStr::new("..") {
            return Err(refuse("names no file".to_string()));
        }
        for root in forbidden {
            match fsid::is_within(path, root) {
                Ok(false) => {}
                Ok(true) => {
                    return Err(refuse(format!(
                        "lies inside {}, which the attempt may change",
                        root.display()
                    )));
                }
                Err(e) => {
                    return Err(refuse(format!(
                        "cannot compare with {}: {e}",
                        root.display()
                    )));
                }
            }
        }
        let parent = rustix::fs::open(
            parent_path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| {
            refuse(format!(
                "its parent is not an accessible directory: {}",
                std::io::Error::from(e)
            ))
        })?;
        let stat = rustix::fs::fstat(&parent)
            .map_err(|e| refuse(format!("cannot inspect its parent: {e}")))?;
        let parent_id = Identity {
            dev: stat.st_dev,
            ino: stat.st_ino,
        };
        match rustix::fs::statat(&parent, name, AtFlags::SYMLINK_NOFOLLOW) {
            Err(Errno::NOENT) => {}
            Ok(_) => {
                return Err(refuse(
                    "already exists; artifacts are never overwritten".to_string(),
                ));
            }
            Err(e) => {
                return Err(refuse(format!(
                    "cannot inspect it: {}",
                    std::io::Error::from(e)
                )));
            }
        }
        Ok(Self {
            variable,
            path: path.to_path_buf(),
            parent_path: parent_path.to_path_buf(),
            parent,
            parent_id,
            name: name.to_os_string(),
        })
    }

    /// The destination path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Publishes `bytes` at the destination.
    ///
    /// # Errors
    ///
    /// [`ArtifactError`] when the parent's path no longer names the pinned directory, the
    /// name appeared meanwhile, or any write, sync or link fails. The temporary is removed
    /// on every path; a failure to remove it is reported too.
    pub fn publish(&self, bytes: &[u8]) -> Result<(), ArtifactError> {
        let refuse = |why: String| {
            ArtifactError(format!(
                "publishing {}={}: {why}",
                self.variable,
                self.path.display()
            ))
        };
        match Identity::of(&self.parent_path) {
            Ok(id) if id == self.parent_id => {}
            Ok(_) => return Err(refuse("its parent directory was replaced".to_string())),
            Err(e) => return Err(refuse(format!("its parent directory is gone: {e}"))),
        }
        let temp_name = temp_name(&self.name);
        let temp = rustix::fs::openat(
            &self.parent,
            temp_name.as_os_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .map_err(|e| {
            refuse(format!(
                "cannot create a temporary: {}",
                std::io::Error::from(e)
            ))
        })?;
        let written = write_all(&temp, bytes)
            .and_then(|()| rustix::fs::fsync(&temp).map_err(std::io::Error::from))
            .map_err(|e| refuse(format!("writing failed: {e}")))
            .and_then(|()| {
                rustix::fs::linkat(
                    &self.parent,
                    temp_name.as_os_str(),
                    &self.parent,
                    self.name.as_os_str(),
                    AtFlags::empty(),
                )
                .map_err(|e| match e {
                    Errno::EXIST => {
                        refuse("it appeared meanwhile; artifacts are never overwritten".to_string())
                    }
                    e => refuse(format!("linking failed: {}", std::io::Error::from(e))),
                })
            });
        drop(temp);
        let removed = rustix::fs::unlinkat(&self.parent, temp_name.as_os_str(), AtFlags::empty());
        match (written, removed) {
            (Ok(()), Ok(())) => rustix::fs::fsync(&self.parent)
                .map_err(|e| refuse(format!("syncing the directory failed: {e}"))),
            (Err(e), Ok(())) => Err(e),
            (Ok(()), Err(r)) => Err(refuse(format!(
                "the temporary {} could not be removed: {r}",
                self.parent_path.join(&temp_name).display()
            ))),
            (Err(e), Err(r)) => Err(ArtifactError(format!(
                "{e}; also, the temporary {} could not be removed: {r}",
                self.parent_path.join(&temp_name).display()
            ))),
        }
    }
}

fn temp_name(name: &OsStr) -> OsString {
    let bytes = name.as_bytes();
    let short = &bytes[..bytes.len().min(100)];
    let mut temp = OsString::from(".");
    temp.push(OsStr::from_bytes(short));
    temp.push(format!(".satyrn-{}.tmp", std::process::id()));
    temp
}

fn write_all(file: &OwnedFd, mut bytes: &[u8]) -> std::io::Result<()> {
    while !bytes.is_empty() {
        match rustix::io::write(file, bytes) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
