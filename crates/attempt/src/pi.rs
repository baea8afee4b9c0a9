//! The Pi child: its embedded extension files, its private home, argv and environment.
//!
//! The extension files are compiled into `satyrn-host` (from `pi/`) and written to the
//! attempt's private temporary directory, so an installed binary needs no source tree.
//! `pi` is `SATYRN_PI_BIN` when set (absolute), else `pi` on `PATH`.
//!
//! Pi reads configuration that can run commands or rewrite its instructions from its
//! working directory (`.pi/settings.json` with `packages` and `npmCommand`, `.pi/SYSTEM.md`,
//! `.pi/APPEND_SYSTEM.md`, `.pi/extensions`, skills, prompts, project migrations, git) and
//! from its agent directory. So the child never runs in the repository: it runs in an empty
//! private directory ([`Home::cwd`]) with an agent directory of its own
//! ([`Home::agent_dir`]) that holds only the user's model definitions and credentials
//! ([`CARRIED_AGENT_FILES`]), and it gets satyrn's own system prompt ([`SYSTEM_PROMPT`]).
//! satyrn's tools find the repository through the mutation context, never through the
//! working directory.
//!
//! The argv is verified against Pi 0.73: it has no `--` separator, reads `--model VALUE`
//! (never `--model=VALUE`), and has no `--no-approve`. The `/implement` command
//! (`orchestrator.ts`) is not loaded, so an attempt cannot recurse.

use std::ffi::OsString;
use std::fs::{DirBuilder, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::context::CONTEXT_FILE_VAR;
use satyrn_git as git;

/// The inline context variable of earlier versions; never passed on.
pub const LEGACY_CONTEXT_VAR: &str = "SATYRN_MUTATION_CONTEXT";

/// The extension files an attempt's Pi loads, as `(relative path, contents)`.
pub const EXTENSION_FILES: &[(&str, &str)] = &[
    ("engine.ts", include_str!("../../../pi/engine.ts")),
    ("mutator.ts", include_str!("../../../pi/mutator.ts")),
    ("lib/channel.ts", include_str!("../../../pi/lib/channel.ts")),
    ("lib/context.ts", include_str!("../../../pi/lib/context.ts")),
    ("lib/editor.ts", include_str!("../../../pi/lib/editor.ts")),
    (
        "lib/exchange.ts",
        include_str!("../../../pi/lib/exchange.ts"),
    ),
    ("lib/guard.ts", include_str!("../../../pi/lib/guard.ts")),
    ("lib/loop.ts", include_str!("../../../pi/lib/loop.ts")),
    ("lib/toolbox.ts", include_str!("../../../pi/lib/toolbox.ts")),
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

/// The system prompt Pi is given with `--system-prompt` (Pi appends the date and its working
/// directory). A repository's or user's `SYSTEM.md`/`APPEND_SYSTEM.md` never replaces it.
pub const SYSTEM_PROMPT: &str = include_str!("system_prompt.md");

/// The files carried from the user's Pi agent directory into the child's own: the model
/// definitions and the credentials. Nothing else (no `settings.json`, packages,
/// extensions, skills, prompts, themes or `SYSTEM.md`) is carried.
pub const CARRIED_AGENT_FILES: [&str; 2] = ["models.json", "auth.json"];

/// The variable that names Pi's agent directory.
pub const AGENT_DIR_VAR: &str = "PI_CODING_AGENT_DIR";

/// Pi's private home inside the attempt's private directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    /// Pi's working directory: empty, mode 0700.
    pub cwd: PathBuf,
    /// Pi's `TMPDIR`, mode 0700: nothing Pi or its TypeScript loader writes to a temporary
    /// directory is shared with other users (a shared `/tmp/jiti` cache would let another
    /// local user replace satyrn's extensions as Pi compiles them).
    pub tmp: PathBuf,
    /// Pi's agent directory (`PI_CODING_AGENT_DIR`), mode 0700, holding copies (mode 0600)
    /// of those [`CARRIED_AGENT_FILES`] that the user's agent directory has.
    pub agent_dir: PathBuf,
}

/// Creates [`Home`] under `private` (which must exist and be private to this attempt),
/// copying [`CARRIED_AGENT_FILES`] from the user's agent directory: `PI_CODING_AGENT_DIR`
/// when set (a leading `~` means `HOME`, as Pi reads it), else `$HOME/.pi/agent`. A file the
/// user's directory lacks is simply not carried (Pi then knows only its built-in models).
///
/// # Errors
///
/// A message when the user's agent directory is relative or lies inside `worktree` (its
/// model definitions could then come from the repository), when a carried name exists but
/// is not a regular file, or on any I/O failure.
pub fn prepare_home(private: &Path, worktree: &Path) -> Result<Home, String> {
    let home = Home {
        cwd: private.join("cwd"),
        tmp: private.join("tmp"),
        agent_dir: private.join("agent"),
    };
    for dir in [&home.cwd, &home.tmp, &home.agent_dir] {
        DirBuilder::new()
            .mode(0o700)
            .create(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let Some(user_dir) = user_agent_dir() else {
        return Ok(home);
    };
    if !user_dir.is_absolute() {
        return Err(format!(
            "{AGENT_DIR_VAR}={} must be an absolute path",
            user_dir.display()
        ));
    }
    if satyrn_os::fsid::is_within(&user_dir, worktree).unwrap_or(false) {
        return Err(format!(
            "the Pi agent directory {} lies inside the worktree, so the model definitions could \
             come from the repository; set {AGENT_DIR_VAR} elsewhere",
            user_dir.display()
        ));
    }
    for name in CARRIED_AGENT_FILES {
        let source = user_dir.join(name);
        let meta = match std::fs::metadata(&source) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("cannot inspect {}: {e}", source.display())),
        };
        if !meta.is_file() {
            return Err(format!("{} is not a regular file", source.display()));
        }
        let bytes =
            std::fs::read(&source).map_err(|e| format!("cannot read {}: {e}", source.display()))?;
        let target = home.agent_dir.join(name);
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&target)
            .and_then(|mut file| file.write_all(&bytes))
            .map_err(|e| format!("cannot write {}: {e}", target.display()))?;
    }
    Ok(home)
}

