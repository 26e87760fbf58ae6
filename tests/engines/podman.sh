#!/bin/bash
# podman.sh: podman (Debian's 4.3, rootful, CNI) with `--runtime build/agentnest-oci`,
# against `--runtime runc`.
#
# All of podman's state is in a temp dir: --root, --runroot, --tmpdir, --network-config-dir
# and a containers.conf (CONTAINERS_CONF) and storage.conf of the suite's own.  Its default
# network "podman" is a CNI bridge on 198.51.100.0/24 (a documentation range) with the
# default plugins (bridge, portmap, firewall, tuning) and host-local IPAM state in the temp
# dir; the bridge, its firewall rules and its ip_forward sysctl live in the network
# namespace that run-engines.sh made for this suite, never the host's.  Containers get
# nofile and nproc limits of at most 16384 (podman's rootful defaults, 1048576 and 4194304,
# can be above the caller's hard limits, and raising those needs CAP_SYS_RESOURCE, which a
# CI sandbox may lack).  Images come from the project's OCI layouts (skopeo ->
# docker-archive -> podman load).  Run as root, by run-engines.sh.
ENGINE=podman
. "$(dirname "$0")/lib.sh"

command -v podman >/dev/null && command -v conmon >/dev/null || bail "podman not installed (make deps)"
BB=docker.io/library/busybox:latest PY=docker.io/library/python:latest GW=198.51.100.1 INIT_COMM=podman-init
# podman 4.3 on cgroup v1 reports State.OOMKilled false after an OOM kill, with runc too.
OOMKILLED=false
# podman itself refuses a workdir missing in the image (before any runtime runs).
NEWDIR=/tmp
HAS_UIDMAP=1
mkdir -p "$T/cni" "$T/tmp"
cat > "$T/containers.conf" <<CONF
[containers]
log_driver = "k8s-file"
[network]
network_backend = "cni"
network_config_dir = "$T/cni"
default_subnet = "198.51.100.0/24"
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
tmp_dir = "$T/tmp"
CONF
cat > "$T/cni/87-podman-bridge.conflist" <<CONF
{ "cniVersion": "0.4.0", "name": "podman",
  "plugins": [
    { "type": "bridge", "bridge": "an-podman0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
      "ipam": { "type": "host-local", "dataDir": "$T/cni-ipam", "routes": [{ "dst": "0.0.0.0/0" }],
                "ranges": [[{ "subnet": "198.51.100.0/24", "gateway": "198.51.100.1" }]] } },
    { "type": "portmap", "capabilities": { "portMappings": true } },
    { "type": "firewall" },
    { "type": "tuning" } ] }
CONF
printf '[storage]\ndriver = "overlay"\nrunroot = "%s/runroot"\ngraphroot = "%s/root"\n' "$T" "$T" > "$T/storage.conf"
export CONTAINERS_CONF=$T/containers.conf CONTAINERS_STORAGE_CONF=$T/storage.conf
# podman's shared-memory locks: removed at the end unless they were there before.
[ -e /dev/shm/libpod_lock ] || on_exit "rm -f /dev/shm/libpod_lock"

PG=(--root "$T/root" --runroot "$T/runroot" --tmpdir "$T/tmp" --network-config-dir "$T/cni"
    --cgroup-manager cgroupfs --events-backend file --storage-driver overlay --log-level error)
d() { podman "${PG[@]}" --runtime "$(rt_path)" "$@"; }
cap() { local v; v=$(ulimit -H "$1"); [ "$v" = unlimited ] || [ "$v" -gt 16384 ] && v=16384; echo "$v"; }
UL=(--ulimit "nofile=$(cap -n):$(cap -n)" --ulimit "nproc=$(cap -u):$(cap -u)")
run_argv() { RUN_ARGV=(podman "${PG[@]}" --runtime "$(rt_path)" run --pull never --cgroup-parent "/$CG" "${UL[@]}"); }
exec_argv() { EXEC_ARGV=(podman "${PG[@]}" --runtime "$(rt_path)" exec); }
cid() { d inspect -f '{{.Id}}' "$1"; }
ncontainers() { d ps -aq | wc -l; }

ip link set lo up || bail "no loopback in the suite's netns"
on_exit "podman ${PG[*]} rm -af -t 0"
for img in busybox python; do
  a=$(image_archive "$img") && RT=runc d load -q -i "$a" >/dev/null || bail "import of $img"
done
log "podman $(RT=runc d version -f '{{.Client.Version}}') in $T; images: $(RT=runc d images --format '{{.Repository}}' | tr '\n' ' ')"
start_httpd
snapshot_mounts

. "$HERE/dockerlike.sh"
dockerlike_cases
tcase no-leftovers 'containers=0\|leftovers none' c_final
timing 'run --rm true' t_true

summary
[ "$N_FAIL" = 0 ]
