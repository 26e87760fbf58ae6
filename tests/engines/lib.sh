# lib.sh: shared helpers of the engine suites (tests/engines/{podman,docker,containerd}.sh).
#
# Each suite starts one container engine with its own temp root, state and socket,
# imports the project's cached OCI images into it (nothing is downloaded), and runs every
# case twice: with runc (the reference) and with build/agentnest-oci.  A case passes when
# runc's result matches the case's expectation (so that a case cannot pass vacuously) and
# agentnest-oci's result is the same string.  Output is TAP-like; the last line is
# "ENGINE: N passed, N failed, N xfail, N skipped".
#
# Sourced, not run.  Needs: root, the suite's engine, skopeo, script(1), busybox (host).
# The suites run inside a network namespace made by run-engines.sh (unshare -n): nothing
# they do reaches the host's firewall, routes or sysctls.

set -uo pipefail

ENGINE=${ENGINE:?}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${AN_TEST_SRC:-$(cd "$HERE/../.." && pwd)}
BUILD=${AN_TEST_BUILD:-$SRC/build}
AN_OCI=$(readlink -f "$BUILD/agentnest-oci")
RUNC=$(command -v runc)
IMAGES=${AN_IMAGE_CACHE:-/var/cache/agentnest/images}
RESULTS=${AN_ENGINES_RESULTS:-}

N_PASS=0 N_FAIL=0 N_XFAIL=0 N_SKIP=0 N_CASE=0
# case name -> reason: a known, unfixed agentnest-oci bug; the case is reported as
# "not ok ... # TODO XFAIL reason" and not counted as a failure (XPASS once it passes).
# Set in a suite before its cases, e.g. XFAIL[init]="mount target through a symlink: ELOOP".
declare -A XFAIL=()
CLEANUPS=()              # commands run (last first) by cleanup_all, even on failure

