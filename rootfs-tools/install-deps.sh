#!/bin/bash
# install-deps.sh: install every Debian 12 package that AgentNest's build,
# tests, benchmarks and image tools need (`make deps`). Run as root.
# Non-interactive; a no-op in well under a second when everything is present;
# waits (up to 15 min) for a dpkg lock held by another apt run.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive LC_ALL=C

PACKAGES=(
  # build
  build-essential pkg-config dpkg-dev git ca-certificates
  libseccomp-dev libcap-dev libnl-3-dev libnl-route-3-dev libarchive-dev libyajl-dev libyaml-dev
  libnftables-dev libssl-dev libldns-dev libmicrohttpd-dev
  # egress tests' fake internet (DNS server) and the HTTP API's load test
  dnsmasq-base wrk
  # agent front ends' tests (tests/mcp, tests/http: npm ci of pinned lockfiles; Debian's nodejs
  # needs `npm` too, NodeSource's ships it)
  curl nodejs
  # runtime: mke2fs for workspace images where the store has no project quota
  e2fsprogs
  # tests, sanitizers, benchmarks
  libcriterion-dev clang libclang-rt-14-dev strace hyperfine runc crun bubblewrap
  tmux   # a real terminal for the exec -t tests (tests/integration/cli_io_test.c)
  nftables iproute2 qemu-system-x86 linux-image-amd64 kmod cpio   # + busybox-static: tests/vm/
  # container engines for `make check-engines` (tests/engines/): podman, Docker, containerd
  podman conmon uidmap slirp4netns containernetworking-plugins catatonit
  docker.io containerd tini
  # image tools (rootfs-tools/)
  skopeo umoci jq zstd debootstrap busybox-static wget openssl util-linux
  coreutils findutils tar gzip
  # the main job: CPython regression tests on the host, for comparison
  python3.11 libpython3.11-testsuite
  # the Python client (python/): its test installs it with pip, without an index
  python3-pip python3-setuptools python3-wheel python3-venv
  # agentnest-batch(1)'s Slurm example, run on a one-node cluster by tests/batch/slurm-array.sh
  slurm-wlm munge
)
# the browser image (build-browser.sh): npm ci of playwright-core; any npm will do (a
# Node.js from elsewhere brings its own, and Debian's npm would conflict with it)
command -v npm >/dev/null || PACKAGES+=(npm)

missing=$(dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' "${PACKAGES[@]}" 2>&1 |
  awk '$1 != "ii" { print $NF }' || true)
if [ -z "$missing" ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi
[ "$(id -u)" = 0 ] || { echo "install-deps: run as root to install: $missing" >&2; exit 1; }
echo "install-deps: installing:" $missing
# docker.io and containerd would start their system daemons on a systemd host (dockerd
# then writes the host's iptables); the engine tests start daemons of their own, so no
# service is started during this install (policy-rc.d, invoke-rc.d(8)).
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 0755 /usr/sbin/policy-rc.d
  trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
apt-get -o DPkg::Lock::Timeout=900 update -q
apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends "${PACKAGES[@]}"
