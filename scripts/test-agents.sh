#!/usr/bin/env bash
# Runs real MCP clients against `satyrn-host mcp` (docs/mcp-clients.md): Codex CLI and Claude
# Code driven by a scripted model on 127.0.0.1 (also inside `satyrn-host deliver`), the MCP
# Inspector CLI, and the Python MCP SDK. Everything runs offline except the installs.
#
# Installs what it needs, pinned, and only when missing or changed: Node/npm and python3-venv
# from Debian, `npm ci` in tests/agents (stamped with its lock file), a virtualenv with
# tests/agents/python/requirements.txt in target/agents-venv (stamped with the requirements).
# Nothing is skipped: a missing dependency is installed or the script fails.
#
# The binary under test: SATYRN_TEST_HOST_BIN, default target/debug/satyrn-host (built here
# when the default is used and missing; an explicit SATYRN_TEST_HOST_BIN must exist).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

log() { printf 'test-agents: %s\n' "$*" >&2; }

need_apt=()
command -v node >/dev/null && command -v npm >/dev/null || need_apt+=(nodejs npm)
command -v git >/dev/null || need_apt+=(git)
python3 -c 'import ensurepip, venv' 2>/dev/null || need_apt+=(python3-venv)
if [ ${#need_apt[@]} -gt 0 ]; then
  log "installing Debian packages: ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  log "Node $(node --version) is too old: tests/agents needs Node 20 or newer"
  exit 1
fi

# Node: the exact versions of package-lock.json; the stamp makes a second run instant.
node_dir=tests/agents
if ! cmp -s "$node_dir/package-lock.json" "$node_dir/node_modules/.satyrn-installed-lock"; then
  log "npm ci in $node_dir"
  (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$node_dir/package-lock.json" "$node_dir/node_modules/.satyrn-installed-lock"
fi
for client in codex claude mcp-inspector; do
  if [ ! -x "$node_dir/node_modules/.bin/$client" ]; then
    log "$client is missing from $node_dir/node_modules after npm ci"
    exit 1
  fi
done

# Python: a virtualenv under target/, so nothing is installed into the system.
venv=target/agents-venv
requirements=tests/agents/python/requirements.txt
if ! cmp -s "$requirements" "$venv/.satyrn-installed-requirements"; then
  log "installing $requirements into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --disable-pip-version-check -q -r "$requirements"
  cp "$requirements" "$venv/.satyrn-installed-requirements"
fi

if [ -n "${SATYRN_TEST_HOST_BIN:-}" ]; then
  host=$SATYRN_TEST_HOST_BIN
else
  host=$root/target/debug/satyrn-host
  [ -x "$host" ] || cargo build -p satyrn-host --locked --quiet
fi
if [ ! -x "$host" ]; then
  log "satyrn-host not found or not executable at $host"
  exit 1
fi
host=$(cd "$(dirname "$host")" && pwd)/$(basename "$host")
export SATYRN_TEST_HOST_BIN=$host
if ! "$host" mcp --help >/dev/null 2>&1; then
  log "$host has no working \`mcp\` subcommand (\`$host mcp --help\` failed)"
  exit 1
fi

log "node $(node --version): codex $("$node_dir/node_modules/.bin/codex" --version), claude $("$node_dir/node_modules/.bin/claude" --version), inspector; host $host"
(cd "$node_dir" && node --test --test-concurrency=1 --test-reporter=spec test/*.test.mjs)

log "python $("$venv/bin/python" --version), mcp $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))')"
"$venv/bin/python" -m unittest -v tests/agents/python/test_mcp.py
