#!/usr/bin/env bash
# Runs every test of satyrn from a fresh clone: installs what the machine lacks, builds once
# (the wasm component, the precompiled artifact and satyrn-host), checks formatting and
# lints, then runs every suite from that one build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

bash scripts/setup.sh

step() { printf '\n==> %s\n' "$*" >&2; }

step "format"
cargo fmt --all -- --check

step "build (component + host, one build for every suite)"
cargo build --workspace --all-targets --locked

step "lints"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "tests"
cargo test --workspace --locked
