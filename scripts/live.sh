#!/usr/bin/env bash
# The gated live check against a real model (never run by CI):
#   SATYRN_LIVE=1 SATYRN_MODEL=provider/model bash scripts/live.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ "${SATYRN_LIVE:-}" != 1 ] || [ -z "${SATYRN_MODEL:-}" ]; then
  echo "live check: set SATYRN_LIVE=1 and SATYRN_MODEL=provider/model (and the provider's credentials)" >&2
  exit 2
fi
bash scripts/setup.sh
SATYRN_HOST_BIN=$(bash scripts/build-release.sh)
export SATYRN_HOST_BIN
(cd pi && npm ci --no-audit --no-fund --loglevel=error >&2 && node --import tsx demo/live.ts)
