#!/bin/bash
# The main job on real input (issue 4): CPython's own regression tests —
# code nobody here wrote — run module by module on the host's Debian Python
# (/usr/bin/python3.11 + libpython3.11-testsuite) and inside an AgentNest
# sandbox of the `python-tests` image (the same Debian packages), then
# compared.
#
# Prints a table "module | host | sandbox | note" and a summary.  Exit status:
#   0  every module that passes on the host passes in the sandbox, or the
#      difference is explained in tests/mainjob/expected-differences.txt
#      (module | failing test ids, as globs | reason | the policy line that
#      causes it) and no other test case of that module fails
#   1  an unexplained difference (the note names the failing test cases;
#      full logs are kept in $LOGDIR)
#   2  set-up failed (no python3.11 / test suite on the host, image missing)
#
# Environment:
#   BUILD          build directory (default build)
#   AN_IMAGE_CACHE image cache of `make images` (default /var/cache/agentnest/images)
#   MODULES        space-separated subset of modules to run (default: all of issue 4)
#   MODULE_TIMEOUT seconds per module and run (default 900)
#   JOBS           modules run at once per side (default 2)
#   LOGDIR         where the per-module logs go (default a new dir under /tmp, kept)
# The sandbox runs with a state root of its own (a temp dir, removed at the
# end), so it never touches other sandboxes.  regrtest runs without -u: no
# test resource that reaches the internet is enabled, on either side.
set -uo pipefail
cd "$(dirname "$0")/../.."
SRC=$PWD
BUILD=${BUILD:-build}
case $BUILD in /*) AN="$BUILD/agentnest" ;; *) AN="$SRC/$BUILD/agentnest" ;; esac
CACHE=${AN_IMAGE_CACHE:-/var/cache/agentnest/images}
HOSTPY=/usr/bin/python3.11
TIMEOUT=${MODULE_TIMEOUT:-900}
JOBS=${JOBS:-2}
EXPECTED="$SRC/tests/mainjob/expected-differences.txt"
ALL_MODULES="test_os test_posix test_subprocess test_signal test_threading test_thread
test_tempfile test_shutil test_mmap test_select test_selectors test_epoll test_poll test_fcntl
test_pty test_resource test_time test_socket test_socketserver test_httpservers test_json
test_sqlite3 test_hashlib test_zlib test_gzip test_tarfile test_zipfile test_fileio test_pathlib
test_glob test_pwd test_grp test_platform test_faulthandler test_sys test_uuid test_logging
test_sched test_ioctl test_tty"
MODULES=${MODULES:-$ALL_MODULES}

die() { echo "cpython-regrtest: $*" >&2; exit 2; }
[ -x "$HOSTPY" ] || die "$HOSTPY missing: apt-get install python3.11 libpython3.11-testsuite"
"$HOSTPY" -c 'import test.regrtest' 2>/dev/null ||
  die "the CPython test suite is missing on the host: apt-get install libpython3.11-testsuite"
[ -x "$AN" ] || die "$AN missing: run make"
[ -d "$CACHE/python-tests/layout" ] || die "$CACHE/python-tests/layout missing: run make images"

LOGDIR=${LOGDIR:-$(mktemp -d /tmp/agentnest-mainjob-XXXXXX)}
mkdir -p "$LOGDIR/host" "$LOGDIR/sandbox" "$LOGDIR/hostcwd"
ROOT=$(mktemp -d /tmp/agentnest-mainjob-root-XXXXXX) && chmod 755 "$ROOT"
cleanup() {
  "$AN" --root "$ROOT" prune --all >/dev/null 2>&1
  rm -rf "$ROOT" "$LOGDIR/hostcwd"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

out=$("$AN" --root "$ROOT" image import "$CACHE/python-tests/layout" --name python-tests 2>&1) ||
  die "cannot import the python-tests image: $out"

# The sandbox gets what the test suite needs to run at all, nothing more:
# the network stays off, the seccomp policy is the default one, the user is
# 65532.  Memory, pids, /tmp and output are raised because test_subprocess,
# test_threading and test_tarfile legitimately use more than an agent's
# defaults.
SANDBOX_OPTS=(--image python-tests --memory 2g --pids 1024 --tmp-size 512m --cpus 2
  --timeout $((TIMEOUT + 60)) --exec-timeout "$TIMEOUT" --max-output 64m
  --env LANG=C.UTF-8 --env PYTHONDONTWRITEBYTECODE=1)

# regrtest arguments, the same on both sides.  The AF_VSOCK stream tests are
# ignored: they connect to this machine's own vsock CID, which inside a VM
# (this project's CI runs in Firecracker) is the hypervisor host — traffic
# off the machine, which this test must never send (and on such hosts the
# connect hangs).  In the sandbox they would skip anyway (no /dev/vsock).
REGRTEST_ARGS=(-v -i '*VSOCK*')

# Result of one log + exit status: PASS, SKIP (module skipped as a whole),
# TIMEOUT, FAIL.
classify() { # log rc
  local log=$1 rc=$2
  if [ "$rc" = 124 ]; then echo TIMEOUT
  elif [ "$rc" = 0 ] && grep -aq 'Tests result: SUCCESS' "$log"; then
    if grep -aqE '^[0-9]+ tests? skipped:|^test_[a-z0-9_]+ skipped --' "$log" &&
       ! grep -aqE 'tests? OK\.|^[0-9]+ tests? OK' "$log"; then echo SKIP; else echo PASS; fi
  else echo FAIL; fi
}

# The host side runs as nobody:nogroup, never as root (issue 10, item 12):
# as root, test_time set the host's clock back an hour and test_socket
# renamed the host, and root skips tests (test_httpservers' CGI cases), so
# "passes on the host" meant nothing for them.  Its cwd and HOME are a
# directory of its own; the log is written by this (root) shell.
HOST_AS=()
if [ "$(id -u)" = 0 ]; then
  command -v setpriv >/dev/null || die "setpriv (util-linux) missing: the host side must not run as root"
  HOST_AS=(setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all --)
fi
chmod 711 "$LOGDIR" "$LOGDIR/hostcwd"

run_host() { # module
  local m=$1 d="$LOGDIR/hostcwd/$1"
  mkdir -p "$d"
  [ ${#HOST_AS[@]} -eq 0 ] || chown nobody:nogroup "$d"
  (cd "$d" && HOME="$d" timeout -k 10 "$TIMEOUT" "${HOST_AS[@]}" "$HOSTPY" -m test "${REGRTEST_ARGS[@]}" "$m" \
    >"$LOGDIR/host/$m.log" 2>&1)
  echo $? >"$LOGDIR/host/$m.rc"
}

run_sandbox() { # module
  local m=$1
  "$AN" --root "$ROOT" run "${SANDBOX_OPTS[@]}" -- python3 -m test "${REGRTEST_ARGS[@]}" "$m" \
    >"$LOGDIR/sandbox/$m.log" 2>&1
  echo $? >"$LOGDIR/sandbox/$m.rc"
}

# Run a function over MODULES, JOBS at a time.
parallel() { # fn
  local fn=$1 m n=0
  for m in $MODULES; do
    "$fn" "$m" &
    n=$((n + 1))
    if [ $n -ge "$JOBS" ]; then wait -n; n=$((n - 1)); fi
  done
  wait
}

echo "cpython-regrtest: $(wc -w <<<"$MODULES") modules, logs in $LOGDIR" >&2
echo "cpython-regrtest: host ($("$HOSTPY" -c 'import sys; print(sys.version.split()[0])'))..." >&2
parallel run_host
echo "cpython-regrtest: sandbox (image python-tests)..." >&2
parallel run_sandbox

# A module that passed on the host but died in the sandbox without a failing
# test case (killed, crashed, timed out) is run once more, alone, so that a
# kill caused by the machine's load in the parallel phase is not mistaken for
# a sandbox difference.  The table says so; a second death stays unexplained.
declare -A RETRIED=()
for m in $MODULES; do
  if [ "$(cat "$LOGDIR/host/$m.rc")" = 0 ] && [ "$(cat "$LOGDIR/sandbox/$m.rc")" != 0 ] &&
     [ -z "$(grep -aE '^(FAIL|ERROR): ' "$LOGDIR/sandbox/$m.log" | head -1)" ]; then
    RETRIED[$m]=$(cat "$LOGDIR/sandbox/$m.rc")
    mv "$LOGDIR/sandbox/$m.log" "$LOGDIR/sandbox/$m.first.log"
    echo "cpython-regrtest: $m died in the sandbox (status ${RETRIED[$m]}) with no failing case; running it again alone" >&2
    run_sandbox "$m"
  fi
done

# Lines "module | test-id globs | reason | policy", '#' comments.  Prints
# field $2 (2 globs, 3 reason, 4 policy) of MODULE's line.
expected_field() { # module field
  [ -f "$EXPECTED" ] || return 1
  awk -F'|' -v m="$1" -v f="$2" '!/^[ \t]*#/ { gsub(/^[ \t]+|[ \t]+$/, "", $1); if ($1 == m) {
      v=$f; gsub(/^[ \t]+|[ \t]+$/, "", v); print v; found=1; exit } }
      END { exit !found }' "$EXPECTED"
}

# The ids (test.test_x.Class.method) of the failing test cases of a verbose log.
failed_ids() { # log
  grep -aE '^(FAIL|ERROR): ' "$1" | sed -nE 's/^(FAIL|ERROR): [^ ]+ \(([^)]+)\).*/\2/p' | sort -u
}

