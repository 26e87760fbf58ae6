#!/bin/bash
# tests/bench/bench.sh — `make bench`: AgentNest's numbers side by side with
# crun and runc, measured in one run on one machine (DESIGN.md "Numbers we
# hold ourselves to").  Prints a table and writes build/bench/results.json.
#
# Usage: tests/bench/bench.sh [--quick] [--out FILE] [--no-density] [--oci-only]   (as root)
#   --quick       CI smoke mode (~2 min): few runs, N=10 density, 1 MB workspace.
#                 Asserts only that every metric is present with numbers (or an
#                 explicit "n/a (reason)"); never that a time is below a bound.
#   --out FILE    JSON output (default $BUILD/bench/results.json)
#   --no-density  skip cost growth and density (the long part of a full run)
#   --oci-only    only the runtime comparison: agentnest-oci vs crun vs runc
#                 (and the floors); every sandbox-layer row is "n/a (--oci-only)"
# Env: BUILD (default build), AN_IMAGES (default /var/cache/agentnest/images),
#      IMAGE (default python, the default image), KEEP=1 keeps the work dir,
#      BENCH_PRUNE=1 always runs `agentnest prune --all` at cleanup (see below),
#      BENCH_SIZES workspace sizes in MB (default "1 100 1024", quick "1"), BENCH_DENSITY
#      sandbox counts N (default "100 500 1000", quick "10"), BENCH_BATCH_N jobs of the
#      batch rows (default 1000, quick 40).
#
# Every sandbox lives in a private store (--root under a temp dir), so the
# benchmark never touches the host's sandboxes.  Cleanup (also on INT/TERM):
# destroy every sandbox of that store, delete the reference containers, then
# verify no agentnest cgroup sb-<id> of ours and no mount under the work dir
# remains; `agentnest prune --all` runs only if something remained (or with
# BENCH_PRUNE=1), because prune's orphan-cgroup sweep is not scoped to one
# store and would kill sandboxes of other stores running on the same host.
#
# Statistics: per-run wall times from hyperfine --export-json (or bash's
# $EPOCHREALTIME for the density loops); median, p95 (nearest rank), min, max
# computed with jq.  Not a test of speed: nothing here compares a time to a
# bound except the "targets" summary, which only reports met / not met.
set -uo pipefail

QUICK=0; DENSITY=1; OCI_ONLY=0; OUT=
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --no-density) DENSITY=0 ;;
    --oci-only) OCI_ONLY=1; DENSITY=0 ;;
    --out) OUT=$2; shift ;;
    -h|--help) sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

cd "$(dirname "$0")/../.." || exit 2
BUILD=${BUILD:-build}
OUT=${OUT:-$BUILD/bench/results.json}
AN_IMAGES=${AN_IMAGES:-/var/cache/agentnest/images}
IMAGE=${IMAGE:-python}
[ "$(id -u)" = 0 ] || { echo "bench: must run as root" >&2; exit 2; }
for t in hyperfine jq awk; do
  command -v "$t" >/dev/null || { echo "bench: $t is not installed (make deps)" >&2; exit 2; }
done

if [ "$QUICK" = 1 ]; then
  RUNS=5; WARM=1; RUNS_SLOW=3; RUNS_IMPORT=1; SIZES=${BENCH_SIZES:-1}; DENS_NS=${BENCH_DENSITY:-10}; GROWTH_AT="1 5 10"
  EXEC_AT_RUNS=3; THRU_N=5
else
  RUNS=100; WARM=5; RUNS_SLOW=10; RUNS_IMPORT=3; SIZES=${BENCH_SIZES:-1 100 1024}; DENS_NS=${BENCH_DENSITY:-100 500 1000}
  GROWTH_AT="1 100 500 1000"; EXEC_AT_RUNS=20; THRU_N=50
fi

AN=$(realpath -m "$BUILD/agentnest"); OCI=$(realpath -m "$BUILD/agentnest-oci")
WORK=$(mktemp -d /tmp/an-bench-$$-XXXXXX); chmod 755 "$WORK"
R=$WORK/root                       # the benchmark's private sandbox store
ROWS=$WORK/rows.jsonl; : >"$ROWS"
DENS=$WORK/density.jsonl; : >"$DENS"
GROW=$WORK/growth.jsonl; : >"$GROW"
mkdir -p "$R" "$(dirname "$OUT")"
ANR="$AN --root $R"
START_TS=$(date -u +%FT%TZ)
log() { printf '[bench %s] %s\n' "$(date +%T)" "$*" >&2; }

# ---------------------------------------------------------------- cleanup
REF_CONTAINERS=()          # "runtime root id" triples to delete -f
cgroup_leftovers() {        # sb-<id> cgroups of sandboxes of our store
  local ids id d
  ids=$( { cat "$WORK"/ids.* 2>/dev/null; ls "$R/sandboxes" 2>/dev/null; } | sort -u)
  for id in $ids; do
    for d in /sys/fs/cgroup/*/agentnest/sb-"$id" /sys/fs/cgroup/agentnest/sb-"$id"; do
      [ -d "$d" ] && echo "$d"
    done
  done
  for d in /sys/fs/cgroup/*/agentnest/bench-$$ /sys/fs/cgroup/agentnest/bench-$$; do
    [ -d "$d" ] && echo "$d"
  done
}
mount_leftovers() { grep -F " $WORK" /proc/self/mountinfo | awk '{print $5}'; }
CLEANED=0
cleanup() {
  [ "$CLEANED" = 1 ] && return; CLEANED=1
  trap '' INT TERM
  declare -F eg_stop >/dev/null && eg_stop
  local ids left
  [ -x "$AN" ] && $ANR pool stop bench >/dev/null 2>&1
  ids=$( { cat "$WORK"/ids.* 2>/dev/null; [ -x "$AN" ] && $ANR ls --json 2>/dev/null | jq -r '.[].id' 2>/dev/null; } | sort -u)
  [ -n "$ids" ] && echo "$ids" | xargs -r -n 100 $ANR destroy >/dev/null 2>&1
  local t
  for t in "${REF_CONTAINERS[@]}"; do
    set -- $t; "$1" --root "$2" delete -f "$3" >/dev/null 2>&1
  done
  # runc and crun remove only their leaf (runc also in name=systemd): remove
  # the reference cgroup and the agentnest parents they leave, when empty
  rmdir /sys/fs/cgroup/*/agentnest/bench-$$ /sys/fs/cgroup/agentnest/bench-$$ \
        /sys/fs/cgroup/*/agentnest /sys/fs/cgroup/agentnest 2>/dev/null
  left=$(cgroup_leftovers; mount_leftovers)
  if [ -n "$left" ] || [ "${BENCH_PRUNE:-0}" = 1 ]; then
    [ -n "$left" ] && log "leftovers after destroy, running prune --all: $(echo $left)"
    $ANR prune --all >/dev/null 2>&1
    for d in $(cgroup_leftovers); do find "$d" -depth -type d -exec rmdir {} + 2>/dev/null; done
    left=$(cgroup_leftovers; mount_leftovers)
  fi
  if [ -n "$left" ]; then
    CLEAN_STATUS="leftovers: $(echo $left)"; log "NOT clean: $left"
  else
    CLEAN_STATUS="clean"
  fi
}
on_exit() {
  cleanup
  if [ "${KEEP:-0}" = 1 ]; then log "kept $WORK"; else rm -rf "$WORK" 2>/dev/null; fi
}
trap on_exit EXIT
trap 'log interrupted; exit 130' INT TERM

