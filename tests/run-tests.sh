#!/bin/bash
# Run every criterion test binary under $BUILD/tests (unit, integration,
# escapes), as root, and print one summary line "N passed, N failed".
set -u
BUILD=${BUILD:-build}
cd "$(dirname "$0")/.."
export AN_TEST_BUILD="$PWD/$BUILD" AN_TEST_SRC="$PWD"
pass=0; fail=0; failed=()
for kind in unit integration escapes; do
  for t in "$BUILD"/tests/$kind/*; do
    [ -x "$t" ] && [ -f "$t" ] || continue
    echo "=== $t"
    if timeout 1200 "$t" --jobs=1 --timeout=300 ${CRITERION_ARGS:-}; then
      pass=$((pass+1))
    else
      fail=$((fail+1)); failed+=("$t")
    fi
  done
done
echo
[ ${#failed[@]} -gt 0 ] && printf 'FAILED: %s\n' "${failed[@]}"
echo "test binaries: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
