#!/usr/bin/env bash
# Runs satyrn's fuzz targets (fuzz/, cargo-fuzz + libFuzzer), one after another.
#
#   scripts/fuzz.sh [SECONDS] [TARGET ...]
#
# SECONDS per target (default 10: the CI smoke); all targets unless some are named.
# First every committed regression input (fuzz/regressions/TARGET/) is run once, then the
# target is fuzzed from its committed seeds (fuzz/seeds/TARGET/) and its working corpus
# (fuzz/corpus/TARGET/, not committed). A crash, a leak or a slow input (over 10 s) stops
# the script with a non-zero status; the input is in fuzz/artifacts/TARGET/. Keep it as
# fuzz/regressions/TARGET/NAME and as an ordinary test (docs/fuzzing.md).
#
# Environment: SATYRN_FUZZ_SANITIZER=address|none (default address),
# SATYRN_FUZZ_JOBS (cargo build jobs, default 2). Fuzzing runs under `nice -n 19`.
#
# Toolchain: libFuzzer needs nightly compiler flags; rustup's stable gets them with
# RUSTC_BOOTSTRAP=1 (docs/fuzzing.md). cargo-fuzz is installed from crates.io, pinned,
# when missing.
set -euo pipefail

CARGO_FUZZ_VERSION=0.13.1
TARGETS_ALL=(protocol_request contract path_fnmatch edit)

root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-10}
if ! [[ $seconds =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: scripts/fuzz.sh [SECONDS] [TARGET ...] (SECONDS a positive integer)" >&2
    exit 2
fi
shift $(($# > 0 ? 1 : 0))
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=("${TARGETS_ALL[@]}")
fi
for t in "${targets[@]}"; do
    if [ ! -f "$root/fuzz/fuzz_targets/$t.rs" ]; then
        echo "scripts/fuzz.sh: no fuzz target named $t (known: ${TARGETS_ALL[*]})" >&2
        exit 2
    fi
done

if [ "$(cargo fuzz --version 2>/dev/null || true)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]; then
    echo "# installing cargo-fuzz $CARGO_FUZZ_VERSION from crates.io"
    cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked
fi

export RUSTC_BOOTSTRAP=1
sanitizer=${SATYRN_FUZZ_SANITIZER:-address}
case $sanitizer in
    address | none) ;;
    *)
        echo "SATYRN_FUZZ_SANITIZER must be address or none, not $sanitizer" >&2
        exit 2
        ;;
esac

cd "$root/fuzz"
echo "# building the fuzz targets (sanitizer: $sanitizer)"
CARGO_BUILD_JOBS=${SATYRN_FUZZ_JOBS:-2} nice -n 19 cargo fuzz build --sanitizer "$sanitizer"
bin_dir="$root/fuzz/target/x86_64-unknown-linux-gnu/release"

crashes=0
for t in "${targets[@]}"; do
    bin="$bin_dir/$t"
    corpus="corpus/$t"
    mkdir -p "$corpus" "artifacts/$t"
    if [ -d "regressions/$t" ] && [ -n "$(ls -A "regressions/$t")" ]; then
        echo "# $t: replaying fuzz/regressions/$t"
        "$bin" -runs=1 -timeout=10 "regressions/$t"/*
    fi
    dirs=("$corpus")
    for extra in "seeds/$t" "regressions/$t"; do
        if [ -d "$extra" ]; then
            dirs+=("$extra")
        fi
    done
    echo "# $t: fuzzing for ${seconds}s"
    log="artifacts/$t/last-run.log"
    if ! nice -n 19 "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="artifacts/$t/" "${dirs[@]}" >"$log" 2>&1; then
        tail -n 40 "$log" >&2
        echo "# $t: FAILED; the input is in fuzz/artifacts/$t/ (log: fuzz/$log)" >&2
        crashes=$((crashes + 1))
        continue
    fi
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    units=$(find "$corpus" -type f | wc -l)
    echo "# $t: ok, ${execs:-?} runs (${rate:-?}/s), corpus $units inputs"
done

echo "fuzz: ${#targets[@]} targets, $crashes failed"
[ "$crashes" -eq 0 ]
