//! The decision logic of satyrn's mutator, as a pure `no_std` + `alloc` library.
//!
//! The wasm component (`components/mutator`) is a thin WASI binding around this crate;
//! it compiles natively too, so unit, property and differential tests run at native speed.
//!
//! A replacement passes its gates in a fixed order (see [`replace::decide`]):
//! path shape ([`path`]), declared path ([`fnmatch`]), revision present, no-follow open
//! ([`worktree::Worktree`]), revision equal ([`revision`]), UTF-8, exactly one anchor
//! ([`anchor`]).
#![no_std]

extern crate alloc;

pub mod anchor;
pub mod change_set;
pub mod delete;
pub mod edit;
pub mod fnmatch;
pub mod gates;
pub mod lines;
pub mod list;
pub mod patch;
pub mod path;
pub mod read;
pub mod replace;
pub mod revision;
pub mod revision_map;
#[cfg(feature = "search")]
pub mod search;
pub mod tree;
pub(crate) mod walk;
pub mod worktree;
pub mod write;
