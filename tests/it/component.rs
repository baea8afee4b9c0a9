//! The embedded component itself: what it imports and exports, and its `matches` and
//! `revision` exports run through the real engine.

use std::collections::BTreeSet;
use std::os::fd::OwnedFd;
use std::os::unix::fs::symlink;

use satyrn_engine::{COMPILED_COMPONENT, COMPONENT_WASM, Loaded, RevisionError};
use wasmtime::component::types::ComponentItem;

use crate::support::{Repo, sha256_hex};

include!("../../crates/engine/src/engine_config.rs");

/// One import or export: its name and, for an instance, what it provides.
#[derive(Debug)]
struct Item {
    name: String,
    /// `Some(names)` for an instance: the names of its exports that are not plain value
    /// types (functions, resources, nested items); `None` when it is not an instance.
    capabilities: Option<Vec<String>>,
}

fn item(engine: &wasmtime::Engine, name: &str, extern_: ComponentItem) -> Item {
    let capabilities = match extern_ {
        ComponentItem::ComponentInstance(instance) => Some(
            instance
                .exports(engine)
                .filter(|(_, e)| !matches!(e.ty, ComponentItem::Type(_)))
                .map(|(n, _)| n.to_string())
                .collect(),
        ),
        _ => None,
    };
    Item {
        name: name.to_string(),
        capabilities,
    }
}

/// The component's imports and exports, from the precompiled artifact's type.
fn imports_and_exports() -> (Vec<Item>, Vec<Item>) {
    let engine = wasmtime::Engine::new(&engine_config()).expect("engine");
    // SAFETY: the artifact was produced by build.rs with this wasmtime version and
    // `engine_config()`, and is embedded in the library.
    let component =
        unsafe { wasmtime::component::Component::deserialize(&engine, COMPILED_COMPONENT) }
            .expect("deserialize the embedded component");
    let ty = component.component_type();
    let imports = ty
        .imports(&engine)
        .map(|(n, e)| item(&engine, n, e.ty))
        .collect();
    let exports = ty
        .exports(&engine)
        .map(|(n, e)| item(&engine, n, e.ty))
        .collect();
    (imports, exports)
}

/// `PACKAGE/INTERFACE@0.2.x` (or `@0.5.0` for satyrn's own), with `PACKAGE/INTERFACE`
/// one of `allowed`.
fn is_allowed(name: &str, allowed: &[&str]) -> bool {
    let Some((interface, version)) = name.split_once('@') else {
        return false;
    };
    if interface.starts_with("satyrn:") {
        return allowed.contains(&interface) && version == "0.5.0";
    }
    let Some(patch) = version.strip_prefix("0.2.") else {
        return false;
    };
    allowed.contains(&interface) && !patch.is_empty() && patch.bytes().all(|b| b.is_ascii_digit())
}

/// What the component may import with functions or resources: the file system and the
/// `wasi:io` interfaces it refers to.
const ALLOWED: &[&str] = &[
    "wasi:filesystem/types",
    "wasi:filesystem/preopens",
    "wasi:io/error",
    "wasi:io/streams",
    "wasi:io/poll",
];

/// Interfaces the component may import for their *types only* (no function, no
/// resource, so no capability): `wasi:clocks/wall-clock` defines the `datetime` record
/// inside `wasi:filesystem`'s `descriptor-stat` (which the no-follow walk needs for the
/// link count), and `satyrn:mutator/types` holds the records of the exported interface.
const TYPE_ONLY: &[&str] = &["wasi:clocks/wall-clock", "satyrn:mutator/types"];

#[test]
fn imports_only_the_filesystem_and_what_it_needs() {
    let (imports, _) = imports_and_exports();
    let names: Vec<&str> = imports.iter().map(|i| i.name.as_str()).collect();
    for import in &imports {
        let capabilities = import
            .capabilities
            .as_ref()
            .unwrap_or_else(|| panic!("{} is imported but is not an interface", import.name));
        if is_allowed(&import.name, ALLOWED) {
            continue;
        }
        assert!(
            is_allowed(&import.name, TYPE_ONLY),
            "the component imports {} beyond wasi:filesystem and wasi:io (all: {names:?})",
            import.name
        );
        assert!(
            capabilities.is_empty(),
            "{} may be imported for its types only, but the component imports {capabilities:?} from it",
            import.name
        );
    }
    assert!(
        names
            .iter()
            .any(|n| is_allowed(n, &["wasi:filesystem/preopens"])),
        "the component must import wasi:filesystem/preopens: {names:?}"
    );
    assert!(
        names
            .iter()
            .any(|n| is_allowed(n, &["wasi:filesystem/types"])),
        "{names:?}"
    );
    // The preopens interface is what gives the component its one directory: one
    // function and the `descriptor` resource it returns.
    let preopens = imports
        .iter()
        .find(|i| i.name.starts_with("wasi:filesystem/preopens@"))
        .expect("preopens");
    assert_eq!(
        preopens.capabilities.as_deref(),
        Some(&["descriptor".to_string(), "get-directories".to_string()][..])
    );
}

