//! `satyrn-host component export --out DIR`: writes the embedded component for other
//! WASI hosts (`docs/reuse.md`).
//!
//! Into `DIR` (created if missing) it writes `satyrn_mutator.wasm` (the exact bytes
//! embedded in this binary), the WIT package (`wit/mutator.wit`, `wit/deps/*.wit`, embedded
//! at build time so an installed binary can export them) and `manifest.json` (the WIT
//! package and its version, the SHA-256 of the `.wasm`, and the imports and exports read
//! from the component's own type). Every file is created exclusively: if any of them
//! already exists, nothing is written and the command exits 2 naming it; a failure half
//! way removes what this run created. On success the manifest is printed as one JSON
//! line on stdout and the exit status is 0.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use satyrn_engine::{COMPONENT_WASM, InterfaceItems, Loaded};

/// The file name of the component in the export.
pub const WASM_FILE: &str = "satyrn_mutator.wasm";

/// The manifest's file name.
pub const MANIFEST_FILE: &str = "manifest.json";

/// The WIT package as embedded at build time: (path inside the export, text).
pub const WIT_FILES: &[(&str, &str)] = &[
    ("wit/mutator.wit", include_str!("../../../wit/mutator.wit")),
    (
        "wit/deps/clocks.wit",
        include_str!("../../../wit/deps/clocks.wit"),
    ),
    (
        "wit/deps/filesystem.wit",
        include_str!("../../../wit/deps/filesystem.wit"),
    ),
    ("wit/deps/io.wit", include_str!("../../../wit/deps/io.wit")),
];

/// `component`'s arguments: one subcommand.
#[derive(Debug, clap::Args)]
#[command(
    about = "Work with the embedded WebAssembly component",
    subcommand_required = true
)]
pub struct Args {
    #[command(subcommand)]
    pub command: Subcommand,
}

/// `component`'s subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Subcommand {
    /// Write the embedded component, its WIT package and a manifest into a directory.
    #[command(
        long_about = "Writes satyrn_mutator.wasm (the exact bytes embedded in this \
                            binary), the WIT package (wit/…) and manifest.json into DIR \
                            (created if missing) for other WASI hosts (docs/reuse.md), and \
                            prints the manifest as one JSON line. Every file is created \
                            exclusively: if any exists, nothing is written and the exit \
                            status is 2."
    )]
    Export {
        /// The directory to write into (created with its missing parents).
        #[arg(long, value_name = "DIR", value_parser = clap::builder::PathBufValueParser::new())]
        out: PathBuf,
    },
}

/// Runs `component SUBCOMMAND ...`.
#[must_use]
pub fn run(args: &Args) -> u8 {
    match &args.command {
        Subcommand::Export { out } => export_command(out),
    }
}

fn export_command(out: &Path) -> u8 {
    let manifest = match manifest() {
        Ok(m) => m,
        Err(message) => {
            let _ = writeln!(
                std::io::stderr(),
                "satyrn-host: component export: {message}"
            );
            return satyrn_code::Code::InternalError.exit_status();
        }
    };
    match export(out, &manifest) {
        Ok(()) => {
            super::print_json_line(&manifest.to_string());
            0
        }
        Err(message) => {
            let _ = writeln!(
                std::io::stderr(),
                "satyrn-host: component export: {message}"
            );
            satyrn_code::USAGE_EXIT
        }
    }
}

/// The SHA-256 of `bytes`, lowercase hex (spelled as satyrn spells revisions).
fn sha256_hex(bytes: &[u8]) -> String {
    satyrn_mutator_core::revision::Revision::of(bytes).to_hex()
}

/// `(name, version)` from the first `package NAME@VERSION;` line of the WIT text.
fn wit_package(wit: &str) -> Option<(&str, &str)> {
    let line = wit
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("package "))?;
    let id = line.strip_prefix("package ")?.strip_suffix(';')?.trim();
    id.split_once('@')
}

fn items_json(items: &[InterfaceItems]) -> Value {
    Value::Array(
        items
            .iter()
            .map(|i| json!({"name": i.name, "items": i.items}))
            .collect(),
    )
}

/// The manifest of the embedded component.
///
/// # Errors
///
/// A message when the embedded component cannot be loaded (a broken installation).
pub fn manifest() -> Result<Value, String> {
    let (package, version) =
        wit_package(WIT_FILES[0].1).ok_or("the embedded WIT has no `package` line")?;
    let loaded = Loaded::new().map_err(|e| e.to_string())?;
    Ok(json!({
        "manifest_version": 1,
        "component": {
            "file": WASM_FILE,
            "sha256": sha256_hex(COMPONENT_WASM),
            "bytes": COMPONENT_WASM.len(),
        },
        "wit": {
            "package": package,
            "version": version,
            "world": "mutator-component",
            "files": WIT_FILES.iter().map(|(p, _)| *p).collect::<Vec<_>>(),
        },
        "imports": items_json(&loaded.imports()),
        "exports": items_json(&loaded.exports()),
        "satyrn_host_version": env!("CARGO_PKG_VERSION"),
    }))
}

