#!/usr/bin/env bash
# Runs real MCP clients against `satyrn-host mcp` (docs/mcp-clients.md): Codex CLI and Claude
# Code driven by a scripted model on 127.0.0.1 (also inside `satyrn-host deliver`), the MCP
# Inspector CLI, and the Python MCP SDK. Everything runs offline except the installs.
#
# Installs what it needs, pinned, and only when missing or changed
# (scripts/install-test-deps.sh: `npm ci` in tests/agents, target/agents-venv).
# Nothing is skipped: a missing dependency is installed or the script fails.
#
# The binary under test: SATYRN_TEST_HOST_BIN, default target/debug/satyrn-host (brought up
# to date here when the default is used; an explicit SATYRN_TEST_HOST_BIN must exist).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

log() { printf 'test-agents: %s\n' "$*" >&2; }

command -v git >/dev/null || {
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq git >/dev/null
}
bash scripts/install-test-deps.sh
node_dir=tests/agents
for client in codex claude mcp-inspector; do
  if [ ! -x "$node_dir/node_modules/.bin/$client" ]; then
    log "$client is missing from $node_dir/node_modules after npm ci"
    exit 1
  fi
done
venv=target/agents-venv

if [ -n "${SATYRN_TEST_HOST_BIN:-}" ]; then
  host=$SATYRN_TEST_HOST_BIN
else
  host=$root/target/debug/satyrn-host
  cargo build --workspace --all-targets --locked --quiet
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
