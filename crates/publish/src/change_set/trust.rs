//! Whether a record found at recovery may be acted on. A record lives in the git directory,
//! which whatever runs in the worktree may write (an agent's shell in an unconfined run): a
//! forged one must not make recovery touch anything a publish of this worktree could not
//! have. So before anything is settled, every field is checked against what
//! [`super::publish_set`] writes: the record is this root's; each path is a canonical
//! worktree path outside `.git` that the contract lets change ([`Boundary`]), named once;
//! each temporary name is a satyrn temporary of that path's leaf, a single name in the
//! path's directory (a creation's: in an existing ancestor of it); each directory made lies
//! between a creation's home and its path; each kind carries the identities it needs.
//! Settling then acts only on regular single-link files with those identities
//! ([`super::settle`]).

use satyrn_mutator_core::{fnmatch, gates, path};

use super::record::{Id, Kind, Record};
use crate::temporary;

/// What recovery may change: the paths the contract declares writable and not private.
#[derive(Debug, Clone, Copy)]
pub struct Boundary<'a> {
    /// The contract's `writable_paths`.
    pub writable_paths: &'a [String],
    /// The contract's `private_paths`.
    pub private_paths: &'a [String],
}

impl Boundary<'_> {
    /// Whether `path` (canonical, worktree-relative) may be changed.
    #[must_use]
    pub fn allows(&self, path: &str) -> bool {
        fnmatch::matches_any(path, self.writable_paths)
            && !gates::is_private(path, self.private_paths)
    }
}

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

fn leaf(path: &str) -> &str {
    path.rsplit_once('/').map_or(path, |(_, leaf)| leaf)
}

/// `ancestor` is `path` itself or one of its directories (`""`: the root).
fn within(ancestor: &str, path: &str) -> bool {
    ancestor.is_empty()
        || path == ancestor
        || path
            .strip_prefix(ancestor)
            .is_some_and(|rest| rest.starts_with('/'))
}

fn canonical(what: &str, rel: &str) -> Result<(), String> {
    let segments =
        path::segments(rel).map_err(|e| format!("{what} `{}`: {e}", path::shown(rel)))?;
    if path::is_git_admin(&segments) {
        return Err(format!("{what} `{}` is inside `.git`", path::shown(rel)));
    }
    Ok(())
}

/// Why `record` must not be acted on under the root `root` (device `dev`) within
/// `boundary`; `Ok` when every field is one [`super::publish_set`] could have written.
pub(super) fn check(
    record: &Record,
    dev: u64,
    root: Id,
    boundary: Boundary<'_>,
) -> Result<(), String> {
    if record.version != 1 {
        return Err(format!("its version is {}, not 1", record.version));
    }
    if record.dev != dev || record.root != root {
        return Err("it names another worktree (a copy of this one, or a forgery)".to_owned());
    }
    for (i, entry) in record.entries.iter().enumerate() {
        canonical("the path", &entry.path)?;
        if record.entries[..i].iter().any(|e| e.path == entry.path) {
            return Err(format!("it names `{}` twice", path::shown(&entry.path)));
        }
        if !boundary.allows(&entry.path) {
            return Err(format!(
                "`{}` is not a path the contract lets change",
                path::shown(&entry.path)
            ));
        }
        if !entry.home.is_empty() {
            canonical("the directory", &entry.home)?;
        }
        let dir = parent(&entry.path);
        let home_ok = match entry.kind {
            Kind::Replace | Kind::Delete => entry.home == dir,
            Kind::Create => within(&entry.home, dir),
        };
        if !home_ok {
            return Err(format!(
                "the temporary of `{}` is not in its directory",
                path::shown(&entry.path)
            ));
        }
        let prefix = format!(".{}.satyrn-", temporary::stem(leaf(&entry.path)));
        if entry.temp.contains('/')
            || !temporary::is_temporary_name(&entry.temp)
            || !entry.temp.starts_with(&prefix)
        {
            return Err(format!(
                "`{}` is not a temporary name of `{}`",
                path::shown(&entry.temp),
                path::shown(&entry.path)
            ));
        }
        let ids_ok = match entry.kind {
            Kind::Replace => entry.new.is_some() && entry.base.is_some(),
            Kind::Create => entry.new.is_some() && entry.base.is_none(),
            Kind::Delete => entry.new.is_none() && entry.base.is_some(),
        };
        if !ids_ok {
            return Err(format!(
                "the identities of `{}` do not fit its kind",
                path::shown(&entry.path)
            ));
        }
    }
    for made in &record.made {
        canonical("the directory", made)?;
        let fits = record.entries.iter().any(|e| {
            e.kind == Kind::Create
                && made != &e.home
                && within(&e.home, made)
                && within(made, parent(&e.path))
        });
        if !fits {
            return Err(format!(
                "the directory `{}` is not one a creation of it makes",
                path::shown(made)
            ));
        }
    }
    Ok(())
}
