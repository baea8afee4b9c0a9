#!/usr/bin/env bash
# Runs the shared mutator fixtures (tests/fixtures/mutator-cases.json) under the two foreign
# hosts, Node (jco + preview2-shim) and Python (wasmtime from PyPI), against the component
# exported by target/debug/satyrn-host (docs/reuse.md). The Rust host runs the same fixtures
# in `cargo test` (tests/it/reuse.rs).
#
# Installs what it needs, pinned, and only when missing or changed: `npm ci` in
# tests/reuse/node, a virtualenv with tests/reuse/python/requirements.txt in target/reuse-venv.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

log() { printf 'test-reuse: %s\n' "$*" >&2; }

need_apt=()
command -v node >/dev/null && command -v npm >/dev/null || need_apt+=(nodejs npm)
python3 -c 'import ensurepip, venv' 2>/dev/null || need_apt+=(python3-venv)
if [ ${#need_apt[@]} -gt 0 ]; then
  log "installing Debian packages: ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# Node: the exact versions of package-lock.json; the stamp makes a second run instant.
node_dir=tests/reuse/node
if ! cmp -s "$node_dir/package-lock.json" "$node_dir/node_modules/.satyrn-installed-lock"; then
  log "npm ci in $node_dir"
  (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$node_dir/package-lock.json" "$node_dir/node_modules/.satyrn-installed-lock"
fi

# Python: a virtualenv under target/, so nothing is installed into the system.
venv=target/reuse-venv
requirements=tests/reuse/python/requirements.txt
if ! cmp -s "$requirements" "$venv/.satyrn-installed-requirements"; then
  log "installing $requirements into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --disable-pip-version-check -q -r "$requirements"
  cp "$requirements" "$venv/.satyrn-installed-requirements"
fi

# The component, exactly as a user gets it: exported from the built satyrn-host.
cargo build -p satyrn-host --locked --quiet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
target/debug/satyrn-host component export --out "$work/export" >/dev/null

log "node: $(node --version), jco + preview2-shim"
(cd "$node_dir" && SATYRN_EXPORT="$work/export" node --test --test-reporter=spec)

log "python: $("$venv/bin/python" --version), wasmtime $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("wasmtime"))')"
"$venv/bin/python" tests/reuse/python/test_reuse.py "$work/export"