/// The user's Pi agent directory as Pi would find it; `None` without `PI_CODING_AGENT_DIR`
/// and `HOME`.
fn user_agent_dir() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty());
    match std::env::var_os(AGENT_DIR_VAR).filter(|d| !d.is_empty()) {
        Some(dir) => {
            let text = dir.to_string_lossy();
            match (text.as_ref(), &home) {
                ("~", Some(home)) => Some(PathBuf::from(home)),
                (t, Some(home)) if t.starts_with("~/") => Some(Path::new(home).join(&t[2..])),
                _ => Some(PathBuf::from(dir)),
            }
        }
        None => home.map(|h| Path::new(&h).join(".pi").join("agent")),
    }
}

/// The tools Pi may offer the model (`--tools`): exactly satyrn's, which `pi/mutator.ts`
/// registers over Pi's built-ins of the same names and `pi/engine.ts` enforces
/// (`SATYRN_TOOLS` in `pi/lib/context.ts`).
pub const TOOLS: &str = "read,edit,ls,find,grep,write,delete,apply_patch";

/// Pi's argv (after the program name). There is no prompt argument: the prompt is Pi's
/// standard input (Pi reads a piped stdin as the first message), so no task or path text
/// can be read as an option or an `@file`.
#[must_use]
pub fn args(model: &str, engine: &Path, mutator: &Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = [
        "--print",
        "--mode",
        "json",
        "--no-session",
        "--model",
        model,
        "--system-prompt",
        SYSTEM_PROMPT,
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
        TOOLS,
    ] {
        args.push(flag.into());
    }
    args
}

