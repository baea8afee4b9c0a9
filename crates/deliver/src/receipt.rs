//! The delivery receipt: the one JSON line `deliver` prints, in a frozen shape.
//!
//! Fields, all present but the last, in this order (see `docs/delivery.md`):
//!
//! | field | type | meaning |
//! |---|---|---|
//! | `version` | int | `1` |
//! | `outcome` | string | `candidate-created`, `discarded` or `refused` |
//! | `code` | string | the result code (`OK`, `REPO_DIRTY`, …) |
//! | `message` | string | empty on `OK`, otherwise why |
//! | `contract_id` | string or null | the contract's `id` whenever the contract parsed |
//! | `repo` | string | the absolute, lexically normalized `--repo` (symlinks kept) |
//! | `base_commit` | string or null | `HEAD^{commit}` once captured |
//! | `candidate_ref` | string or null | set only on `candidate-created` |
//! | `candidate_commit` | string or null | set only on `candidate-created` |
//! | `paths` | array of strings | changed paths by raw UTF-8 bytes; empty unless created |
//! | `retained_worktree` | string or null | set only on `CLEANUP_FAILED` |
//! | `exit_code` | int or null | the command's exit status, when it exited |
//! | `signal` | int or null | the signal that ended the command, when one did |
//! | `published` | object | only with `--push`: `{remote, pushed, message}` |
//! | `confinement` | string | only when the command was `satyrn-host confine`: what the kernel enforced (its start line), or that nothing was |
//! | `outside_contract` | array of objects | only on `OUTSIDE_CONTRACT`: `{path, change, code, detail}` per path the contract does not allow |
//! | `warnings` | array of objects | only when there is one: `{kind, path, detail}` for a reviewer |

use serde::Serialize;

use super::conformance::Breach;
use super::push::Publication;
use super::warnings::Warning;
use satyrn_code::Code;

/// The receipt version this build prints.
pub const VERSION: u64 = 1;

/// How an attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Outcome {
    /// A candidate ref was published (`OK`).
    #[serde(rename = "candidate-created")]
    CandidateCreated,
    /// A worktree was created (an attempt started) but nothing was published.
    #[serde(rename = "discarded")]
    Discarded,
    /// Refused before anything was created.
    #[serde(rename = "refused")]
    Refused,
}

/// One receipt. Field order is the JSON order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Receipt {
    /// Always [`VERSION`].
    pub version: u64,
    /// How the attempt ended.
    pub outcome: Outcome,
    /// The result code.
    #[serde(serialize_with = "code_str")]
    pub code: Code,
    /// Empty on `OK`, otherwise why.
    pub message: String,
    /// The contract id, once the contract parsed.
    pub contract_id: Option<String>,
    /// The absolute, normalized repository path as given (lossy if not UTF-8).
    pub repo: String,
    /// The captured base commit.
    pub base_commit: Option<String>,
    /// The published ref (`refs/satyrn/candidates/<id>/head`).
    pub candidate_ref: Option<String>,
    /// The published commit.
    pub candidate_commit: Option<String>,
    /// The changed paths, sorted by raw bytes.
    pub paths: Vec<String>,
    /// The worktree left behind when cleanup failed.
    pub retained_worktree: Option<String>,
    /// The command's exit status, when it exited normally.
    pub exit_code: Option<i32>,
    /// The signal that terminated the command, when one did.
    pub signal: Option<i32>,
    /// Only with `deliver --push`: where the candidate was pushed and whether that
    /// succeeded; omitted from the JSON otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub published: Option<Publication>,
    /// Only for an attempt of a series (`--attempt`, `--attempt-from`, each child of
    /// `--attempts`): which one, where and how long it ran; omitted from the JSON otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt: Option<AttemptRun>,
    /// Only when the command was `satyrn-host confine`: what it enforced (the line it
    /// printed at start), or why nothing was; omitted from the JSON otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confinement: Option<String>,
    /// Only on `OUTSIDE_CONTRACT`: every changed path the contract does not allow (see
    /// [`super::conformance`]); omitted from the JSON otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub outside_contract: Vec<Breach>,
    /// What a reviewer should see (see [`super::warnings`]); omitted from the JSON when
    /// empty, so a receipt without warnings is byte-for-byte the 13-field receipt.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Warning>,
}

/// One attempt of a series, as its receipt records it (`candidates series` reads it back).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct AttemptRun {
    /// The attempt's index, from 1.
    pub index: u16,
    /// The machine it ran on (the kernel's host name; `""` when unreadable).
    pub host: String,
    /// When `deliver` started, in seconds since the epoch.
    pub started_at: u64,
    /// Milliseconds from `deliver`'s start to this receipt (for a candidate's receipt tag,
    /// to its local publication).
    pub duration_ms: u64,
}

impl AttemptRun {
    /// Attempt `index`, starting now on this machine.
    #[must_use]
    pub fn starting(index: u16) -> Self {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_owned())
            .unwrap_or_default();
        let started_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Self {
            index,
            host,
            started_at,
            duration_ms: 0,
        }
    }
}

fn code_str<S: serde::Serializer>(code: &Code, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(code.as_str())
}

impl Receipt {
    /// A receipt with `outcome`, `code`, `message` and `repo`, every other field empty.
    #[must_use]
    pub fn new(outcome: Outcome, code: Code, message: impl Into<String>, repo: &str) -> Self {
        Self {
            version: VERSION,
            outcome,
            code,
            message: message.into(),
            contract_id: None,
            repo: repo.to_owned(),
            base_commit: None,
            candidate_ref: None,
            candidate_commit: None,
            paths: Vec::new(),
            retained_worktree: None,
            exit_code: None,
            signal: None,
            published: None,
            attempt: None,
            confinement: None,
            outside_contract: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// The compact JSON line, without the newline.
    #[must_use]
    pub fn to_json(&self) -> String {
        // Serializing plain strings, integers and options cannot fail; the fallback
        // keeps the one-line promise even so.
        serde_json::to_string(self).unwrap_or_else(|e| {
            format!(
                "{{\"version\":{VERSION},\"outcome\":\"discarded\",\"code\":\"INTERNAL_ERROR\",\"message\":{}}}",
                serde_json::Value::String(e.to_string())
            )
        })
    }

    /// The process exit status: the code's row in the one table.
    #[must_use]
    pub fn exit_status(&self) -> u8 {
        self.code.exit_status()
    }
}
