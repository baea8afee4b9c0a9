#!/usr/bin/env bash
# Installs what a fresh machine of the project's kind lacks to build and test satyrn.
# Idempotent: every step checks first and does nothing when the tool is already there.
set -euo pipefail

log() { printf 'setup: %s\n' "$*" >&2; }

need_apt=()
# The wasm32-wasip2 guest: either a rustup toolchain that has the target, or Debian's
# rustc-web 1.96 with the std sources (build-std) and wasm-component-ld / wasm-ld.
if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2; then
  [ -x /usr/bin/cargo ] && [ -d /usr/lib/rustlib/src/rust/library ] || need_apt+=(rustc-web cargo-web rust-web-src)
  [ -x /usr/lib/llvm-22/bin/wasm-ld ] || need_apt+=(lld-22)
  # clippy for the guest (scripts/lint-guest.sh), matching Debian's rustc-web.
  [ -x /usr/bin/cargo-clippy ] || need_apt+=(rust-web-clippy)
fi
command -v python3 >/dev/null || need_apt+=(python3)
command -v git >/dev/null || need_apt+=(git)
# The baseline of the toolbox bench (`cargo bench -p satyrn-host --bench toolbox`).
command -v rg >/dev/null || need_apt+=(ripgrep)

if [ ${#need_apt[@]} -gt 0 ]; then
  log "installing Debian packages: ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
log "toolchain ready"
