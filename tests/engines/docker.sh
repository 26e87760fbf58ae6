#!/bin/bash
# docker.sh: Docker (Debian's docker.io) with agentnest-oci as a runtime, against runc.
#
# Starts its own dockerd: data-root, exec-root, pidfile, socket and config in a temp dir;
# `runtimes.agentnest` in that config points at build/agentnest-oci; dockerd's own
# containerd lives under the exec-root.  --iptables=false --ip6tables=false
# --ip-forward=false --ip-masq=false: dockerd touches no firewall or sysctl; its default
# bridge (192.0.2.0/24, a documentation range) lives in the network namespace that
# run-engines.sh made for this suite.  Images come from the project's OCI layouts
# (skopeo -> docker-archive -> docker load).  Run as root, by run-engines.sh.
ENGINE=docker
. "$(dirname "$0")/lib.sh"

DOCKER=/usr/bin/docker   # Debian's client (a newer one elsewhere in PATH would be another test)
[ -x /usr/sbin/dockerd ] && [ -x "$DOCKER" ] || bail "dockerd not installed (make deps)"
BB=busybox PY=python GW=192.0.2.1 INIT_COMM=docker-init UPDATE_PIDS=1 OOMKILLED=true DONOR_OPTS="--ipc shareable"

d() { "$DOCKER" -H "unix://$T/docker.sock" "$@"; }
run_argv() { RUN_ARGV=("$DOCKER" -H "unix://$T/docker.sock" run --runtime "$RT"); }
exec_argv() { EXEC_ARGV=("$DOCKER" -H "unix://$T/docker.sock" exec); }
cid() { d inspect -f '{{.Id}}' "$1"; }
ncontainers() { d ps -aq | wc -l; }

cat > "$T/daemon.json" <<EOF
{ "runtimes": { "agentnest": { "path": "$AN_OCI" } } }
EOF
ip link set lo up || bail "no loopback in the suite's netns"
/usr/sbin/dockerd --config-file "$T/daemon.json" --data-root "$T/data" --exec-root "$T/exec" \
  --pidfile "$T/docker.pid" -H "unix://$T/docker.sock" --iptables=false --ip6tables=false \
  --ip-forward=false --ip-masq=false --bip 192.0.2.1/24 --userland-proxy=false \
  --cgroup-parent "/$CG" --exec-opt native.cgroupdriver=cgroupfs --storage-driver overlay2 \
  --shutdown-timeout 1 --log-level warn > "$T/dockerd.log" 2>&1 &
DOCKERD=$!
on_exit "kill $DOCKERD; for i in \$(seq 1 100); do kill -0 $DOCKERD || break; sleep 0.1; done"
wait_for 30 d version || { tail -20 "$T/dockerd.log" | sed 's/^/# dockerd: /'; bail "dockerd did not start"; }
log "dockerd $(d version -f '{{.Server.Version}}') in $T; runtimes: $(d info -f '{{range $k, $v := .Runtimes}}{{$k}} {{end}}')"

for img in busybox python; do
  a=$(image_archive "$img") && d load -q -i "$a" >/dev/null || bail "import of $img"
done
start_httpd
snapshot_mounts

. "$HERE/dockerlike.sh"
dockerlike_cases
tcase no-leftovers 'containers=0\|leftovers none' c_final
timing 'run --rm true' t_true

summary
[ "$N_FAIL" = 0 ]
