#!/usr/bin/env bash
# Runs every test of satyrn from a fresh clone: installs what the machine lacks, builds once
# (the wasm component, the precompiled artifact and satyrn-host), checks formatting and
# lints, then runs every suite from that one build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# Each step's wall time, printed as it ends and once more at the end (the run's budget: the
# house issue's 20 minutes).
timings=()
step_name="setup"
step_start=$SECONDS
end_step() {
  local took=$((SECONDS - step_start))
  timings+=("$(printf '%4d s  %s' "$took" "$step_name")")
  printf '==> %s took %d s\n' "$step_name" "$took" >&2
}
step() {
  end_step
  step_name="$*"
  step_start=$SECONDS
  printf '\n==> %s\n' "$*" >&2
}
report() {
  end_step
  printf '\n==> step times (total %d s)\n' "$SECONDS" >&2
  printf '%s\n' "${timings[@]}" >&2
}
trap report EXIT

bash scripts/setup.sh

step "format (workspace and the wasm guest)"
cargo fmt --all -- --check
(cd components/mutator && cargo fmt -- --check)

step "build (component + host, one build for every suite)"
cargo build --workspace --all-targets --locked

step "lints (workspace and the wasm guest)"
cargo clippy --workspace --all-targets --locked -- -D warnings
bash scripts/lint-guest.sh
(cd fuzz && cargo fmt -- --check)

step "fuzz smoke (each target for 10 s after its regression inputs; docs/fuzzing.md)"
bash scripts/fuzz.sh 10

step "tests"
cargo test --workspace --locked
bash scripts/test-reuse.sh  # the same fixtures under Node (jco) and Python (wasmtime)

step "Pi package (unit tests, the real satyrn-host, the real Pi CLI with a scripted model)"
(cd pi && npm ci --no-audit --no-fund --loglevel=error && npm test)

step "MCP clients (Codex CLI, Claude Code, MCP Inspector, Python MCP SDK) against satyrn-host mcp"
bash scripts/test-agents.sh
