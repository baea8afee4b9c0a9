//! Other paths to the same files: the mounts of `/proc/self/mountinfo`.
//!
//! Landlock decides on the path a file is opened by. A file system mounted twice, or a
//! directory bind-mounted elsewhere, gives every file beneath a second path, and a rule
//! that leaves a private file unreadable at one path says nothing of the other.
//! [`aliases`] names every other path of a file under the mounts of this process, so the
//! rules can leave each one unreadable too.

use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// One mount: its device, the directory of that file system it shows, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// `major:minor`.
    pub device: String,
    /// The path, inside its file system, of the mount's root.
    pub root: PathBuf,
    /// Where it is mounted.
    pub point: PathBuf,
}

/// The mounts of this process (none when `/proc/self/mountinfo` cannot be read).
#[must_use]
pub fn read() -> Vec<Mount> {
    std::fs::read("/proc/self/mountinfo")
        .map(|bytes| parse(&bytes))
        .unwrap_or_default()
}

fn parse(bytes: &[u8]) -> Vec<Mount> {
    bytes
        .split(|b| *b == b'\n')
        .filter_map(|line| {
            let fields: Vec<&[u8]> = line.split(|b| *b == b' ').collect();
            // id parent major:minor root point options ...
            let [_, _, device, root, point, ..] = fields.as_slice() else {
                return None;
            };
            Some(Mount {
                device: String::from_utf8_lossy(device).into_owned(),
                root: unescape(root),
                point: unescape(point),
            })
        })
        .collect()
}

/// mountinfo spells a space, tab, newline and backslash as `\NNN` (octal).
fn unescape(field: &[u8]) -> PathBuf {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        if field[i] == b'\\'
            && i + 3 < field.len() + 1
            && field
                .get(i + 1..i + 4)
                .is_some_and(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)))
        {
            let d = &field[i + 1..i + 4];
            out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
            i += 4;
        } else {
            out.push(field[i]);
            i += 1;
        }
    }
    PathBuf::from(std::ffi::OsStr::from_bytes(&out))
}

/// Every other path of `path` (absolute, without symlinks) under `mounts`: the mount it is
/// under (the longest mount point above it) gives its place in its file system; each other
/// mount of that device whose root is above that place shows it at another path.
#[must_use]
pub fn aliases(mounts: &[Mount], path: &Path) -> Vec<PathBuf> {
    let Some(own) = mounts
        .iter()
        .filter(|m| path.starts_with(&m.point))
        .max_by_key(|m| m.point.components().count())
    else {
        return Vec::new();
    };
    let Ok(below) = path.strip_prefix(&own.point) else {
        return Vec::new();
    };
    let inside = own.root.join(below);
    let mut out = Vec::new();
    for m in mounts.iter().filter(|m| m.device == own.device) {
        if let Ok(rest) = inside.strip_prefix(&m.root) {
            let alias = m.point.join(rest);
            if alias != path
                && alias
                    .components()
                    .all(|c| !matches!(c, Component::ParentDir))
                && !out.contains(&alias)
            {
                out.push(alias);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bind_mount_and_a_second_mount_are_aliases() {
        let info = b"22 1 8:1 / / rw - ext4 /dev/sda1 rw\n\
                     30 22 8:1 /srv/repo /mnt/alt rw - ext4 /dev/sda1 rw\n\
                     31 22 8:1 / /mnt/whole\\040disk rw - ext4 /dev/sda1 rw\n\
                     32 22 8:2 / /home rw - ext4 /dev/sda2 rw\n";
        let mounts = parse(info);
        assert_eq!(mounts.len(), 4);
        assert_eq!(mounts[2].point, PathBuf::from("/mnt/whole disk"));
        let got = aliases(&mounts, Path::new("/srv/repo/.env"));
        assert_eq!(
            got,
            vec![
                PathBuf::from("/mnt/alt/.env"),
                PathBuf::from("/mnt/whole disk/srv/repo/.env")
            ]
        );
        assert!(aliases(&mounts, Path::new("/home/u/.ssh")).is_empty());
        // Under the bind mount itself: its original path is an alias.
        assert!(
            aliases(&mounts, Path::new("/mnt/alt/.env")).contains(&PathBuf::from("/srv/repo/.env"))
        );
    }
}
