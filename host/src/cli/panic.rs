//! What a panic becomes: the documented internal-error outcome (`INTERNAL_ERROR`, exit 1),
//! never a panic trace or a missing response.
//!
//! [`install`] replaces the process's panic hook with one that writes a single line to
//! stderr; each subcommand runs under [`catch`], and the subcommands that answer in JSON
//! (`protocol`, `check`, `deliver`) print their `INTERNAL_ERROR` document instead of the one
//! the panic prevented. Unwinding runs every destructor on the way, so a publish that
//! panics removes its temporary and restores its signal dispositions.

use std::panic::{AssertUnwindSafe, PanicHookInfo};

/// The start of the line a panic writes to stderr (and of the JSON message).
pub const INTERNAL: &str = "internal error (a bug)";

/// Installs the one-line panic hook for the whole process (process-global: it replaces
/// the default hook, which printed a trace and, with `RUST_BACKTRACE`, a backtrace).
pub fn install() {
    std::panic::set_hook(Box::new(|info| {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "satyrn-host: {}", describe(info));
    }));
}

/// Runs `f`; a panic inside it becomes `Err` with a one-line description (the hook has
/// already reported it on stderr).
///
/// # Errors
///
/// The panic's message, prefixed with [`INTERNAL`].
pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_string());
        format!("{INTERNAL}: {}", one_line(&message))
    })
}

fn describe(info: &PanicHookInfo<'_>) -> String {
    let message = info
        .payload()
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| info.payload().downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string());
    match info.location() {
        Some(at) => format!(
            "{INTERNAL}: {} ({}:{})",
            one_line(&message),
            at.file(),
            at.line()
        ),
        None => format!("{INTERNAL}: {}", one_line(&message)),
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
