#!/usr/bin/env bash
# Writes host/hot-functions.txt: the functions of `satyrn-host` that one-shot `protocol`
# requests execute, in the order they first run. scripts/link-hot-first.sh lays them out
# first in the release binary (docs/performance.md, "Issue 19: the hot functions first").
#
# usage: scripts/hot-functions.sh [BINARY]   (default: the binary scripts/build-release.sh builds)
#
# Each request runs once under a single-stepping tracer (scripts/hot-functions/trace.c,
# compiled with cc): every instruction of the binary's own image that runs is recorded, so
# the list is complete for these requests, not sampled. In order: a 10 KiB `replace` (the
# request issue 19 measures), then `read`, `edit`, `write`, `check` and an invalid request;
# a function appears once, where it first ran. Takes a few minutes (4 million single steps
# a request). Needs cc, nm and python3; a development tool, not part of any build or test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# The tracer finds the binary's mappings by its path: an absolute one, symlinks resolved.
binary=$(realpath "${1:-$(bash "$root/scripts/build-release.sh")}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/trace" "$root/scripts/hot-functions/trace.c"

repo=$work/repo
git init -q "$repo"
python3 - "$repo/data.txt" <<'PY'
import sys
lines = [f"line {i:05} of the benchmark file, padding padding padding\n" for i in range(170)]
lines[40] = "ANCHOR_ALPHA_0001\n"
open(sys.argv[1], "w").write("".join(lines))
PY
printf 'id: hot\ntask: hot functions\nwritable_paths: ["*.txt"]\n' > "$work/contract.yaml"

requests=$work/requests
python3 - "$repo" "$work/contract.yaml" "$requests" <<'PY'
import hashlib, json, os, sys
repo, contract, out = sys.argv[1:4]
os.makedirs(out)
data = open(os.path.join(repo, "data.txt"), "rb").read()
rev = hashlib.sha256(data).hexdigest()
after = data.replace(b"ANCHOR_ALPHA_0001", b"ANCHOR_BRAVO_0002")
common = {"version": 1, "repo": repo, "contract": contract}
requests = [
    {"operation": "replace", "path": "data.txt", "expected_sha256": rev,
     "old_text": "ANCHOR_ALPHA_0001", "new_text": "ANCHOR_BRAVO_0002"},
    {"operation": "read", "path": "data.txt", "offset": 1, "limit": 2000},
    {"operation": "edit", "path": "data.txt", "expected_sha256": hashlib.sha256(after).hexdigest(),
     "edits": [{"op": "replace", "old_text": "ANCHOR_BRAVO_0002", "new_text": "ANCHOR_ALPHA_0001"}]},
    {"operation": "write", "path": "new.txt", "expected_sha256": None, "content": "new\n"},
    {"operation": "check"},
]
for i, r in enumerate(requests):
    open(os.path.join(out, f"{i}.json"), "w").write(json.dumps({**common, **r}))
open(os.path.join(out, f"{len(requests)}.json"), "w").write("{}")
PY

# Each request must get the answer it was written for, or the list would be of an error path.
for request in $(ls "$requests" | sort -n); do
  "$work/trace" "$work/executed.${request%.json}" "$binary" protocol < "$requests/$request" > "$work/response"
  echo "$request: $(head -c 120 "$work/response")" >&2
  case $request in
    5.json) expected='"code":"INVALID_REQUEST"' ;;
    *) expected='"ok":true' ;;
  esac
  grep -q "$expected" "$work/response" || { echo "$request: expected $expected" >&2; exit 1; }
done

nm -n -S -C --defined-only "$binary" > "$work/symbols"
python3 - "$work" "$root/host/hot-functions.txt" <<'PY'
import bisect, glob, os, re, sys
work, out = sys.argv[1:3]
functions = []
for line in open(os.path.join(work, "symbols")):
    m = re.match(r"([0-9a-f]+) ([0-9a-f]+) [tTwW] (.*)$", line.rstrip("\n"))
    if m:
        functions.append((int(m.group(1), 16), int(m.group(2), 16), m.group(3)))
starts = [f[0] for f in functions]
names, seen = [], set()
for path in sorted(glob.glob(os.path.join(work, "executed.*")), key=lambda p: int(p.rsplit(".", 1)[1])):
    for line in open(path):
        at = int(line, 16)
        i = bisect.bisect_right(starts, at) - 1
        if i >= 0 and at < functions[i][0] + functions[i][1] and functions[i][2] not in seen:
            seen.add(functions[i][2])
            names.append(functions[i][2])
with open(out, "w") as f:
    f.write("# The functions one-shot `satyrn-host protocol` requests execute, in the order they\n"
            "# first run (replace, read, edit, write, check, an invalid request): demangled, v0.\n"
            "# Made by scripts/hot-functions.sh; read by scripts/link-hot-first.sh.\n")
    f.write("".join(n + "\n" for n in names))
print(f"{len(names)} functions -> {out}", file=sys.stderr)
PY
