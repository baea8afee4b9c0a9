//! Artifact destinations (`SATYRN_ATTEMPT_TRANSCRIPT`, `SATYRN_ATTEMPT_PATCH`): checked and
//! pinned before Pi starts, published without ever overwriting.
//!
//! A destination must be an absolute path without `..` or a trailing `/` whose parent is an
//! existing directory, reached from `/` one component at a time without following any
//! symbolic link, and whose name does not exist yet (not even as a dangling symlink). The
//! parent is pinned by descriptor, and containment is decided on that descriptor: walking
//! `..` from it up to `/`, no directory on the way may be a registered worktree or git's
//! administrative or common directory (compared by `(device, inode)`, see [`satyrn_os::fsid`]).
//! A forbidden directory that no longer exists (a prunable worktree registration) contains
//! nothing and is skipped. Swapping a component for a symlink, before or after the check,
//! therefore cannot redirect a publication into the repository.
//!
//! Publishing re-checks containment on the pinned descriptor and that the path still
//! names it, writes a sibling temporary, fsyncs it, and `linkat`s it to the name relative
//! to the pinned descriptor — `linkat` never replaces an existing name and never follows a
//! symlink there — then removes the temporary and fsyncs the directory. Every failure is an
//! [`ArtifactError`]; nothing is ever overwritten.

use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use satyrn_os::fsid::Identity;

/// Why an artifact destination was refused or its publication failed (`ATTEMPT_FAILED`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ArtifactError(pub String);

/// A directory the attempt may change, by path (for messages) and identity.
#[derive(Debug, Clone)]
struct Forbidden {
    path: PathBuf,
    id: Identity,
}

/// A checked destination with its parent directory pinned.
#[derive(Debug)]
pub struct Destination {
    variable: &'static str,
    path: PathBuf,
    parent_path: PathBuf,
    parent: OwnedFd,
    parent_id: Identity,
    name: OsString,
    forbidden: Vec<Forbidden>,
}

