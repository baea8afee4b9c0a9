//! `scripts/link-hot-first.sh`, the release binary's linker: the functions its list names
//! (demangled, v0) are laid out first, in the list's order; names it cannot find cost nothing;
//! without a list the link is the driver's own.
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
}

/// Compiles the probe and links it: with the script under `list` (the list file's text), or,
/// without one, with the driver itself as rustc would (`cc -fuse-ld=lld`). Returns where its
/// functions landed.
fn link(list: Option<&str>) -> Linked {
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
    let mut command = match list {
        Some(list) => {
            let list_path = dir.path().join("hot-functions.txt");
            std::fs::write(&list_path, list).expect("write list");
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/link-hot-first.sh");
            let mut command = Command::new(script);
            command
                .env("SATYRN_HOT_FUNCTIONS", &list_path)
                .env("SATYRN_LLD_DIR", lld_dir());
            command
        }
        None => {
            let mut command = Command::new("cc");
            command
                .arg("-fuse-ld=lld")
                .arg(format!("-B{}", lld_dir().display()));
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
    Linked { layout, order }
}

/// The probe's layout as rustc and lld make it, with no order.
fn natural() -> Vec<String> {
    let linked = link(None);
    assert_eq!(linked.layout.len(), 3, "{:?}", linked.layout);
    assert!(linked.order.is_none());
    linked.layout
}

#[test]
fn the_listed_functions_come_first_in_the_lists_order() {
    // The natural layout reversed: a list that is obeyed cannot leave it as it was.
    let mut wanted = natural();
    wanted.reverse();
    let linked = link(Some(&format!("# reversed\n{}\n", wanted.join("\n"))));
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
fn without_a_listed_name_the_layout_is_the_drivers_own() {
    // The sibling of the test above: a list that names nothing changes nothing.
    let linked = link(Some("# nothing listed\n"));
    assert_eq!(linked.layout, natural());
    assert_eq!(linked.order.as_deref(), Some(""));
}

#[test]
fn a_stale_name_costs_nothing_and_the_rest_still_count() {
    let natural = natural();
    let last = natural.last().expect("three functions").clone();
    let linked = link(Some(&format!(
        "satyrn::gone::since::the::list::was::made\n{last}\n"
    )));
    let mut wanted = vec![last.clone()];
    wanted.extend(natural.iter().filter(|n| **n != last).cloned());
    assert_eq!(linked.layout, wanted);
}