# Temp dir of this suite: everything the engine writes lives below it.
T=$(mktemp -d "/tmp/an-engines-$ENGINE.XXXXXX") || exit 1
chmod 0711 "$T"
# The engines' helpers may write into their cwd (conmon leaves an "oom" file there).
cd "$T" || exit 1
CG=an-engines-$ENGINE-${T##*.}   # cgroup parent of every container of this run

log() { printf '# %s\n' "$*"; }

# Runtime path and name for RT=runc|agentnest.
rt_path() { if [ "$RT" = agentnest ]; then echo "$AN_OCI"; else echo "$RUNC"; fi; }

on_exit() { CLEANUPS+=("$*"); }

# Kill (by pid) every process whose command line names our temp dir and that
# is not this shell or one of its ancestors: daemons, shims, conmon, left containers.
kill_ours() {
  local p pids=() sig=${1:-TERM}
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [ "$p" = $$ ] || [ "$p" = "$BASHPID" ] && continue
    if tr '\0' ' ' 2>/dev/null < "/proc/$p/cmdline" | grep -qF -- "$T"; then pids+=("$p"); fi
  done
  [ ${#pids[@]} -gt 0 ] && kill -"$sig" "${pids[@]}" 2>/dev/null
  echo ${#pids[@]}
}

# Unmount everything below $T (deepest first) and remove our cgroups.
umount_ours() {
  local m
  for m in $(awk -v t="$T" 'index($5, t) == 1 { print $5 }' /proc/self/mountinfo | sort -r); do
    umount -l "$m" 2>/dev/null
  done
}
rm_cgroups() {
  local d
  for d in /sys/fs/cgroup/*/"$CG" /sys/fs/cgroup/"$CG"; do
    [ -d "$d" ] || continue
    find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
  done
}

cleanup_all() {
  local i
  trap - EXIT INT TERM
  for ((i = ${#CLEANUPS[@]} - 1; i >= 0; i--)); do (eval "${CLEANUPS[i]}") >/dev/null 2>&1; done
  if [ "$(kill_ours TERM)" != 0 ]; then
    for i in $(seq 1 50); do [ "$(kill_ours 0)" = 0 ] && break; sleep 0.2; done
    kill_ours KILL >/dev/null
  fi
  sleep 0.2
  umount_ours
  rm_cgroups
  [ -n "${KEEP_T:-}" ] || rm -rf "$T"
}
trap cleanup_all EXIT
trap 'exit 130' INT TERM

# wait_for SECONDS CMD...: poll CMD every 0.1 s until it succeeds.
wait_for() {
  local n=$(($1 * 10)); shift
  while ! "$@" >/dev/null 2>&1; do
    n=$((n - 1)); [ $n -gt 0 ] || return 1
    sleep 0.1
  done
}

# image_archive NAME: docker-archive tarball of the cached OCI layout NAME, tagged NAME:latest.
image_archive() {
  local out=$T/$1.docker.tar
  [ -f "$out" ] || skopeo copy -q "oci:$IMAGES/$1/layout" "docker-archive:$out:$1:latest" >&2 || return 1
  echo "$out"
}

# leftovers ID [PATH...]: what a removed container left: mounts naming ID or below a PATH,
# cgroups named after ID below our parent, processes naming ID.  Prints "none" or a list.
# Polls 5 s, for shims that exit just after rm returns.
leftovers_once() {
  local id=$1 p; shift
  {
    awk -v id="$id" 'index($0, id) { print "mount " $5 }' /proc/self/mountinfo
    for p in "$@"; do
      [ -n "$p" ] && awk -v t="$p" 'index($5, t) == 1 { print "mount " $5 }' /proc/self/mountinfo
    done
    find /sys/fs/cgroup/*/"$CG" /sys/fs/cgroup/"$CG" -type d -name "*$id*" 2>/dev/null | sed 's/^/cgroup /'
    for p in /proc/[0-9]*; do
      tr '\0' ' ' 2>/dev/null < "$p/cmdline" | grep -qF -- "$id" && echo "process ${p#/proc/}"
    done
  } | sort -u
}
leftovers() {
  local out i
  for i in $(seq 1 25); do
    out=$(leftovers_once "$@")
    [ -z "$out" ] && { echo none; return; }
    sleep 0.2
  done
  echo "$out" | head -5 | tr '\n' ';'
}

# A result without \r, trailing blanks and the engine's warnings that do not concern the
# case (dockerd runs with --ip-forward=false in the suite's netns, by design).
normalize() {
  tr -d '\r' | sed 's/[[:space:]]*$//' | grep -v '^WARNING: IPv4 forwarding is disabled'
}

# tcase NAME EXPECT FUNC [ARG...]: run FUNC with RT=runc and RT=agentnest; its stdout and
# stderr, with \r dropped, are its result.  EXPECT is an extended regex runc's result must
# match in full.  Pass: runc matches and agentnest's result equals runc's.
tcase() {
  local name=$1 expect=$2 r_runc r_an verdict; shift 2
  N_CASE=$((N_CASE + 1))
  r_runc=$(RT=runc "$@" 2>&1 | normalize)
  r_an=$(RT=agentnest "$@" 2>&1 | normalize)
  if ! printf '%s' "$r_runc" | tr '\n' '|' | grep -Eqx -- "$expect"; then
    verdict=fail
    printf 'not ok %d - %s %s: runc (the reference) gave an unexpected result\n' "$N_CASE" "$ENGINE" "$name"
  elif [ "$r_an" = "$r_runc" ]; then
    verdict=pass
    if [ -n "${XFAIL[$name]:-}" ]; then
      printf 'ok %d - %s %s # XPASS (listed as XFAIL: %s)\n' "$N_CASE" "$ENGINE" "$name" "${XFAIL[$name]}"
    else
      printf 'ok %d - %s %s\n' "$N_CASE" "$ENGINE" "$name"
    fi
  elif [ -n "${XFAIL[$name]:-}" ]; then
    verdict=xfail
    printf 'not ok %d - %s %s # TODO XFAIL %s %s: %s\n' "$N_CASE" "$ENGINE" "$name" "$ENGINE" "$name" "${XFAIL[$name]}"
  else
    verdict=fail
    printf 'not ok %d - %s %s: agentnest-oci differs from runc\n' "$N_CASE" "$ENGINE" "$name"
  fi
  if [ "$verdict" != pass ] || [ -n "${AN_ENGINES_VERBOSE:-}" ]; then
    printf '#   runc:      %s\n' "$(printf '%s' "$r_runc" | tr '\n' '|' | cut -c1-400)"
    printf '#   agentnest: %s\n' "$(printf '%s' "$r_an" | tr '\n' '|' | cut -c1-400)"
  fi
  case $verdict in
    pass) N_PASS=$((N_PASS + 1)) ;; xfail) N_XFAIL=$((N_XFAIL + 1)) ;; *) N_FAIL=$((N_FAIL + 1)) ;;
  esac
  [ -n "$RESULTS" ] && printf '%s\t%s\t%s\t%s\t%s\n' "$ENGINE" "$name" "$verdict" \
    "$(printf '%s' "$r_an" | tr '\n\t' '| ' | cut -c1-160)" \
    "$(printf '%s' "$r_runc" | tr '\n\t' '| ' | cut -c1-160)" >> "$RESULTS"
}

# tskip NAME REASON: an operation this engine's CLI does not have.
tskip() {
  N_CASE=$((N_CASE + 1)) N_SKIP=$((N_SKIP + 1))
  printf 'ok %d - %s %s # SKIP %s\n' "$N_CASE" "$ENGINE" "$1" "$2"
  [ -n "$RESULTS" ] && printf '%s\t%s\tskip\t%s\t%s\n' "$ENGINE" "$1" "$2" "$2" >> "$RESULTS"
}

