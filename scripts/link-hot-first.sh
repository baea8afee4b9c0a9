#!/bin/sh
# The linker of the release binary (scripts/build-release.sh passes it as `-C linker`): runs
# the C compiler driver rustc would have run, with the functions a `protocol` request
# executes laid out first and in the order they first run (lld's --symbol-ordering-file).
#
# Why: a one-shot `satyrn-host protocol` spends more time mapping its own code pages than
# running it; the code one replace executes (about 560 KB) is spread over 8.7 MB of text,
# and every 64 KiB window it touches is one page fault that maps 16 pages
# (docs/performance.md, "Issue 19: the hot functions first").
#
# The list (host/hot-functions.txt) names functions demangled, as `nm -C` prints them with
# v0 mangling, so it survives rebuilds; scripts/hot-functions.sh makes it from a trace. A name
# that no longer exists is skipped; a stale list costs speed, never correctness. The order
# file is written beside the output; SATYRN_LINK_CC names the driver (default: cc).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
list=${SATYRN_HOT_FUNCTIONS:-$here/../host/hot-functions.txt}
out=
prev=
for arg in "$@"; do
  [ "$prev" = "-o" ] && out=$arg
  prev=$arg
done
if [ -z "$out" ] || [ ! -s "$list" ]; then
  exec "${SATYRN_LINK_CC:-cc}" "$@"
fi
order=$out.order
objects=$(mktemp)
trap 'rm -f "$objects" "$objects".m "$objects".d' EXIT
for arg in "$@"; do
  case $arg in
    *.o|*.rlib|*.a) [ -f "$arg" ] && printf '%s\n' "$arg" ;;
  esac
done > "$objects"
# Every defined function symbol, mangled and demangled, one object at a time ("ADDRESS TYPE
# NAME" lines; an archive adds member headers, which have fewer fields). Both listings keep
# the objects' order, so their lines correspond.
while IFS= read -r file; do nm -p --defined-only "$file" 2>/dev/null || true; done < "$objects" |
  awk 'NF >= 3 && $2 ~ /^[tTwW]$/ { print $3 }' > "$objects".m
while IFS= read -r file; do nm -p -C --defined-only "$file" 2>/dev/null || true; done < "$objects" |
  awk 'NF >= 3 && $2 ~ /^[tTwW]$/ { sub(/^[^ ]+ [^ ]+ /, ""); print }' > "$objects".d
if [ "$(wc -l < "$objects".m)" -ne "$(wc -l < "$objects".d)" ]; then
  echo "link-hot-first: nm's two listings disagree; linking without an order" >&2
  exec "${SATYRN_LINK_CC:-cc}" "$@"
fi
paste -d '\t' "$objects".m "$objects".d | awk -F '\t' -v list="$list" '
  BEGIN { while ((getline line < list) > 0) if (line !~ /^#/ && line != "" && !(line in rank)) rank[line] = ++n }
  ($2 in rank) { print rank[$2] "\t" $1; hit[$2] = 1 }
  END {
    # A plain name not in the objects is the C library'\''s (static libc.a): passed as it is.
    for (name in rank) if (!(name in hit) && name ~ /^[A-Za-z_.][A-Za-z0-9_.]*$/) print rank[name] "\t" name
  }' | sort -t "$(printf '\t')" -k1,1n -s | cut -f2 > "$order"
# The order is an lld option: a target whose driver would run another linker (the musl
# target runs the system's ld) is given the lld rustc ships, in SATYRN_LLD_DIR.
case " $* " in
  *" -fuse-ld="*) exec "${SATYRN_LINK_CC:-cc}" "$@" -Wl,--symbol-ordering-file="$order" -Wl,--no-warn-symbol-ordering ;;
esac
exec "${SATYRN_LINK_CC:-cc}" "$@" -B"${SATYRN_LLD_DIR:?the directory of rustc's ld.lld}" -fuse-ld=lld \
  -Wl,--symbol-ordering-file="$order" -Wl,--no-warn-symbol-ordering