#[test]
fn the_allow_list_check_can_fail() {
    // The predicate above rejects what a leaky component would import.
    for name in [
        "wasi:cli/environment@0.2.12",
        "wasi:clocks/wall-clock@0.2.12",
        "wasi:random/random@0.2.12",
        "wasi:sockets/tcp@0.2.12",
        "wasi:cli/stdout@0.2.12",
        "wasi:filesystem/preopens@0.3.0",
        "wasi:filesystem/preopens",
        "wasi:filesystem/preopens@0.2.",
    ] {
        assert!(!is_allowed(name, ALLOWED), "{name}");
    }
    assert!(is_allowed("wasi:io/streams@0.2.12", ALLOWED));
    assert!(!is_allowed("wasi:clocks/wall-clock@0.2.12", ALLOWED));
    assert!(is_allowed("wasi:clocks/wall-clock@0.2.12", TYPE_ONLY));
    assert!(!is_allowed("wasi:clocks/monotonic-clock@0.2.12", TYPE_ONLY));
}

#[test]
fn exports_exactly_the_mutator_interface() {
    let (_, exports) = imports_and_exports();
    let names: BTreeSet<&str> = exports.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, BTreeSet::from(["satyrn:mutator/mutator@0.5.0"]));
    let functions: BTreeSet<&str> = exports[0]
        .capabilities
        .as_ref()
        .expect("an instance")
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(
        functions,
        BTreeSet::from([
            "apply-patch",
            "change-set",
            "delete-file",
            "edit",
            "list",
            "matches",
            "read",
            "replace",
            "revision",
            "revisions",
            "search",
            "write"
        ])
    );
}

#[test]
fn the_portable_component_is_a_component() {
    // The `\0asm` magic, then version 0x0d and layer 1: a component, not a core module.
    assert_eq!(&COMPONENT_WASM[..4], b"\0asm");
    assert_eq!(&COMPONENT_WASM[4..8], &[0x0d, 0x00, 0x01, 0x00]);
    // And its import names, as strings in the binary, name no other WASI package.
    for forbidden in [
        &b"wasi:cli"[..],
        b"wasi:random",
        b"wasi:sockets",
        b"wasi:http",
        b"wasi:clocks/monotonic",
    ] {
        assert!(
            !COMPONENT_WASM
                .windows(forbidden.len())
                .any(|w| w == forbidden),
            "{}",
            String::from_utf8_lossy(forbidden)
        );
    }
}

fn open_dir(path: &std::path::Path) -> OwnedFd {
    OwnedFd::from(std::fs::File::open(path).expect("open directory"))
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_string()).collect()
}

#[test]
fn matches_export_follows_fnmatch() {
    let repo = Repo::with_files(&[]);
    let dir = open_dir(repo.path());
    let mut mutator = Loaded::new()
        .expect("load")
        .instantiate(&dir)
        .expect("instantiate");
    let cases: &[(&str, &[&str], bool)] = &[
        ("src/a/b.rs", &["src/*.rs"], true),
        ("src/a/b.rs", &["src/*.py"], false),
        ("a.txt", &[], false),
        ("a.txt", &["b.txt", "a.tx?"], true),
        ("A.txt", &["a.txt"], false),
        ("[", &["["], true),
        ("a", &["[z-a]"], false),
        ("a", &["[!z-a]"], true),
        ("{a,b}", &["{a,b}"], true),
        ("a", &["{a,b}"], false),
        ("x/y", &["**"], true),
        ("é", &["?"], true),
        ("a\nb", &["a*b"], true),
    ];
    for (path, patterns, expected) in cases {
        assert_eq!(
            mutator.matches(path, &strings(patterns)).expect("no trap"),
            *expected,
            "{path:?} {patterns:?}"
        );
    }
}