# ---------------------------------------------------------------- statistics
# stats: JSON array of seconds on stdin -> {runs, median, p95, min, max} in ms.
JQ_STATS='def ms: . * 1000000 | round / 1000;
  def stats: sort as $s | ($s|length) as $n
    | if $n == 0 then {runs: 0} else
      {runs: $n,
       median: ((if $n % 2 == 1 then $s[($n-1)/2] else ($s[$n/2-1] + $s[$n/2]) / 2 end) | ms),
       p95: ($s[((0.95 * $n) | ceil) - 1] | ms), min: ($s[0] | ms), max: ($s[-1] | ms)} end;'

# row GROUP METRIC UNIT TIMES_JSON [EXTRA_JSON]: append a measured row.
row() {
  jq -nc --arg g "$1" --arg m "$2" --arg u "$3" --argjson t "$4" --argjson x "${5:-{\}}" --argjson cpu "${CUR_CPU:-null}" \
    "$JQ_STATS"' {group: $g, metric: $m, unit: $u, status: "ok"} + ($t | stats) + {cpu_ms: $cpu} + $x' >>"$ROWS"
  CUR_CPU=
}
# na GROUP METRIC REASON: a row that could not be measured at this stage.
na() {
  jq -nc --arg g "$1" --arg m "$2" --arg r "$3" '{group: $g, metric: $m, status: "n/a", reason: $r}' >>"$ROWS"
  log "n/a: $2 ($3)"
}
published() {
  jq -nc --arg m "$1" --argjson v "$2" \
    '{group: "published", metric: $m, unit: "ms", status: "published, not measured",
      median: $v, note: "AgentNest-on-Docker p50 on a laptop"}' >>"$ROWS"
}
median_of() {  # METRIC -> median ms of an ok row, or empty
  jq -r --arg m "$1" 'select(.metric == $m and .status == "ok") | .median' "$ROWS" | tail -1
}
# hf NAME JSON CMD [HYPERFINE OPTS...]: time CMD, return per-run seconds as JSON.
HF_TIMES='[]'
hf() {
  local name=$1 cmd=$2; shift 2
  local j=$WORK/hf-$RANDOM.json
  if ! hyperfine --style none -N --export-json "$j" -n "$name" "$@" "$cmd" \
       </dev/null >"$WORK/hf.log" 2>&1; then
    HF_ERR=$(grep -v '^\s*$' "$WORK/hf.log" | tail -3 | tr '\n' ' ' | cut -c1-200)
    return 1
  fi
  HF_TIMES=$(jq -c ".results[0].times" "$j")
  CUR_CPU=$(jq -c ".results[0] | (.user + .system) * 1000000 | round / 1000" "$j")
}
# probe CMD: run once; on failure set PROBE_ERR to its last stderr line.
probe() {
  local e=$WORK/probe.err
  : >"$WORK/rt.err"
  if sh -c "$1" </dev/null >/dev/null 2>"$e"; then return 0; fi
  PROBE_ERR=$(cat "$e" "$WORK/rt.err" 2>/dev/null | grep -v '^\s*$' | tail -1 | cut -c1-160)
  PROBE_ERR=${PROBE_ERR:-exit status non-zero}
  return 1
}
# measure GROUP METRIC CMD [ROWEXTRA] [HYPERFINE OPTS...]: probe, time, add a row.
measure() {
  local g=$1 m=$2 cmd=$3 x=${4:-{\}}; shift 4 2>/dev/null || shift $#
  if ! probe "$cmd"; then na "$g" "$m" "failed: $PROBE_ERR"; return 1; fi
  log "measuring $m"
  if ! hf "$m" "$cmd" --runs "${MRUNS:-$RUNS}" --warmup "${MWARM:-$WARM}" "$@"; then na "$g" "$m" "failed: $HF_ERR"; return 1; fi
  row "$g" "$m" ms "$HF_TIMES" "$x"
}

have_an_cmd() { [ -x "$AN" ] && "$AN" "$1" --help >/dev/null 2>&1; }
meminfo_kb() { awk -v k="$1:" '$1 == k {print $2}' /proc/meminfo; }

# ---------------------------------------------------------------- reference bundle
log "work dir $WORK, mode $([ $QUICK = 1 ] && echo quick || echo full)"
B=$WORK/bundle
mkdir -p "$B/rootfs/bin" "$B/rootfs/proc" "$B/rootfs/sys" "$B/rootfs/dev" "$B/rootfs/tmp" "$B/rootfs/etc"
BB=
if [ -x "$AN_IMAGES/busybox/rootfs/bin/busybox" ]; then BB=$AN_IMAGES/busybox/rootfs/bin/busybox
elif command -v busybox >/dev/null; then BB=$(command -v busybox); fi
OCI_OK=1; OCI_WHY=
if [ ! -x "$OCI" ]; then OCI_OK=0; OCI_WHY="agentnest-oci not built"
elif [ -z "$BB" ]; then OCI_OK=0; OCI_WHY="no busybox (make images)"
else
  cp "$BB" "$B/rootfs/bin/busybox"
  for l in sh true sleep; do ln -sf busybox "$B/rootfs/bin/$l"; done
  if ! "$OCI" spec --bundle "$B" 2>"$WORK/spec.err"; then OCI_OK=0; OCI_WHY="agentnest-oci spec failed"
  else
    # crun 1.8 accepts only ociVersion 1.0.x; cgroups under the agentnest subtree.
    jq --arg cg "/agentnest/bench-$$" '.ociVersion = "1.0.2" | .process.args = ["true"]
        | .process.terminal = false | .linux.cgroupsPath = $cg' "$B/config.json" >"$B/c.json" &&
      mv "$B/c.json" "$B/config.json"
  fi
fi
# The crun 1.8 workaround for hybrid hosts, applied to all three runtimes; the
# wrapper alone is measured too ("wrapper") so its cost can be subtracted.
PRE=; grep -q ' /sys/fs/cgroup/unified ' /proc/self/mountinfo && PRE='mount -t tmpfs tmpfs /sys/fs/cgroup/unified && '
# Each runtime's stdin, stdout and stderr are files of ours, never the host's
# /dev/null: crun 1.8 chowns its stdio to the container's root (uid 100000
# here), and hyperfine connects commands to /dev/null (oci_diff_test asserts
# the host's stays root's).  probe reads the runtime's errors from rt.err.
: >"$WORK/stdin"
wrap() { printf "unshare -m sh -c 'exec <%s >%s 2>>%s; %s%s'" "$WORK/stdin" "$WORK/rt.out" \
           "$WORK/rt.err" "$PRE" "$1"; }
declare -A RT_BIN=([agentnest-oci]="$OCI" [crun]=crun [runc]=runc)
RTS="agentnest-oci crun runc"
rt_ok() { [ "$1" = agentnest-oci ] && [ "$OCI_OK" = 1 ] && return 0
          [ "$1" != agentnest-oci ] && [ "$OCI_OK" = 1 ] && command -v "$1" >/dev/null; }
rt_why() { [ "$OCI_OK" = 1 ] && echo "$1 not installed" || echo "$OCI_WHY"; }

