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
# The single-node Slurm cluster of tests/it/slurm.rs (Debian 12's 22.05 and munge 0.5.15;
# the packages' own daemons are not used: the test starts its own, on its own ports).
slurm_pinned=(slurm-wlm=22.05.8-4+deb12u3 slurmctld=22.05.8-4+deb12u3 slurmd=22.05.8-4+deb12u3
  slurm-client=22.05.8-4+deb12u3 munge=0.5.15-2+deb12u1)
need_slurm=0
if ! [ -x /usr/sbin/slurmctld ] || ! [ -x /usr/sbin/slurmd ] || ! [ -x /usr/sbin/munged ] || ! command -v sbatch >/dev/null; then
  need_slurm=1
fi

if [ ${#need_apt[@]} -gt 0 ]; then
  log "installing Debian packages: ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
if [ "$need_slurm" = 1 ]; then
  export DEBIAN_FRONTEND=noninteractive
  [ ${#need_apt[@]} -gt 0 ] || apt-get update -qq
  # Debian replaces a point release's package when it updates it: the pinned version first,
  # the suite's current one (same 22.05 series) when the pin is gone.
  if ! apt-get install -y -qq "${slurm_pinned[@]}" >/dev/null; then
    log "the pinned Slurm packages are gone from the archive; installing the suite's current ones"
    apt-get install -y -qq slurm-wlm slurmctld slurmd slurm-client munge >/dev/null
  fi
fi
# The Kubernetes Job schema (batch/v1, Kubernetes 1.31) the emitted Indexed Job is validated
# against (tests/it/series_emit.rs): kubernetes-validate, pinned, in its own virtualenv.
root=$(cd "$(dirname "$0")/.." && pwd)
k8s_venv=$root/target/k8s-venv
k8s_requirements=$root/tests/series/requirements.txt
if ! cmp -s "$k8s_requirements" "$k8s_venv/.satyrn-installed-requirements"; then
  python3 -c 'import ensurepip, venv' 2>/dev/null || {
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
  }
  log "installing $k8s_requirements into $k8s_venv"
  rm -rf "$k8s_venv"
  python3 -m venv "$k8s_venv"
  "$k8s_venv/bin/pip" install --disable-pip-version-check -q -r "$k8s_requirements"
  cp "$k8s_requirements" "$k8s_venv/.satyrn-installed-requirements"
fi
log "toolchain ready"