/// Variables removed from Pi's environment besides git's routing variables: a virtual
/// environment and the SSH agent (not the attempt's), and every variable that makes a
/// process run code nobody asked it to run — Node's `NODE_OPTIONS` (`--require`) and
/// `NODE_PATH` (which module an import finds), the dynamic loader's `LD_PRELOAD` and
/// `LD_AUDIT`, and the shells' `BASH_ENV` and `ENV` (sourced by every non-interactive
/// `bash`, every interactive `sh`), and `SATYRN_CONFINED` (only `confine` says whether the
/// kernel holds Pi). Model credentials, `PATH` and the locale are kept.
pub const REMOVED_VARIABLES: [&str; 9] = [
    "VIRTUAL_ENV",
    "SSH_AUTH_SOCK",
    "NODE_OPTIONS",
    "NODE_PATH",
    "LD_PRELOAD",
    "LD_AUDIT",
    "BASH_ENV",
    "ENV",
    satyrn_os::process::CONFINED_VAR,
];

/// Applies the child environment and working directory ([`Home::cwd`]) to `cmd`: the parent's, minus git's routing variables
/// (`git rev-parse --local-env-vars`, `GIT_NAMESPACE`) and [`REMOVED_VARIABLES`],
/// plus `SATYRN_MUTATION_CONTEXT_FILE` naming the context file, `SATYRN_HOST_BIN`,
/// `PI_CODING_AGENT_DIR` naming [`Home::agent_dir`], `TMPDIR` naming [`Home::tmp`] and
/// `JITI_FS_CACHE=false` (no on-disk cache of compiled extensions). An inherited `SATYRN_MUTATION_CONTEXT`
/// (the inline form of older versions) is removed. Model credentials in the environment are
/// kept.
///
/// # Errors
///
/// When git's list of routing variables cannot be obtained.
pub fn environment(
    cmd: &mut Command,
    context_file: &Path,
    host: &Path,
    home: &Home,
) -> Result<(), git::GitError> {
    git::scrub_env(cmd)?;
    for var in REMOVED_VARIABLES {
        cmd.env_remove(var);
    }
    cmd.env_remove(LEGACY_CONTEXT_VAR)
        .env(CONTEXT_FILE_VAR, context_file)
        .env("SATYRN_HOST_BIN", host)
        .env(AGENT_DIR_VAR, &home.agent_dir)
        .env("TMPDIR", &home.tmp)
        // jiti (Pi's TypeScript loader) would otherwise cache compiled extensions on disk and
        // load a cached file whose name and trailer match: never reuse compiled code.
        .env("JITI_FS_CACHE", "false")
        .current_dir(&home.cwd);
    Ok(())
}

/// Whether a model value could be read by Pi as an option (or is empty).
#[must_use]
pub fn model_is_unsafe(model: &str) -> bool {
    model.is_empty() || model.starts_with('-') || model.contains('\0')
}

#[cfg(test)]
mod tests {
    use super::EXTENSION_FILES;
    use std::path::{Component, Path, PathBuf};

    /// `dir/rel` with `.` and `..` resolved lexically.
    fn resolve(dir: &Path, rel: &str) -> PathBuf {
        let mut out = PathBuf::new();
        for part in dir.join(rel).components() {
            match part {
                Component::ParentDir => {
                    out.pop();
                }
                Component::CurDir => {}
                other => out.push(other),
            }
        }
        out
    }

    /// Every relative import of an embedded file is embedded too: a new module of the
    /// package that is not listed fails here, not in a real Pi at the first attempt.
    #[test]
    fn every_relative_import_of_the_extensions_is_embedded() {
        let embedded: Vec<PathBuf> = EXTENSION_FILES
            .iter()
            .map(|(rel, _)| PathBuf::from(rel))
            .collect();
        let mut checked = 0;
        for (rel, contents) in EXTENSION_FILES {
            let dir = Path::new(rel).parent().unwrap_or(Path::new(""));
            for line in contents
                .lines()
                .filter(|l| l.contains(" from \"./") || l.contains(" from \"../"))
            {
                let target = line.split('"').nth(1).unwrap_or_default();
                let path = resolve(dir, target);
                assert!(
                    embedded.contains(&path),
                    "{rel} imports {target}, which is not embedded"
                );
                checked += 1;
            }
        }
        assert!(checked >= 8, "only {checked} relative imports found");
    }
}