# ---------------------------------------------------------------- 1. OCI runtimes
G=oci
if [ "$OCI_OK" = 1 ]; then measure $G "wrapper (unshare -m + tmpfs mount + sh)" "$(wrap "exec true")" '{"note":"cost included in every OCI row"}'
else na $G "wrapper (unshare -m + tmpfs mount + sh)" "$OCI_WHY"; fi
for rt in $RTS; do
  if rt_ok $rt; then
    measure $G "$rt run (busybox true)" "$(wrap "exec ${RT_BIN[$rt]} --root $WORK/st-$rt run --bundle $B r-$rt-$$")" '{}'
  else na $G "$rt run (busybox true)" "$(rt_why $rt)"; fi
done
for rt in $RTS; do
  if rt_ok $rt; then
    b=${RT_BIN[$rt]}; s=$WORK/st-$rt; id=c-$rt-$$
    REF_CONTAINERS+=("$b $s $id")
    measure $G "$rt create+start+delete" "$(wrap "$b --root $s create --bundle $B $id && $b --root $s start $id && exec $b --root $s delete -f $id")" '{}'
  else na $G "$rt create+start+delete" "$(rt_why $rt)"; fi
done
# exec into a running reference container (busybox sleep), each runtime in turn.
mkdir -p "$WORK/bsleep"
[ -f "$B/config.json" ] && jq --arg r "$B/rootfs" '.process.args = ["sleep", "100000"] | .root.path = $r' \
  "$B/config.json" >"$WORK/bsleep/config.json"
for rt in $RTS; do
  if rt_ok $rt; then
    b=${RT_BIN[$rt]}; s=$WORK/st-$rt; id=x-$rt-$$
    REF_CONTAINERS+=("$b $s $id")
    if sh -c "$(wrap "exec $b --root $s run -d --bundle $WORK/bsleep $id")" </dev/null >/dev/null 2>"$WORK/rd.err"; then
      measure $G "$rt exec (true)" "$(wrap "exec $b --root $s exec $id true")" '{}'
    else na $G "$rt exec (true)" "run -d failed: $(tail -1 "$WORK/rt.err")"; fi
    $b --root "$s" delete -f "$id" >/dev/null 2>&1
  else na $G "$rt exec (true)" "$(rt_why $rt)"; fi
done

# ---------------------------------------------------------------- floors
G=floor
measure $G "fork+exec /bin/true" "/bin/true" '{"note":"DESIGN floor ~0.8 ms"}'
measure $G "unshare -n true (new netns)" "unshare -n /bin/true" '{"note":"DESIGN floor ~3 ms"}'
# bubblewrap's one-shot on the same busybox rootfs: new namespaces (user, pid, net, ipc,
# uts, cgroup, mount), the rootfs read-only, /proc and /dev; no cgroups, seccomp, monitor,
# workspace or egress.  The project's aim: agentnest run within 2x of it.
BWRAP_ROW="bubblewrap one-shot (busybox true)"
if command -v bwrap >/dev/null && [ -x "$B/rootfs/bin/busybox" ]; then
  measure $G "$BWRAP_ROW" "bwrap --unshare-all --die-with-parent --ro-bind $B/rootfs / --proc /proc --dev /dev /bin/true" \
    '{"note":"namespaces only: no cgroups, seccomp, monitor, workspace or egress"}'
else na $G "$BWRAP_ROW" "bwrap not installed or no busybox rootfs"; fi

# ---------------------------------------------------------------- sandbox layer
SB_OK=1; SB_WHY=
if [ "$OCI_ONLY" = 1 ]; then SB_OK=0; SB_WHY="--oci-only"
elif ! have_an_cmd run; then SB_OK=0; SB_WHY="agentnest run not available (sandbox CLI not built/merged)"
elif [ ! -d "$AN_IMAGES/$IMAGE/layout" ]; then SB_OK=0; SB_WHY="no image $AN_IMAGES/$IMAGE/layout (make images)"
elif ! $ANR image import "$AN_IMAGES/$IMAGE/layout" --name "$IMAGE" >/dev/null 2>"$WORK/imp.err"; then
  SB_OK=0; SB_WHY="image import failed: $(tail -1 "$WORK/imp.err")"
fi
SBO="--image $IMAGE"
G=sandbox
if [ "$SB_OK" = 1 ]; then
  measure $G "agentnest run -- true" "$ANR run $SBO -- true" '{}'
  measure $G "agentnest run -- true, calls 0.2 s apart" "$ANR run $SBO -- true" \
    '{"note":"hyperfine --prepare \"sleep 0.2\" (not timed): calls spaced as an agent makes them"}' --prepare "sleep 0.2"
  # one-shot from a warm pool (agentnest-pool(1)); --pool-only: a run that
  # finds the pool empty fails instead of going cold; the keeper refills
  # between runs (hyperfine --prepare, not timed)
  if have_an_cmd pool && $ANR pool start bench --size 4 $SBO >/dev/null 2>"$WORK/pool.err"; then
    measure $G "pooled run -- true" "$ANR run --pool bench --pool-only -- true" \
      '{"note":"agentnest run --pool (warm pool of 4, refilled between runs)"}' --prepare "sleep 0.2"
    $ANR pool stop bench >/dev/null 2>&1
  else na $G "pooled run -- true" "pool start failed: $(tail -1 "$WORK/pool.err" 2>/dev/null)"; fi
  # egress (issue 12): netns, ruleset, DNS filter and proxy made and removed per run
  measure $G "agentnest run --network allowlist -- true" \
    "$ANR run $SBO --network allowlist --allow pkg.example -- true" '{"note":"compare with agentnest run -- true (target: at most +5 ms)"}'
  if have_an_cmd python; then
    measure $G "agentnest python 'pass'" "$ANR python $SBO pass" '{"note":"`agentnest python CODE` (the CLI has no -c; CODE runs as python3 -c CODE)"}'
  else na $G "agentnest python 'pass'" "agentnest python not available"; fi
else
  na $G "agentnest run -- true" "$SB_WHY"; na $G "agentnest python 'pass'" "$SB_WHY"
  na $G "agentnest run --network allowlist -- true" "$SB_WHY"
fi

# exec into one live sandbox, sequential and 2 clients at once.
LIVE=
if [ "$SB_OK" = 1 ] && have_an_cmd create && $ANR create $SBO --timeout 2h >"$WORK/ids.exec" 2>"$WORK/c.err"; then
  LIVE=$(head -1 "$WORK/ids.exec")
fi
if [ -n "$LIVE" ]; then
  measure $G "agentnest exec (true)" "$ANR exec $LIVE -- true" '{}'
  # as an agent calls it: not back to back (a lone call pays what a burst can share,
  # e.g. a kernel RCU grace period); the sleep is hyperfine --prepare, not timed
  measure $G "agentnest exec (true), calls 0.2 s apart" "$ANR exec $LIVE -- true" \
    '{"note":"hyperfine --prepare \"sleep 0.2\" (not timed): calls spaced as an agent makes them"}' --prepare "sleep 0.2"
  measure $G "agentnest exec x2 concurrent (wall time of the pair)" \
    "sh -c '$ANR exec $LIVE -- true & $ANR exec $LIVE -- true & wait'" \
    '{"note":"ratio to sequential exec: 1 = fully parallel, 2 = serialized"}'
