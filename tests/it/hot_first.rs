//! `scripts/link-hot-first.sh`, the release binary's linker: the functions its list names
//! (demangled, v0) are laid out first, in the list's order; a name it cannot find costs
//! nothing; whatever keeps it from ordering (a list naming nothing, another linker, a mapping
//! that fails) leaves the driver's own link.
//!
//! Real parts: rustc compiles a small `no_std` object with v0 mangling, the script links it
//! with the system's `cc` and rustc's own `ld.lld`, and `nm` reads the addresses back.

use std::path::{Path, PathBuf};
use std::process::Command;

const PROBE: &str = r#"#![no_std]
#[inline(never)]
pub fn cold(x: u32) -> u32 { x.wrapping_mul(3).wrapping_add(1) }
#[inline(never)]
pub fn warm(x: u32) -> u32 { x.wrapping_mul(5).wrapping_add(2) }
#[inline(never)]
pub fn hot(x: u32) -> u32 { x.wrapping_mul(7).wrapping_add(3) }
#[unsafe(no_mangle)]
pub extern "C" fn main() -> i32 { (cold(1) ^ warm(2) ^ hot(3)) as i32 }
"#;

/// Runs rustc with `args`; its stdout.
fn rustc(args: &[&str]) -> String {
    let out = Command::new("rustc")
        .args(args)
        .output()
        .expect("rustc runs");
    assert!(out.status.success(), "rustc {args:?}: {out:?}");
    String::from_utf8(out.stdout).expect("utf-8")
}

/// The directory holding rustc's own `ld.lld` (what rustc's `-fuse-ld=lld` finds).
fn lld_dir() -> PathBuf {
    let sysroot = rustc(&["--print", "sysroot"]);
    let version = rustc(&["-vV"]);
    let host = version
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names its host");
    Path::new(sysroot.trim()).join(format!("lib/rustlib/{host}/bin/gcc-ld"))
}

struct Linked {
    /// The probe's three functions by address, lowest first.
    layout: Vec<String>,
    /// What the script handed lld as the order (absent when it linked without one).
    order: Option<String>,
    /// The script's stderr.
    stderr: String,
}

/// How the probe is linked.
enum Link<'a> {
    /// With the driver alone, as rustc would without the script: `cc -fuse-ld=lld`.
    Plain,
    /// With the script, `list` the list file's text, the driver's arguments as rustc gives
    /// them (`-B<rustc's gcc-ld> -fuse-ld=lld`) plus `args`, and `envs` set.
    Script {
        list: &'a str,
        args: &'a [&'a str],
        envs: &'a [(&'a str, &'a str)],
    },
    /// With the script, no `-fuse-ld` on the command line, and SATYRN_LLD_DIR set.
    ScriptAddingLld { list: &'a str },
}

/// Compiles the probe, links it as `how` says, runs it and returns where its functions
/// landed.
fn link(how: &Link<'_>) -> Linked {
    let dir = tempfile::tempdir().expect("tempdir");
    let source = dir.path().join("probe.rs");
    std::fs::write(&source, PROBE).expect("write probe");
    let object = dir.path().join("probe.o");
    rustc(&[
        "--edition=2024",
        "--crate-type=lib",
        "--emit=obj",
        "-O",
        "-C",
        "panic=abort",
        "-C",
        "symbol-mangling-version=v0",
        "-o",
        object.to_str().expect("utf-8 path"),
        source.to_str().expect("utf-8 path"),
    ]);
    let output = dir.path().join("probe");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/link-hot-first.sh");
    let list_path = dir.path().join("hot-functions.txt");
    let rustc_lld = [
        format!("-B{}", lld_dir().display()),
        "-fuse-ld=lld".to_owned(),
    ];
    let mut command = match how {
        Link::Plain => {
            let mut command = Command::new("cc");
            command.args(&rustc_lld);
            command
        }
        Link::Script { list, args, envs } => {
            std::fs::write(&list_path, list).expect("write list");
            let mut command = Command::new(&script);
            command
                .env("SATYRN_HOT_FUNCTIONS", &list_path)
                .envs(envs.iter().copied())
                .args(*args);
            if !args.iter().any(|a| a.starts_with("-fuse-ld=")) {
                command.args(&rustc_lld);
            }
            command
        }
        Link::ScriptAddingLld { list } => {
            std::fs::write(&list_path, list).expect("write list");
            let mut command = Command::new(&script);
            command
                .env("SATYRN_HOT_FUNCTIONS", &list_path)
                .env("SATYRN_LLD_DIR", lld_dir());
            command
        }
    };
    let linked = command
        .arg(&object)
        .arg("-o")
        .arg(&output)
        .output()
        .expect("the linker runs");
    assert!(linked.status.success(), "link failed: {linked:?}");
    let ran = Command::new(&output).status().expect("the probe runs");
    assert_eq!(
        ran.code(),
        Some((4 ^ 12 ^ 24) & 0xff),
        "the probe computes what it did"
    );

    let nm = Command::new("nm")
        .arg("-n")
        .arg("-C")
        .arg(&output)
        .output()
        .expect("nm");
    let layout = String::from_utf8(nm.stdout)
        .expect("utf-8")
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter(|name| ["probe::cold", "probe::warm", "probe::hot"].contains(name))
        .map(str::to_owned)
        .collect();
    let order = std::fs::read_to_string(output.with_extension("order")).ok();
    let stderr = String::from_utf8_lossy(&linked.stderr).into_owned();
    Linked {
        layout,
        order,
        stderr,
    }
}

