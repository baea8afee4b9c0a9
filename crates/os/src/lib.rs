//! The operating-system plumbing every front end shares: signal dispositions
//! ([`signals`]) and processes, groups and sessions ([`process`]).
//!
//! Nothing here knows about contracts, git or delivery. Every public function states its
//! process-global effects (signal dispositions, the child subreaper, killing and reaping
//! processes) in a "Process-global effects" section; a function without one has none.
//! The `unsafe` of these concerns lives here (`sigaction`, the parent-death signal set
//! between fork and exec), each block with its `SAFETY`
//! comment; the one other is the command's `pre_exec` in `deliver/command.rs`.

pub mod fault;
pub mod fds;
pub mod fsid;
pub mod home;
pub mod lock;
pub mod owned_dir;
pub mod process;
pub mod signals;