else
  why=${SB_WHY:-create failed: $(tail -1 "$WORK/c.err" 2>/dev/null)}
  na $G "agentnest exec (true)" "$why"; na $G "agentnest exec x2 concurrent (wall time of the pair)" "$why"
fi

# egress data path: a DNS lookup through the filter, TCP throughput (issue 12)
. tests/bench/egress_rows.sh   # (the cwd is the repository root)

# a call of `pass` in a live Python session vs exec of python3 -c pass (issue 13
# item 1; DESIGN: a session call under 1 ms beyond the interpreter's own work)
if [ -n "$LIVE" ] && have_an_cmd session && $ANR session start "$LIVE" --name bench >/dev/null 2>"$WORK/s.err"; then
  measure $G "agentnest session run (python 'pass')" "$ANR session run $LIVE bench pass" \
    '{"note":"one call in a live session; compare the published Docker session call (24 ms)"}'
  measure $G "agentnest exec python3 -c pass" "$ANR exec $LIVE -- python3 -c pass" \
    '{"note":"the same work as a fresh interpreter per call"}'
  # the same call through the library (tests/bench/session_call.c), built
  # with the Makefile's CFLAGS and LIBS against $BUILD/libagentnest.a
  vars=$(printf 'print-vars:\n\t@echo "$(CFLAGS)"\n\t@echo "$(LDFLAGS) $(LIBS)"\n' | make -s -f Makefile -f - print-vars)
  # shellcheck disable=SC2086
  if cc $(sed -n 1p <<<"$vars") -o "$WORK/session_call" tests/bench/session_call.c "$BUILD/libagentnest.a" \
       $(sed -n 2p <<<"$vars") 2>"$WORK/sc.err" &&
     AGENTNEST_INIT=$(realpath -m "$BUILD/agentnest-init") "$WORK/session_call" "$R" "$LIVE" bench "$RUNS" \
       >"$WORK/sc.json" 2>>"$WORK/sc.err"; then
    row $G "library session call (python 'pass', handle kept open)" ms "$(jq -c .kept "$WORK/sc.json")" \
      '{"note":"an_session_run on an open sandbox handle (what a front end holding the sandbox pays): attach, the call, the fsync-ed audit record"}'
    row $G "library session call (python 'pass', open + call + close)" ms "$(jq -c .open "$WORK/sc.json")" '{}'
  else
    why="session_call: $(tail -1 "$WORK/sc.err" 2>/dev/null)"
    na $G "library session call (python 'pass', handle kept open)" "$why"
    na $G "library session call (python 'pass', open + call + close)" "$why"
  fi
else
  why=${SB_WHY:-session start failed: $(tail -1 "$WORK/s.err" 2>/dev/null)}
  [ -n "$LIVE" ] || why=${SB_WHY:-no live sandbox}
  na $G "agentnest session run (python 'pass')" "$why"; na $G "agentnest exec python3 -c pass" "$why"
  na $G "library session call (python 'pass', handle kept open)" "$why"
  na $G "library session call (python 'pass', open + call + close)" "$why"
fi

# agent front ends (issue 14): an MCP run_code / exec round trip and an HTTP exec
# round trip, each timed by one client on one connection (tests/bench/frontends.py),
# against `agentnest exec (true)` above (the CLI: a process per call); and the
# requests/s `agentnest serve` holds for GET /v1/sandboxes/ID (wrk, loopback, bounded).
G=frontends
FE_N=$([ "$QUICK" = 1 ] && echo 10 || echo 100)
FE_PY=$(dirname "$0")/frontends.py
fe_row() {  # METRIC JSON-KEY FILE NOTE
  local t; t=$(jq -c --arg k "$2" '.[$k]' "$3" 2>/dev/null)
  if [ -n "$t" ] && [ "$t" != null ]; then row $G "$1" ms "$t" "$(jq -nc --arg n "$4" '{note: $n}')"
  else na $G "$1" "no times: $(tail -1 "$WORK/fe.err" 2>/dev/null)"; fi
}
FE_CLI="compare with agentnest exec (true): the CLI starts a process per call"
if [ "$SB_OK" = 1 ] && have_an_cmd mcp && command -v python3 >/dev/null; then
  log "measuring MCP round trips"
  AN_BENCH_IMAGE=$IMAGE python3 "$FE_PY" mcp "$AN" "$R" "$FE_N" >"$WORK/fe-mcp.json" 2>"$WORK/fe.err"
  fe_row "MCP run_code round trip (shell true, in a sandbox)" run_code "$WORK/fe-mcp.json" "$FE_CLI"
  fe_row "MCP exec round trip (true)" exec "$WORK/fe-mcp.json" "$FE_CLI"
else
  for m in "MCP run_code round trip (shell true, in a sandbox)" "MCP exec round trip (true)"; do
    na $G "$m" "${SB_WHY:-agentnest mcp or python3 not available}"; done
fi
FE_PORT=$((20000 + $$ % 20000)); FE_TOK=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
(umask 077; echo "$FE_TOK bench" >"$WORK/fe-tokens")
FE_SRV=
if [ "$SB_OK" = 1 ] && have_an_cmd serve; then
  $ANR serve --tokens "$WORK/fe-tokens" --listen "127.0.0.1:$FE_PORT" --quiet 2>"$WORK/fe-serve.err" &
  FE_SRV=$!
  for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$FE_PORT/v1/openapi.json" && break; sleep 0.1; done
fi
if [ -n "$FE_SRV" ] && command -v python3 >/dev/null; then
  log "measuring the HTTP exec round trip"
  AN_BENCH_IMAGE=$IMAGE python3 "$FE_PY" http "http://127.0.0.1:$FE_PORT" "$FE_TOK" "$FE_N" >"$WORK/fe-http.json" 2>"$WORK/fe.err"
  fe_row "HTTP exec round trip (true, keep-alive)" exec "$WORK/fe-http.json" "$FE_CLI"
else na $G "HTTP exec round trip (true, keep-alive)" "${SB_WHY:-agentnest serve or python3 not available}"; fi
FE_ID=
[ -n "$FE_SRV" ] && FE_ID=$(curl -s -H "Authorization: Bearer $FE_TOK" -d "{\"image\":\"$IMAGE\"}" \
  "http://127.0.0.1:$FE_PORT/v1/sandboxes" | jq -r '.id // empty')
if [ -n "$FE_ID" ] && command -v wrk >/dev/null; then
  log "measuring serve requests/s (wrk)"
  d=$([ "$QUICK" = 1 ] && echo 3s || echo 10s)
  wrk -t2 -c16 -d"$d" --timeout 10s -H "Authorization: Bearer $FE_TOK" \
    "http://127.0.0.1:$FE_PORT/v1/sandboxes/$FE_ID" >"$WORK/wrk.out" 2>&1
  rps=$(awk '/^Requests\/sec:/ {print $2}' "$WORK/wrk.out")
  non2xx=$(awk '/Non-2xx/ {print $NF}' "$WORK/wrk.out")
  if [ -n "$rps" ]; then
    jq -nc --arg g $G --argjson r "$rps" --arg d "$d" --argjson bad "${non2xx:-0}" \
      '{group: $g, metric: "serve requests/s (GET /v1/sandboxes/ID, wrk -t2 -c16)", unit: "req/s", status: "ok",
        median: $r, duration: $d, non_2xx: $bad, note: "each request forks a worker (api.h)"}' >>"$ROWS"
  else na $G "serve requests/s (GET /v1/sandboxes/ID, wrk -t2 -c16)" "wrk: $(tail -1 "$WORK/wrk.out")"; fi
