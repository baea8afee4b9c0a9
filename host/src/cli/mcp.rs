//! `satyrn-host mcp --repo WORKTREE CONTRACT`: an MCP server over stdio (see
//! [`crate::mcp`] and `docs/mcp.md`). Start-up refusals exit with the contract's or the
//! repository's status (3–6) and one line on stderr, before any MCP traffic.

use std::io::Write;

use crate::mcp;

/// `mcp`'s arguments.
#[derive(Debug, clap::Args)]
#[command(
    about = "Serve satyrn's tools over MCP (stdio) for one worktree and one contract",
    long_about = "Serves satyrn's read, edit, list, search, write, delete and boundary tools \
                  over MCP (stdio) for one worktree root (--repo) and one task contract, both \
                  fixed at start (docs/mcp.md). A refusal at start-up exits with the \
                  contract's or the repository's status (3–6) and one line on stderr, before \
                  any MCP traffic. Every message gets an answer; the input ending before \
                  `initialize` exits 0."
)]
pub struct Args {
    #[command(flatten)]
    pub target: super::RepoAndContract,
}

/// Runs `mcp`.
#[must_use]
pub fn run(args: &Args) -> u8 {
    match mcp::open(&args.target.repo, &args.target.contract) {
        Ok(session) => mcp::serve(session),
        Err(failure) => {
            let _ = writeln!(std::io::stderr(), "satyrn-host mcp: {failure}");
            failure.code.exit_status()
        }
    }
}
