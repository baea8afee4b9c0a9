#!/usr/bin/env bash
# Runs the shared mutator fixtures (tests/fixtures/mutator-cases.json) under the two foreign
# hosts, Node (jco + preview2-shim) and Python (wasmtime from PyPI), against the component
# exported by target/debug/satyrn-host (docs/reuse.md). The Rust host runs the same fixtures
# in `cargo test` (tests/it/reuse.rs).
#
# Installs what it needs, pinned, and only when missing or changed
# (scripts/install-test-deps.sh: `npm ci` in tests/reuse/node, target/reuse-venv).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

log() { printf 'test-reuse: %s\n' "$*" >&2; }

bash scripts/install-test-deps.sh
node_dir=tests/reuse/node
venv=target/reuse-venv

# The component, exactly as a user gets it: exported from the built satyrn-host
# (SATYRN_TEST_HOST_BIN as given; by default target/debug/satyrn-host, brought up to date
# with the workspace's one feature set, so no other cargo step rebuilds anything).
if [ -n "${SATYRN_TEST_HOST_BIN:-}" ]; then
  host=$SATYRN_TEST_HOST_BIN
else
  host=$root/target/debug/satyrn-host
  cargo build --workspace --all-targets --locked --quiet
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$host" component export --out "$work/export" >/dev/null

log "node: $(node --version), jco + preview2-shim"
(cd "$node_dir" && SATYRN_EXPORT="$work/export" node --test --test-reporter=spec)

log "python: $("$venv/bin/python" --version), wasmtime $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("wasmtime"))')"
"$venv/bin/python" tests/reuse/python/test_reuse.py "$work/export"
