#!/usr/bin/env bash
# Installs the Node and Python packages the test suites use, pinned by their lock and
# requirements files, each only when that file changed since its last install (a stamp
# beside what it installed): `npm ci` in pi/, tests/agents and tests/reuse/node; the
# virtualenvs target/agents-venv and target/reuse-venv. Needs no Rust build, so
# scripts/test.sh runs it in the background while cargo builds. Idempotent.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

log() { printf 'install-test-deps: %s\n' "$*" >&2; }

need_apt=()
command -v node >/dev/null && command -v npm >/dev/null || need_apt+=(nodejs npm)
python3 -c 'import ensurepip, venv' 2>/dev/null || need_apt+=(python3-venv)
if [ ${#need_apt[@]} -gt 0 ]; then
  log "installing Debian packages: ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  log "Node $(node --version) is too old: the Node suites need Node 20 or newer"
  exit 1
fi

# `npm ci` in DIR when its package-lock.json differs from the one last installed there.
npm_ci() {
  local dir=$1
  if ! cmp -s "$dir/package-lock.json" "$dir/node_modules/.satyrn-installed-lock"; then
    log "npm ci in $dir"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
    cp "$dir/package-lock.json" "$dir/node_modules/.satyrn-installed-lock"
  fi
}

# A virtualenv at VENV with REQUIREMENTS, made anew when the requirements changed.
venv() {
  local venv=$1 requirements=$2
  if ! cmp -s "$requirements" "$venv/.satyrn-installed-requirements"; then
    log "installing $requirements into $venv"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --disable-pip-version-check -q -r "$requirements"
    cp "$requirements" "$venv/.satyrn-installed-requirements"
  fi
}

npm_ci pi
npm_ci tests/agents
npm_ci tests/reuse/node
venv target/agents-venv tests/agents/python/requirements.txt
venv target/reuse-venv tests/reuse/python/requirements.txt
log "ready"