impl Destination {
    /// Checks the destination named by `variable` (`path` is its value) against the
    /// `forbidden` directories (worktrees, git directories) and pins its parent.
    ///
    /// # Errors
    ///
    /// [`ArtifactError`] for a relative path, a path with `..`, a trailing `/` or `/.`, without a
    /// file name, a parent that is missing, not a directory or reached through a symbolic
    /// link, a destination inside a forbidden directory, or a name that already exists
    /// (symlinks included).
    pub fn prepare(
        variable: &'static str,
        path: &Path,
        forbidden: &[PathBuf],
    ) -> Result<Self, ArtifactError> {
        let refuse = |why: String| ArtifactError(format!("{variable}={}: {why}", path.display()));
        if !path.is_absolute() {
            return Err(refuse("must be an absolute path".to_string()));
        }
        let bytes = path.as_os_str().as_bytes();
        if bytes.ends_with(b"/") || bytes.ends_with(b"/.") {
            return Err(refuse(
                "ends with `/`: it must name a file, not a directory".to_string(),
            ));
        }
        if path.components().any(|c| c == Component::ParentDir) {
            return Err(refuse("must not contain `..`".to_string()));
        }
        let (Some(parent_path), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(refuse("names no file".to_string()));
        };
        let mut pinned = Vec::with_capacity(forbidden.len());
        for root in forbidden {
            match Identity::of(root) {
                Ok(id) => pinned.push(Forbidden {
                    path: root.clone(),
                    id,
                }),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(refuse(format!("cannot inspect {}: {e}", root.display())));
                }
            }
        }
        let parent =
            open_dir_nofollow(parent_path).map_err(|why| refuse(format!("its parent {why}")))?;
        let parent_id = Identity::of_fd(&parent)
            .map_err(|e| refuse(format!("cannot inspect its parent: {e}")))?;
        if let Some(root) = containing(&parent, &pinned)
            .map_err(|e| refuse(format!("cannot walk up from its parent: {e}")))?
        {
            return Err(refuse(format!(
                "lies inside {}, which the attempt may change",
                root.display()
            )));
        }
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
            forbidden: pinned,
        })
    }

    /// The destination path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether `self` and `other` name the same file (same pinned parent, same name).
    #[must_use]
    pub fn same_target(&self, other: &Self) -> bool {
        self.parent_id == other.parent_id && self.name == other.name
    }

    /// The variable that named this destination.
    #[must_use]
    pub fn variable(&self) -> &'static str {
        self.variable
    }

    /// Publishes `bytes` at the destination.
    ///
    /// # Errors
    ///
    /// [`ArtifactError`] when the pinned parent now lies inside a forbidden directory, the
    /// parent's path no longer names the pinned directory, the name appeared meanwhile, or
    /// any write, sync or link fails. The temporary is removed on every path; a failure to
    /// remove it is reported too.
    pub fn publish(&self, bytes: &[u8]) -> Result<(), ArtifactError> {
        let refuse = |why: String| {
            ArtifactError(format!(
                "publishing {}={}: {why}",
                self.variable,
                self.path.display()
            ))
        };
        match containing(&self.parent, &self.forbidden) {
            Ok(None) => {}
            Ok(Some(root)) => {
                return Err(refuse(format!(
                    "its parent directory was moved inside {}, which the attempt may change",
                    root.display()
                )));
            }
            Err(e) => return Err(refuse(format!("cannot walk up from its parent: {e}"))),
        }
        match open_dir_nofollow(&self.parent_path).map(|fd| Identity::of_fd(&fd)) {
            Ok(Ok(id)) if id == self.parent_id => {}
            Ok(Ok(_)) => return Err(refuse("its parent directory was replaced".to_string())),
            Ok(Err(e)) => return Err(refuse(format!("cannot inspect its parent: {e}"))),
            Err(why) => return Err(refuse(format!("its parent {why}"))),
        }
        let temp_name = temp_name(&self.name);
        let temp = rustix::fs::openat(
            &self.parent,
            temp_name.as_os_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            // Artifacts hold repository text and the model's words: owner-only, like the spool.
            Mode::from_raw_mode(0o600),
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
        // The parent may have been moved into the repository between the re-check above and
        // the link: check again on the descriptor, and take the name back if so.
        let written = written.and_then(|()| match containing(&self.parent, &self.forbidden) {
            Ok(None) => Ok(()),
            Ok(Some(root)) => {
                let _ = rustix::fs::unlinkat(&self.parent, self.name.as_os_str(), AtFlags::empty());
                Err(refuse(format!(
                    "its parent directory was moved inside {} during the publication; the artifact was removed again",
                    root.display()
                )))
            }
            Err(e) => {
                let _ = rustix::fs::unlinkat(&self.parent, self.name.as_os_str(), AtFlags::empty());
                Err(refuse(format!("cannot walk up from its parent: {e}")))
            }
        });
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

/// Opens the absolute directory `path` from `/`, one component at a time, refusing any
/// component that is a symbolic link or not a directory. The result is readable (for
/// `fsync`); intermediate components are opened as `O_PATH`, which needs no read permission.
fn open_dir_nofollow(path: &Path) -> Result<OwnedFd, String> {
    let describe = |e: Errno| std::io::Error::from(e).to_string();
    let mut current = rustix::fs::open(
        "/",
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| format!("cannot open `/`: {}", describe(e)))?;
    let mut walked = PathBuf::from("/");
    for component in path.components() {
        let Component::Normal(segment) = component else {
            continue;
        };
        walked.push(segment);
        let next = rustix::fs::openat(
            &current,
            segment,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| {
            format!(
                "is not an accessible directory ({}: {})",
                walked.display(),
                describe(e)
            )
        })?;
        let kind = rustix::fs::fstat(&next)
            .map(|st| FileType::from_raw_mode(st.st_mode))
            .map_err(|e| format!("cannot inspect {}: {}", walked.display(), describe(e)))?;
        match kind {
            FileType::Directory => current = next,
            FileType::Symlink => {
                return Err(format!(
                    "is reached through a symbolic link ({}); symbolic links are not followed, \
                     give the resolved path",
                    walked.display()
                ));
            }
            _ => {
                return Err(format!(
                    "is not an accessible directory ({} is not a directory)",
                    walked.display()
                ));
            }
        }
    }
    rustix::fs::openat(
        &current,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| format!("is not an accessible directory: {}", describe(e)))
}

/// The forbidden directory that `dir` is or lies inside, walking `..` from the descriptor
/// itself (never a path) up to the root.
fn containing<'a>(dir: &OwnedFd, forbidden: &'a [Forbidden]) -> std::io::Result<Option<&'a Path>> {
    let mut current = rustix::fs::openat(
        dir,
        ".",
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut id = Identity::of_fd(&current)?;
    loop {
        if let Some(hit) = forbidden.iter().find(|f| f.id == id) {
            return Ok(Some(&hit.path));
        }
        let up = rustix::fs::openat(
            &current,
            "..",
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let up_id = Identity::of_fd(&up)?;
        if up_id == id {
            return Ok(None);
        }
        current = up;
        id = up_id;
    }
}
