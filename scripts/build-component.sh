#!/usr/bin/env bash
# Builds the mutator component for wasm32-wasip2 and prints the path of the .wasm.
# Usage: scripts/build-component.sh [TARGET_DIR]   (default: target/component)
# crates/engine/build.rs performs the same build; this script is for doing it by hand.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target_dir=${1:-$root/target/component}
export PATH="/usr/lib/llvm-22/bin:$PATH"
cd "$root/components/mutator"
if rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2; then
  # rustup's prebuilt core leaves memcmp to libc (crates/engine/build.rs: RUSTUP_LINK_LIBC).
  cargo build --release --locked --target wasm32-wasip2 --target-dir "$target_dir" \
    --config 'target.wasm32-wasip2.rustflags=["-Clink-arg=-lc"]' >&2
else
  RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1 /usr/bin/cargo build --release --locked --target wasm32-wasip2 \
    -Zbuild-std=core,alloc -Zbuild-std-features=compiler-builtins-mem --target-dir "$target_dir" >&2
fi
echo "$target_dir/wasm32-wasip2/release/satyrn_mutator.wasm"
