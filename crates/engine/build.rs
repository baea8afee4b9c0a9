//! Builds the mutator component for `wasm32-wasip2` from source, precompiles it with
//! Cranelift, and leaves both in `OUT_DIR` for `include_bytes!`:
//!
//! - `satyrn_mutator.wasm`: the component, as other WASI hosts use it;
//! - `satyrn_mutator.cwasm`: the same, compiled ahead of time, so the runtime never
//!   compiles (and carries no compiler);
//! - `satyrn_mutator_without_search.cwasm`: the component built without its `search`
//!   feature, compiled the same way, for the requests that never search
//!   (docs/architecture.md, "Two builds of the component").
//!
//! Both artifacts are compiled for a baseline of the target architecture by default
//! (x86-64-v2 on x86_64, Armv8.0-A on aarch64), so the binary runs on any CPU of that
//! baseline; `SATYRN_COMPONENT_CPU=native` compiles them for every feature of the build
//! machine's CPU instead (`docs/performance.md` measures the difference). The features
//! used are passed to the runtime (`SATYRN_COMPONENT_CPU_FEATURES`), which checks them
//! before loading.
//!
//! Two toolchain situations are handled: a rustup toolchain with the `wasm32-wasip2`
//! target, or Debian's `rustc-web` (`/usr/bin/cargo`, Rust 1.96) with the std sources and
//! `lld`, where the `no_std` guest is built with `-Zbuild-std=core,alloc`. With neither,
//! the build stops and names what to install (`scripts/setup.sh` installs it).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

include!("src/engine_config.rs");
include!("src/cpu_features.rs");

const LLVM_BIN: &str = "/usr/lib/llvm-22/bin";
const DEBIAN_CARGO: &str = "/usr/bin/cargo";
const DEBIAN_RUSTC: &str = "/usr/bin/rustc";

fn main() {
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest_dir
        .ancestors()
        .nth(2)
        .expect("crates/engine lies in the workspace")
        .to_path_buf();
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    for watched in [
        "components/mutator/src",
        "components/mutator/Cargo.toml",
        "components/mutator/Cargo.lock",
        "components/mutator/.cargo/config.toml",
        "components/mutator-core/src",
        "components/mutator-core/Cargo.toml",
        "wit",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    println!("cargo:rerun-if-env-changed=SATYRN_COMPONENT_TOOLCHAIN");
    println!("cargo:rerun-if-env-changed=SATYRN_COMPONENT_CPU");

    let component_target = out_dir.join("component-target");
    let wasm_bytes = build_component(&root, &component_target, &[]);
    std::fs::write(out_dir.join("satyrn_mutator.wasm"), &wasm_bytes)
        .expect("write OUT_DIR/satyrn_mutator.wasm");
    let without_search = build_component(&root, &component_target, &["--no-default-features"]);

    let (config, cpu, features) = precompile_config();
    println!("cargo:rustc-env=SATYRN_COMPONENT_CPU={cpu}");
    println!(
        "cargo:rustc-env=SATYRN_COMPONENT_CPU_FEATURES={}",
        features.join(",")
    );
    let engine = wasmtime::Engine::new(&config).unwrap_or_else(|e| {
        fail(&format!(
            "configuring the precompiling engine failed: {e:?}"
        ))
    });
    for (wasm, name) in [
        (&wasm_bytes, "satyrn_mutator.cwasm"),
        (&without_search, "satyrn_mutator_without_search.cwasm"),
    ] {
        let compiled = engine
            .precompile_component(wasm)
            .unwrap_or_else(|e| fail(&format!("precompiling {name} failed: {e:?}")));
        std::fs::write(out_dir.join(name), compiled)
            .unwrap_or_else(|e| fail(&format!("cannot write OUT_DIR/{name}: {e}")));
    }
}

/// The engine configuration the component is precompiled with, the CPU choice's name and
/// the CPU features (`std::arch` names) the artifact may use: [`engine_config`] plus the
/// target triple and the baseline features, or (`SATYRN_COMPONENT_CPU=native`) everything
/// this machine's CPU has, as Cranelift detects it.
fn precompile_config() -> (wasmtime::Config, &'static str, Vec<&'static str>) {
    let mut config = engine_config();
    match env::var("SATYRN_COMPONENT_CPU").as_deref() {
        Err(_) | Ok("" | "baseline") => {
            let target = env::var("TARGET").expect("cargo sets TARGET");
            // A named target turns Cranelift's detection of the build machine off: only
            // the flags enabled here are used.
            config
                .target(&target)
                .unwrap_or_else(|e| fail(&format!("wasmtime cannot compile for {target}: {e}")));
            let same_arch =
                env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok(std::env::consts::ARCH);
            let baseline: Vec<&'static str> = if same_arch {
                BASELINE_FEATURES.to_vec()
            } else {
                Vec::new()
            };
            for feature in &baseline {
                let flag = KNOWN_FEATURES
                    .iter()
                    .find(|(_, name)| name == feature)
                    .map(|(flag, _)| *flag)
                    .expect("every baseline feature is known");
                // SAFETY: the runtime checks that the CPU has every one of these features
                // (`SATYRN_COMPONENT_CPU_FEATURES`) before it loads the artifact.
                unsafe {
                    config.cranelift_flag_enable(flag);
                }
            }
            (config, "baseline", baseline)
        }
        Ok("native") => {
            let detected = KNOWN_FEATURES
                .iter()
                .map(|(_, name)| *name)
                .filter(|name| cpu_has(name) == Some(true))
                .collect();
            (config, "native", detected)
        }
        Ok(other) => fail(&format!(
            "SATYRN_COMPONENT_CPU={other:?}: use `baseline` (the default) or `native`"
        )),
    }
}

