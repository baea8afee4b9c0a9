//! The Pi child: its embedded extension files, argv and environment.
//!
//! The extension files are compiled into `satyrn-host` (from `pi/`) and written to the
//! attempt's private temporary directory, so an installed binary needs no source tree.
//! `pi` is `SATYRN_PI_BIN` when set (absolute), else `pi` on `PATH`.
//!
//! The argv is verified against Pi 0.73: it has no `--` separator, reads `--model VALUE`
//! (never `--model=VALUE`), and has no `--no-approve`. The `/implement` command
//! (`orchestrator.ts`) is not loaded, so an attempt cannot recurse.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::git;

/// The extension files an attempt's Pi loads, as `(relative path, contents)`.
pub const EXTENSION_FILES: &[(&str, &str)] = &[
    ("engine.ts", include_str!("../../../pi/engine.ts")),
    ("mutator.ts", include_str!("../../../pi/mutator.ts")),
    ("lib/context.ts", include_str!("../../../pi/lib/context.ts")),
    ("lib/editor.ts", include_str!("../../../pi/lib/editor.ts")),
    (
        "lib/exchange.ts",
        include_str!("../../../pi/lib/exchange.ts"),
    ),
    ("lib/guard.ts", include_str!("../../../pi/lib/guard.ts")),
    ("lib/loop.ts", include_str!("../../../pi/lib/loop.ts")),
];

/// Writes [`EXTENSION_FILES`] under `dir`; returns the paths of `engine.ts` and `mutator.ts`.
///
/// # Errors
///
/// The I/O error of a failed write.
pub fn write_extensions(dir: &Path) -> std::io::Result<(PathBuf, PathBuf)> {
    for (rel, contents) in EXTENSION_FILES {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, contents)?;
    }
    Ok((dir.join("engine.ts"), dir.join("mutator.ts")))
}

/// The `pi` executable: `SATYRN_PI_BIN` (must be absolute) or `pi` from `PATH`.
///
/// # Errors
///
/// A message when `SATYRN_PI_BIN` is relative.
pub fn executable() -> Result<OsString, String> {
    match std::env::var_os("SATYRN_PI_BIN") {
        Some(path) if Path::new(&path).is_absolute() => Ok(path),
        Some(_) => Err("SATYRN_PI_BIN must be an absolute path".to_string()),
        None => Ok(OsString::from("pi")),
    }
}

/// Pi's argv (after the program name).
#[must_use]
pub fn args(model: &str, engine: &Path, mutator: &Path, prompt: &str) -> Vec<OsString> {
    let mut args: Vec<OsString> = [
        "--print",
        "--mode",
        "json",
        "--no-session",
        "--model",
        model,
        "--no-extensions",
        "--extension",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    args.push(engine.into());
    args.push("--extension".into());
    args.push(mutator.into());
    for flag in [
        "--no-skills",
        "--no-prompt-templates",
        "--no-themes",
        "--no-context-files",
        "--tools",
        "read,edit",
    ] {
        args.push(flag.into());
    }
    args.push(prompt.into());
    args
}

/// Variables removed from Pi's environment besides git's routing variables.
pub const REMOVED_VARIABLES: [&str; 2] = ["VIRTUAL_ENV", "SSH_AUTH_SOCK"];

/// Applies the child environment to `cmd`: the parent's, minus git's routing variables
/// (`git rev-parse --local-env-vars`, `GIT_NAMESPACE`), `VIRTUAL_ENV` and `SSH_AUTH_SOCK`,
/// plus the mutation context. Model credentials are kept.
///
/// # Errors
///
/// When git's list of routing variables cannot be obtained.
pub fn environment(
    cmd: &mut Command,
    context_json: &str,
    host: &Path,
) -> Result<(), git::GitError> {
    git::scrub_env(cmd)?;
    for var in REMOVED_VARIABLES {
        cmd.env_remove(var);
    }
    cmd.env("SATYRN_MUTATION_CONTEXT", context_json)
        .env("SATYRN_HOST_BIN", host);
    Ok(())
}

/// Whether a model value could be read by Pi as an option (or is empty).
#[must_use]
pub fn model_is_unsafe(model: &str) -> bool {
    model.is_empty() || model.starts_with('-') || model.contains('\0')
}
