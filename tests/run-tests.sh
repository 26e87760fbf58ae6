#!/bin/bash
# Run every criterion test binary under $BUILD/tests/{unit,integration,escapes}
# as root and finish with one summary line "tests: N passed, N failed, N skipped"
# summed over all binaries (a binary that crashes before its synthesis counts
# as one failure).  Passed and failed come from criterion's "Synthesis" line
# (its Failing already includes Crashing); skipped from its TAP report
# (`--tap=FILE`, "ok - suite::test # SKIP reason"), because criterion 2.4's
# default output prints nothing for a skipped test and Synthesis leaves it
# out.  The failures' assertion lines are repeated just above the summary,
# so that the tail of a long log names them.  Exit status: 0 only if
# nothing failed.
set -u
BUILD=${BUILD:-build}
cd "$(dirname "$0")/.."
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
export AN_TEST_BUILD="$BUILD" AN_TEST_SRC="$PWD"
log=$(mktemp); tap=$(mktemp); why=$(mktemp); trap 'rm -f "$log" "$tap" "$why"' EXIT
tp=0; tf=0; ts=0; failed=()
for kind in unit integration escapes; do
  for t in "$BUILD"/tests/$kind/*; do
    [ -x "$t" ] && [ -f "$t" ] || continue
    echo "=== $t"
    : >"$tap"
    timeout 1500 "$t" --jobs=1 --tap="$tap" ${CRITERION_ARGS:-} >"$log" 2>&1; rc=$?
    cat "$log"
    syn=$(grep -a 'Synthesis:' "$log" | tail -1)
    if [ -n "$syn" ]; then
      passing=$(sed -n 's/.*Passing: \([0-9]*\).*/\1/p' <<<"$syn")
      failing=$(sed -n 's/.*Failing: \([0-9]*\).*/\1/p' <<<"$syn")
      skipped=$(grep -ac '^ok .* # SKIP' "$tap")
      tp=$((tp + passing)); tf=$((tf + failing)); ts=$((ts + skipped))
    else
      tf=$((tf + 1))
    fi
    if [ $rc -ne 0 ] || [ -z "$syn" ]; then
      failed+=("$t (exit $rc)")
      { echo "--- $t (exit $rc)"; grep -a -A8 -E 'Assertion Failed|\[FAIL\]|CRASH|Timed out|Warning! The test' "$log" | head -100; } >>"$why"
    fi
  done
done
echo
[ ${#failed[@]} -gt 0 ] && { cat "$why"; echo; printf 'FAILED: %s\n' "${failed[@]}"; }
echo "tests: $tp passed, $tf failed, $ts skipped"
[ ${#failed[@]} -eq 0 ] && [ "$tf" -eq 0 ]
