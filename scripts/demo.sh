#!/usr/bin/env bash
# The main job on a built-in example: builds satyrn-host, makes a temporary repository and
# contract, applies one replacement through the sandboxed mutator, then shows each refusal
# and proves the file was left byte-for-byte unchanged. Leaves nothing behind.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/setup.sh
cargo build --release --locked -p satyrn-host >&2
host="$root/target/release/satyrn-host"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
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
echo "# satyrn demo: a temporary repository at $repo, contract writable_paths: [\"src/*.rs\"]"
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
