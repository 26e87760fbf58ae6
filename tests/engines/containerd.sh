#!/bin/bash
# containerd.sh: containerd (Debian's 1.6) through ctr, with the runc v2 shim running
# build/agentnest-oci (the shim option BinaryName, which `ctr run --runc-binary` sets, as
# the CRI runtime handler of README's Kubernetes section does), against runc.
#
# Starts its own containerd: root, state, gRPC/ttrpc sockets and config in a temp dir, the
# CRI plugin off (ctr does not use it); the shim's runtime root (--runc-root) is in the
# temp dir too.  The Kubernetes config of README and agentnest-oci(1) is checked to parse
# (`containerd config dump`).  ctr has no network of its own: a container gets an empty
# netns (the `network-none` case) or, with --net-host, the netns that run-engines.sh made
# for this suite (`network-host`).  ctr 1.6 has no --user: image variants with the user set
# stand in.  Operations ctr has no flag for (--init, --pids-limit) are skipped; `update`
# goes through the runtime's own CLI, which is what containerd's UpdateTask calls.  Images
# come from the project's OCI layouts (skopeo -> docker-archive -> ctr images import).
# Run as root, by run-engines.sh.
ENGINE=containerd
. "$(dirname "$0")/lib.sh"

command -v containerd >/dev/null && command -v ctr >/dev/null && command -v containerd-shim-runc-v2 >/dev/null ||
  bail "containerd not installed (make deps)"
BB=docker.io/library/busybox:latest PY=docker.io/library/python:latest NS=an

cat > "$T/config.toml" <<CONF
version = 2
root = "$T/root"
state = "$T/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "$T/containerd.sock"
[ttrpc]
  address = "$T/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$T/opt"
CONF

C() { ctr -a "$T/containerd.sock" -n "$NS" "$@"; }
# `ctr run` selecting the runtime RT, in a cgroup below our parent named after the container.
RO() { echo --runc-binary "$(rt_path)" --runc-root "$T/runc-root" --cgroup "/$CG/$1"; }
crun_() { local name=$1; shift; C run $(RO "$name") "$@"; }
nm() { echo "an-$RT-$1"; }
# `ctr task rm` exits 0 and warns about a non-zero exit code; this prints "exit=N".
task_rm() { C t rm "$1" 2>&1 | sed -n 's/.*non-zero exit code \([0-9]*\).*/exit=\1/p'; echo "task-rm=${PIPESTATUS[0]}"; }
status() { C t ls 2>/dev/null | awk -v id="$(nm "$1")" '$1 == id { print $3 }'; }
ncontainers() { C c ls -q | wc -l; }

# The Kubernetes configuration documented in README and agentnest-oci(1) parses.
sed -n '/^```toml k8s-containerd/,/^```$/p' "$SRC/README.md" | sed '1d;$d' |
  sed "s|/usr/local/bin/agentnest-oci|$AN_OCI|" > "$T/k8s.toml"
c_k8s_config() {
  [ -s "$T/k8s.toml" ] || { echo "no k8s-containerd block in README.md"; return; }
  containerd --config "$T/k8s.toml" config dump 2>&1 |
    grep -E '^\s*(\[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.agentnest(.options)?\]|runtime_type = "io.containerd.runc.v2"|BinaryName = |pod_annotations = \["org)' |
    sed 's/^[[:space:]]*//; s|BinaryName = .*|BinaryName = (agentnest-oci)|' | LC_ALL=C sort -u
}

ip link set lo up || bail "no loopback in the suite's netns"
containerd --config "$T/config.toml" --log-level warn > "$T/containerd.log" 2>&1 &
CTD=$!
on_exit "kill $CTD; for i in \$(seq 1 100); do kill -0 $CTD || break; sleep 0.1; done"
on_exit "for c in \$(ctr -a $T/containerd.sock -n $NS c ls -q); do ctr -a $T/containerd.sock -n $NS t kill -s KILL \$c; sleep 0.3; ctr -a $T/containerd.sock -n $NS t rm -f \$c; ctr -a $T/containerd.sock -n $NS c rm \$c; done"
wait_for 30 C version || { tail -20 "$T/containerd.log" | sed 's/^/# containerd: /'; bail "containerd did not start"; }
log "containerd $(C version | awk '/Version:/ { print $2; exit }') in $T"
# ctr 1.6 run has no --user: busybox variants whose image config sets the user (umoci, on a
# copy of the cached layout in the temp dir) stand in for --user 0 and --user 1234:5678.
user_variant() {
  local tag=$1 user=$2
  [ -d "$T/bb-layout" ] || cp -a "$IMAGES/busybox/layout" "$T/bb-layout" || return 1
  umoci config --image "$T/bb-layout:busybox" --tag "$tag" --config.user "$user" >/dev/null &&
    skopeo copy -q "oci:$T/bb-layout:$tag" "docker-archive:$T/busybox-$tag.docker.tar:busybox-$tag:latest"
}
user_variant root 0:0 && user_variant u1234 1234:5678 || bail "busybox user variants (umoci)"
for a in "$(image_archive busybox)" "$(image_archive python)" "$T/busybox-root.docker.tar" "$T/busybox-u1234.docker.tar"; do
  [ -f "$a" ] && C images import "$a" >/dev/null || bail "import of $a"
