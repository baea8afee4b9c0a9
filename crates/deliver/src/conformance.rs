//! Every candidate checked against its contract before anything is published.
//!
//! A command `deliver` runs may write around satyrn's tools (its shell, its own editor, git).
//! Whatever it left, each path the candidate changes — added, modified, deleted, its mode or
//! type changed, a gitlink — must pass the gates satyrn's own writers pass
//! ([`satyrn_mutator_core::gates::candidate_change`]: not inside `.git`, not private,
//! declared writable; and a new name must be one `write` would create:
//! [`satyrn_mutator_core::path::new_name_refusal`]). One that does not makes the attempt `OUTSIDE_CONTRACT`: nothing is
//! published, and the receipt's `outside_contract` lists every such path with its change
//! and its code (see `docs/delivery.md`).

use serde::Serialize;

use satyrn_mutator_core::gates::{self, RefusalCode};
use satyrn_mutator_core::path::{new_name_refusal, shown};

use super::candidate::RawChange;
use satyrn_code::Code;
use satyrn_contract::Contract;

/// How a candidate changes a path, as spelled in the receipt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeKind {
    /// The path is new.
    Added,
    /// The content changed (and maybe the mode).
    Modified,
    /// The path is gone.
    Deleted,
    /// Only the mode changed (the executable bit).
    Mode,
    /// The type changed (file, symlink).
    Type,
    /// A gitlink (a submodule's commit) was added, changed or removed.
    Gitlink,
}

impl ChangeKind {
    /// How `change` changes its path.
    #[must_use]
    pub fn of(change: &RawChange) -> Self {
        const GITLINK: &str = "160000";
        if change.old_mode == GITLINK || change.new_mode == GITLINK {
            return Self::Gitlink;
        }
        match change.status {
            b'A' => Self::Added,
            b'D' => Self::Deleted,
            b'T' => Self::Type,
            _ if change.old_mode != change.new_mode && change.old_sha == change.new_sha => {
                Self::Mode
            }
            _ => Self::Modified,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Added => "added",
            Self::Modified => "modified",
            Self::Deleted => "deleted",
            Self::Mode => "mode",
            Self::Type => "type",
            Self::Gitlink => "gitlink",
        }
    }
}

/// One changed path the contract does not allow. Field order is the JSON order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Breach {
    /// The repository path (lossy if not UTF-8).
    pub path: String,
    /// How the candidate changes it.
    pub change: ChangeKind,
    /// The code satyrn's own tools would refuse the change with: `PATH_PRIVATE`,
    /// `PATH_UNDECLARED` (not declared writable, inside `.git`, or a path no tool can name),
    /// or `INVALID_REQUEST` (a new name with a control, bidirectional or invisible character);
    /// under `confine`, `NOT_BROKERED` ([`super::provenance`]).
    pub code: &'static str,
    /// The gate's message.
    pub detail: String,
}

impl std::fmt::Display for Breach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let why = if self.code == RefusalCode::PathPrivate.as_str() {
            "private"
        } else if self.code == super::provenance::NOT_BROKERED {
            "not made by satyrn's broker"
        } else if self.code == Code::InvalidRequest.as_str() {
            "a name nobody could read as it is"
        } else {
            "not a writable path"
        };
        write!(
            f,
            "`{}` ({}, {why})",
            shown(&self.path),
            self.change.as_str()
        )
    }
}

/// The breaches among `changes` under `contract`, in git's path order.
#[must_use]
pub fn check(changes: &[RawChange], contract: &Contract) -> Vec<Breach> {
    changes
        .iter()
        .filter_map(|change| {
            let path = String::from_utf8_lossy(&change.path);
            let kind = ChangeKind::of(change);
            let (code, detail) = match gates::candidate_change(
                &path,
                &contract.writable_paths,
                &contract.private_paths,
            ) {
                Err(refusal) => (refusal.code.as_str(), refusal.message),
                Ok(()) if kind == ChangeKind::Added => {
                    (Code::InvalidRequest.as_str(), new_name_refusal(&path)?)
                }
                Ok(()) => return None,
            };
            Some(Breach {
                path: path.into_owned(),
                change: kind,
                code,
                detail,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(old_mode: &str, new_mode: &str, same: bool, status: u8) -> RawChange {
        RawChange {
            old_mode: old_mode.into(),
            new_mode: new_mode.into(),
            old_sha: "a".repeat(40),
            new_sha: if same { "a" } else { "b" }.repeat(40),
            status,
            path: b"x".to_vec(),
        }
    }

    #[test]
    fn each_kind_of_change_is_named() {
        let cases = [
            ("000000", "100644", false, b'A', ChangeKind::Added),
            ("100644", "000000", false, b'D', ChangeKind::Deleted),
            ("100644", "100644", false, b'M', ChangeKind::Modified),
            ("100644", "100755", true, b'M', ChangeKind::Mode),
            ("100644", "100755", false, b'M', ChangeKind::Modified),
            ("100644", "120000", false, b'T', ChangeKind::Type),
            ("000000", "160000", false, b'A', ChangeKind::Gitlink),
            ("160000", "000000", false, b'D', ChangeKind::Gitlink),
        ];
        for (old, new, same_content, status, expected) in cases {
            assert_eq!(
                ChangeKind::of(&raw(old, new, same_content, status)),
                expected,
                "{old} -> {new} ({})",
                char::from(status)
            );
        }
    }
}
