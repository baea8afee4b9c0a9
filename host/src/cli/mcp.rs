//! `satyrn-host mcp --repo WORKTREE CONTRACT`: an MCP server over stdio (see
//! [`satyrn_mcp`] and `docs/mcp.md`). Start-up refusals exit with the contract's or the
//! repository's status (3–6) and one line on stderr, before any MCP traffic.

use satyrn_mcp as mcp;
use std::io::Write;

/// `mcp`'s arguments.
#[derive(Debug, clap::Args)]
#[command(
    about = "Serve satyrn's tools over MCP (stdio) for one worktree and one contract",
    long_about = "Serves satyrn's read, edit, list, search, write, delete and boundary tools \
                  over MCP (stdio) for one worktree root (--repo) and one task contract, both \
                  fixed at start (docs/mcp.md). A refusal at start-up exits with the \
                  contract's or the repository's status (3–6) and one line on stderr, before \
                  any MCP traffic. Every message gets an answer; the input ending before \
                  `initialize` exits 0. Inside `satyrn-host confine` (SATYRN_BROKER set) it \
                  relays to the run's broker, which serves the run's worktree and frozen \
                  contract: REPO and CONTRACT may then be left out, and are ignored."
)]
pub struct Args {
    /// The repository: the root of a git worktree (required unless relaying).
    #[arg(long, value_name = "REPO", value_parser = super::path())]
    pub repo: Option<std::path::PathBuf>,
    /// The task contract (YAML; docs/contract.md; required unless relaying).
    #[arg(value_name = "CONTRACT", value_parser = super::path())]
    pub contract: Option<std::path::PathBuf>,
    /// Relay to the broker of a confined run at this socket instead of serving here
    /// (default: $SATYRN_BROKER, set by `satyrn-host confine`).
    #[arg(long, value_name = "SOCKET", value_parser = super::path())]
    pub broker: Option<std::path::PathBuf>,
}

/// Runs `mcp`.
#[must_use]
pub fn run(args: &Args) -> u8 {
    let broker = args
        .broker
        .clone()
        .or_else(|| std::env::var_os(satyrn_confine::broker::SOCKET_VAR).map(Into::into));
    if let Some(socket) = broker {
        let secret = std::env::var(satyrn_confine::broker::SECRET_VAR).ok();
        return match satyrn_confine::relay::relay(&socket, secret.as_deref()) {
            Ok(status) => status,
            Err(failure) => {
                let _ = writeln!(std::io::stderr(), "satyrn-host mcp: {failure}");
                failure.code.exit_status()
            }
        };
    }
    let (Some(repo), Some(contract)) = (&args.repo, &args.contract) else {
        let _ = writeln!(
            std::io::stderr(),
            "satyrn-host mcp: --repo REPO and CONTRACT are required outside a confined run (no SATYRN_BROKER)"
        );
        return satyrn_code::USAGE_EXIT;
    };
    match mcp::open(repo, contract) {
        Ok(session) => mcp::serve(session),
        Err(failure) => {
            let _ = writeln!(std::io::stderr(), "satyrn-host mcp: {failure}");
            failure.code.exit_status()
        }
    }
}
