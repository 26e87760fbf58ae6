#!/bin/bash
# Run every criterion test binary under $BUILD/tests/{unit,integration,escapes}
# as root and finish with one summary line "tests: N passed, N failed, N skipped"
# summed over all binaries (a binary that crashes before its synthesis counts
# as one failure).  Exit status: 0 only if nothing failed.
set -u
BUILD=${BUILD:-build}
cd "$(dirname "$0")/.."
export AN_TEST_BUILD="$PWD/$BUILD" AN_TEST_SRC="$PWD"
log=$(mktemp); trap 'rm -f "$log"' EXIT
tp=0; tf=0; ts=0; failed=()
for kind in unit integration escapes; do
  for t in "$BUILD"/tests/$kind/*; do
    [ -x "$t" ] && [ -f "$t" ] || continue
    echo "=== $t"
    timeout 1500 "$t" --jobs=1 ${CRITERION_ARGS:-} >"$log" 2>&1; rc=$?
    cat "$log"
    syn=$(grep -a 'Synthesis:' "$log" | tail -1)
    if [ -n "$syn" ]; then
      tested=$(sed -n 's/.*Tested: \([0-9]*\).*/\1/p' <<<"$syn")
      passing=$(sed -n 's/.*Passing: \([0-9]*\).*/\1/p' <<<"$syn")
      failing=$(sed -n 's/.*Failing: \([0-9]*\).*/\1/p' <<<"$syn")
      crashing=$(sed -n 's/.*Crashing: \([0-9]*\).*/\1/p' <<<"$syn")
      skipped=$(grep -ac '\[SKIP\]' "$log")
      tp=$((tp + passing)); tf=$((tf + failing + crashing)); ts=$((ts + skipped))
      : "$tested"
    else
      tf=$((tf + 1))
    fi
    if [ $rc -ne 0 ] || [ -z "$syn" ]; then failed+=("$t (exit $rc)"); fi
  done
done
echo
[ ${#failed[@]} -gt 0 ] && printf 'FAILED: %s\n' "${failed[@]}"
echo "tests: $tp passed, $tf failed, $ts skipped"
[ ${#failed[@]} -eq 0 ] && [ "$tf" -eq 0 ]
