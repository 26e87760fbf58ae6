# dockerlike.sh: the cases shared by the Docker and podman suites (their command lines
# agree on every operation tested here).  Sourced after lib.sh by docker.sh and podman.sh,
# which define:
#   d ARG...      the engine's client for RT (runc|agentnest) with its global options
#   run_argv      sets the array RUN_ARGV to `d run` selecting the runtime RT
#   exec_argv     sets the array EXEC_ARGV to `d exec` for RT
#   cid NAME      the full container id
#   GW            the address of the suite's netns on the engine's default network
#   INIT_COMM     /proc/1/comm of a container run with --init
#   UPDATE_PIDS   set where `update` has --pids-limit
#   DONOR_OPTS    run options that let other containers join the detached one's namespaces
#   HAS_UIDMAP    set where `run --uidmap` exists (podman)
#   OOMKILLED     what inspect's State.OOMKilled says after an OOM kill under runc
# BB and PY are the busybox and python image names.

drun() { run_argv; "${RUN_ARGV[@]}" "$@"; }

# Names carry the runtime, so that runc's and agentnest-oci's containers never collide.
nm() { echo "an-$RT-$1"; }
state() { d inspect -f '{{.State.Status}} {{.State.ExitCode}}' "$(nm "$1")" 2>&1; }

# The host cgroup v1 file FILE (CONTROLLER/FILE) of container NAME, below our parent.
cg_read() {
  local id f
  id=$(cid "$(nm "$1")") || return 1
  f=$(find "/sys/fs/cgroup/${2%%/*}/$CG" -type d -name "*$id*" 2>/dev/null | head -1)
  cat "$f/${2#*/}" 2>&1 || echo "no cgroup for $id"
}

c_exit0() { drun --rm "$BB" true; echo "rc=$?"; }
c_exit3() {
  local out
  out=$(drun --rm "$BB" sh -c 'echo out; echo err >&2; exit 3' 2>"$T/err.$RT"); echo "rc=$? stdout=$out"
  echo "stderr=$(grep -v '^WARNING: IPv4' "$T/err.$RT")"
}

c_detach() {
  local n; n=$(nm d)
  drun -d --name "$n" ${DONOR_OPTS:-} "$BB" sh -c 'echo started; exec sleep 1000' >/dev/null; echo "rc=$?"
  mkdir -p "$T/ids" && cid "$n" > "$T/ids/$RT"
  state d
}
c_exec() {
  d exec "$(nm d)" sh -c 'echo exec-ok; id -u'; echo "rc=$?"
  d exec "$(nm d)" sh -c 'exit 7'; echo "rc=$?"
  d exec --user 0 "$(nm d)" id -u; echo "rc=$?"
}
# exec -it: a second process with a pseudo-terminal (console socket) in a running container.
c_exec_tty() { exec_argv; tty_session "${EXEC_ARGV[@]}" -it "$(nm d)" sh; }
c_restart() { d restart -t 1 "$(nm d)" >/dev/null; echo "rc=$?"; state d; d exec "$(nm d)" echo alive; }
c_top() { d top "$(nm d)" | grep -c 'sleep 1000'; }
c_logs() { d logs "$(nm d)"; }
c_pause() {
  d pause "$(nm d)" >/dev/null; echo "pause=$?"; state d
  d unpause "$(nm d)" >/dev/null; echo "unpause=$?"; state d
  d exec "$(nm d)" echo alive
}
c_update() {
  if [ -n "${UPDATE_PIDS:-}" ]; then
    d update --pids-limit 50 --memory 96m --memory-swap 96m "$(nm d)" >/dev/null; echo "rc=$?"
    echo "host pids.max $(cg_read d pids/pids.max)"
  else
    d update --memory 96m --memory-swap 96m "$(nm d)" >/dev/null; echo "rc=$?"
  fi
  echo "host memory.limit $(cg_read d memory/memory.limit_in_bytes)"
  echo "inside memory.limit $(d exec "$(nm d)" cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>&1)"
}
c_stop() { d stop -t 1 "$(nm d)" >/dev/null; echo "rc=$?"; state d; }
c_kill() {
  d start "$(nm d)" >/dev/null; echo "start=$?"
  d kill "$(nm d)" >/dev/null; echo "kill=$?"
  d wait "$(nm d)"; state d
}
c_rm() {
  local id; id=$(cat "$T/ids/$RT")
  d rm "$(nm d)" >/dev/null; echo "rc=$?"
  echo "leftovers $(leftovers "$id")"
}

