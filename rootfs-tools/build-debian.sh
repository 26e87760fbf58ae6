#!/bin/bash
# build-debian.sh: the `debian` image: `debootstrap --variant=minbase` of
# Debian 12 (bookworm) with python3, git, openssh-client and ca-certificates,
# for Git and package-install work (apt works inside: run `apt-get update`
# first), plus the git profile's credential helpers from rootfs-tools/debian/
# (agentnest-git-askpass, agentnest-git-ssh in /usr/local/bin: credentials
# only from --secret variables, never from files of the host).
# The mirror is this machine's own Debian mirror (from /etc/apt/sources.list
# or /etc/apt/sources.list.d/*; override with AN_DEBIAN_MIRROR).
#
# Slim like debian:*-slim (no man pages, docs except copyright, translations;
# a dpkg.cfg.d path-exclude keeps it so for later installs).
# Reproducibility: logs, apt caches and lists, backup files, device nodes,
# resolv.conf and the ldconfig aux cache are removed; shadow "last change"
# days are fixed; Python bytecode is rebuilt as checked-hash pycs (PEP 552)
# in one sorted pass; every mtime is SOURCE_DATE_EPOCH. What debootstrap
# itself leaves (see rootfs-tools/README.md) is identical run to run.
#
#   build-debian.sh inputs      print what determines the image (mirror, suite
#                               Release file hash, package list)
#   build-debian.sh build OUT   write OUT/rootfs, OUT/layout, OUT/inputs
set -euo pipefail
AN_BUILDER=debian
. "$(dirname "$0")/lib.sh"

SUITE=bookworm
INCLUDE=python3,git,openssh-client,ca-certificates

