//! `satyrn-host completions SHELL`: prints a completion script for `SHELL` on stdout, made
//! from the same definitions that parse the command line (the hidden internal subcommands
//! are left out).

/// `completions`'s arguments.
#[derive(Debug, clap::Args)]
#[command(about = "Print a shell completion script on stdout")]
pub struct Args {
    /// The shell to complete for.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// Runs `completions`: exit 0, or 1 when stdout cannot be written.
#[must_use]
pub fn run(args: &Args) -> u8 {
    let mut script = Vec::new();
    clap_complete::generate(
        args.shell,
        &mut super::definition(),
        "satyrn-host",
        &mut script,
    );
    super::write_stdout(&script)
}
