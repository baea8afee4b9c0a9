#!/usr/bin/env bash
# Builds the release `satyrn-host` (the precompiled component inside) and prints its path.
#
# On a `*-linux-gnu` host the binary is a static PIE (`-C target-feature=+crt-static`): no
# dynamic loader, no libgcc_s, and nothing a caller's LD_PRELOAD or LD_LIBRARY_PATH can put
# into it. It starts about 1 ms faster than the dynamically linked build on this project's
# machine kind, a fifth of a whole-process `protocol replace` (docs/performance.md, "Process
# start"). `--target` is passed explicitly so that only the target's crates get the flags:
# proc macros and build scripts stay dynamic, as rustc requires, and are linked as cargo's
# other builds link them (a `target.<triple>.linker` would reach them too, and every other
# release build, `cargo bench` among them, would then rebuild them and everything above).
# Its relative relocations are packed (`-z pack-relative-relocs`, DT_RELR): 4 KB of table
# instead of 288 KB of RELA entries, which every start read through page faults
# (docs/performance.md, "Issue 19: two builds of the component"). The static PIE's own
# start-up code applies them, and only the `libc.a` of glibc 2.36 or later knows DT_RELR:
# with an older glibc the relocations stay as they were. Either way the binary must answer
# an invalid request before this script names it.
#
# The `getrandom` crate is told to call `getrandom(2)` through libc: in a static binary it
# finds no symbol at run time and would fall back to polling /dev/random and reading
# /dev/urandom on every start (docs/performance.md, "where each system call goes").
#
# It is linked by scripts/link-hot-first.sh, which lays out first the functions a one-shot
# `protocol` request executes (host/hot-functions.txt, named with v0 mangling, hence
# `-C symbol-mangling-version=v0`): a replace then faults on about a quarter of the code
# windows it did (docs/performance.md, "Issue 19: the hot functions first"). A change to
# the list or the wrapper relinks the binary (host/build.rs). The result is
# target/<host triple>/release/satyrn-host.
#
# Other hosts get the plain `cargo build --release` binary, target/release/satyrn-host.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
triple=$(rustc -vV | sed -n 's/^host: //p')
case "$triple" in
  *-linux-gnu)
    list=$root/host/hot-functions.txt
    deps=$root/target/$triple/release/deps
    relr= packed="not packed"
    glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | sed -n 's/^glibc //p')
    if [ -n "$glibc" ] && printf '2.36\n%s\n' "$glibc" | sort -V -C; then
      relr="'-C', 'link-arg=-Wl,-z,pack-relative-relocs', " packed=packed
    fi
    SATYRN_LLD_DIR=$(rustc --print sysroot)/lib/rustlib/$triple/bin/gcc-ld \
      cargo build --release --locked -p satyrn-host --target "$triple" \
      --config "target.$triple.rustflags = ['-C', 'target-feature=+crt-static', '-C', 'symbol-mangling-version=v0', '-C', 'linker=$root/scripts/link-hot-first.sh', $relr'--cfg', 'getrandom_backend=\"linux_getrandom\"']" >&2
    order=$(ls -t "$deps"/satyrn_host-*.order 2>/dev/null | head -n 1 || true)
    listed=$(grep -cv '^#' "$list" || true)
    echo "build-release: the link order names $(wc -l < "${order:-/dev/null}") symbols ($listed hot functions listed); relative relocations $packed (glibc ${glibc:-unknown})" >&2
    binary=$root/target/$triple/release/satyrn-host
    ;;
  *)
    cargo build --release --locked -p satyrn-host >&2
    binary=$root/target/release/satyrn-host
    ;;
esac
answer=$(printf '{}' | "$binary" protocol 2>&1 || true)
case "$answer" in
  *'"code":"INVALID_REQUEST"'*) echo "$binary" ;;
  *)
    echo "build-release: $binary does not answer an invalid request: $answer" >&2
    exit 1
    ;;
esac