done
start_httpd
snapshot_mounts

c_exit0() { crun_ "$(nm x0)" --rm "$BB" "$(nm x0)" true; echo "rc=$?"; }
c_exit3() {
  local out
  out=$(crun_ "$(nm x3)" --rm "$BB" "$(nm x3)" sh -c 'echo out; echo err >&2; exit 3' 2>"$T/err.$RT"); echo "rc=$? stdout=$out"
  echo "stderr=$(cat "$T/err.$RT")"
}
c_detach() {
  crun_ "$(nm d)" -d --log-uri "file://$T/log-$RT" "$BB" "$(nm d)" sh -c 'echo started; exec sleep 1000'; echo "rc=$?"
  status d
}
c_exec() {
  C t exec --exec-id e1 "$(nm d)" sh -c 'echo exec-ok; id -u'; echo "rc=$?"
  C t exec --exec-id e2 "$(nm d)" sh -c 'exit 7'; echo "rc=$?"
  C t exec --exec-id e3 --user 0 "$(nm d)" id -u; echo "rc=$?"
}
c_exec_tty() { tty_session ctr -a "$T/containerd.sock" -n "$NS" t exec -t --exec-id et "$(nm d)" sh; }
c_ps() { C t ps "$(nm d)" | tail -n +2 | wc -l; }
c_logs() { cat "$T/log-$RT"; }
c_pause() {
  C t pause "$(nm d)"; echo "pause=$?"; status d
  C t resume "$(nm d)"; echo "resume=$?"; status d
  C t exec --exec-id e4 "$(nm d)" echo alive
}
c_update() {
  "$(rt_path)" --root "$T/runc-root/$NS" update --pids-limit 50 --memory 100663296 --memory-swap 100663296 "$(nm d)"
  echo "rc=$?"
  echo "host pids.max $(cat "/sys/fs/cgroup/pids/$CG/$(nm d)/pids.max")"
  echo "host memory.limit $(cat "/sys/fs/cgroup/memory/$CG/$(nm d)/memory.limit_in_bytes")"
  echo "inside memory.limit $(C t exec --exec-id e5 "$(nm d)" cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || echo none)"
}
# sh as pid 1 has no SIGTERM handler: TERM does nothing, KILL stops it.
c_stop() {
  C t kill "$(nm d)"; echo "term=$?"; sleep 1; status d
  C t kill -s KILL "$(nm d)"; echo "kill=$?"
  wait_for 10 sh -c "ctr -a '$T/containerd.sock' -n $NS t ls | grep -q '^$(nm d) .*STOPPED'"; status d
}
c_kill() {
  task_rm "$(nm d)"
  C t start -d --log-uri "file://$T/log-$RT" "$(nm d)"; echo "start=$?"; status d
  C t kill -s KILL "$(nm d)"; echo "kill=$?"
  wait_for 10 sh -c "ctr -a '$T/containerd.sock' -n $NS t ls | grep -q '^$(nm d) .*STOPPED'"; status d
}
# What the shim runs when containerd kills every process of a task that already exited.
c_kill_all_stopped() {
  "$(rt_path)" --root "$T/runc-root/$NS" kill --all "$(nm d)" KILL; echo "rc=$?"
}
c_rm() {
  task_rm "$(nm d)"
  C c rm "$(nm d)"; echo "rm=$?"
  echo "leftovers $(leftovers "$(nm d)")"
}
c_tty() { tty_session ctr -a "$T/containerd.sock" -n "$NS" run $(RO "$(nm t)") -t --rm "$BB" "$(nm t)" sh; }
c_oom() { crun_ "$(nm oom)" --rm --memory-limit 33554432 "$BB" "$(nm oom)" sh -c 'tail /dev/zero'; echo "rc=$?"; }
c_readonly() {
  crun_ "$(nm ro)" --rm --read-only "$BB" "$(nm ro)" sh -c 'touch /x 2>/dev/null; echo root=$?; touch /tmp/x 2>/dev/null; echo tmp=$?'
}
# ctr wants each name (no ALL): these are containerd's default set.
CAPS_DEFAULT="CHOWN DAC_OVERRIDE FSETID FOWNER MKNOD NET_RAW SETGID SETUID SETFCAP SETPCAP NET_BIND_SERVICE SYS_CHROOT KILL AUDIT_WRITE"
c_user() { crun_ "$(nm u)" --rm docker.io/library/busybox-u1234:latest "$(nm u)" id; echo "rc=$?"; }
c_root() {
  crun_ "$(nm r)" --rm docker.io/library/busybox-root:latest "$(nm r)" sh -c 'id; grep -E "^Cap(Prm|Eff|Bnd)" /proc/self/status'
  echo "rc=$?"
}
c_root_repeat() {
  local i ok=0
  for i in 1 2 3 4 5 6 7 8 9 10; do crun_ "$(nm r$i)" --rm docker.io/library/busybox-root:latest "$(nm r$i)" true && ok=$((ok + 1)); done
  echo "ok=$ok of 10"
}
c_capdrop() {
  crun_ "$(nm cap)" --rm $(printf -- '--cap-drop CAP_%s ' $CAPS_DEFAULT) "$BB" "$(nm cap)" sh -c 'grep -E "^(Cap|NoNewPrivs)" /proc/self/status'
}
c_bind() {
  local dir=$T/bind-$RT
  rm -rf "$dir"; mkdir -p "$dir" && echo from-host > "$dir/in" && chmod 0777 "$dir"
  crun_ "$(nm b1)" --rm --mount "type=bind,src=$dir,dst=/data,options=rbind:rw" "$BB" "$(nm b1)" \
    sh -c 'cat /data/in; echo from-container > /data/out'; echo "rc=$?"
  cat "$dir/out"
  crun_ "$(nm b2)" --rm --mount "type=bind,src=$dir,dst=/data,options=rbind:ro" "$BB" "$(nm b2)" \
    sh -c 'cat /data/in; touch /data/x 2>/dev/null; echo ro-touch=$?'
}
c_bind_symlink() {
  local dir=$T/bind-$RT
  mkdir -p "$dir" && echo from-host > "$dir/in"
  crun_ "$(nm b3)" --rm --mount "type=bind,src=$dir,dst=/bin/an-data,options=rbind:ro" "$BB" "$(nm b3)" \
    cat /usr/bin/an-data/in; echo "rc=$?"
}
c_net_none() { crun_ "$(nm n0)" --rm "$BB" "$(nm n0)" ls /sys/class/net; echo "rc=$?"; }
c_net_host() {
  crun_ "$(nm n1)" --rm --net-host "$PY" "$(nm n1)" python3 -c \
    'import urllib.request as u; print(u.urlopen("http://127.0.0.1:8080/ok", timeout=5).read().decode().strip())'
  echo "rc=$?"
}
c_python() {
  crun_ "$(nm py)" --rm "$PY" "$(nm py)" python3 -c \
    'import sys, json, sqlite3, ssl; print(json.dumps([sum(range(10)), sys.version_info[0]]))'
  echo "rc=$?"
}
t_true() { crun_ "$(nm tt)" --rm "$BB" "$(nm tt)" true; }

