//! `satyrn-host check --repo REPO CONTRACT`: the contract and repository check. Prints the
//! four-field response `{"version":1,"ok":…,"code":…,"message":…}` and exits with its
//! status (0, or 3–6).

use std::ffi::OsString;
use std::path::PathBuf;

use crate::code::Code;
use crate::protocol::{self, Response, Shape};

/// Runs `check`.
#[must_use]
pub fn run(args: &[OsString]) -> u8 {
    let mut repo: Option<PathBuf> = None;
    let mut contract: Option<PathBuf> = None;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if arg == "--repo" {
            match iter.next() {
                Some(value) if repo.is_none() => repo = Some(PathBuf::from(value)),
                Some(_) => return super::usage_error("--repo given twice"),
                None => return super::usage_error("--repo needs a value"),
            }
        } else if arg.to_string_lossy().starts_with('-') {
            return super::usage_error(&format!("check: unknown option {arg:?}"));
        } else if contract.is_none() {
            contract = Some(PathBuf::from(arg));
        } else {
            return super::usage_error("check takes one CONTRACT");
        }
    }
    let (Some(repo), Some(contract)) = (repo, contract) else {
        return super::usage_error("check needs --repo REPO and CONTRACT");
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
