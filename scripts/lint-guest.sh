#!/usr/bin/env bash
# clippy (-D warnings) for the wasm guest (components/mutator), for its own target
# wasm32-wasip2, in both builds host/build.rs makes: with its default features and without
# `search` (docs/architecture.md, "Two builds of the component"). With rustup when it has
# the target, else with Debian's rustc-web and its clippy (scripts/setup.sh installs them),
# building core and alloc from source as crates/engine/build.rs does. Its own target
# directory, so it never waits on the workspace's lock.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/components/mutator"
target_dir="$root/target/guest-lint"
if rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2; then
  clippy() { cargo clippy --locked --target wasm32-wasip2 --target-dir "$target_dir" "$@"; }
else
  # /usr/bin first: `cargo clippy` must find Debian's cargo-clippy, not rustup's proxy.
  export PATH="/usr/lib/llvm-22/bin:/usr/bin:$PATH" RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1
  clippy() {
    /usr/bin/cargo clippy --locked --target wasm32-wasip2 \
      -Zbuild-std=core,alloc -Zbuild-std-features=compiler-builtins-mem \
      --target-dir "$target_dir" "$@"
  }
fi
clippy -- -D warnings
clippy --no-default-features -- -D warnings