else na $G "serve requests/s (GET /v1/sandboxes/ID, wrk -t2 -c16)" "${SB_WHY:-no server sandbox or no wrk}"; fi
# SIGTERM: serve destroys what it made
[ -n "$FE_SRV" ] && { kill -TERM "$FE_SRV"; wait "$FE_SRV" 2>/dev/null; }

# sequential throughput: create + exec + destroy, back to back.
G=throughput
thr() {  # METRIC CMD: THRU_N back-to-back cycles timed with hyperfine; rate = 1/mean
  local m=$1 cmd=$2
  if ! probe "$cmd"; then na $G "$m" "failed: $PROBE_ERR"; return; fi
  log "measuring $m"
  if hf "$m" "$cmd" --runs "$THRU_N" --warmup 1; then
    row $G "$m" ms "$HF_TIMES" "$(jq -nc --argjson t "$HF_TIMES" '{rate_per_s: (($t|length) / ($t|add) * 100 | round / 100)}')"
  else na $G "$m" "failed: $HF_ERR"; fi
}
if [ "$SB_OK" = 1 ] && [ -n "$LIVE" ]; then
  thr "sandboxes/s: create, exec true, destroy" \
      "sh -c 'id=\$($ANR create $SBO) && $ANR exec \$id -- true; $ANR destroy \$id >/dev/null'"
  thr "sandboxes/s: one-shot run -- true" "$ANR run $SBO -- true"
else
  na $G "sandboxes/s: create, exec true, destroy" "${SB_WHY:-no live sandbox}"
  na $G "sandboxes/s: one-shot run -- true" "${SB_WHY:-no live sandbox}"
fi

# batch: BATCH_N `true` jobs through `agentnest batch -j2`, and the same jobs as
# the `xargs -P2 agentnest run` loop batches replace, measured in this run
# (rate = BATCH_N / wall time; the ratio of the two medians is the ratio per job).
G=batch
BATCH_N=${BENCH_BATCH_N:-1000}; BATCH_RUNS=3
[ "$QUICK" = 1 ] && { BATCH_N=${BENCH_BATCH_N:-40}; BATCH_RUNS=1; }
batch_row() {  # METRIC CMD PROBE_CMD
  local m=$1 cmd=$2
  if ! probe "$3"; then na $G "$m" "failed: $PROBE_ERR"; return; fi
  log "measuring $m"
  if hf "$m" "$cmd" --runs "$BATCH_RUNS"; then
    row $G "$m" ms "$HF_TIMES" "$(jq -nc --argjson t "$HF_TIMES" --argjson n "$BATCH_N" \
      '($t | sort | .[(length - 1) / 2 | floor]) as $med
       | {jobs: $n, rate_per_s: ($n / $med * 100 | round / 100), ms_per_job: ($med * 1000 / $n * 100 | round / 100)}')"
  else na $G "$m" "failed: $HF_ERR"; fi
}
BM_BATCH="batch: $BATCH_N true jobs, agentnest batch -j2"
BM_XARGS="batch: $BATCH_N true jobs, xargs -P2 agentnest run"
if [ "$SB_OK" = 1 ] && have_an_cmd batch; then
  jf=$WORK/batch-jobs.jsonl
  seq 1 "$BATCH_N" | awk '{printf "{\"id\":\"t%d\",\"cmd\":[\"true\"]}\n", $1}' >"$jf"
  head -2 "$jf" >"$WORK/batch-probe.jsonl"
  batch_row "$BM_BATCH" "$ANR batch -j2 $SBO --results $WORK/batch-res.jsonl $jf" \
    "$ANR batch -j2 $SBO --results $WORK/batch-res.jsonl $WORK/batch-probe.jsonl"
  batch_row "$BM_XARGS" "sh -c 'seq 1 $BATCH_N | xargs -P2 -I{} $ANR run $SBO --json -- true >/dev/null'" \
    "sh -c 'seq 1 2 | xargs -P2 -I{} $ANR run $SBO --json -- true >/dev/null'"
else
  why=${SB_WHY:-agentnest batch not available}
  na $G "$BM_BATCH" "$why"; na $G "$BM_XARGS" "$why"
fi

# snapshot / restore / fork of a workspace of SIZE MB (random data).
G=workspace
for mb in $SIZES; do
  x=$(jq -nc --argjson mb "$mb" '{mb: $mb}')
  if [ -z "$LIVE" ] || ! have_an_cmd snapshot; then
    for op in snapshot restore fork; do na $G "$op ${mb} MB" "${SB_WHY:-snapshot/restore/fork not available}"; done
    continue
  fi
  r=$RUNS_SLOW; [ "$mb" -ge 1024 ] && r=3
  : >"$WORK/cp.err"
  # room for the blob and, while a restore runs, its staged copy (the default --disk 1g
  # cannot hold a 1024 MB blob with ext4's own overhead)
  id=$($ANR create $SBO --disk $((mb * 2 + 64))m --timeout 2h 2>"$WORK/c.err") && echo "$id" >>"$WORK/ids.ws"
  head -c $((mb * 1048576)) /dev/urandom >"$WORK/blob"
  if [ -z "$id" ] || ! $ANR cp "$WORK/blob" "$id:blob" >/dev/null 2>"$WORK/cp.err"; then
    why=$(cat "$WORK/cp.err" "$WORK/c.err" 2>/dev/null | grep -v "^\s*$" | tail -1)
    for op in snapshot restore fork; do na $G "$op ${mb} MB" "workspace setup failed: ${why:-create failed}"; done
    rm -f "$WORK/blob"
    continue
  fi
  rm -f "$WORK/blob"
  tar=$WORK/snap-$mb.tar
  ops=( "snapshot|$ANR snapshot $id $tar|"
        "restore|$ANR restore $id $tar|"
        "fork|sh -c '$ANR fork $id >>$WORK/ids.fork'|sh -c 'xargs -r $ANR destroy <$WORK/ids.fork >/dev/null; : >$WORK/ids.fork'" )
  for o in "${ops[@]}"; do
    IFS='|' read -r op cmd prep <<<"$o"
    m="$op ${mb} MB"
    if ! probe "$cmd"; then na $G "$m" "failed: $PROBE_ERR"; continue; fi
    log "measuring $m"
    if [ -n "$prep" ]; then hf "$m" "$cmd" --runs "$r" --prepare "$prep"; else hf "$m" "$cmd" --runs "$r"; fi \
      && row $G "$m" ms "$HF_TIMES" "$(jq -nc --argjson t "$HF_TIMES" --argjson mb "$mb" \
           '{mb: $mb, mb_per_s: ($mb / ($t | sort | .[(length - 1) / 2 | floor]) * 10 | round / 10)}')" \
      || na $G "$m" "failed: $HF_ERR"
  done
  [ -s "$WORK/ids.fork" ] && xargs -r $ANR destroy <"$WORK/ids.fork" >/dev/null 2>&1; : >"$WORK/ids.fork"
  $ANR destroy "$id" >/dev/null 2>&1; rm -f "$tar"
