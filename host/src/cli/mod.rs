//! The command line: one module per subcommand, parsed by clap from the definitions here
//! and in each subcommand's `Args`.
//!
//! `--help` (every subcommand has its own) and `--version` print to stdout and exit 0.
//! Usage errors (an unknown or mistyped subcommand, a missing, repeated or unknown option, a
//! bad value) print one `satyrn-host: usage error: …` message, the usage and any suggestion
//! to stderr, nothing to stdout, and exit 2 ([`USAGE_EXIT`]); every other outcome is the
//! subcommand's own (a JSON document on stdout for most, see each subcommand).

use std::ffi::OsString;
use std::fmt::Display;
use std::io::Write;
use std::path::PathBuf;

use clap::builder::{OsStringValueParser, TypedValueParser};
use clap::error::ErrorKind;
use clap::{CommandFactory, Parser, Subcommand};

use satyrn_code::{Code, USAGE_EXIT};

pub mod attempt;
pub mod candidates;
pub mod check;
pub mod completions;
pub mod component;
pub mod confine;
pub mod deliver;
pub mod deliver_watchdog;
pub mod man;
pub mod mcp;
pub mod panic;
pub mod protocol;
pub mod series;

/// satyrn's native runner: changes a git repository only as a task contract allows.
#[derive(Debug, Parser)]
#[command(
    name = "satyrn-host",
    version,
    propagate_version = true,
    subcommand_required = true,
    max_term_width = 100,
    after_help = "Exit statuses: docs/exit-codes.md (2 is a usage error, with nothing on stdout)."
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Check(check::Args),
    Protocol(protocol::Args),
    Deliver(deliver::Args),
    Confine(confine::Args),
    Candidates(candidates::Args),
    Series(series::Args),
    Attempt(attempt::Args),
    Mcp(mcp::Args),
    Component(component::Args),
    Completions(completions::Args),
    Man(man::Args),
}

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
    // The internal subcommands have command lines of their own: no suggestion, completion
    // or man page ever names them.
    if let Some((first, rest)) = args.split_first()
        && first == deliver_watchdog::NAME
    {
        return deliver_watchdog::run(rest);
    }
    // `protocol` takes no arguments, and agents start one process per tool call: its exact
    // command line skips building the whole command tree (docs/performance.md, "Issue 19:
    // the hot functions first"). Any other command line, `protocol --help` included, is
    // clap's.
    if let [only] = args
        && only == "protocol"
    {
        return protocol::run(&protocol::Args {});
    }
    let program = std::iter::once(OsString::from("satyrn-host"));
    let cli = match Cli::try_parse_from(program.chain(args.iter().cloned())) {
        Ok(cli) => cli,
        Err(error) => return report(&error),
    };
    match cli.command {
        Command::Check(args) => check::run(&args),
        Command::Protocol(args) => protocol::run(&args),
        Command::Deliver(args) => deliver::run(args),
        Command::Confine(args) => confine::run(args),
        Command::Candidates(args) => candidates::run(args),
        Command::Series(args) => series::run(args),
        Command::Attempt(args) => {
            satyrn_os::fault::trigger("attempt");
            attempt::run(args)
        }
        Command::Mcp(args) => mcp::run(&args),
        Command::Component(args) => {
            satyrn_os::fault::trigger("component");
            component::run(&args)
        }
        Command::Completions(args) => completions::run(&args),
        Command::Man(args) => man::run(&args),
    }
}

/// The whole command-line definition, as clap builds it (for completions and the man page).
pub(crate) fn definition() -> clap::Command {
    let mut command = Cli::command();
    command.build();
    command
}

/// Prints what clap reports: help and version on stdout (exit 0), a usage error on stderr
/// (exit 2).
fn report(error: &clap::Error) -> u8 {
    let text = error.render().to_string();
    let message = match error.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = std::io::stdout().write_all(text.as_bytes());
            return 0;
        }
        // No subcommand at all: clap renders the whole help.
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            format!("a subcommand is required\n\n{text}")
        }
        _ => text.strip_prefix("error: ").unwrap_or(&text).to_owned(),
    };
    let _ = write!(std::io::stderr(), "satyrn-host: usage error: {message}");
    USAGE_EXIT
}

/// Reports a usage error found after parsing (a value clap cannot judge alone), with the
/// usage of `subcommand` (e.g. `attempt`); returns the usage exit status (2).
pub fn usage_error(subcommand: &str, message: impl Display) -> u8 {
    let mut command = definition();
    let error = match command.find_subcommand_mut(subcommand) {
        Some(sub) => sub.error(ErrorKind::ValueValidation, message),
        None => command.error(ErrorKind::ValueValidation, message),
    };
    report(&error)
}

/// A path argument taken exactly as given, the empty path included (which the subcommand
/// then refuses with its own code, as a missing file).
fn path() -> impl TypedValueParser<Value = PathBuf> {
    OsStringValueParser::new().map(PathBuf::from)
}

/// Writes one line of JSON to stdout. A closed stdout is ignored: the exit status still
/// tells the outcome.
pub fn print_json_line(json: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(json.as_bytes());
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

/// Writes `bytes` to stdout: exit 0, or `INTERNAL_ERROR`'s status (1) with one line on
/// stderr when stdout cannot be written.
fn write_stdout(bytes: &[u8]) -> u8 {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => 0,
        Err(e) => {
            print_error("stdout", &e);
            Code::InternalError.exit_status()
        }
    }
}

/// Writes `satyrn-host: WHAT: ERROR` as one line to stderr.
fn print_error(what: &str, error: &dyn Display) {
    let _ = writeln!(std::io::stderr(), "satyrn-host: {what}: {error}");
}

/// `--repo DIR CONTRACT`, shared by `check` and `mcp`.
#[derive(Debug, clap::Args)]
pub struct RepoAndContract {
    /// The repository: the root of a git worktree.
    #[arg(long, value_name = "REPO", value_parser = path())]
    pub repo: PathBuf,
    /// The task contract (YAML: id, task, writable_paths, private_paths; docs/contract.md).
    #[arg(value_name = "CONTRACT", value_parser = path())]
    pub contract: PathBuf,
}

#[cfg(test)]
pub(crate) fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(std::iter::once("satyrn-host").chain(args.iter().copied()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_definition_is_consistent() {
        super::definition().debug_assert();
    }

    #[test]
    fn a_mistyped_subcommand_gets_a_suggestion() {
        let error = super::parse(&["delivr"]).expect_err("unknown");
        assert_eq!(error.kind(), clap::error::ErrorKind::InvalidSubcommand);
        assert!(error.to_string().contains("'deliver'"), "{error}");
    }
}
