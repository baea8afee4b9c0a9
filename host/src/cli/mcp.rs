//! `satyrn-host mcp --repo WORKTREE CONTRACT`: an MCP server over stdio (see
//! [`crate::mcp`] and `docs/mcp.md`). Start-up refusals exit with the contract's or the
//! repository's status (3–6) and one line on stderr, before any MCP traffic.

use std::ffi::OsString;
use std::io::Write;

use crate::mcp;

/// Runs `mcp`.
#[must_use]
pub fn run(args: &[OsString]) -> u8 {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        let _ = writeln!(
            std::io::stdout(),
            "usage: satyrn-host mcp --repo WORKTREE CONTRACT\n\n\
             Serves satyrn's read, edit and boundary tools over MCP (stdio) for one worktree\n\
             root and one task contract, both fixed at start (docs/mcp.md)."
        );
        return 0;
    }
    let (repo, contract) = match super::repo_and_contract("mcp", "WORKTREE", args) {
        Ok(parsed) => parsed,
        Err(status) => return status,
    };
    match mcp::open(&repo, &contract) {
        Ok(session) => mcp::serve(session),
        Err(failure) => {
            let _ = writeln!(std::io::stderr(), "satyrn-host mcp: {failure}");
            failure.code.exit_status()
        }
    }
}