#[test]
fn revision_export_hashes_declared_regular_files_only() {
    let repo = Repo::with_files(&[
        ("a.txt", b"hello\n"),
        ("src/b.txt", b""),
        ("secret.txt", b"s\n"),
    ]);
    symlink("secret.txt", repo.file("link.txt")).expect("symlink");
    symlink("src", repo.file("alias")).expect("symlink");
    let dir = open_dir(repo.path());
    let loaded = Loaded::new().expect("load");
    let mut mutator = loaded.instantiate(&dir).expect("instantiate");
    let all = strings(&["*.txt", "src/*", "alias/*"]);
    assert_eq!(
        mutator.revision("a.txt", &all, &[]).expect("no trap").ok(),
        Some(sha256_hex(b"hello\n"))
    );
    assert_eq!(
        mutator
            .revision("src/b.txt", &all, &[])
            .expect("no trap")
            .ok(),
        Some(sha256_hex(b""))
    );
    let got = mutator
        .revision("a.txt", &strings(&["src/*"]), &[])
        .expect("no trap");
    assert!(matches!(got, Err(RevisionError::Undeclared)), "{got:?}");
    for path in ["link.txt", "alias/b.txt", "missing.txt", "src"] {
        let got = mutator
            .revision(path, &strings(&["*"]), &[])
            .expect("no trap");
        assert!(
            matches!(got, Err(RevisionError::NotEditable(_))),
            "{path}: {got:?}"
        );
    }
    for path in ["../a.txt", "/a.txt", "a//b", ""] {
        let got = mutator
            .revision(path, &strings(&["*"]), &[])
            .expect("no trap");
        assert!(
            matches!(got, Err(RevisionError::InvalidRequest(_))),
            "{path}: {got:?}"
        );
    }
    // One loaded engine serves several instances over different worktrees.
    let other = Repo::with_files(&[("a.txt", b"other\n")]);
    let other_dir = open_dir(other.path());
    let mut second = loaded.instantiate(&other_dir).expect("instantiate");
    assert_eq!(
        second.revision("a.txt", &all, &[]).expect("no trap").ok(),
        Some(sha256_hex(b"other\n"))
    );
}

#[test]
fn replace_export_decides_but_never_writes() {
    use satyrn_engine::{RefusalCode, ReplaceError, ReplaceRequest};
    let repo = Repo::with_files(&[("a.txt", b"hello world\n")]);
    let before = crate::support::snapshot(&repo.file("a.txt"));
    let dir = open_dir(repo.path());
    let mut mutator = Loaded::new()
        .expect("load")
        .instantiate(&dir)
        .expect("instantiate");
    let request = |path: &str, expected: Option<String>| ReplaceRequest {
        path: path.to_string(),
        writable_paths: strings(&["*.txt"]),
        private_paths: Vec::new(),
        expected_sha256: expected,
        old_text: "world".to_string(),
        new_text: "there".to_string(),
    };
    let sha = sha256_hex(b"hello world\n");
    let plan = mutator
        .replace(&request("a.txt", Some(sha.clone())))
        .expect("no trap")
        .expect("a plan");
    assert_eq!(plan.path, "a.txt");
    assert_eq!(plan.base_sha256, sha);
    assert_eq!(plan.new_content, b"hello there\n");
    assert_eq!(plan.next_sha256, sha256_hex(b"hello there\n"));
    // The component only decided: the file is untouched until the host publishes.
    assert_eq!(crate::support::snapshot(&repo.file("a.txt")), before);
    // Its own first gate still refuses unsafe shapes (the host checks them too).
    for path in ["../a.txt", "/a.txt", "a//b.txt", "./a.txt"] {
        let got = mutator
            .replace(&request(path, Some(sha.clone())))
            .expect("no trap");
        assert!(
            matches!(got, Err(ReplaceError::InvalidRequest(_))),
            "{path}: {got:?}"
        );
    }
    let got = mutator
        .replace(&request("b.md", Some(sha.clone())))
        .expect("no trap");
    assert!(
        matches!(&got, Err(ReplaceError::Refused(r)) if r.code == RefusalCode::PathUndeclared),
        "{got:?}"
    );
    let got = mutator.replace(&request("a.txt", None)).expect("no trap");
    assert!(
        matches!(&got, Err(ReplaceError::Refused(r)) if r.code == RefusalCode::RevisionUnavailable),
        "{got:?}"
    );
    assert_eq!(crate::support::snapshot(&repo.file("a.txt")), before);
}
