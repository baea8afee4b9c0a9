//! The command line: one module per subcommand.
//!
//! Usage errors print a message and the usage to stderr and exit 2; every other outcome
//! is a JSON document on stdout (see each subcommand).

use std::ffi::OsString;
use std::io::Write;

use crate::code::{Code, USAGE_EXIT};

pub mod attempt;
pub mod candidates;
pub mod check;
pub mod component;
pub mod deliver;
pub mod mcp;
pub mod panic;
pub mod protocol;

const USAGE: &str = "\
usage:
  satyrn-host check --repo REPO CONTRACT
  satyrn-host protocol < REQUEST.json
  satyrn-host deliver --repo REPO [--timeout SECONDS] [--push REMOTE]
                      [--attempt I | --attempts N [--jobs J]] CONTRACT -- COMMAND [ARG ...]
  satyrn-host candidates list|show|diff|apply|drop --repo REPO [--json] ... (--help)
  satyrn-host attempt [--model MODEL] CONTRACT
  satyrn-host mcp --repo WORKTREE CONTRACT
  satyrn-host component export --out DIR
  satyrn-host --version | --help
";

/// Runs the command line `args` (without the program name) and returns the exit status.
///
/// Installs the process's panic hook ([`panic::install`]): a panic in any subcommand ends
/// it with `INTERNAL_ERROR`'s exit status (1) and one line on stderr, and the subcommands
/// that answer in JSON still print exactly one (`INTERNAL_ERROR`) document.
#[must_use]
pub fn run(args: &[OsString]) -> u8 {
    panic::install();
    panic::catch(|| dispatch(args)).unwrap_or_else(|_| Code::InternalError.exit_status())
}

fn dispatch(args: &[OsString]) -> u8 {
    let Some((command, rest)) = args.split_first() else {
        return usage_error("a subcommand is required");
    };
    match command.to_str() {
        Some("check") => check::run(rest),
        Some("protocol") => protocol::run(rest),
        Some("deliver") => deliver::run(rest),
        Some("candidates") => candidates::run(rest),
        Some("attempt") => {
            panic::trigger("attempt");
            attempt::run(rest)
        }
        Some("component") => {
            panic::trigger("component");
            component::run(rest)
        }
        Some("mcp") => mcp::run(rest),
        Some(crate::deliver::watchdog::ARG) => crate::deliver::watchdog::main(rest),
        Some("--help" | "-h" | "help") => {
            let _ = std::io::stdout().write_all(USAGE.as_bytes());
            0
        }
        Some("--version" | "-V") => {
            let _ = writeln!(
                std::io::stdout(),
                "satyrn-host {}",
                env!("CARGO_PKG_VERSION")
            );
            0
        }
        _ => usage_error(&format!("unknown subcommand {command:?}")),
    }
}

/// Prints `message` and the usage to stderr; returns the usage exit status (2).
pub fn usage_error(message: &str) -> u8 {
    let _ = write!(std::io::stderr(), "satyrn-host: {message}\n{USAGE}");
    USAGE_EXIT
}

/// Writes one line of JSON to stdout. A closed stdout is ignored: the exit status still
/// tells the outcome.
pub fn print_json_line(json: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(json.as_bytes());
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

/// Parses `--repo DIR CONTRACT` (in any order) for `command`; `Err` is the usage exit
/// status, with the message already printed.
fn repo_and_contract(
    command: &str,
    repo_name: &str,
    args: &[OsString],
) -> Result<(std::path::PathBuf, std::path::PathBuf), u8> {
    use std::path::PathBuf;
    let mut repo: Option<PathBuf> = None;
    let mut contract: Option<PathBuf> = None;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if arg == "--repo" {
            match iter.next() {
                Some(value) if repo.is_none() => repo = Some(PathBuf::from(value)),
                Some(_) => return Err(usage_error("--repo given twice")),
                None => return Err(usage_error("--repo needs a value")),
            }
        } else if arg.to_string_lossy().starts_with('-') {
            return Err(usage_error(&format!("{command}: unknown option {arg:?}")));
        } else if contract.is_none() {
            contract = Some(PathBuf::from(arg));
        } else {
            return Err(usage_error(&format!("{command} takes one CONTRACT")));
        }
    }
    match (repo, contract) {
        (Some(repo), Some(contract)) => Ok((repo, contract)),
        _ => Err(usage_error(&format!(
            "{command} needs --repo {repo_name} and CONTRACT"
        ))),
    }
}