/// rustup's prebuilt `wasm32-wasip2` `core` leaves `memcmp` and its kin to the C library
/// (Debian's build-std path gets them from `compiler-builtins-mem` instead): the no_std
/// guest links wasi-libc's static `libc.a` for them, which brings no import. Arrays given
/// by `--config` are appended to the crate's own `rustflags` (`+simd128` stays).
const RUSTUP_LINK_LIBC: &str = r#"target.wasm32-wasip2.rustflags=["-Clink-arg=-lc"]"#;

/// Builds the component with the cargo arguments `features` (none: its default features)
/// into `target_dir` and returns the `.wasm`'s bytes (read before a later build with other
/// features replaces the file).
fn build_component(root: &Path, target_dir: &Path, features: &[&str]) -> Vec<u8> {
    let toolchain = env::var("SATYRN_COMPONENT_TOOLCHAIN").ok();
    let rustup_has_target = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l.trim() == "wasm32-wasip2")
        })
        .unwrap_or(false);
    let debian = Path::new(DEBIAN_CARGO).exists()
        && Path::new(DEBIAN_RUSTC).exists()
        && Path::new("/usr/lib/rustlib/src/rust/library").exists();
    let use_debian = match toolchain.as_deref() {
        Some("rustup") => false,
        Some("debian") => true,
        _ => !rustup_has_target,
    };
    let mut cmd;
    if !use_debian {
        if !rustup_has_target {
            fail("SATYRN_COMPONENT_TOOLCHAIN=rustup, but rustup has no wasm32-wasip2 target");
        }
        cmd = Command::new("cargo");
        scrub(&mut cmd);
        cmd.args([
            "build",
            "--release",
            "--locked",
            "--target",
            "wasm32-wasip2",
            "--config",
            RUSTUP_LINK_LIBC,
        ]);
    } else {
        if !debian {
            fail(
                "no toolchain can build the wasm32-wasip2 component: either `rustup target add wasm32-wasip2`, \
                 or install Debian's rustc-web cargo-web rust-web-src lld-22 (run scripts/setup.sh)",
            );
        }
        if !Path::new(LLVM_BIN).join("wasm-ld").exists() {
            fail("wasm-ld is missing: install Debian's lld-22 (scripts/setup.sh does it)");
        }
        cmd = Command::new(DEBIAN_CARGO);
        scrub(&mut cmd);
        cmd.env("RUSTC", DEBIAN_RUSTC)
            .env("RUSTC_BOOTSTRAP", "1")
            .args([
                "build",
                "--release",
                "--locked",
                "--target",
                "wasm32-wasip2",
            ])
            .args([
                "-Zbuild-std=core,alloc",
                "-Zbuild-std-features=compiler-builtins-mem",
            ]);
    }
    let path = format!("{LLVM_BIN}:{}", env::var("PATH").unwrap_or_default());
    let status = cmd
        .env("PATH", path)
        .args(features)
        .arg("--target-dir")
        .arg(target_dir)
        .current_dir(root.join("components/mutator"))
        .status()
        .unwrap_or_else(|e| fail(&format!("cannot run cargo for the component: {e}")));
    if !status.success() {
        fail(&format!("building the component failed ({status})"));
    }
    let wasm = target_dir.join("wasm32-wasip2/release/satyrn_mutator.wasm");
    std::fs::read(&wasm).unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", wasm.display())))
}

/// Removes the outer build's cargo and rustc settings, which would otherwise steer the
/// nested build to the wrong toolchain or deadlock it on the outer build's lock.
fn scrub(cmd: &mut Command) {
    for (key, _) in env::vars_os() {
        let key_str = key.to_string_lossy();
        if key_str.starts_with("CARGO")
            || key_str.starts_with("RUSTC")
            || key_str.starts_with("RUSTUP")
            || key_str == "RUSTFLAGS"
            || key_str == "RUSTDOC"
            || key_str == "RUSTDOCFLAGS"
        {
            cmd.env_remove(&key);
        }
    }
}

fn fail(message: &str) -> ! {
    eprintln!("satyrn-host build: {message}");
    std::process::exit(1);
}