tcase k8s-runtime-handler-config 'BinaryName = \(agentnest-oci\)\|\[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.agentnest.options\]\|\[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.agentnest\]\|pod_annotations = \["org.agentnest.\*"\]\|runtime_type = "io.containerd.runc.v2"' c_k8s_config
tcase exit0 'rc=0' c_exit0
tcase exit3 'rc=3 stdout=out\|stderr=err' c_exit3
tcase detach 'rc=0\|RUNNING' c_detach
tcase exec 'exec-ok\|65532\|rc=0\|rc=7\|0\|rc=0' c_exec
tcase exec-tty '/dev/pts/N\|hello-42\|rc=4' c_exec_tty
tcase ps '1' c_ps
tcase logs 'started' c_logs
tcase pause-resume 'pause=0\|PAUSED\|resume=0\|RUNNING\|alive' c_pause
tcase update 'rc=0\|host pids.max 50\|host memory.limit 100663296\|inside memory.limit (100663296|none)' c_update
tcase stop 'term=0\|RUNNING\|kill=0\|STOPPED' c_stop
tcase kill 'exit=137\|task-rm=0\|start=0\|RUNNING\|kill=0\|STOPPED' c_kill
tcase kill-all-stopped 'rc=0' c_kill_all_stopped
tcase rm 'exit=137\|task-rm=0\|rm=0\|leftovers none' c_rm
tcase tty-it '/dev/pts/N\|hello-42\|rc=4' c_tty
tcase memory-oom 'rc=137' c_oom
tskip pids-limit "ctr 1.6 has no --pids-limit (covered by update here)"
tcase read-only 'root=1\|tmp=1' c_readonly
tcase user 'uid=1234 gid=5678( groups=5678)?\|rc=0' c_user
tcase user-root 'uid=0\(root\).*\|CapPrm.*\|CapEff.*\|CapBnd.*\|rc=0' c_root
tcase user-root-x10 'ok=10 of 10' c_root_repeat
tcase cap-drop-all 'CapInh:.0+\|CapPrm:.0+\|CapEff:.0+\|CapBnd:.0+\|CapAmb:.0+\|NoNewPrivs:.1' c_capdrop
tskip init "ctr has no --init"
tcase bind-mount 'from-host\|rc=0\|from-container\|from-host\|ro-touch=1' c_bind
tcase bind-symlink-target 'from-host\|rc=0' c_bind_symlink
tcase network-none 'lo\|rc=0' c_net_none
tcase network-host 'reached-host\|rc=0' c_net_host
tcase python-image '\[45, 3\]\|rc=0' c_python
tcase no-leftovers 'containers=0\|leftovers none' c_final
timing 'run --rm true' t_true

summary
[ "$N_FAIL" = 0 ]