# bail REASON: the engine could not be set up; counts as one failure.
bail() {
  N_CASE=$((N_CASE + 1)) N_FAIL=$((N_FAIL + 1))
  printf 'not ok %d - %s setup: %s\n' "$N_CASE" "$ENGINE" "$*"
  summary
  exit 1
}

# tty_session CMD...: run CMD under a real pseudo-terminal (script(1)); types
# 'tty', 'echo hello-$((6*7))' and 'exit 4' into it.  Prints the session's output
# lines that answer them and the exit status.
tty_session() {
  local out rc
  # bounded: a runtime that hangs fails the case (rc=124) instead of the
  # whole suite, whose cleanup then still runs
  out=$( { sleep 2; printf 'tty\n'; sleep 0.3; printf 'echo hello-$((6*7))\n'; sleep 0.3
           printf 'exit 4\n'; sleep 4; } | timeout -k 5 60 script -qefc "$(printf '%q ' "$@")" /dev/null 2>&1)
  rc=$?
  printf '%s\n' "$out" | tr -d '\r' | grep -E '^(/dev/pts/[0-9]+|hello-42)$' | sed 's|/dev/pts/[0-9]*|/dev/pts/N|'
  echo "rc=$rc"
}

# timing NAME CMD...: median wall time (ms) of N_TIMING runs of CMD for runc and for
# agentnest-oci, interleaved.  Printed, never asserted.
timing() {
  local name=$1 i rt t0 t1; shift
  declare -A ms=([runc]="" [agentnest]="")
  for i in $(seq 1 "${AN_ENGINES_TIMING_RUNS:-10}"); do
    for rt in runc agentnest; do
      t0=$(date +%s%N)
      RT=$rt "$@" >/dev/null 2>&1
      t1=$(date +%s%N)
      ms[$rt]+="$(((t1 - t0) / 1000000)) "
    done
  done
  local mr ma
  mr=$(printf '%s\n' ${ms[runc]} | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
  ma=$(printf '%s\n' ${ms[agentnest]} | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
  log "timing $ENGINE $name: median of ${AN_ENGINES_TIMING_RUNS:-10}: agentnest-oci ${ma} ms, runc ${mr} ms"
  [ -n "$RESULTS" ] && printf '%s\t%s\ttiming\t%s ms\t%s ms\n' "$ENGINE" "$name" "$ma" "$mr" >> "$RESULTS"
}

summary() {
  echo "$ENGINE: $N_PASS passed, $N_FAIL failed, $N_XFAIL xfail, $N_SKIP skipped"
}

# A tiny HTTP server in the suite's network namespace (never the host's), for the
# default-network cases: serves $T/www/ok on port 8080 of every address of this netns.
start_httpd() {
  mkdir -p "$T/www" && echo reached-host > "$T/www/ok"
  busybox httpd -f -p 8080 -h "$T/www" &
  on_exit "kill $!"
}

# The mounts below $T once the engine runs and holds its images (no container yet).
mounts_now() { awk -v t="$T" 'index($5, t) == 1 { print $5 }' /proc/self/mountinfo | sort; }
netns_now() { ls /run/netns 2>/dev/null | sort; }
snapshot_mounts() { mounts_now > "$T/mounts.base"; netns_now > "$T/netns.base"; }

# What all containers left once every one was removed: mounts and /run/netns entries
# (podman's CNI namespaces) beyond the baseline,
# cgroups below our parent (but podman's own, for its conmons), processes in them, shims
# and conmons still running.
# Needs `ncontainers` from the suite.
c_final() {
  local p out
  echo "containers=$(ncontainers)"
  out=$( {
    mounts_now | comm -13 "$T/mounts.base" - | sed 's/^/mount /'
    netns_now | comm -13 "$T/netns.base" - | sed 's|^|netns /run/netns/|'
    find /sys/fs/cgroup/*/"$CG" /sys/fs/cgroup/"$CG" -mindepth 1 -type d ! -path "*/$CG/conmon" 2>/dev/null |
      sed 's/^/cgroup /'
    for p in /proc/[0-9]*; do
      grep -qF -- "/$CG/" "$p/cgroup" 2>/dev/null && echo "process ${p#/proc/} in our cgroup"
      tr '\0' ' ' 2>/dev/null < "$p/cmdline" | grep -F -- "$T" | grep -qE 'shim|conmon' && echo "process ${p#/proc/} $(cat "$p/comm")"
    done
  } | sort -u | head -5 | tr '\n' ';')
  echo "leftovers ${out:-none}"
}
