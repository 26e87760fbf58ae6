#!/bin/bash
# tests/batch/slurm-array.sh BUILD — agentnest-batch(1)'s Slurm job-array example, run for real on
# a one-node Slurm cluster this script makes and removes (Debian's slurm-wlm and munge): a private
# munged (its own key and socket), a private slurm.conf (its own ports, spool and state under a
# temp dir), slurmctld and slurmd; then `sbatch --array=1-3 --wait` of the documented batch.sh over
# 12 jobs, and the merged shard results must hold every job exactly once, all passed.
# Prints "slurm-array: ok" and exits 0, or says what failed and exits 1; 77 when slurm-wlm or
# munge is not installed.  Nothing is left: daemons killed, the store pruned, the temp dir removed.
set -u
BUILD=${1:?usage: slurm-array.sh BUILD}
for b in /usr/sbin/slurmctld /usr/sbin/slurmd /usr/bin/sbatch /usr/sbin/munged /usr/sbin/mungekey; do
  [ -x "$b" ] || { echo "slurm-array: $b not installed (slurm-wlm, munge)"; exit 77; }
done
[ -e /var/cache/agentnest/images/busybox/layout ] || { echo "slurm-array: no busybox image (make images)"; exit 77; }
W=$(mktemp -d /tmp/an-slurm-XXXXXX)
chmod 0755 "$W"
AN="$BUILD/agentnest --root $W/store"
export AGENTNEST_INIT=$BUILD/agentnest-init SLURM_CONF=$W/slurm.conf
cleanup() {
  scancel --quiet --full -u root >/dev/null 2>&1 || true
  for p in slurmd slurmctld munged; do
    [ -s "$W/$p.pid" ] && kill "$(cat "$W/$p.pid")" 2>/dev/null
  done
  sleep 0.5
  for p in slurmd slurmctld munged; do
    [ -s "$W/$p.pid" ] && kill -9 "$(cat "$W/$p.pid")" 2>/dev/null
  done
  $AN prune --all >/dev/null 2>&1
  rm -rf "$W"
}
trap cleanup EXIT
fail() { echo "slurm-array: $*"; for f in "$W"/*.log "$W"/out-*.txt; do [ -f "$f" ] && { echo "--- $f"; tail -5 "$f"; }; done; exit 1; }

mungekey -c -k "$W/munge.key" || fail "mungekey"
/usr/sbin/munged -f --socket="$W/munge.sock" --key-file="$W/munge.key" --pid-file="$W/munged.pid" \
  --log-file="$W/munged.log" --seed-file="$W/munged.seed" || fail "munged did not start"
H=$(hostname -s)
PORT=$((20000 + $$ % 20000))
mkdir -p "$W/spool" "$W/state"
cat > "$SLURM_CONF" <<CONF
ClusterName=agentnest-test
SlurmctldHost=$H(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$W/munge.sock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/linear
SchedulerType=sched/builtin
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
ReturnToService=2
SlurmdSpoolDir=$W/spool
StateSaveLocation=$W/state
SlurmctldLogFile=$W/slurmctld.log
SlurmdLogFile=$W/slurmd.log
SlurmctldPidFile=$W/slurmctld.pid
SlurmdPidFile=$W/slurmd.pid
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
NodeName=$H NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
/usr/sbin/slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start"
/usr/sbin/slurmd -f "$SLURM_CONF" || fail "slurmd did not start"
for _ in $(seq 1 100); do sinfo -h -o %T 2>/dev/null | grep -q idle && break; sleep 0.2; done
sinfo -h -o %T | grep -q idle || fail "the node did not become idle: $(sinfo 2>&1)"

$AN image import /var/cache/agentnest/images/busybox/layout --name busybox >/dev/null || fail "import busybox"
cd "$W" || fail "cd"
for i in $(seq 1 12); do printf '{"id":"j%d","shell":"echo job %d","image":"busybox"}\n' "$i" "$i"; done > jobs.jsonl
# the man page's batch.sh, with this build's agentnest and store
cat > batch.sh <<SCRIPT
#!/bin/sh
#SBATCH --job-name=agentnest-batch
#SBATCH --cpus-per-task=1
agentnest() { $AN "\$@"; }
agentnest batch -j "\$SLURM_CPUS_PER_TASK" \\
  --shard "\$SLURM_ARRAY_TASK_ID/\$SLURM_ARRAY_TASK_COUNT" \\
  --results "results-\$SLURM_ARRAY_TASK_ID.jsonl" jobs.jsonl
SCRIPT
chmod +x batch.sh
timeout 300 sbatch --wait --array=1-3 --export=ALL -o 'out-%a.txt' batch.sh >/dev/null || fail "sbatch --wait failed"
cat results-*.jsonl > results.jsonl
python3 - results.jsonl <<'PY' || fail "merged results wrong"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
ids = sorted(r["id"] for r in recs)
want = sorted("j%d" % i for i in range(1, 13))
assert ids == want, "ids %s" % ids
assert all(r.get("exit_code") == 0 for r in recs), [r.get("exit_code") for r in recs]
PY
[ "$(ls results-*.jsonl | wc -l)" = 3 ] || fail "expected 3 shard result files"
echo "slurm-array: ok (3 array tasks, 12 jobs, each once)"