c_tty() { run_argv; tty_session "${RUN_ARGV[@]}" -it --rm "$BB" sh; }

c_oom() {
  drun --name "$(nm oom)" --memory 32m --memory-swap 32m "$BB" sh -c 'tail /dev/zero'; echo "rc=$?"
  d inspect -f 'oomkilled={{.State.OOMKilled}}' "$(nm oom)"
  d rm "$(nm oom)" >/dev/null
}
# Two shells and 8 sleeps fill pids.max 10; the inner shell dies (status 2) at the first
# fork that fails; its 8 sleeps stay, children of pid 1.
c_pids() {
  drun --rm --pids-limit 10 "$BB" sh -c \
    'sh -c "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do sleep 30 & done" 2>/dev/null; echo inner=$?; set -- /proc/[0-9]*; echo procs=$#'
  echo "rc=$?"
}
c_readonly() {
  drun --rm --read-only "$BB" sh -c 'touch /x 2>/dev/null; echo root=$?; touch /tmp/x 2>/dev/null; echo tmp=$?'
}
c_user() { drun --rm --user 1234:5678 "$BB" id; echo "rc=$?"; }
c_root() { drun --rm --user 0 "$BB" sh -c 'id; grep -E "^Cap(Prm|Eff|Bnd)" /proc/self/status'; echo "rc=$?"; }
# create -> start as uid 0, repeated: init's parent-death signal must be disarmed before
# create returns (uid 0 keeps it armed, unlike a uid change).
c_root_repeat() {
  local i ok=0
  for i in 1 2 3 4 5 6 7 8 9 10; do drun --rm --user 0 "$BB" true && ok=$((ok + 1)); done
  echo "ok=$ok of 10"
}
c_capdrop() {
  drun --rm --user 0 --cap-drop ALL "$BB" sh -c 'grep -E "^(Cap|NoNewPrivs)" /proc/self/status; chown 1 /tmp 2>/dev/null; echo chown=$?'
}
c_init() { drun --rm --init "$BB" sh -c 'cat /proc/1/comm; [ $$ != 1 ] && echo sh-is-not-pid-1'; echo "rc=$?"; }
c_bind() {
  local dir=$T/bind-$RT
  rm -rf "$dir"; mkdir -p "$dir" && echo from-host > "$dir/in"
  drun --rm --user 0 -v "$dir:/data" "$BB" sh -c 'cat /data/in; echo from-container > /data/out'; echo "rc=$?"
  cat "$dir/out"
  drun --rm --user 0 -v "$dir:/data:ro" "$BB" sh -c 'cat /data/in; touch /data/x 2>/dev/null; echo ro-touch=$?'
}
# The target goes through the image's /bin -> usr/bin symlink: resolved inside the rootfs.
c_bind_symlink() {
  local dir=$T/bind-$RT
  mkdir -p "$dir" && echo from-host > "$dir/in"
  drun --rm -v "$dir:/bin/an-data:ro" "$BB" cat /usr/bin/an-data/in; echo "rc=$?"
}
# Options most engines pass straight into the config: hostname, env, a missing cwd (created,
# as runc), tmpfs, rlimits, a namespaced sysctl, /dev/shm size.
c_options() {
  drun --rm --hostname an-host -e AN_X=42 -w "${NEWDIR:-/an/new/dir}" --tmpfs /scratch:size=1m --ulimit nofile=512:512 \
    --sysctl net.ipv4.ip_unprivileged_port_start=1000 --shm-size 8m --network none "$BB" sh -c \
    'hostname; echo "env=$AN_X"; pwd; grep -E " /scratch | /dev/shm " /proc/self/mounts | cut -d" " -f2-4 | sed "s/,relatime//" | sort; ulimit -n; cat /proc/sys/net/ipv4/ip_unprivileged_port_start'
  echo "rc=$?"
}
# CPU limits and process attributes, read inside; the engine's default seccomp filter is on.
c_cpu_attrs() {
  drun --rm --cpus 0.5 --cpu-shares 512 --cpuset-cpus 0 --oom-score-adj 500 --security-opt no-new-privileges \
    --network none "$BB" sh -c 'cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us \
      /sys/fs/cgroup/cpu/cpu.shares /sys/fs/cgroup/cpuset/cpuset.cpus /proc/self/oom_score_adj
      grep -E "^(NoNewPrivs|Seccomp):" /proc/self/status'
  echo "rc=$?"
}
# Joining the namespaces of a running container, by path (--network/--pid/--ipc container:).
c_join() {
  local n; n=$(nm d)
  drun --rm --network "container:$n" --pid "container:$n" --ipc "container:$n" "$BB" sh -c \
    'ls /sys/class/net | tr "\n" " "; echo; ps -o args | grep -c "^sleep 1000"'
  echo "rc=$?"
}
# A device node the engine adds (node, mode, cgroup rule), supplementary groups.
c_device_groups() {
  drun --rm --user 0 --device /dev/zero:/dev/an-zero --group-add 1234 --network none "$BB" sh -c \
    'stat -c "%F %a %t:%T" /dev/an-zero; head -c 3 /dev/an-zero | od -An -tx1; id -G'
  echo "rc=$?"
}
# A signal other than TERM/KILL reaches the container's pid 1 and its handler.
c_kill_signal() {
  local n; n=$(nm sig)
  drun -d --name "$n" --network none "$BB" sh -c 'trap "echo got-usr1; exit 9" USR1; echo ready; while :; do sleep 0.1; done' >/dev/null
  local i; for i in $(seq 1 50); do d logs "$n" 2>/dev/null | grep -q ready && break; sleep 0.1; done
  d kill -s USR1 "$n" >/dev/null; echo "kill=$?"
  d wait "$n"; d logs "$n"; d rm "$n" >/dev/null
}
# Capabilities added by the engine work (in the container's own netns); seccomp=unconfined.
c_capadd_unconfined() {
  drun --rm --user 0 --cap-add NET_ADMIN --security-opt seccomp=unconfined "$BB" sh -c \
    'ip addr add 192.0.2.9/32 dev lo && echo netadmin-ok; grep -E "^Seccomp:" /proc/self/status'
  echo "rc=$?"
}
# A user namespace the engine asks for (podman --uidmap): ids inside, the map, a root-owned
# file of the image seen as root's.
c_userns() {
  drun --rm --uidmap 0:200000:65536 --gidmap 0:200000:65536 --user 0 --network none "$BB" sh -c \
    'id -u; cat /proc/self/uid_map | tr -s " " | sed "s/^ //"; stat -c "%u:%g" /etc/passwd; touch /tmp/x && stat -c "%u" /tmp/x'
  echo "rc=$?"
}
# Bind propagation: a mount made on the host below the source after start reaches the
# container through an rslave bind, not through the default (rprivate) one.  The sources
# sit on a shared mount of the suite's own (the engines refuse rslave from a private one).
c_bind_propagation() {
  local dir=$T/prop-$RT n; n=$(nm prop)
  rm -rf "$dir"; mkdir -p "$dir" && mount --bind "$dir" "$dir" && mount --make-rshared "$dir" || return
  mkdir -p "$dir/a" "$dir/b"
  drun -d --name "$n" --user 0 --network none -v "$dir/a:/slave:rslave" -v "$dir/b:/private" "$BB" sleep 1000 >/dev/null
  echo "run=$?"
  mkdir -p "$dir/a/sub" "$dir/b/sub"
  mount -t tmpfs an-prop "$dir/a/sub" && mount -t tmpfs an-prop "$dir/b/sub" && touch "$dir/a/sub/seen" "$dir/b/sub/seen"
  d exec "$n" sh -c 'ls /slave/sub; echo private=$(ls /private/sub | wc -l)'
  d rm -f "$n" >/dev/null
  umount "$dir/a/sub" "$dir/b/sub"; umount "$dir"
}
# exec with its own user, cwd and env.
c_exec_opts() {
  local n; n=$(nm d)
  d exec -u 1234:5678 -w /tmp -e AN_E=7 "$n" sh -c 'id -u; id -g; pwd; echo "e=$AN_E"'; echo "rc=$?"
}
# A private cgroup namespace (--cgroupns private): the container's cgroups are its roots.
c_cgroupns() { drun --rm --cgroupns private --network none "$BB" sh -c 'grep -E "^[0-9]+:(memory|pids):" /proc/self/cgroup'; echo "rc=$?"; }
c_net_none() { drun --rm --network none "$BB" ls /sys/class/net; echo "rc=$?"; }
c_net_default() {
  drun --rm "$PY" sh -c "ls /sys/class/net; python3 -c 'import urllib.request as u; print(u.urlopen(\"http://$GW:8080/ok\", timeout=5).read().decode().strip())'"
  echo "rc=$?"
}
c_python() {
  drun --rm "$PY" python3 -c 'import sys, json, sqlite3, ssl; print(json.dumps([sum(range(10)), sys.version_info[0]]))'
  echo "rc=$?"
}
t_true() { drun --rm "$BB" true; }

