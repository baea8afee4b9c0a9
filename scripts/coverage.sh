#!/usr/bin/env bash
# Line coverage of satyrn-host and satyrn-mutator-core (docs/coverage.md).
#
# An instrumented build (cargo-llvm-cov, pinned) of the whole workspace in its own target
# directory; then every Rust test, and — unless --rust-only — the Pi package's tests against
# the same instrumented satyrn-host. Every process of the instrumented binary (the
# integration tests spawn it, Pi's tests spawn it) writes its own profile, so subprocess
# runs count. The wasm component is not instrumented (it cannot be): the core's decisions
# count through its native tests. Prints a per-crate line figure and writes
# target/coverage/summary.json and an HTML report under target/llvm-cov-target/.
#
#   bash scripts/coverage.sh [--rust-only]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

LLVM_COV_VERSION=0.9.1
rust_only=false
[ "${1:-}" = "--rust-only" ] && rust_only=true

bash scripts/setup.sh
log() { printf 'coverage: %s\n' "$*" >&2; }

if ! cargo llvm-cov --version 2>/dev/null | grep -q "$LLVM_COV_VERSION"; then
  log "installing cargo-llvm-cov $LLVM_COV_VERSION"
  cargo install cargo-llvm-cov --version "$LLVM_COV_VERSION" --locked
fi
# llvm-cov and llvm-profdata of the compiler's LLVM major: rustup's llvm-tools component
# when installed, else Debian's llvm of the same major (rustc 1.95 is LLVM 22).
if ! rustup component list --installed 2>/dev/null | grep -q '^llvm-tools'; then
  major=$(rustc -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
  if [ ! -x "/usr/lib/llvm-$major/bin/llvm-profdata" ]; then
    log "installing Debian's llvm-$major (llvm-cov, llvm-profdata)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "llvm-$major" >/dev/null
  fi
  export LLVM_COV="/usr/lib/llvm-$major/bin/llvm-cov"
  export LLVM_PROFDATA="/usr/lib/llvm-$major/bin/llvm-profdata"
fi

# Its own target directory: cargo-llvm-cov 0.9's show-env builds in cargo's target directory
# by default, through a rustc wrapper cargo's fingerprints do not see, and the ordinary
# build would then keep running instrumented binaries that write .profraw files into
# every directory a test runs them in.
export CARGO_TARGET_DIR="$root/target/llvm-cov-target"
eval "$(cargo llvm-cov show-env --sh)"
cargo llvm-cov clean --workspace
log "instrumented build"
cargo build --workspace --all-targets --locked
log "Rust tests"
# Every test binary runs even when one fails: an instrumented binary writes its profile at
# exit, which a test that sets RLIMIT_FSIZE on its child (protocol_files::failed_publish_*)
# turns into a SIGXFSZ death. Failures are listed; the figures still count every run.
if ! cargo test --workspace --locked --no-fail-fast 2>&1 | tee target/coverage-tests.log; then
  log "some tests failed under instrumentation (listed below); the report counts every run"
  grep -E '^test .* FAILED$' target/coverage-tests.log >&2 || true
fi
if ! $rust_only; then
  log "Pi package tests against the instrumented satyrn-host"
  (cd pi && npm ci --no-audit --no-fund --loglevel=error &&
    SATYRN_TEST_HOST_BIN="$CARGO_LLVM_COV_TARGET_DIR/debug/satyrn-host" npm test)
fi

# A process killed while writing its profile (the SIGXFSZ test above) leaves a truncated
# .profraw that would make llvm-profdata refuse the whole merge: set such files aside (into
# target/coverage/unreadable/). The llvm-profdata must be the compiler's LLVM (rustup's
# llvm-tools, else Debian's llvm of that major): another version reads no profile at all,
# so a run where more than a few are unreadable stops instead of setting them all aside.
profdata=${LLVM_PROFDATA:-}
if [ -z "$profdata" ]; then
  host=$(rustc -vV | sed -n 's/^host: //p')
  profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
fi
[ -x "$profdata" ] || { log "no llvm-profdata of the compiler's LLVM at $profdata"; exit 1; }
aside="$root/target/coverage/unreadable"
rm -rf "$aside"
mkdir -p "$aside"
total=0
bad=()
for raw in "$CARGO_LLVM_COV_TARGET_DIR"/*.profraw; do
  [ -e "$raw" ] || continue
  total=$((total + 1))
  "$profdata" merge -sparse "$raw" -o /dev/null 2>/dev/null || bad+=("$raw")
done
# Counted before anything moves: a wrong llvm-profdata reads none, and then nothing is
# set aside and the run stops. A few truncated profiles (killed processes) are expected.
if [ "${#bad[@]}" -gt 10 ] && [ "${#bad[@]}" -gt $((total / 100)) ]; then
  log "${#bad[@]} of $total profiles unreadable: is $profdata the compiler's LLVM ($(rustc -vV | sed -n 's/^LLVM version: //p'))? Nothing was set aside."
  exit 1
fi
for raw in "${bad[@]}"; do mv "$raw" "$aside/"; done
log "${#bad[@]} of $total profiles unreadable (set aside in $aside)"
mkdir -p target/coverage
cargo llvm-cov report --json --summary-only --output-path target/coverage/summary.json \
  --ignore-filename-regex '(^|/)(tests|benches)/|/build\.rs$'
cargo llvm-cov report --html --ignore-filename-regex '(^|/)(tests|benches)/|/build\.rs$' >/dev/null
python3 - "$root" <<'EOF'
import json, sys
root = sys.argv[1].rstrip("/") + "/"
data = json.load(open(root + "target/coverage/summary.json"))
import glob, os
crates = {"satyrn-host": "host/src/", "satyrn-mutator-core": "components/mutator-core/src/"}
for d in sorted(glob.glob(root + "crates/*/")):
    crates["satyrn-" + os.path.basename(d.rstrip("/"))] = d.removeprefix(root) + "src/"
totals = {name: [0, 0] for name in crates}
rows = []
for f in data["data"][0]["files"]:
    rel = f["filename"].removeprefix(root)
    lines = f["summary"]["lines"]
    for name, prefix in crates.items():
        if rel.startswith(prefix):
            totals[name][0] += lines["covered"]
            totals[name][1] += lines["count"]
            rows.append((lines["percent"], rel, lines["covered"], lines["count"]))
print("line coverage (lines covered / instrumented lines):")
for name, (covered, count) in totals.items():
    print(f"  {name:22} {covered:6} / {count:6}  {100.0 * covered / max(count, 1):5.1f} %")
print("least covered files:")
for percent, rel, covered, count in sorted(rows)[:12]:
    print(f"  {percent:5.1f} %  {covered:5} / {count:5}  {rel}")
EOF