# The first Debian mirror in this machine's apt sources that carries $SUITE.
debian_mirror() {
  [ -z "${AN_DEBIAN_MIRROR:-}" ] || { echo "$AN_DEBIAN_MIRROR"; return; }
  local m
  m=$( { awk -v s="$SUITE" '$1 == "deb" { for (i = 3; i <= NF; i++) if ($i == s) { print $2; exit } }' \
           /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null
         for f in /etc/apt/sources.list.d/*.sources; do
           [ -f "$f" ] || continue
           awk -v s="$SUITE" 'BEGIN { RS = ""; FS = "\n" }
             { uri = ""; ok = 0
               for (i = 1; i <= NF; i++) {
                 if ($i ~ /^URIs:/) { split($i, a, " "); uri = a[2] }
                 if ($i ~ /^Suites:/) { n = split($i, b, " "); for (j = 2; j <= n; j++) if (b[j] == s) ok = 1 } }
               if (ok && uri != "") print uri }' "$f"
         done; } | grep -v -- '-security' | head -1)
  [ -n "$m" ] || die "no Debian mirror for $SUITE in /etc/apt/sources.list{,.d/*} (set AN_DEBIAN_MIRROR)"
  echo "${m%/}"
}

# The suite's signed Release file identifies every package version in it.
inputs() {
  local mirror release
  mirror=$(debian_mirror)
  release=$(wget -q -T 20 -O- "$mirror/dists/$SUITE/InRelease" 2>/dev/null | sha256sum | cut -d' ' -f1)
  if [ "$release" = "$(printf '' | sha256sum | cut -d' ' -f1)" ]; then
    local f
    f=/var/lib/apt/lists/$(sed 's|^[a-z]*://||; s|/|_|g' <<<"$mirror")_dists_${SUITE}_InRelease
    [ -f "$f" ] || die "cannot fetch $mirror/dists/$SUITE/InRelease"
    release=$(sha256sum "$f" | cut -d' ' -f1)
  fi
  echo "mirror $mirror suite $SUITE variant minbase include $INCLUDE InRelease $release"
  echo "debootstrap $(dpkg-query -W -f '${Version}' debootstrap)"
}

# scrub ROOT: remove what differs between two debootstraps of the same inputs.
scrub() {
  local root=$1 days=$((SOURCE_DATE_EPOCH / 86400))
  rm -rf "$root/debootstrap"
  rm -f "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb
  find "$root/var/lib/apt/lists" -mindepth 1 -maxdepth 1 ! -name partial ! -name lock -exec rm -rf {} +
  find "$root/var/log" -type f -delete
  rm -f "$root"/var/cache/debconf/*-old "$root"/var/lib/dpkg/*-old "$root"/etc/*-
  rm -f "$root/var/cache/ldconfig/aux-cache" "$root/etc/machine-id" "$root/var/lib/dbus/machine-id"
  rm -rf "$root"/tmp/* "$root"/var/tmp/* "$root"/run/*
  rm -f "$root/etc/resolv.conf"
  # Slim, as Docker's debian:*-slim: no manuals, docs (copyright stays),
  # translations; dpkg keeps excluding them for packages installed later.
  cat > "$root/etc/dpkg/dpkg.cfg.d/agentnest-slim" <<'CFG'
# AgentNest debian image: keep the image small (as debian:*-slim does).
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/man/*
CFG
  chmod 0644 "$root/etc/dpkg/dpkg.cfg.d/agentnest-slim"
  find "$root/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
  find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "$root"/usr/share/groff/* "$root"/usr/share/info/* "$root"/usr/share/lintian/* \
    "$root"/usr/share/linda/* "$root"/usr/share/locale/* "$root"/usr/share/man/*
  echo sandbox > "$root/etc/hostname"
  # shadow(5) field 3, "date of last password change", is the build day.
  sed -i -E "s/^([^:]*:[^:]*:)[0-9]+:/\\1$days:/" "$root/etc/shadow"
  # The sandbox user, as in every AgentNest image.
  grep -q '^agent:' "$root/etc/passwd" || {
    echo 'agent:x:65532:65532:agent:/home/agent:/bin/bash' >> "$root/etc/passwd"
    echo 'agent:x:65532:' >> "$root/etc/group"
    echo "agent:*:$days:0:99999:7:::" >> "$root/etc/shadow"
    echo 'agent:*::' >> "$root/etc/gshadow"
  }
  mkdir -p "$root/workspace" "$root/home/agent"
  chown 65532:65532 "$root/workspace" "$root/home/agent"
  chmod 0755 "$root/workspace" "$root/home/agent"
  chmod 1777 "$root/tmp"
  # Bytecode written by the python3 maintainer scripts records source mtimes;
  # rebuild it mtime-independent, in one sorted pass (deterministic marshal).
  find "$root/usr" -name __pycache__ -type d -prune -exec rm -rf {} +
  env -i PATH=/usr/bin:/bin LANG=C.UTF-8 /usr/sbin/chroot "$root" /usr/bin/python3 -m compileall -q \
    --invalidation-mode checked-hash -x '/(lib2to3/tests|test|tests|idle_test)/' \
    /usr/lib/python3.11 /usr/lib/python3/dist-packages >/dev/null ||
    die "byte-compiling python in $root failed"
}

build() {
  local out=$1 root=$1/rootfs mirror
  mirror=$(debian_mirror)
  mkdir -p "$DEB_CACHE/debootstrap"
  log "debootstrap $SUITE from $mirror"
  debootstrap --variant=minbase --include="$INCLUDE" --cache-dir="$DEB_CACHE/debootstrap" \
    "$SUITE" "$root" "$mirror" > "$out/debootstrap.log" 2>&1 ||
    { tail -20 "$out/debootstrap.log" >&2; die "debootstrap failed"; }
  rm -f "$out/debootstrap.log"
  scrub "$root"
  env -i PATH=/usr/bin:/bin /usr/sbin/chroot "$root" dpkg-query -W -f '${Package} ${Version}\n' |
    sort > "$out/inputs"
  env -i PATH=/usr/bin:/bin LANG=C.UTF-8 /usr/sbin/chroot "$root" /usr/bin/python3 -c \
    'import json,sqlite3,ssl,venv,asyncio; assert ssl.create_default_context().cert_store_stats()["x509_ca"] > 100' ||
    die "self-check: python3 in $root"
  env -i PATH=/usr/bin:/bin /usr/sbin/chroot "$root" git --version >/dev/null || die "self-check: git in $root"
  env -i PATH=/usr/bin:/bin /usr/sbin/chroot "$root" ssh -V 2>/dev/null || die "self-check: ssh in $root"
  install -m 0755 "$RT_DIR/debian/agentnest-git-askpass" "$RT_DIR/debian/agentnest-git-ssh" "$root/usr/local/bin/"
  env -i PATH=/usr/bin:/bin GIT_TOKEN=t /usr/sbin/chroot "$root" /usr/local/bin/agentnest-git-askpass "Password for 'https://x@h': " |
    grep -qx t || die "self-check: agentnest-git-askpass in $root"
  # Device nodes debootstrap made for its chroot: the runtime provides /dev.
  find "$root/dev" -mindepth 1 -delete
  normalise_root "$root"
  "$RT_DIR/oci-layout.sh" --out "$out/layout" --tag debian \
    --layer "$root=debootstrap --variant=minbase --include=$INCLUDE $SUITE" \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env LANG=C.UTF-8 --cmd '["bash"]' --workdir /workspace --user 65532:65532 \
    --label org.opencontainers.image.title=agentnest-debian >/dev/null
}

case ${1:-} in
  inputs) inputs ;;
  build) [ $# -eq 2 ] || die "usage: $0 build OUTDIR"; build "$2" ;;
  *) die "usage: $0 inputs | build OUTDIR" ;;
esac
