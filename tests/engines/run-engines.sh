#!/bin/bash
# run-engines.sh: `make check-engines`: podman, Docker and containerd (ctr) each run the
# same operations with runc and with build/agentnest-oci and must agree
# (tests/engines/{podman,docker,containerd}.sh; shared helpers in lib.sh).
#
# Each suite runs in a network namespace of its own (unshare -n): dockerd's bridge,
# podman's CNI bridge and firewall rules, and every container netns live there and vanish
# with it; the host's firewall, routes and sysctls are never touched.  Each suite starts
# and stops its own daemon (temp root, state and socket) and removes everything it made,
# even on failure.  Nothing is downloaded: images come from the project's OCI layouts.
#
# Environment: AN_ENGINES="podman docker containerd" (the suites to run),
# AN_ENGINES_RESULTS=FILE (append a TSV row per case: engine, case, verdict, agentnest
# result, runc result), AN_ENGINES_VERBOSE=1 (print both results of passing cases too),
# AN_ENGINES_TIMING_RUNS=N (runs per runtime of the `run --rm true` timing, default 10).
set -uo pipefail
cd "$(dirname "$0")/../.."
[ "$(id -u)" = 0 ] || { echo "run-engines: run as root" >&2; exit 1; }
export AN_TEST_SRC=${AN_TEST_SRC:-$PWD} AN_TEST_BUILD=${AN_TEST_BUILD:-$PWD/${BUILD:-build}}
[ -x "$AN_TEST_BUILD/agentnest-oci" ] || { echo "run-engines: build $AN_TEST_BUILD/agentnest-oci first (make)" >&2; exit 1; }
total_fail=0
summaries=()
for e in ${AN_ENGINES:-podman docker containerd}; do
  echo "# --- $e"
  out=$(mktemp)
  unshare --net -- "tests/engines/$e.sh" 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  line=$(tail -1 "$out"); rm -f "$out"
  case $line in "$e: "*) ;; *) line="$e: 0 passed, 1 failed (the suite exited $rc before its summary)" ;; esac
  [ "$rc" = 0 ] || total_fail=$((total_fail + 1))
  summaries+=("$line")
done
printf '%s\n' "${summaries[@]}"
[ "$total_fail" = 0 ] && echo "check-engines: all suites passed" || echo "check-engines: $total_fail suite(s) failed"
[ "$total_fail" = 0 ]
