#!/bin/sh
# The linker of the release binary (scripts/build-release.sh passes it as `-C linker`): runs
# the C compiler driver rustc would have run, with the functions a one-shot `protocol`
# request executes laid out first, in the order they first run (lld's
# --symbol-ordering-file). Why, and what it saves: docs/architecture.md, "The release
# binary"; docs/performance.md, "Issue 19: the hot functions first".
#
# The list (host/hot-functions.txt, or SATYRN_HOT_FUNCTIONS) names functions as `nm -C`
# prints them with v0 mangling, so it survives rebuilds; scripts/hot-functions.sh makes it.
# The names are looked up in the plain objects on the command line (with thin LTO, every
# Rust crate's code arrives as one); a name not found is skipped, a plain C name is passed
# as it is (the C library's functions, in static libc.a). The order is written to
# OUTPUT.order, and removed when no order is used.
#
# Anything that goes wrong here costs speed, never the link: without a list, without lld
# (another `-fuse-ld=`, or none and no SATYRN_LLD_DIR, the directory of rustc's ld.lld),
# or when the mapping fails, the driver (SATYRN_LINK_CC, default cc) runs on the
# arguments as given.
set -u
here=$(cd "$(dirname "$0")" && pwd)
list=${SATYRN_HOT_FUNCTIONS:-$here/../host/hot-functions.txt}
driver=${SATYRN_LINK_CC:-cc}
out=
prev=
for arg in "$@"; do
  [ "$prev" = "-o" ] && out=$arg
  prev=$arg
done
[ -n "$out" ] && rm -f "$out.order"
case " $* " in
  *" -fuse-ld=lld "*) lld= ;;
  *" -fuse-ld="*) exec "$driver" "$@" ;;
  *) [ -n "${SATYRN_LLD_DIR:-}" ] || exec "$driver" "$@"
     lld="-B$SATYRN_LLD_DIR -fuse-ld=lld" ;;
esac
if [ -z "$out" ] || [ ! -s "$list" ]; then
  exec "$driver" "$@"
fi

# Writes $out.order from the objects among the arguments, in the directory $1; any failed
# step returns non-zero (explicit checks: `set -e` is not in force in a function whose
# status is tested).
map_into() {
  work=$1
  shift
  for arg in "$@"; do
    case $arg in
      *.o|*.rlib|*.a) if [ -f "$arg" ]; then printf '%s\n' "$arg"; fi ;;
    esac
  done > "$work/objects" || return 1
  # Every defined function symbol, mangled and demangled, one object at a time ("ADDRESS
  # TYPE NAME" lines; an archive adds member headers, which have fewer fields). Both
  # listings keep the objects' order, so their lines correspond.
  while IFS= read -r file; do nm -p --defined-only "$file" 2>/dev/null; done \
    < "$work/objects" | awk 'NF >= 3 && $2 ~ /^[tTwW]$/ { print $3 }' > "$work/mangled" ||
    return 1
  while IFS= read -r file; do nm -p -C --defined-only "$file" 2>/dev/null; done \
    < "$work/objects" |
    awk 'NF >= 3 && $2 ~ /^[tTwW]$/ { sub(/^[^ ]+ [^ ]+ /, ""); print }' > "$work/demangled" ||
    return 1
  [ "$(wc -l < "$work/mangled")" -eq "$(wc -l < "$work/demangled")" ] || return 1
  paste -d '\t' "$work/mangled" "$work/demangled" | awk -F '\t' -v list="$list" '
    BEGIN { while ((getline line < list) > 0) if (line !~ /^#/ && line != "" && !(line in rank)) rank[line] = ++n }
    ($2 in rank) { print rank[$2] "\t" $1; hit[$2] = 1 }
    END {
      for (name in rank) if (!(name in hit) && name ~ /^[A-Za-z_.][A-Za-z0-9_.]*$/) print rank[name] "\t" name
    }' | sort -t "$(printf '\t')" -k1,1n -s | cut -f2 > "$work/order" || return 1
  mv "$work/order" "$out.order"
}

if work=$(mktemp -d) && [ -d "$work" ]; then
  map_into "$work" "$@"
  mapped=$?
  rm -rf "$work"
else
  mapped=1
fi
if [ "$mapped" -ne 0 ]; then
  echo "link-hot-first: the hot functions could not be mapped; linking without an order" >&2
  rm -f "$out.order"
  exec "$driver" "$@"
fi
# shellcheck disable=SC2086 # $lld is empty or two words
exec "$driver" "$@" $lld -Wl,--symbol-ordering-file="$out.order" -Wl,--no-warn-symbol-ordering
