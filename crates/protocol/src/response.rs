//! Protocol responses: one compact JSON line, fields always in the order
//! `version, ok, code, message[, result]`; `result` holds the operation layer's typed
//! result (or an `edit` refusal's details) as it serializes.

use serde::Serialize;

use super::VERSION;
use satyrn_code::{Code, Failure};
use satyrn_operation as operation;

/// What a response's `result` holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Payload {
    /// A `replace` success.
    Replace(operation::ReplaceResult),
    /// A `read` success.
    Read(operation::ReadResult),
    /// An `edit` success.
    Edit(operation::EditResult),
    /// An `edit` refused for its batch or a stale revision.
    EditRefused(operation::EditDetails),
    /// A `list` success.
    List(operation::ListResult),
    /// A `search` success.
    Search(operation::SearchResult),
    /// A `write` success.
    Write(operation::WriteResult),
    /// A `delete` success.
    Delete(operation::DeleteResult),
    /// A `change_set` or `apply_patch` success.
    ChangeSet(operation::ChangeSetResult),
}

/// One protocol response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// Which operation answered; decides whether a `result` field is present.
    pub shape: Shape,
    /// The outcome; `Ok` for success.
    pub code: Code,
    /// Empty on success, otherwise why.
    pub message: String,
    /// The operation's result on success; typed details on some failures.
    pub result: Option<Payload>,
}

/// Whether a response carries a `result` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Four fields: `version, ok, code, message`.
    Check,
    /// Five fields: `… , result` (every operation but `check`).
    WithResult,
}

impl Response {
    /// The response of `failure`, in `shape`, with no result.
    #[must_use]
    pub fn failure(shape: Shape, failure: Failure) -> Self {
        Self {
            shape,
            code: failure.code,
            message: failure.message,
            result: None,
        }
    }

    /// The compact JSON line (without the newline).
    #[must_use]
    pub fn to_json(&self) -> String {
        #[derive(Serialize)]
        struct Four<'a> {
            version: u64,
            ok: bool,
            code: &'a str,
            message: &'a str,
        }
        #[derive(Serialize)]
        struct Five<'a> {
            version: u64,
            ok: bool,
            code: &'a str,
            message: &'a str,
            result: &'a Option<Payload>,
        }
        let ok = self.code == Code::Ok;
        let rendered = match self.shape {
            Shape::Check => serde_json::to_string(&Four {
                version: VERSION,
                ok,
                code: self.code.as_str(),
                message: &self.message,
            }),
            Shape::WithResult => serde_json::to_string(&Five {
                version: VERSION,
                ok,
                code: self.code.as_str(),
                message: &self.message,
                result: &self.result,
            }),
        };
        rendered.unwrap_or_else(|_| {
            r#"{"version":1,"ok":false,"code":"INTERNAL_ERROR","message":"cannot render the response","result":null}"#
                .to_string()
        })
    }

    /// The exit status for this response.
    #[must_use]
    pub fn exit_status(&self) -> u8 {
        self.code.exit_status()
    }
}
