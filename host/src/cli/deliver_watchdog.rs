//! `satyrn-host __deliver-watchdog PID`: the watchdog `deliver` starts for itself, never run
//! by hand (see [`satyrn_deliver::watchdog`]). Internal: parsed on its own, so no help,
//! suggestion, completion or man page of the public command line names it. A missing or
//! bad PID is a usage error (exit 2).

use std::ffi::OsString;

use clap::Parser;

/// The internal subcommand's name, the first argument of the command line.
pub const NAME: &str = satyrn_deliver::watchdog::ARG;

/// The watchdog's arguments.
#[derive(Debug, Parser)]
#[command(name = NAME, bin_name = "satyrn-host __deliver-watchdog", about = "Internal: deliver's watchdog")]
struct Args {
    /// The pid of the `deliver` to watch (greater than 1).
    #[arg(value_name = "PID", value_parser = clap::value_parser!(i32).range(2..))]
    deliver: i32,
}

/// Runs the watchdog until its stdin ends (see [`satyrn_deliver::watchdog::main`]); `args`
/// are the ones after [`NAME`].
#[must_use]
pub fn run(args: &[OsString]) -> u8 {
    let program = std::iter::once(OsString::from(NAME));
    match Args::try_parse_from(program.chain(args.iter().cloned())) {
        Ok(args) => satyrn_deliver::watchdog::main(args.deliver),
        Err(error) => super::report(&error),
    }
}
