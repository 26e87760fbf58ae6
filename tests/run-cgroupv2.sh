#!/bin/bash
# Run the cgroup tests on a pure cgroup v2 kernel: boots one throwaway VM
# with the project's own tests/vm/run-in-vm.sh (cgroup2 alone at
# /sys/fs/cgroup, every controller enabled; see its header for what the host
# needs: Debian's qemu-system-x86, linux-image-amd64, busybox-static, kmod,
# cpio) and runs in it, as root,
# $BUILD/tests/integration/cgroup_test, cgroup_birth_test, cgroup_limits_test,
# cgroup_devices_test, cli_frozen_test (an exec into a frozen sandbox) and
# exec_reap_test (an exec's unreported child found by its cgroup) plus every binary listed (space
# separated, relative to the repo or absolute) in $CGROUPV2_TESTS.
# Build on the host first (`make test-bins`); `make check-cgroupv2` does.
# Prints one summary line "cgroupv2 VM: N passed, N failed"; exit status 0
# when all passed, 1 when some failed, 124 VM timeout, 125 VM/setup failure.
# Env: BUILD (default build), CGROUPV2_TESTS, CGROUPV2_TIMEOUT (seconds,
# default 1800), CGROUPV2_MEM (default 1G), RUN_IN_VM_SH (another runner
# with the same -m/-c/-t options; default tests/vm/run-in-vm.sh).
set -u
cd "$(dirname "$0")/.."
repo=$PWD
BUILD=${BUILD:-build}
vm=${RUN_IN_VM_SH:-$repo/tests/vm/run-in-vm.sh}
[ -x "$vm" ] || { echo "run-cgroupv2: $vm not found or not executable" >&2; exit 125; }
bins=("$BUILD/tests/integration/cgroup_test" "$BUILD/tests/integration/cgroup_birth_test" "$BUILD/tests/integration/cgroup_limits_test"
      "$BUILD/tests/integration/cgroup_devices_test" "$BUILD/tests/integration/cli_frozen_test"
      "$BUILD/tests/integration/exec_reap_test")
for b in ${CGROUPV2_TESTS:-}; do bins+=("$b"); done
for b in "${bins[@]}"; do
  [ -x "$b" ] || { echo "run-cgroupv2: $b missing (make test-bins)" >&2; exit 125; }
done
export AN_TEST_BUILD="$repo/$BUILD" AN_TEST_SRC="$repo"
# shellcheck disable=SC2016  # expanded inside the VM
exec "$vm" -m "${CGROUPV2_MEM:-1G}" -c 2 -t "${CGROUPV2_TIMEOUT:-1800}" -- bash -c '
  pass=0; fail=0; failed=()
  for t in "$@"; do
    echo "=== $t (pure cgroup v2 VM, $(uname -r))"
    if "$t" --jobs=1 --timeout=300 ${CRITERION_ARGS:-}; then pass=$((pass+1)); else fail=$((fail+1)); failed+=("$t"); fi
  done
  echo
  [ ${#failed[@]} -gt 0 ] && printf "FAILED: %s\n" "${failed[@]}"
  echo "cgroupv2 VM: $pass passed, $fail failed"
  [ "$fail" -eq 0 ]' run-cgroupv2 "${bins[@]}"
