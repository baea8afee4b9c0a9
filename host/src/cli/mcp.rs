//! `satyrn-host mcp --repo WORKTREE CONTRACT`: an MCP server over stdio (see
//! [`crate::mcp`] and `docs/mcp.md`). Start-up refusals exit with the contract's or the
//! repository's status (3–6) and one line on stderr, before any MCP traffic.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use crate::mcp;

/// Runs `mcp`.
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
        } else if arg == "--help" || arg == "-h" {
            let _ = writeln!(
                std::io::stdout(),
                "usage: satyrn-host mcp --repo WORKTREE CONTRACT\n\n\
                 Serves satyrn's read, edit and boundary tools over MCP (stdio) for one worktree\n\
                 root and one task contract, both fixed at start (docs/mcp.md)."
            );
            return 0;
        } else if arg.to_string_lossy().starts_with('-') {
            return super::usage_error(&format!("mcp: unknown option {arg:?}"));
        } else if contract.is_none() {
            contract = Some(PathBuf::from(arg));
        } else {
            return super::usage_error("mcp takes one CONTRACT");
        }
    }
    let (Some(repo), Some(contract)) = (repo, contract) else {
        return super::usage_error("mcp needs --repo WORKTREE and CONTRACT");
    };
    match mcp::open(&repo, &contract) {
        Ok(session) => mcp::serve(session),
        Err(failure) => {
            let _ = writeln!(std::io::stderr(), "satyrn-host mcp: {failure}");
            failure.code.exit_status()
        }
    }
}