/// Writes the export into `out`; on failure, removes whatever this call created.
fn export(out: &Path, manifest: &Value) -> Result<(), String> {
    let mut manifest_text = serde_json::to_string_pretty(manifest)
        .map_err(|e| format!("cannot serialize the manifest: {e}"))?;
    manifest_text.push('\n');
    let mut files: Vec<(PathBuf, &[u8])> = vec![(out.join(WASM_FILE), COMPONENT_WASM)];
    for (rel, text) in WIT_FILES {
        files.push((out.join(rel), text.as_bytes()));
    }
    files.push((out.join(MANIFEST_FILE), manifest_text.as_bytes()));

    // Refuse before touching anything when a destination exists (a symlink included).
    let existing: Vec<String> = files
        .iter()
        .filter(|(p, _)| p.symlink_metadata().is_ok())
        .map(|(p, _)| p.display().to_string())
        .collect();
    if !existing.is_empty() {
        return Err(format!(
            "refusing to overwrite existing {}; nothing was written",
            existing.join(", ")
        ));
    }

    let mut created = Created::default();
    let result = (|| {
        for dir in [out.to_path_buf(), out.join("wit"), out.join("wit/deps")] {
            created.dir(&dir)?;
        }
        for (path, bytes) in &files {
            created.file(path, bytes)?;
        }
        Ok(())
    })();
    if result.is_ok() {
        created.keep();
    }
    result
}

/// What an export created so far, removed again on drop unless kept.
#[derive(Default)]
struct Created {
    files: Vec<PathBuf>,
    dirs: Vec<PathBuf>,
}

impl Created {
    fn dir(&mut self, dir: &Path) -> Result<(), String> {
        // Create missing parents of `--out` too, but only remember what this call made.
        let mut missing = Vec::new();
        let mut cursor = Some(dir);
        while let Some(d) = cursor {
            if d.as_os_str().is_empty() || d.symlink_metadata().is_ok() {
                break;
            }
            missing.push(d.to_path_buf());
            cursor = d.parent();
        }
        for d in missing.into_iter().rev() {
            std::fs::create_dir(&d)
                .map_err(|e| format!("cannot create the directory {}: {e}", d.display()))?;
            self.dirs.push(d);
        }
        if !dir.is_dir() {
            return Err(format!("{} is not a directory", dir.display()));
        }
        Ok(())
    }

    fn file(&mut self, path: &Path, bytes: &[u8]) -> Result<(), String> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    format!(
                        "refusing to overwrite existing {}; nothing was written",
                        path.display()
                    )
                } else {
                    format!("cannot create {}: {e}", path.display())
                }
            })?;
        self.files.push(path.to_path_buf());
        file.write_all(bytes)
            .and_then(|()| file.sync_all())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    fn keep(&mut self) {
        self.files.clear();
        self.dirs.clear();
    }
}

impl Drop for Created {
    fn drop(&mut self) {
        for f in self.files.iter().rev() {
            let _ = std::fs::remove_file(f);
        }
        for d in self.dirs.iter().rev() {
            let _ = std::fs::remove_dir(d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_package_line() {
        assert_eq!(
            wit_package("// c\npackage satyrn:mutator@0.1.0;\n"),
            Some(("satyrn:mutator", "0.1.0"))
        );
        assert_eq!(wit_package("package x;"), None);
        assert_eq!(wit_package("interface a {}"), None);
    }

    #[test]
    fn embeds_every_wit_file_of_the_repository() {
        // A WIT file added to wit/ or wit/deps/ must be embedded too.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut on_disk = Vec::new();
        for dir in ["wit", "wit/deps"] {
            for entry in std::fs::read_dir(root.join(dir)).expect("read wit dir") {
                let name = entry.expect("entry").file_name();
                let name = name.to_string_lossy();
                if name.ends_with(".wit") {
                    on_disk.push(format!("{dir}/{name}"));
                }
            }
        }
        on_disk.sort();
        let mut embedded: Vec<String> = WIT_FILES.iter().map(|(p, _)| (*p).to_string()).collect();
        embedded.sort();
        assert_eq!(embedded, on_disk);
        for (rel, text) in WIT_FILES {
            assert_eq!(
                std::fs::read_to_string(root.join(rel)).expect("read"),
                *text,
                "{rel}"
            );
        }
    }
}
