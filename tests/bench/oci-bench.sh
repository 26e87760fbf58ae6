#!/bin/bash
# tests/bench/oci-bench.sh — time `agentnest-oci run` of a trivial container
# (`true`) against `crun run` and `runc run` on the SAME bundle, in the same
# hyperfine invocation, and print medians, min–max and ratios.
# Target (DESIGN.md "Numbers"): agentnest-oci at most 0.5x crun's median.
#
# Usage: tests/bench/oci-bench.sh [RUNS]      (as root; default 200 runs each)
# Env:   BUILD (default build), KEEP=1 keeps the temp bundle.
#
# crun 1.8 refuses this hybrid-cgroup host unless it runs in a private mount
# namespace with an empty tmpfs over /sys/fs/cgroup/unified.  So that all three
# pay the same, every runtime runs inside the same wrapper
#   unshare -m sh -c 'mount -t tmpfs tmpfs /sys/fs/cgroup/unified; exec RUNTIME ...'
# and the wrapper alone (running `true`) is measured as a baseline; ratios are
# given both raw and with the baseline subtracted.  (On a host where the
# unified mount is absent the wrapper only does the unshare.)
# Not a test: never asserts times.
set -euo pipefail
RUNS=${1:-200}
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
OCI=$(realpath "$BUILD/agentnest-oci")
for t in hyperfine runc crun jq busybox unshare; do
  command -v "$t" >/dev/null || { echo "oci-bench: $t is not installed" >&2; exit 1; }
done
[ -x "$OCI" ] || { echo "oci-bench: $OCI not built (run make)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "oci-bench: must run as root" >&2; exit 1; }

WORK=$(mktemp -d /tmp/an-oci-bench-$$-XXXXXX)
chmod 755 "$WORK"
cleanup() {
  for id in an-bench-$$ runc-bench-$$ crun-bench-$$; do
    "$OCI" --root "$WORK/an-state" delete -f "$id" >/dev/null 2>&1 || true
    runc --root "$WORK/runc-state" delete -f "$id" >/dev/null 2>&1 || true
  done
  # runc and crun remove only their leaf (runc also in name=systemd)
  rmdir /sys/fs/cgroup/*/agentnest/oci-bench-$$ /sys/fs/cgroup/*/agentnest 2>/dev/null
  [ "${KEEP:-0}" = 1 ] && echo "kept $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT

# Bundle: static busybox rootfs, AgentNest's default config running `true`.
B=$WORK/bundle
mkdir -p "$B/rootfs/bin" "$B/rootfs/proc" "$B/rootfs/sys" "$B/rootfs/dev" "$B/rootfs/tmp" "$B/rootfs/etc"
cp "$(command -v busybox)" "$B/rootfs/bin/busybox"
ln -s busybox "$B/rootfs/bin/sh"
ln -s busybox "$B/rootfs/bin/true"
"$OCI" spec --bundle "$B"
# crun 1.8 accepts only ociVersion 1.0.x; cgroups go under the agentnest subtree.
jq --arg cg "/agentnest/oci-bench-$$" \
   '.ociVersion = "1.0.2" | .process.args = ["true"] | .process.terminal = false
    | .linux.cgroupsPath = $cg' "$B/config.json" >"$B/config.json.new"
mv "$B/config.json.new" "$B/config.json"

if grep -q ' /sys/fs/cgroup/unified ' /proc/self/mountinfo; then
  PRE='mount -t tmpfs tmpfs /sys/fs/cgroup/unified && '
else
  PRE=''
fi
wrap() { printf "unshare -m sh -c '%sexec %s'" "$PRE" "$1"; }

# Each runtime once first, so a broken setup fails loudly instead of being timed.
for cmd in "$OCI --root $WORK/an-state run --bundle $B an-bench-$$" \
           "runc --root $WORK/runc-state run --bundle $B runc-bench-$$" \
           "crun --root $WORK/crun-state run --bundle $B crun-bench-$$"; do
  if ! eval "$(wrap "$cmd")" </dev/null; then echo "oci-bench: failed: $cmd" >&2; exit 1; fi
done

hyperfine --style basic --runs "$RUNS" --warmup 10 --export-json "$WORK/result.json" -N \
  -n wrapper      "$(wrap true)" \
  -n agentnest-oci "$(wrap "$OCI --root $WORK/an-state run --bundle $B an-bench-$$")" \
  -n crun          "$(wrap "crun --root $WORK/crun-state run --bundle $B crun-bench-$$")" \
  -n runc          "$(wrap "runc --root $WORK/runc-state run --bundle $B runc-bench-$$")" \
  </dev/null >"$WORK/hyperfine.log" 2>&1 || { cat "$WORK/hyperfine.log" >&2; exit 1; }

echo
read -r load1 _ </proc/loadavg
if awk -v l="$load1" -v n="$(nproc)" 'BEGIN { exit !(l > n) }'; then
  echo "WARNING: load average $load1 > $(nproc) CPUs: wall-clock times are inflated by contention;"
  echo "         compare the cpu column, or rerun on an idle machine."
fi
echo "agentnest-oci run vs crun run vs runc run, bundle: busybox 'true', $RUNS runs each, $(uname -r)"
jq -r '
  def ms: . * 1000 | . * 100 | round / 100;
  (.results | map({key: .command, value: .}) | from_entries) as $r
  | ($r["wrapper"].median) as $w
  | ["runtime", "median ms", "min–max ms", "median - wrapper ms", "cpu ms (user+sys, mean)"],
    (.results[] | [.command, (.median|ms), "\(.min|ms)–\(.max|ms)", ((.median - $w)|ms),
                   ((.user + .system)|ms)])
  | @tsv' "$WORK/result.json" | column -t -s $'\t'
echo
jq -r '
  (.results | map({key: .command, value: .median}) | from_entries) as $m
  | ($m["wrapper"]) as $w
  | def r(a; b): (a / b * 1000 | round / 1000);
    "ratio agentnest-oci / crun : \(r($m["agentnest-oci"]; $m["crun"]))   (baseline subtracted: \(r($m["agentnest-oci"] - $w; $m["crun"] - $w)))",
    "ratio agentnest-oci / runc : \(r($m["agentnest-oci"]; $m["runc"]))   (baseline subtracted: \(r($m["agentnest-oci"] - $w; $m["runc"] - $w)))",
    "target: agentnest-oci <= 0.5 x crun (baseline subtracted): \(if ($m["agentnest-oci"] - $w) <= 0.5 * ($m["crun"] - $w) then "met" else "NOT met" end)"
' "$WORK/result.json"
