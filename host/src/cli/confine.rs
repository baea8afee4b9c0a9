//! `satyrn-host confine --repo WORKTREE CONTRACT -- COMMAND [ARG ...]` (see
//! [`satyrn_confine`] and `docs/confinement.md`).

use std::ffi::OsString;
use std::path::PathBuf;

use satyrn_confine::{self as confine, Request};

/// `confine`'s arguments.
#[derive(Debug, clap::Args)]
#[command(
    about = "Run a command that the kernel holds to the contract: it writes only through satyrn's broker",
    long_about = "Runs COMMAND (an agent CLI, interactive or not, or any program) in the worktree \
                  under Linux Landlock: its whole process tree can write only to its scratch home \
                  and temporary directory, the contract's scratch_paths and the terminal; it cannot \
                  read the contract's private paths nor the credential stores of your home; it \
                  cannot bind TCP ports, signal processes outside the run or reach abstract sockets \
                  made outside it. The only writer is satyrn's broker, started beside it: \
                  `satyrn-host mcp` inside the run relays to it (SATYRN_BROKER), with every gate of \
                  satyrn's tools. What is enforced is printed on stderr at start. Without Landlock \
                  ABI 3, confine runs nothing and exits 15 (CONFINE_UNAVAILABLE). The exit status \
                  is COMMAND's (128 + the signal that ended it); SIGINT, SIGTERM and SIGHUP are \
                  passed to its process group (docs/confinement.md).\n\n\
                  --agent claude|codex|pi prepares that agent to run inside with every built-in \
                  tool left on: its configuration in the scratch home (never yours) with \
                  satyrn as its only MCP server and its own prompts and sandbox off, copies \
                  of your model settings and credentials, a note telling the model that \
                  only satyrn's tools change files, TCP connect limited to its model \
                  endpoint's port (and --allow-connect's), your real agent directory \
                  unreadable. The commands (docs/mcp-clients.md):\n\n  \
                  satyrn-host confine --agent claude --repo . CONTRACT -- claude -p TASK\n  \
                  satyrn-host confine --agent codex --repo . CONTRACT -- codex exec TASK\n  \
                  satyrn-host confine --agent pi --repo . CONTRACT -- pi --print --model P/ID TASK"
)]
pub struct Args {
    /// The worktree root the command runs in.
    #[arg(long, value_name = "WORKTREE", value_parser = super::path())]
    pub repo: PathBuf,
    /// The command's HOME, writable by it (default: a fresh scratch home, removed after).
    #[arg(long, value_name = "DIR", value_parser = super::path())]
    pub home: Option<PathBuf>,
    /// Allow TCP connect to this port only (repeatable; default: connect not restricted,
    /// bind always refused).
    #[arg(long = "allow-connect", value_name = "PORT")]
    pub allow_connect: Vec<u16>,
    /// One more path the command may never read (repeatable), beside the contract's
    /// private paths and the credential stores of your home.
    #[arg(long = "deny-read", value_name = "PATH", value_parser = super::path())]
    pub deny_read: Vec<PathBuf>,
    /// The command's working directory (default: the worktree root). `attempt` runs Pi in
    /// an empty directory of its own.
    #[arg(long, value_name = "DIR", value_parser = super::path())]
    pub cwd: Option<PathBuf>,
    /// Keep the run's scratch directory (its path is printed on stderr).
    #[arg(long = "keep-scratch")]
    pub keep_scratch: bool,
    /// Run WITHOUT the kernel's boundary (the broker still serves): an explicit opt-out.
    #[arg(long, conflicts_with = "agent")]
    pub unconfined: bool,
    /// Prepare this agent CLI to run inside, its built-in tools on (default: none, a
    /// generic command).
    #[arg(long, value_name = "AGENT", value_enum)]
    pub agent: Option<confine::agent::Agent>,
    /// The task contract (YAML; docs/contract.md), read once and frozen.
    #[arg(value_name = "CONTRACT", value_parser = super::path())]
    pub contract: PathBuf,
    /// The command and its arguments, after a literal `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

/// Runs `confine`.
#[must_use]
pub fn run(args: Args) -> u8 {
    confine::run(&Request {
        repo: args.repo,
        contract: args.contract,
        home: args.home,
        cwd: args.cwd,
        allow_connect: args.allow_connect,
        deny_read: args.deny_read,
        keep_scratch: args.keep_scratch,
        unconfined: args.unconfined,
        agent: args.agent,
        argv: args.command,
    })
}