# The cases, in order; the detached ones share one container per runtime.
dockerlike_cases() {
  tcase exit0 'rc=0' c_exit0
  tcase exit3 'rc=3 stdout=out\|stderr=err' c_exit3
  tcase detach 'rc=0\|running 0' c_detach
  tcase exec 'exec-ok\|65532\|rc=0\|rc=7\|0\|rc=0' c_exec
  tcase exec-tty '/dev/pts/N\|hello-42\|rc=4' c_exec_tty
  tcase ps-top '1' c_top
  tcase logs 'started' c_logs
  tcase restart 'rc=0\|running 0\|alive' c_restart
  tcase exec-options '1234\|5678\|/tmp\|e=7\|rc=0' c_exec_opts
  tcase join-namespaces 'eth0 lo\|1\|rc=0' c_join
  tcase pause-unpause 'pause=0\|paused 0\|unpause=0\|running 0\|alive' c_pause
  tcase update 'rc=0\|(host pids.max 50\|)?host memory.limit 100663296\|inside memory.limit 100663296' c_update
  tcase stop 'rc=0\|exited 137' c_stop
  tcase kill 'start=0\|kill=0\|137\|exited 137' c_kill
  tcase rm 'rc=0\|leftovers none' c_rm
  tcase tty-it '/dev/pts/N\|hello-42\|rc=4' c_tty
  tcase memory-oom "rc=137\\|oomkilled=$OOMKILLED" c_oom
  tcase pids-limit 'inner=2\|procs=9\|rc=0' c_pids
  tcase read-only 'root=1\|tmp=[01]' c_readonly
  tcase user 'uid=1234[^ ]* gid=5678[^ ]*( groups=5678.*)?\|rc=0' c_user
  tcase user-root 'uid=0\(root\).*\|CapPrm.*\|CapEff.*\|CapBnd.*\|rc=0' c_root
  tcase user-root-x10 'ok=10 of 10' c_root_repeat
  tcase cap-drop-all 'CapInh:.0+\|CapPrm:.0+\|CapEff:.0+\|CapBnd:.0+\|CapAmb:.0+\|NoNewPrivs:.0\|chown=1' c_capdrop
  tcase init "$INIT_COMM"'\|sh-is-not-pid-1\|rc=0' c_init
  tcase bind-mount 'from-host\|rc=0\|from-container\|from-host\|ro-touch=1' c_bind
  tcase bind-propagation 'run=0\|seen\|private=0' c_bind_propagation
  tcase bind-symlink-target 'from-host\|rc=0' c_bind_symlink
  tcase options "an-host\|env=42\|${NEWDIR:-/an/new/dir}\|/dev/shm tmpfs rw.*\|/scratch tmpfs rw.*\|512\|1000\\|rc=0" c_options
  tcase cpu-oomscore-nnp-seccomp '50000\|100000\|512\|0\|500\|NoNewPrivs:.1\|Seccomp:.2\|rc=0' c_cpu_attrs
  tcase cgroupns-private '[0-9]+:pids:/\|[0-9]+:memory:/\|rc=0' c_cgroupns
  tcase device-group-add 'character special file 666 1:5\| 00 00 00\|0 [0-9 ]*1234.*\|rc=0' c_device_groups
  tcase kill-signal 'kill=0\|9\|ready\|got-usr1' c_kill_signal
  tcase cap-add-seccomp-unconfined 'netadmin-ok\|Seccomp:.0\|rc=0' c_capadd_unconfined
  [ -n "${HAS_UIDMAP:-}" ] && tcase userns-uidmap '0\|0 200000 65536\|0:0\|0\|rc=0' c_userns
  tcase network-none 'lo\|rc=0' c_net_none
  tcase network-default 'eth0\|lo\|reached-host\|rc=0' c_net_default
  tcase python-image '\[45, 3\]\|rc=0' c_python
}
