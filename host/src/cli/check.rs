//! `satyrn-host check --repo REPO CONTRACT`: the contract and repository check. Prints the
//! four-field response `{"version":1,"ok":…,"code":…,"message":…}` and exits with its
//! status (0, or 3–6).

use satyrn_code::Code;
use satyrn_protocol::{self as protocol, Response, Shape};

/// `check`'s arguments.
#[derive(Debug, clap::Args)]
#[command(
    about = "Check a contract and a repository; print one JSON response",
    long_about = "Checks that CONTRACT is a valid task contract and REPO the root of a git \
                  worktree. Prints the four-field response {\"version\":1,\"ok\":…,\"code\":…,\
                  \"message\":…} on stdout and exits with its status (0, or 3–6)."
)]
pub struct Args {
    #[command(flatten)]
    pub target: super::RepoAndContract,
}

/// Runs `check`.
#[must_use]
pub fn run(args: &Args) -> u8 {
    let (repo, contract) = (&args.target.repo, &args.target.contract);
    let checked = super::panic::catch(|| protocol::check(repo, contract).map(drop))
        .unwrap_or_else(|message| Err(satyrn_code::Failure::new(Code::InternalError, message)));
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
