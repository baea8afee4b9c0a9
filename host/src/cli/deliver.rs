//! `satyrn-host deliver`: being built in its own change (issue 3).
use std::ffi::OsString;

/// Runs `deliver`.
#[must_use]
pub fn run(_args: &[OsString]) -> u8 {
    super::usage_error("deliver is not available in this build")
}
