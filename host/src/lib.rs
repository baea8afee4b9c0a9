//! satyrn-host: the native runner of satyrn.
//!
//! - [`engine`] embeds the precompiled mutator component and runs it with one read-only
//!   preopen (the worktree);
//! - [`publish`] is the only writer: an atomic, no-follow replace of one file;
//! - [`operation`] is every operation (replace, read, edit) once, for every front end;
//! - [`protocol`] is the one-shot JSON protocol (`satyrn-host protocol`);
//! - [`contract`] and [`repo`] load and check the task contract and the repository;
//! - [`code`] holds every result code and the one table of exit statuses;
//! - [`mcp`] serves the same operations to any MCP client (`satyrn-host mcp`);
//! - [`deliver`] runs one attempt in a detached worktree and publishes one candidate ref;
//! - [`git`] builds every (hardened) git invocation;
//! - [`cli`] has one module per subcommand.

pub mod attempt;
pub mod candidates;
pub mod cli;
pub mod code;
pub mod confine;
pub mod contract;
pub mod deliver;
pub mod engine;
pub mod fsid;
pub mod git;
pub mod lock;
pub mod mcp;
pub mod operation;
pub mod os;
pub mod protocol;
pub mod publish;
pub mod repo;
