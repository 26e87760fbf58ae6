#!/bin/sh
# scripts/lazylib-check.sh — check that every function the given objects
# import from a lazily bound library is in that library's committed list
# (src/util/lazylib/<name>.syms), and that none of them imports a data symbol
# from it (see src/util/lazylib.c).
#   lazylib-check.sh SYMSDIR NAME=SO... -- OBJECT...
# Exit 1 with one line per offending object and symbol.
set -eu
dir=$1; shift
libs=
while [ "$1" != -- ]; do libs="$libs $1"; shift; done
shift
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# object symbol, for every undefined symbol of every object
for o in "$@"; do nm -u "$o" | awk -v o="$o" 'NF == 2 { print $2, o }'; done | sort > "$tmp/undef"
bad=0
for l in $libs; do
  name=${l%%=*} so=${l#*=}
  readelf -W --dyn-syms "$so" | awk '$7 != "UND" && NF >= 8 { n = $8; sub(/@.*/, "", n); print n, $4 }' |
    sort -u -k1,1 > "$tmp/def"
  grep -v '^[[:space:]]*\(#\|$\)' "$dir/$name.syms" | sort -u > "$tmp/listed"
  join "$tmp/undef" "$tmp/def" > "$tmp/used"   # symbol object type
  out=$(awk -v listed="$tmp/listed" -v name="$name" -v so="$so" -v dir="$dir" '
    BEGIN { while ((getline s < listed) > 0) ok[s] = 1 }
    $3 != "FUNC" && $3 != "IFUNC" {
      printf "%s: imports data symbol %s (%s) from %s, which is bound lazily: use a function, or build with LAZYLIB=0\n", $2, $1, $3, so; next }
    !($1 in ok) { printf "%s: imports %s from %s but it is not listed in %s/%s.syms: add it there (sorted)\n", $2, $1, so, dir, name }
  ' "$tmp/used")
  if [ -n "$out" ]; then echo "$out" >&2; bad=1; fi
done
exit $bad