done

# image import of the default image into a fresh temp store each run; reference:
# GNU tar extracting the same layer blobs (no verification, no store).  Each run
# writes to a new directory and nothing is deleted until the group is done:
# ext4 without a journal skips inodes freed in the last minute at every
# allocation (fs/ext4/ialloc.c recently_deleted), so "rm -rf; extract" in a loop
# times the previous run's deletion, for tar as for the import.
G=image
if [ "$OCI_ONLY" = 1 ]; then
  na $G "agentnest image import $IMAGE" "--oci-only"; na $G "reference: tar -x of the same layers" "--oci-only"
elif have_an_cmd image && [ -d "$AN_IMAGES/$IMAGE/layout" ]; then
  L=$AN_IMAGES/$IMAGE/layout
  mkdir -p "$WORK/imp" "$WORK/tarx"
  MRUNS=$RUNS_IMPORT MWARM=0 measure $G "agentnest image import $IMAGE" \
    "sh -c 'exec $AN --root \$(mktemp -d $WORK/imp/XXXXXX) image import $L --name $IMAGE'" '{}'
  # the layers of the image, in manifest order
  mf=$(jq -r '.manifests[0].digest' "$L/index.json" | sed 's/:/\//')
  layers=$(jq -r '.layers[].digest' "$L/blobs/$mf" 2>/dev/null | sed "s|^sha256:|$L/blobs/sha256/|" | tr '\n' ' ')
  if [ -n "$layers" ]; then
    ex="sh -c 'd=\$(mktemp -d $WORK/tarx/XXXXXX) && for l in $layers; do tar -xf \$l -C \$d --no-same-owner 2>/dev/null || tar -xzf \$l -C \$d; done'"
    MRUNS=$RUNS_IMPORT MWARM=0 measure $G "reference: tar -x of the same layers" "$ex" '{}'
  else na $G "reference: tar -x of the same layers" "cannot read the manifest of $L"; fi
  rm -rf "$WORK/imp" "$WORK/tarx"
else
  na $G "agentnest image import $IMAGE" "agentnest image or $AN_IMAGES/$IMAGE/layout missing"
  na $G "reference: tar -x of the same layers" "no image layout"
fi

# ---------------------------------------------------------------- 2+3. growth and density
# density_pass N: create N idle sandboxes one by one (each create timed), measure
# memory, exec latency at the growth checkpoints (N=max pass only), destroy all.
MEMCG=
for d in /sys/fs/cgroup/memory/agentnest /sys/fs/cgroup/agentnest /sys/fs/cgroup/unified/agentnest; do
  [ -d "$d" ] && { MEMCG=$d; break; }
