//! `satyrn-host check --repo REPO CONTRACT`: the contract and repository check. Prints the
//! four-field response `{"version":1,"ok":…,"code":…,"message":…}` and exits with its
//! status (0, or 3–6).

use std::ffi::OsString;

use crate::code::Code;
use crate::protocol::{self, Response, Shape};

/// Runs `check`.
#[must_use]
pub fn run(args: &[OsString]) -> u8 {
    let (repo, contract) = match super::repo_and_contract("check", "REPO", args) {
        Ok(parsed) => parsed,
        Err(status) => return status,
    };
    let checked = super::panic::catch(|| protocol::check(&repo, &contract).map(drop))
        .unwrap_or_else(|message| Err(crate::code::Failure::new(Code::InternalError, message)));
    let response = match checked {
        Ok(()) => Response {
            shape: Shape::Check,
            code: Code::Ok,
            message: String::new(),
            result: None,
        },
        Err(f) => Response {
            shape: Shape::Check,
            code: f.code,
            message: f.message,
            result: None,
        },
    };
    super::print_json_line(&response.to_json());
    response.exit_status()
}