/// The probe's layout as rustc and lld make it, with no order.
fn natural() -> Vec<String> {
    let linked = link(&Link::Plain);
    assert_eq!(linked.layout.len(), 3, "{:?}", linked.layout);
    assert!(linked.order.is_none());
    linked.layout
}

fn script<'a>(list: &'a str) -> Link<'a> {
    Link::Script {
        list,
        args: &[],
        envs: &[],
    }
}

/// `names` reversed, as a list file.
fn reversed(names: &[String]) -> (Vec<String>, String) {
    let wanted: Vec<String> = names.iter().rev().cloned().collect();
    let list = format!("# reversed\n{}\n", wanted.join("\n"));
    (wanted, list)
}

#[test]
fn the_listed_functions_come_first_in_the_lists_order() {
    // The natural layout reversed: a list that is obeyed cannot leave it as it was.
    let (wanted, list) = reversed(&natural());
    let linked = link(&script(&list));
    assert_eq!(linked.layout, wanted);
    let order = linked.order.expect("an order file beside the output");
    let names: Vec<&str> = order.lines().collect();
    assert_eq!(names.len(), 3, "{order}");
    for (mangled, name) in names.iter().zip(&wanted) {
        let short = name.trim_start_matches("probe::");
        assert!(
            mangled.starts_with("_R")
                && mangled.ends_with(&format!("5probe{}{short}", short.len())),
            "{mangled} for {name} in {order}"
        );
    }
}

#[test]
fn without_fuse_ld_the_script_brings_rustcs_lld() {
    let (wanted, list) = reversed(&natural());
    let linked = link(&Link::ScriptAddingLld { list: &list });
    assert_eq!(linked.layout, wanted);
}

#[test]
fn a_list_naming_nothing_leaves_the_drivers_layout() {
    // The sibling of the tests above: the same probe keeps its natural layout, so theirs is
    // the list's doing.
    let linked = link(&script("# nothing listed\n"));
    assert_eq!(linked.layout, natural());
    assert_eq!(linked.order.as_deref(), Some(""));
}

#[test]
fn a_stale_name_costs_nothing_and_the_rest_still_count() {
    let natural = natural();
    let last = natural.last().expect("three functions").clone();
    let list = format!("satyrn::gone::since::the::list::was::made\n{last}\n");
    let linked = link(&script(&list));
    let mut wanted = vec![last.clone()];
    wanted.extend(natural.iter().filter(|n| **n != last).cloned());
    assert_eq!(linked.layout, wanted);
}

#[test]
fn a_mapping_that_fails_links_without_an_order_and_leaves_no_file() {
    let (_, list) = reversed(&natural());
    let linked = link(&Link::Script {
        list: &list,
        args: &[],
        envs: &[("TMPDIR", "/nonexistent/satyrn")],
    });
    assert_eq!(linked.layout, natural());
    assert_eq!(linked.order, None);
    assert!(
        linked.stderr.contains("could not be mapped"),
        "{}",
        linked.stderr
    );
}

#[test]
fn another_linker_gets_no_order_option() {
    // GNU ld knows no --symbol-ordering-file: the script must not hand it one.
    let (_, list) = reversed(&natural());
    let linked = link(&Link::Script {
        list: &list,
        args: &["-fuse-ld=bfd"],
        envs: &[],
    });
    assert_eq!(linked.order, None);
    assert_eq!(linked.layout.len(), 3);
}
