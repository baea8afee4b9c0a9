//! Candidates gathered on a shared remote: mirrored into the caller's repository under
//! `refs/satyrn/remotes/<key>/` by one `git fetch`, then read like local ones.
//!
//! `<key>` is the remote's name when `REMOTE` is a configured remote, else `url-` and the
//! first 16 hex digits of the SHA-256 of the URL as given. The fetch is forced and prunes, so
//! the mirror is exactly what the remote holds now; nothing outside the mirror changes.
//! Transport and credentials are git's own.

use satyrn_mutator_core::revision::Revision;

use super::{Error, Namespace};
use satyrn_deliver::candidate::REF_PREFIX;
use satyrn_git::Git;

/// The root of every remote mirror.
pub const MIRROR_PREFIX: &str = "refs/satyrn/remotes/";

/// The mirror namespace of `remote`.
///
/// # Errors
///
/// [`Error::Git`] when git cannot list the configured remotes.
pub fn namespace(git: &Git, remote: &str) -> Result<Namespace, Error> {
    let names = git.run(&["remote"])?;
    let configured = String::from_utf8_lossy(&names)
        .lines()
        .any(|name| name == remote);
    let key = if configured {
        remote.to_owned()
    } else {
        let hex = Revision::of(remote.as_bytes()).to_hex();
        format!("url-{}", &hex[..16])
    };
    Ok(Namespace(format!("{MIRROR_PREFIX}{key}/")))
}

/// Fetches every candidate ref of `remote` into its mirror and returns the mirror.
///
/// # Errors
///
/// [`Error::Git`] when the fetch fails (unreachable remote, refused credentials, …).
pub fn mirror(git: &Git, remote: &str) -> Result<Namespace, Error> {
    let namespace = namespace(git, remote)?;
    let refspec = format!("+{REF_PREFIX}*:{}*", namespace.0);
    git.run(&[
        "fetch",
        "--quiet",
        "--no-tags",
        "--prune",
        "--no-write-fetch-head",
        "--no-recurse-submodules",
        "--end-of-options",
        remote,
        &refspec,
    ])?;
    Ok(namespace)
}