# The failing test cases of a verbose log, as "name, name, ..." (at most 5).
failed_cases() { # log
  grep -aE '^(FAIL|ERROR): ' "$1" | sed -E 's/^(FAIL|ERROR): ([^ ]+).*/\2/' | sort -u | head -5 |
    paste -sd, - | sed 's/,/, /g'
}

# An explained module must fail only in the test cases its line names: every
# failing id matches one of the globs, and there is at least one failing id
# (a crash or a timeout is never explained).  Prints the first id that is
# not covered.
covered_by_explanation() { # module log
  local globs id g ok ids
  local -
  set -f  # the globs are patterns for [[ == ]], not file names
  globs=$(expected_field "$1" 2) || return 1
  ids=$(failed_ids "$2")
  [ -n "$ids" ] || { echo "(no failing test case in the log: crash or timeout)"; return 1; }
  while read -r id; do
    ok=0
    for g in $globs; do
      # shellcheck disable=SC2053
      [[ $id == $g ]] && { ok=1; break; }
    done
    [ $ok = 1 ] || { echo "$id"; return 1; }
  done <<<"$ids"
}

unexplained=0 same=0 explained=0 better=0
printf '%-20s | %-7s | %-7s | %s\n' module host sandbox note
printf '%s\n' "---------------------+---------+---------+------------------------------------------"
for m in $MODULES; do
  h=$(classify "$LOGDIR/host/$m.log" "$(cat "$LOGDIR/host/$m.rc")")
  s=$(classify "$LOGDIR/sandbox/$m.log" "$(cat "$LOGDIR/sandbox/$m.rc")")
  note=""
  if [ "$h" = "$s" ] || { [ "$h" != PASS ] && [ "$s" = PASS ]; }; then
    same=$((same + 1))
    [ "$h" != "$s" ] && { note="passes only in the sandbox (host: $(failed_cases "$LOGDIR/host/$m.log"))"; better=$((better + 1)); }
  elif [ "$h" = PASS ] || [ "$h" = SKIP ]; then
    if expected_field "$m" 2 >/dev/null && uncovered=$(covered_by_explanation "$m" "$LOGDIR/sandbox/$m.log"); then
      note="explained: $(expected_field "$m" 3) [policy: $(expected_field "$m" 4)]"
      explained=$((explained + 1))
    elif [ -n "${uncovered:-}" ]; then
      note="UNEXPLAINED: $uncovered fails too, beyond the explained cases (log: $LOGDIR/sandbox/$m.log)"
      unexplained=$((unexplained + 1))
    else
      cases=$(failed_cases "$LOGDIR/sandbox/$m.log")
      [ -z "$cases" ] && cases="status $(cat "$LOGDIR/sandbox/$m.rc"): $(grep -av '^$' "$LOGDIR/sandbox/$m.log" | tail -1 | cut -c1-80)"
      note="UNEXPLAINED: $cases (log: $LOGDIR/sandbox/$m.log)"
      unexplained=$((unexplained + 1))
    fi
  else
    same=$((same + 1))
  fi
  [ -n "${RETRIED[$m]:-}" ] && note="${note:+$note; }retried alone after status ${RETRIED[$m]} in the parallel run (first log: $LOGDIR/sandbox/$m.first.log)"
  printf '%-20s | %-7s | %-7s | %s\n' "$m" "$h" "$s" "$note"
done
echo
echo "summary: $(wc -w <<<"$MODULES") modules; same result $same (of which sandbox-only passes $better);" \
  "explained differences $explained; unexplained differences $unexplained"
echo "logs: $LOGDIR"
[ "$unexplained" -eq 0 ]
