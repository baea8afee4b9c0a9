#!/usr/bin/env bash
# Runs every test of satyrn from a fresh clone: installs what the machine lacks, builds once
# (the wasm component, the precompiled artifact and satyrn-host, one feature set for every
# step), checks formatting and lints, then runs every suite from that one build.
#
# What runs at once (the machine has two cores; docs/performance.md, "The test run"):
# - the Node and Python installs (network) while cargo builds (CPU);
# - the guest's clippy (its own target directory) beside the workspace's clippy;
# - the Rust tests beside the foreign suites (Node/Python reuse, the Pi package, the MCP
#   clients), which wait on processes and sockets more than they compute.
# Each parallel lane writes its own log, printed whole when the lane ends, so no two
# runners' lines interleave. The long fuzzing campaign (AddressSanitizer) is not part of
# this run: `scripts/fuzz.sh` (docs/fuzzing.md); every committed fuzz input is replayed by
# `cargo test` (tests/it/fuzz_inputs.rs).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# Each step's wall time, printed as it ends and once more at the end.
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

logs=$root/target/test-logs
mkdir -p "$logs"

# Lanes: `lane NAME COMMAND...` starts the program COMMAND in the background, in a session
# of its own (`setsid`), its output in target/test-logs/NAME.log; `join_lanes` waits for
# every started lane (its exit status is the lane's), prints each log whole with the lane's
# time, and fails when any lane failed. A lane still running when the script ends, however
# it ends, is stopped with its whole session.
lane_names=()
lane_pids=()
lane() {
  local name=$1
  shift
  rm -f "$logs/$name.took" "$logs/$name.sid"
  (
    start=$SECONDS
    trap 'echo $((SECONDS - start)) >"$logs/$name.took"' EXIT
    # Not a group leader, so setsid makes the session without forking: its id is $!.
    setsid "$@" &
    echo "$!" >"$logs/$name.sid"
    wait "$!"
  ) >"$logs/$name.log" 2>&1 &
  lane_pids+=("$!")
  lane_names+=("$name")
}
join_lanes() {
  local failed=0 i name rc took
  for i in "${!lane_pids[@]}"; do
    name=${lane_names[$i]}
    rc=0
    wait "${lane_pids[$i]}" || rc=$?
    took=$(cat "$logs/$name.took" 2>/dev/null || echo '?')
    printf '\n==> lane %s (%s s, exit %d): target/test-logs/%s.log\n' "$name" "$took" "$rc" "$name" >&2
    cat "$logs/$name.log"
    timings+=("$(printf '%4s s    lane %s (exit %d)' "$took" "$name" "$rc")")
    [ "$rc" -eq 0 ] || failed=1
  done
  lane_names=()
  lane_pids=()
  return "$failed"
}
stop_lanes() {
  local name sid
  for name in "${lane_names[@]}"; do
    sid=$(cat "$logs/$name.sid" 2>/dev/null) || continue
    pkill -TERM -s "$sid" 2>/dev/null || true
  done
}
trap 'stop_lanes; report' EXIT

bash scripts/setup.sh

step "format (workspace, the wasm guest, the fuzz crate)"
cargo fmt --all -- --check
(cd components/mutator && cargo fmt -- --check)
(cd fuzz && cargo fmt -- --check)

step "build (component + every crate and test, one feature set for every suite), installs beside it"
lane installs bash scripts/install-test-deps.sh
built=0
cargo build --workspace --all-targets --locked || built=$?
join_lanes
[ "$built" -eq 0 ]

step "lints (workspace and the wasm guest, side by side)"
lane guest-lint bash scripts/lint-guest.sh
linted=0
cargo clippy --workspace --all-targets --locked -- -D warnings || linted=$?
# The core as the component without `search` compiles it (docs/architecture.md, "Two
# builds of the component"): the guest's clippy reports its warnings but cannot deny them.
cargo clippy --locked -p satyrn-mutator-core --lib --no-default-features -- -D warnings || linted=$?
join_lanes
[ "$linted" -eq 0 ]

step "tests: Rust (cargo test) beside the foreign suites (reuse, Pi, MCP clients)"
export SATYRN_TEST_HOST_BIN=$root/target/debug/satyrn-host
# The foreign suites, one after another: the same fixtures under Node (jco) and Python
# (wasmtime); the Pi package (unit tests, the real satyrn-host, the real Pi CLI with a
# scripted model); Codex CLI, Claude Code, MCP Inspector and the Python MCP SDK against
# satyrn-host mcp.
foreign='set -e; bash scripts/test-reuse.sh; (cd pi && npm test); bash scripts/test-agents.sh'
lane foreign bash -c "$foreign"
tested=0
# Three test threads on two cores: the integration tests wait on processes, sockets and
# deadlines more than they compute (docs/performance.md, "The test run": 2 threads 227 s,
# 3 threads 207 s, 4 threads 206 s for this step).
cargo test --workspace --locked --lib --bins --tests -- --test-threads=3 || tested=$?
join_lanes
[ "$tested" -eq 0 ]