done
cg_usage_kb() {  # sum of memory usage (kB) of our sandboxes' cgroups
  local f id tot=0 v
  for id in "$@"; do
    for f in "$MEMCG/sb-$id/memory.usage_in_bytes" "$MEMCG/sb-$id/memory.current"; do
      [ -r "$f" ] && { read -r v <"$f"; tot=$((tot + v)); break; }
    done
  done
  echo $((tot / 1024))
}
proc_kb() {  # FIELD FILE PID...: sum of FIELD (kB) in /proc/PID/FILE (one awk for all)
  local field=$1 file=$2; shift 2
  local p files=()
  for p in "$@"; do [ -r "/proc/$p/$file" ] && files+=("/proc/$p/$file"); done
  [ ${#files[@]} -eq 0 ] && { echo 0; return; }
  cat "${files[@]}" 2>/dev/null | awk -v k="$field:" '$1 == k {s += $2} END {print s + 0}'
}
MAXN=0; for n in $DENS_NS; do [ "$n" -gt "$MAXN" ] && MAXN=$n; done
density_pass() {
  local n=$1 ids=$WORK/ids.dens-$1 lat=$WORK/lat-$1 i s e k
  : >"$ids"; : >"$lat"
  sync; sleep 1
  local slab0 pt0 ks0 avail0
  slab0=$(meminfo_kb Slab); pt0=$(meminfo_kb PageTables); ks0=$(meminfo_kb KernelStack); avail0=$(meminfo_kb MemAvailable)
  log "density: creating $n sandboxes"
  local t0=$EPOCHREALTIME
  for ((i = 1; i <= n; i++)); do
    s=$EPOCHREALTIME
    if ! $ANR create $SBO --timeout 2h >>"$ids" 2>"$WORK/c.err"; then
      log "density: create $i failed: $(tail -1 "$WORK/c.err")"; break
    fi
    e=$EPOCHREALTIME
    echo "$s $e" | awk '{printf "%.6f\n", $2 - $1}' >>"$lat"
    if [ "$n" = "$MAXN" ]; then
      for k in $GROWTH_AT; do
        [ "$k" = "$i" ] || continue
        local first; first=$(head -1 "$ids")
        if hf "exec@$k" "$ANR exec $first -- true" --runs "$EXEC_AT_RUNS" --warmup 1; then
          jq -nc --argjson k "$k" --argjson t "$HF_TIMES" --slurpfile l <(tail -10 "$lat" | jq -s .) \
            "$JQ_STATS"'{live: $k, create_last: ($l[0][-1] * 1000000 | round / 1000),
               create_window: ($l[0] | stats), exec: ($t | stats)}' >>"$GROW"
        fi
      done
    fi
  done
  local t1=$EPOCHREALTIME made; made=$(grep -c . "$ids")
  sleep 2; sync
  local slab1 pt1 ks1 avail1
  slab1=$(meminfo_kb Slab); pt1=$(meminfo_kb PageTables); ks1=$(meminfo_kb KernelStack); avail1=$(meminfo_kb MemAvailable)
  local lsj=$WORK/ls.json mons inits
  $ANR ls --json >"$lsj" 2>/dev/null || echo '[]' >"$lsj"
  mons=$(jq -r --rawfile ids "$ids" '($ids | split("\n")) as $m | .[] | select(.id as $i | $m | index($i)) | .monitor_pid // empty' "$lsj")
  inits=$(jq -r --rawfile ids "$ids" '($ids | split("\n")) as $m | .[] | select(.id as $i | $m | index($i)) | .init_pid // empty' "$lsj")
  local sbprocs id cgfiles=()
  for id in $(cat "$ids"); do [ -r "$MEMCG/sb-$id/cgroup.procs" ] && cgfiles+=("$MEMCG/sb-$id/cgroup.procs"); done
  sbprocs=$([ ${#cgfiles[@]} -gt 0 ] && cat "${cgfiles[@]}" 2>/dev/null | tr '\n' ' ')
  [ -z "$sbprocs" ] && sbprocs=$inits
  local mon_rss mon_pss sb_rss sb_pss cgu
  mon_rss=$(proc_kb VmRSS status $mons); mon_pss=$(proc_kb Pss smaps_rollup $mons)
  sb_rss=$(proc_kb VmRSS status $sbprocs); sb_pss=$(proc_kb Pss smaps_rollup $sbprocs)
  cgu=$(cg_usage_kb $(cat "$ids"))
  # counted now, before the destroy below (counted after it, a fast destroy
  # left only the monitors still exiting "alive")
  local nmon; nmon=$(n=0; for p in $mons; do [ -d /proc/$p ] && n=$((n + 1)); done; echo $n)
  log "density: destroying $made sandboxes"
  local d0=$EPOCHREALTIME
  xargs -r -n 100 $ANR destroy <"$ids" >/dev/null 2>"$WORK/d.err"
  local d1=$EPOCHREALTIME
  jq -nc --argjson n "$n" --argjson made "$made" --slurpfile l <(jq -s . "$lat") \
    --argjson ct "$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b - a}')" \
    --argjson dt "$(awk -v a="$d0" -v b="$d1" 'BEGIN{printf "%.3f", b - a}')" \
    --argjson slab $((slab1 - slab0)) --argjson pt $((pt1 - pt0)) --argjson ks $((ks1 - ks0)) \
    --argjson avail $((avail0 - avail1)) --argjson monrss "$mon_rss" --argjson monpss "$mon_pss" \
    --argjson sbrss "$sb_rss" --argjson sbpss "$sb_pss" --argjson cgu "$cgu" \
    --argjson nmon "$nmon" "$JQ_STATS"'
    ($nmon | if . > 0 then . else $made end) as $alive
    | def per: if $alive > 0 then . / $alive / 1024 * 1000 | round / 1000 else null end;  # kB -> MiB per live sandbox
    {n: $n, created: $made, alive_at_measurement: $nmon, create_all_s: $ct, destroy_all_s: $dt,
     create: ($l[0] | stats),
     per_sandbox_mib: {monitor_rss: ($monrss | per), monitor_pss: ($monpss | per),
       kernel_slab: ($slab | per), kernel_pagetables: ($pt | per), kernel_stack: ($ks | per),
       kernel_objects: (($slab + $pt + $ks) | per),
       own_processes_rss: ($sbrss | per), own_processes_pss: ($sbpss | per),
       cgroup_memory: ($cgu | per), host_memavailable_drop: ($avail | per),
       overhead_beyond_own: (($monpss + $slab + $pt + $ks) | per)}}' >>"$DENS"
  : >"$ids"
}
if [ "$DENSITY" = 1 ] && [ "$SB_OK" = 1 ] && have_an_cmd create; then
  for n in $DENS_NS; do density_pass "$n"; done
fi

# ---------------------------------------------------------------- cleanup + JSON
[ -n "$LIVE" ] && $ANR destroy "$LIVE" >/dev/null 2>&1
cleanup

published "Docker cold start (published)" 185
published "Docker exec (published)" 25
published "Docker session call (published)" 24
published "Docker pooled acquire (published)" 33

# ratios to the references measured in this run
M() { median_of "$1"; }
REFS=$(jq -nc \
  --arg crun_run "$(M 'crun run (busybox true)')" --arg runc_run "$(M 'runc run (busybox true)')" \
  --arg crun_cyc "$(M 'crun create+start+delete')" --arg runc_cyc "$(M 'runc create+start+delete')" \
  --arg crun_exec "$(M 'crun exec (true)')" --arg runc_exec "$(M 'runc exec (true)')" \
  --arg wrapper "$(M 'wrapper (unshare -m + tmpfs mount + sh)')" --arg an_exec "$(M 'agentnest exec (true)')" \
  --arg tar "$(M 'reference: tar -x of the same layers')" --arg true "$(M 'fork+exec /bin/true')" \
  --arg xargs "$(M "$BM_XARGS")" --arg bwrap "$(M "$BWRAP_ROW")" \
  '{bwrap: $bwrap, crun_run: $crun_run, runc_run: $runc_run, crun_cyc: $crun_cyc, runc_cyc: $runc_cyc, crun_exec: $crun_exec,
    runc_exec: $runc_exec, wrapper: $wrapper, an_exec: $an_exec, tar: $tar, true: $true, xargs: $xargs}
   | map_values(if . == "" then null else tonumber end)')
jq -s --argjson R "$REFS" --argjson quick "$QUICK" --slurpfile dens <(jq -s . "$DENS") \
  --slurpfile grow <(jq -s . "$GROW") --arg started "$START_TS" --arg image "$IMAGE" --arg clean "${CLEAN_STATUS:-unknown}" \
  --arg bm_batch "$BM_BATCH" --arg bm_xargs "$BM_XARGS" \
  --arg host "$(uname -r); $(nproc) cpus; $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)" \
  --arg versions "$(crun --version 2>/dev/null | head -1); $(runc --version 2>/dev/null | head -1); $(hyperfine --version)" '
  def r(a; b): if a == null or b == null or b == 0 then null else (a / b * 100 | round / 100) end;
  def refs($m):
    if ($m | test("^[a-z-]+ run \\(busybox")) then {crun: r(.median; $R.crun_run), runc: r(.median; $R.runc_run),
        crun_minus_wrapper: r(.median - $R.wrapper; $R.crun_run - $R.wrapper)}
    elif ($m | test("create\\+start\\+delete")) then {crun: r(.median; $R.crun_cyc), runc: r(.median; $R.runc_cyc)}
    elif ($m | test("^[a-z-]+ exec \\(true\\)$")) then {crun: r(.median; $R.crun_exec), runc: r(.median; $R.runc_exec)}
    elif ($m | test("^agentnest (run|python)")) then {crun_run: r(.median; $R.crun_run), bubblewrap: r(.median; $R.bwrap),
        "fork+exec true": r(.median; $R.true)}
    elif ($m | test("^agentnest exec \\(true\\)")) then {crun_exec: r(.median; $R.crun_exec), runc_exec: r(.median; $R.runc_exec)}
    elif ($m | test("concurrent")) then {sequential_exec: r(.median; $R.an_exec)}
    elif ($m | test("^sandboxes/s")) then {crun_run: r(.median; $R.crun_run)}
    elif ($m | test("image import")) then {tar_x: r(.median; $R.tar)}
    elif ($m | test("agentnest batch -j2$")) then {"xargs -P2 agentnest run": r(.median; $R.xargs)}
    else {} end;
  (map(if .status == "ok" then . + {ratios: (refs(.metric) | with_entries(select(.value != null)))} else . end)) as $rows
  | def med($m): ($rows[] | select(.metric == $m and .status == "ok") | .median) // null;
    ($dens[0]) as $d | ($d | map(select(.n == 1000)) | .[0]) as $d1000
  | {started: $started, quick: ($quick == 1), host: $host, versions: $versions, cleanup: $clean,
     metrics: $rows, growth: $grow[0], density: $d,
     targets: [
      {target: "agentnest-oci run <= 0.5 x crun median", value: r(med("agentnest-oci run (busybox true)"); med("crun run (busybox true)")),
       value_minus_wrapper: r(med("agentnest-oci run (busybox true)") - $R.wrapper; $R.crun_run - $R.wrapper), bound: 0.5},
      {target: "one-shot agentnest run -- true median < 10 ms", value: med("agentnest run -- true"), bound: 10},
      {target: "one-shot agentnest run -- true < 2 x bubblewrap one-shot (same run)", value: r(med("agentnest run -- true"); $R.bwrap), bound: 2},
      {target: "pooled one-shot agentnest run --pool -- true median < 3 ms", value: med("pooled run -- true"), bound: 3},
      {target: "agentnest exec median < 2 ms", value: med("agentnest exec (true)"), bound: 2},
      {target: "--network allowlist adds at most 5 ms to one-shot run -- true",
       value: (if med("agentnest run --network allowlist -- true") and med("agentnest run -- true")
               then med("agentnest run --network allowlist -- true") - med("agentnest run -- true") else null end), bound: 5},
      {target: "TCP through the egress path >= 0.8 x the same transfer between two plain netns",
       value: ([$rows[] | select(.metric | test("^TCP .* between two plain netns")) | select(.status == "ok") | .median] as $p
               | [$rows[] | select(.metric | test("^TCP .* through egress")) | select(.status == "ok") | .median] as $e
               | if ($p | length) > 0 and ($e | length) > 0 then r($p[0]; $e[0]) else null end), bound: 0.8, higher_is_better: true},
      {target: "agentnest image import \($image) median < 2000 ms", value: med("agentnest image import \($image)"), bound: 2000},
      {target: "Python session call (pass) < 1 ms beyond the work of Python itself (library call on an open handle, as a front end makes it)",
       value: med("library session call (python '"'"'pass'"'"', handle kept open)"), bound: 1},
      {target: "Python session call (pass) through the CLI < 1 ms beyond the process start floor (fork+exec /bin/true)",
       value: (if med("agentnest session run (python '"'"'pass'"'"')") and med("fork+exec /bin/true")
               then med("agentnest session run (python '"'"'pass'"'"')") - med("fork+exec /bin/true") else null end), bound: 1},
      {target: "agentnest batch -j2 of true jobs >= 100 jobs/s",
       value: ([$rows[] | select(.metric == $bm_batch and .status == "ok") | .rate_per_s] | .[0]), bound: 100, higher_is_better: true},
      {target: "agentnest batch time per job <= 0.5 x an xargs -P2 agentnest run loop", value: r(med($bm_batch); med($bm_xargs)), bound: 0.5},
      {target: "1000 idle sandboxes alive", value: (if $d1000 then $d1000.alive_at_measurement else null end), bound: 1000, higher_is_better: true},
      {target: "host memory per idle sandbox beyond its own processes < 1 MiB (at the largest N)",
       value: (if ($d | length) > 0 then ($d | max_by(.n) | .per_sandbox_mib.overhead_beyond_own) else null end), bound: 1},
      {target: "create + exec true + destroy, sequential >= 100 sandboxes/s",
       value: ([$rows[] | select(.metric == "sandboxes/s: create, exec true, destroy" and .status == "ok") | .rate_per_s] | .[0]),
       bound: 100, higher_is_better: true},
      {target: "create of the 1000th live sandbox <= 1.1 x the 1st (medians of their windows)",
       value: (($grow[0] // []) as $g | ($g | map(select(.live == 1)) | .[0].create_window.median) as $a
               | ($g | map(select(.live == 1000)) | .[0].create_window.median) as $b | r($b; $a)), bound: 1.11}
     ] | map(. + {met: (if .value == null then null elif .higher_is_better then .value >= .bound else .value < .bound or (.value_minus_wrapper // 1e9) <= .bound end)})}
' "$ROWS" >"$OUT.tmp" && mv "$OUT.tmp" "$OUT"

# ---------------------------------------------------------------- table
echo
echo "AgentNest benchmark ($([ $QUICK = 1 ] && echo quick || echo full)), $(jq -r .host "$OUT"); $(jq -r .versions "$OUT")"
echo "All times ms: wall clock per run; cpu = mean user+sys of the command and the children it waited for (hyperfine)."
echo "OCI rows run inside: $(wrap "...")"
jq -r '
  def f: if . == null then "-" else tostring end;
  (["group", "metric", "runs", "median", "p95", "min", "max", "cpu", "extra / ratio to reference"] | @tsv),
  (.metrics[] |
    if .status == "ok" then
      [.group, .metric, (.runs|f), (.median|f), (.p95|f), (.min|f), (.max|f), (.cpu_ms|f),
       ([(if .mb_per_s then "\(.mb_per_s) MB/s" else empty end), (if .rate_per_s then "\(.rate_per_s)/s" else empty end)]
        + ((.ratios // {}) | to_entries | map("x\(.value) \(.key)")) | join(", "))]
    elif .status == "n/a" then [.group, .metric, "n/a", "", "", "", "", "", "n/a (\(.reason))"]
    else [.group, .metric, "-", (.median|f), "", "", "", "", .status] end | @tsv)' "$OUT" | column -t -s $'\t'
if [ "$(jq '.growth | length' "$OUT")" -gt 0 ]; then
  echo; echo "Cost growth (create: last create at that count and median of the last 10; exec: into sandbox #1)"
  jq -r '(["live", "create ms (that one)", "create ms (median last 10)", "exec median ms", "exec min-max ms"] | @tsv),
    (.growth[] | [.live, .create_last, .create_window.median, .exec.median, "\(.exec.min)-\(.exec.max)"] | @tsv)' "$OUT" | column -t -s $'\t'
fi
if [ "$(jq '.density | length' "$OUT")" -gt 0 ]; then
  echo; echo "Density (MiB per sandbox; overhead = monitor PSS + kernel Slab+PageTables+KernelStack delta)"
  jq -r '(["N", "created", "alive", "create all s", "destroy all s", "create median ms", "monitor RSS", "monitor PSS",
           "kernel objs", "own procs RSS", "cgroup mem", "MemAvailable drop", "overhead"] | @tsv),
    (.density[] | [.n, .created, .alive_at_measurement, .create_all_s, .destroy_all_s, .create.median, .per_sandbox_mib.monitor_rss,
      .per_sandbox_mib.monitor_pss, .per_sandbox_mib.kernel_objects, .per_sandbox_mib.own_processes_rss,
      .per_sandbox_mib.cgroup_memory, .per_sandbox_mib.host_memavailable_drop, .per_sandbox_mib.overhead_beyond_own] | @tsv)' \
    "$OUT" | column -t -s $'\t'
fi
echo; echo "Targets (DESIGN.md):"
jq -r '.targets[] | "  \(if .met == null then "n/a  " elif .met then "met  " else "NOT  " end) \(.target): \(.value // "-")\(if .value_minus_wrapper then " (wrapper subtracted: \(.value_minus_wrapper))" else "" end)\(if .reason then " (\(.reason))" else "" end)"' "$OUT"
echo "cleanup: $(jq -r .cleanup "$OUT")"
echo "JSON: $OUT"

# Smoke check (--quick and full): every metric present, with numbers or an explicit n/a.
bad=$(jq -r '.metrics[] | select(.status == "ok" and (.median == null or .runs == 0)) | .metric' "$OUT")
if [ -n "$bad" ] || [ "$(jq '.metrics | length' "$OUT")" -lt 20 ]; then
  echo "bench: incomplete results: $bad" >&2; exit 1
fi
if [ "$QUICK" = 1 ] && [ "${BENCH_REQUIRE_ALL:-0}" = 1 ] && jq -e '.metrics[] | select(.status == "n/a")' "$OUT" >/dev/null; then
  echo "bench: some metrics are n/a (BENCH_REQUIRE_ALL=1)" >&2; exit 1
fi
[ "${CLEAN_STATUS:-}" = clean ] || { echo "bench: cleanup incomplete: ${CLEAN_STATUS:-}" >&2; exit 1; }
exit 0
