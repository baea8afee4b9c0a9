//! The crate graph is the architecture (`docs/architecture.md`, "The crates"): every
//! satyrn crate sits on a layer and depends only on crates of lower layers, and the
//! never-edges named there fail this test the moment a manifest adds one. Read from
//! `cargo metadata --no-deps` (the manifests as written; nothing is resolved or fetched).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Each crate's layer: a crate may depend only on crates of a lower layer.
const LAYERS: &[(&str, u8)] = &[
    ("satyrn-mutator-core", 0),
    ("satyrn-code", 0),
    ("satyrn-os", 0),
    ("satyrn-contract", 1),
    ("satyrn-git", 1),
    ("satyrn-publish", 1),
    ("satyrn-engine", 2),
    ("satyrn-deliver", 2),
    ("satyrn-operation", 3),
    ("satyrn-attempt", 3),
    ("satyrn-candidates", 3),
    ("satyrn-protocol", 4),
    ("satyrn-mcp", 4),
    ("satyrn-confine", 5),
    ("satyrn-host", 6),
];

/// The runtime crates only `satyrn-engine` may name.
const WASMTIME: &[&str] = &["wasmtime", "wasmtime-wasi", "wasmtime-wasi-io"];

/// Each workspace package's normal and build dependencies (dev-dependencies are the
/// tests' business), by name.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(&root)
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON");
    let mut graph = BTreeMap::new();
    for package in meta["packages"].as_array().expect("packages") {
        let name = package["name"].as_str().expect("a name").to_owned();
        let deps = package["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .filter(|d| d["kind"].as_str() != Some("dev"))
            .map(|d| d["name"].as_str().expect("a dependency's name").to_owned())
            .collect();
        graph.insert(name, deps);
    }
    graph
}

fn layer(name: &str) -> Option<u8> {
    LAYERS.iter().find(|(n, _)| *n == name).map(|(_, l)| *l)
}

/// Every crate `name` reaches through satyrn crates, itself excluded.
fn reaches(graph: &BTreeMap<String, BTreeSet<String>>, name: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![name.to_owned()];
    while let Some(n) = todo.pop() {
        for d in graph.get(&n).into_iter().flatten() {
            if seen.insert(d.clone()) && graph.contains_key(d) {
                todo.push(d.clone());
            }
        }
    }
    seen
}

/// The edges of `graph` that break a rule, one line each.
fn violations(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut found = Vec::new();
    for (name, deps) in graph {
        let Some(own) = layer(name) else {
            found.push(format!(
                "{name} has no layer in LAYERS and docs/architecture.md"
            ));
            continue;
        };
        for dep in deps.iter().filter(|d| d.starts_with("satyrn-")) {
            match layer(dep) {
                Some(l) if l < own => {}
                _ => found.push(format!(
                    "{name} (layer {own}) depends on {dep}: an upward arrow"
                )),
            }
        }
        if name != "satyrn-engine" {
            for w in WASMTIME.iter().filter(|w| deps.contains(**w)) {
                found.push(format!(
                    "{name} names {w}: only satyrn-engine knows wasmtime"
                ));
            }
        }
    }
    let never: &[(&str, &[&str])] = &[
        ("satyrn-mutator-core", &["satyrn-"]),
        ("satyrn-code", &["satyrn-"]),
        ("satyrn-os", &["satyrn-"]),
        ("satyrn-publish", &["satyrn-git", "satyrn-engine"]),
        ("satyrn-contract", &["satyrn-git", "satyrn-engine"]),
        ("satyrn-git", &["satyrn-engine", "satyrn-publish"]),
        ("satyrn-deliver", &["satyrn-engine"]),
        ("satyrn-candidates", &["satyrn-engine"]),
        (
            "satyrn-operation",
            &[
                "satyrn-deliver",
                "satyrn-candidates",
                "satyrn-git",
                "satyrn-attempt",
            ],
        ),
    ];
    for (name, forbidden) in never {
        for reached in reaches(graph, name) {
            if forbidden.iter().any(|f| reached.starts_with(f)) {
                found.push(format!("{name} reaches {reached}: a never-edge"));
            }
        }
    }
    found
}

#[test]
fn every_crate_depends_only_downward_and_no_never_edge_exists() {
    let graph = graph();
    for (name, _) in LAYERS {
        assert!(
            graph.contains_key(*name),
            "{name} is not a workspace member"
        );
    }
    let found = violations(&graph);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The check can fail: an operation that reached delivery, a publish that reached git and
/// a core that reached wasmtime are each reported.
#[test]
fn an_upward_or_never_edge_is_reported() {
    let mut graph = graph();
    let add = |g: &mut BTreeMap<String, BTreeSet<String>>, from: &str, to: &str| {
        g.get_mut(from).expect("a member").insert(to.to_owned());
    };
    add(&mut graph, "satyrn-operation", "satyrn-deliver");
    add(&mut graph, "satyrn-publish", "satyrn-git");
    add(&mut graph, "satyrn-mutator-core", "wasmtime");
    let found = violations(&graph).join("\n");
    assert!(
        found.contains("satyrn-operation reaches satyrn-deliver"),
        "{found}"
    );
    assert!(
        found.contains("satyrn-publish reaches satyrn-git"),
        "{found}"
    );
    assert!(
        found.contains("satyrn-mutator-core names wasmtime"),
        "{found}"
    );
}
