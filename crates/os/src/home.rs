//! The caller's home directories: `HOME`, and the password database's entry for the real
//! user, which programs fall back to when `HOME` is unset (and which may differ from it).

use std::ffi::{CStr, OsString};
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

/// `HOME` when set and not empty.
#[must_use]
pub fn from_env(var: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    var("HOME").filter(|h| !h.is_empty()).map(PathBuf::from)
}

/// The home directory of the real user in the password database (`getpwuid_r`); `None`
/// when there is no entry or it names no directory.
#[must_use]
pub fn from_passwd() -> Option<PathBuf> {
    let uid = rustix::process::getuid().as_raw();
    let mut buffer = vec![0u8; 16 * 1024];
    // SAFETY: an all-zero `passwd` is a valid value to be overwritten.
    let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call; the buffer outlives every use of the
    // strings `entry` points into.
    let rc = unsafe {
        libc::getpwuid_r(
            uid,
            &raw mut entry,
            buffer.as_mut_ptr().cast(),
            buffer.len(),
            &raw mut found,
        )
    };
    if rc != 0 || found.is_null() || entry.pw_dir.is_null() {
        return None;
    }
    // SAFETY: `pw_dir` is a NUL-terminated string inside `buffer`.
    let dir = unsafe { CStr::from_ptr(entry.pw_dir) };
    let bytes = dir.to_bytes().to_vec();
    (!bytes.is_empty()).then(|| PathBuf::from(OsString::from_vec(bytes)))
}

/// Every home of the caller: `HOME` (when set), then the password database's (when it
/// differs): the places whose credential stores and agent directories must be guarded.
#[must_use]
pub fn all(var: &dyn Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
    let mut homes: Vec<PathBuf> = from_env(var).into_iter().collect();
    if let Some(passwd) = from_passwd()
        && !homes.contains(&passwd)
    {
        homes.push(passwd);
    }
    homes
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_password_database_names_a_home_and_home_comes_first() {
        let passwd = super::from_passwd().expect("this user has a passwd entry");
        assert!(passwd.is_absolute());
        let homes = super::all(&|v| (v == "HOME").then(|| "/elsewhere".into()));
        assert_eq!(
            homes.first().map(|p| p.as_os_str()),
            Some("/elsewhere".as_ref())
        );
        assert!(homes.contains(&passwd));
        assert_eq!(super::all(&|_| None), vec![passwd]);
    }
}
