#!/usr/bin/env bash
# The main job on a built-in example. Builds satyrn-host and installs the pinned Pi, makes a
# temporary repository and contract, then:
#   1. the mutator alone: every refusal of `satyrn-host protocol` (the file stays
#      byte-for-byte unchanged) and one exact replacement;
#   2. the whole slice: `satyrn-host deliver` -> detached worktree -> `satyrn-host attempt`
#      -> Pi -> every edit through the sandboxed component -> a candidate ref; prints the
#      receipt and the candidate's diff;
#   3. one MCP session (`satyrn-host mcp`) with a scripted client: the same gates for any agent.
# The model is a scripted local server standing in for an LLM, unless SATYRN_MODEL is set:
# then Pi runs that real model with your usual Pi configuration and credentials.
# Leaves nothing behind but what it prints.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/setup.sh
host=$(bash scripts/build-release.sh)
(cd pi && npm ci --no-audit --no-fund --loglevel=error >&2)
pi_bin="$root/pi/node_modules/.bin/pi"

work=$(mktemp -d)
model_pid=
cleanup() {
  [ -n "$model_pid" ] && kill "$model_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
repo="$work/repo"
mkdir -p "$repo/src"
printf 'fn greeting() -> &str {\n    "hello world"\n}\n' > "$repo/src/greeting.rs"
printf 'secret = 1\n' > "$repo/config.toml"
git -C "$repo" init -q -b main
git -C "$repo" add -A
git -C "$repo" -c user.name=demo -c user.email=demo@example.invalid commit -q -m init
cat > "$work/contract.yaml" <<'YAML'
id: demo-greeting
task: Make the greeting say "hello satyrn".
writable_paths:
  - "src/*.rs"
YAML

sha() { sha256sum "$1" | cut -d' ' -f1; }
request() { # path expected_sha256(or null) old_text new_text
  local expected=$2
  [ "$expected" = null ] || expected="\"$expected\""
  printf '{"version":1,"operation":"replace","repo":"%s","contract":"%s","path":"%s","expected_sha256":%s,"old_text":"%s","new_text":"%s"}' \
    "$repo" "$work/contract.yaml" "$1" "$expected" "$3" "$4"
}
run() { # title request...
  local title=$1; shift
  printf '\n## %s\n$ satyrn-host protocol <<< %s\n' "$title" "$1"
  set +e; "$host" protocol <<<"$1"; local status=$?; set -e
  printf '(exit %s)\n' "$status"
}

file="$repo/src/greeting.rs"
before=$(sha "$file")
echo "# satyrn demo, part 1: the mutator alone"
echo "# a temporary repository at $repo, contract writable_paths: [\"src/*.rs\"]"
run "a refusal: the path is not declared writable" "$(request config.toml "$(sha "$repo/config.toml")" secret public)"
run "a refusal: no revision (the agent never read the file)" "$(request src/greeting.rs null world satyrn)"
run "a refusal: a stale revision" "$(request src/greeting.rs "$(printf x | sha256sum | cut -d' ' -f1)" world satyrn)"
run "a refusal: the anchor is missing" "$(request src/greeting.rs "$before" planet satyrn)"
run "a refusal: the anchor is ambiguous" "$(request src/greeting.rs "$before" '\"' "'")"
ln -s greeting.rs "$repo/src/alias.rs"
run "a refusal: a symlink is never followed" "$(request src/alias.rs "$before" world satyrn)"
rm "$repo/src/alias.rs"
run "a malformed request (path escapes the worktree)" "$(request ../etc/passwd "$before" root toor)"
[ "$(sha "$file")" = "$before" ] && printf '\nafter every refusal: src/greeting.rs is byte-for-byte unchanged (sha256 %s)\n' "$before"
run "success: the one exact replacement" "$(request src/greeting.rs "$before" 'hello world' 'hello satyrn')"
printf '\n$ git diff\n'
git -C "$repo" --no-pager diff --no-color
git -C "$repo" checkout -q -- src/greeting.rs

echo
echo "# satyrn demo, part 2: one attempt delivered as a candidate ref"
if [ -n "${SATYRN_MODEL:-}" ]; then
  model=$SATYRN_MODEL
  echo "# model: $model (a real model, through your Pi configuration)"
  export SATYRN_PI_BIN="$pi_bin"
else
  coproc MODEL_SERVER { cd "$root/pi" && exec node --import tsx demo/scripted-model-server.ts "$work/agent"; }
  model_pid=$MODEL_SERVER_PID
  read -r model _ <&"${MODEL_SERVER[0]}"
  echo "# model: $model — a SCRIPTED LOCAL SERVER on 127.0.0.1 standing in for an LLM"
  echo "#   (it reads the file, tries a missing anchor, tries an undeclared file, then edits correctly)"
  export PI_CODING_AGENT_DIR="$work/agent" PI_OFFLINE=1 SATYRN_PI_BIN="$pi_bin"
fi
base=$(git -C "$repo" rev-parse HEAD)
printf '\n$ satyrn-host deliver --repo %s %s -- satyrn-host attempt --model %s %s\n' "$repo" contract.yaml "$model" contract.yaml
set +e
receipt=$(cd "$repo" && "$host" deliver --repo "$repo" --timeout 600 "$work/contract.yaml" -- "$host" attempt --model "$model" "$work/contract.yaml" 2>"$work/deliver.log")
status=$?
set -e
printf '(exit %s)\nreceipt: %s\n' "$status" "$receipt"
if [ "$status" -ne 0 ]; then
  echo "# delivery did not create a candidate; its log:" >&2
  cat "$work/deliver.log" >&2
  exit "$status"
fi
python3 - "$work/deliver.log" <<'PY'
import json, sys
print("\nwhat the agent did (from Pi's transcript):")
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    try:
        event = json.loads(line)
    except ValueError:
        continue
    if event.get("type") == "tool_execution_end":
        result = event.get("result") or {}
        text = " ".join(c.get("text", "") for c in result.get("content", []) if isinstance(c, dict)).strip().replace("\n", " / ")
        mark = "refused" if event.get("isError") else "ok     "
        print(f"  {mark} {event.get('toolName')}: {text[:240]}")
PY
printf '\n$ git diff %s refs/satyrn/candidates/demo-greeting/head\n' "${base:0:12}"
git -C "$repo" --no-pager diff --no-color "$base" refs/satyrn/candidates/demo-greeting/head
printf '\nthe caller'"'"'s checkout is untouched: git status --porcelain prints "%s"\n' "$(git -C "$repo" status --porcelain)"

echo
echo "# satyrn demo, part 3: the same gates for any MCP client (satyrn-host mcp)"
echo "# a SCRIPTED MCP CLIENT (plain JSON-RPC over stdio) stands in for an agent such as Claude Code or Codex"
printf '\n$ satyrn-host mcp --repo %s contract.yaml\n' "$repo"
python3 - "$host" "$repo" "$work/contract.yaml" <<'PY'
import json, subprocess, sys
host, repo, contract = sys.argv[1:]
server = subprocess.Popen([host, "mcp", "--repo", repo, contract], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
ids = iter(range(1, 100))
def rpc(method, params):
    server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": next(ids), "method": method, "params": params}) + "\n")
    server.stdin.flush()
    return json.loads(server.stdout.readline())
rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "demo", "version": "1"}})
server.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
tools = rpc("tools/list", {})["result"]["tools"]
print("tools:", ", ".join(t["name"] for t in tools))
def call(title, name, arguments):
    result = rpc("tools/call", {"name": name, "arguments": arguments})["result"]
    text = " ".join(c.get("text", "") for c in result["content"]).strip().split("\n\n")[0].replace("\n", " / ")
    print(f"  {'refused' if result.get('isError') else 'ok     '} {name} ({title}): {text[:200]}")
call("the task and the writable patterns", "boundary", {})
call("edit before reading: no revision known", "edit", {"path": "src/greeting.rs", "edits": [{"op": "replace", "old_text": "hello world", "new_text": "hello mcp"}]})
call("read records the revision", "read", {"path": "src/greeting.rs"})
call("an undeclared file", "edit", {"path": "config.toml", "edits": [{"op": "replace", "old_text": "secret = 1", "new_text": "secret = 0"}]})
call("the exact edit, no revision to copy", "edit", {"path": "src/greeting.rs", "edits": [{"op": "replace", "old_text": "hello world", "new_text": "hello mcp"}]})
server.stdin.close()
server.wait(30)
PY
printf '\n$ git diff\n'
git -C "$repo" --no-pager diff --no-color
git -C "$repo" checkout -q -- src/greeting.rs
