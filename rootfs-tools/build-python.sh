#!/bin/bash
# build-python.sh: the `python` image, AgentNest's DEFAULT image: Debian 12's
# Python 3.11 with its full standard library (json, sqlite3, ssl, venv,
# asyncio, ctypes, decimal, lzma, bz2, zlib, uuid, zoneinfo...), CA
# certificates, tzdata, netbase (/etc/services), libc-bin (ldconfig, the
# C.UTF-8 locale), libpython3.11-dev (headers), pip and venv (python3-pip,
# python3-venv; pip installs go to /workspace, see PIP_ENV) and busybox for a
# shell. Built from .deb files
# (apt-get download + unpack, no maintainer scripts, no dpkg database) in a
# few seconds; the dependency closure comes from apt, minus the packaging
# machinery (dpkg, debconf, perl-base, tar) that only maintainer scripts use.
#
#   build-python.sh inputs      print the package versions that determine the image
#   build-python.sh build OUT   write OUT/rootfs, OUT/layout, OUT/inputs
#   build-python.sh rootfs DIR  only populate DIR (used by build-python-tests.sh)
set -euo pipefail
AN_BUILDER=python
. "$(dirname "$0")/lib.sh"

ROOTS="python3 python3.11 libpython3.11-stdlib libpython3.11-dev python3.11-venv python3-pip python3-venv ca-certificates openssl tzdata media-types netbase libc-bin busybox-static"
EXCLUDES="dpkg debconf perl-base tar"
# pip in a read-only root: the system site-packages cannot change, so pip
# (not in a venv) falls back to a user install ("normal site-packages is not
# writeable") into PYTHONUSERBASE=/workspace/.local, whose bin/ is on PATH.
# PEP 668's EXTERNALLY-MANAGED marker would refuse that; it protects the
# distribution's files, which the read-only root protects here, so
# PIP_BREAK_SYSTEM_PACKAGES=1 lets the user install proceed (it changes
# nothing inside a venv: `python3 -m venv /workspace/venv` works as usual).
# No cache (HOME is read-only) and no version check (no network by default).
PIP_ENV=(--env PYTHONUSERBASE=/workspace/.local --env PIP_BREAK_SYSTEM_PACKAGES=1
         --env PIP_NO_CACHE_DIR=1 --env PIP_DISABLE_PIP_VERSION_CHECK=1)
PY_ENV=(--env PATH=/workspace/.local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
        --env LANG=C.UTF-8 --env PYTHONDONTWRITEBYTECODE=1 "${PIP_ENV[@]}")
PY_MODULES=json,sqlite3,ssl,venv,asyncio,ctypes,decimal,lzma,bz2,zlib,uuid,zoneinfo,readline,hashlib,curses,dbm,socket,subprocess

inputs() { deb_closure "$ROOTS" "$EXCLUDES"; }

# ca_bundle ROOT: what update-ca-certificates (a maintainer-script action)
# would produce with every Mozilla certificate enabled: one PEM link per
# certificate, OpenSSL subject-hash links, and the ca-certificates.crt bundle.
ca_bundle() {
  local root=$1 crt name hash n
  local certs=$root/etc/ssl/certs
  mkdir -p "$certs"
  : > "$certs/ca-certificates.crt"
  for crt in "$root"/usr/share/ca-certificates/mozilla/*.crt; do
    name=$(basename "$crt" .crt)
    ln -sfn "/usr/share/ca-certificates/mozilla/$name.crt" "$certs/$name.pem"
    cat "$crt" >> "$certs/ca-certificates.crt"
    hash=$(openssl x509 -hash -noout -in "$crt")
    n=0; while [ -e "$certs/$hash.$n" ] || [ -L "$certs/$hash.$n" ]; do n=$((n + 1)); done
    ln -s "$name.pem" "$certs/$hash.$n"
  done
  chmod 0644 "$certs/ca-certificates.crt"
}

# chroot_python ROOT ARGS...: run the image's python3 with a clean environment.
chroot_python() {
  local root=$1; shift
  env -i PATH=/usr/bin:/bin LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 /usr/sbin/chroot "$root" /usr/bin/python3 "$@"
}

# populate ROOT DEBLIST: unpack the image into ROOT, write the .deb paths used to DEBLIST.
populate() {
  local root=$1 debs
  inputs | deb_fetch > "$2"
  mapfile -t debs < "$2"
  merged_usr_root "$root"
  deb_unpack "$root" "${debs[@]}"
  # Manuals and changelogs are dead weight in a sandbox; copyright files stay.
  rm -rf "$root/usr/share/man" "$root/usr/share/info" "$root/usr/share/lintian"
  find "$root/usr/share/doc" -type f ! -name copyright -delete
  busybox_links "$root"
  base_files "$root"
  ca_bundle "$root"
  # ld.so.cache so the dynamic loader finds the multiarch libraries quickly.
  ldconfig -r "$root"
  # ldconfig's aux cache records inodes and ctimes of this build (two builds
  # of the same inputs differed only there); the loader never reads it.
  rm -f "$root/var/cache/ldconfig/aux-cache"
  # Byte-compile the standard library once, here: the root is read-only at run
  # time and PYTHONDONTWRITEBYTECODE=1. unchecked-hash pycs stay valid whatever
  # mtimes the importer gives the sources (PEP 552); one process, sorted order,
  # so the output is the same every build.
  chroot_python "$root" -m compileall -q -f --invalidation-mode unchecked-hash \
    -x '/(lib2to3/tests|test|tests|idle_test)/' /usr/lib/python3.11 /usr/lib/python3/dist-packages >/dev/null ||
    die "byte-compiling the standard library failed"
  chroot_python "$root" -c "import $PY_MODULES, ssl
assert ssl.create_default_context().cert_store_stats()['x509_ca'] > 100, 'no CA certificates'" ||
    die "self-check: python3 in $root cannot import $PY_MODULES"
  chroot_python "$root" -m pip --version >/dev/null || die "self-check: python3 -m pip in $root"
  chroot_python "$root" -c 'import ensurepip; assert ensurepip.version()' ||
    die "self-check: ensurepip (python3 -m venv) in $root"
  chroot "$root" /bin/sh -c '[ "$(id -u agent)" = 65532 ]' || die "self-check: /bin/sh in $root"
}

build() {
  local out=$1 root=$1/rootfs
  mkdir -p "$root"
  populate "$root" "$out/debs.list"
  mapfile -t debs < "$out/debs.list"
  rm -f "$out/debs.list"
  write_inputs "$out/inputs" "${debs[@]}"
  normalise_root "$root"
  "$RT_DIR/oci-layout.sh" --out "$out/layout" --tag python \
    --layer "$root=Debian 12 python3 $(dpkg-deb -f "$(printf '%s\n' "${debs[@]}" | grep /python3.11_)" Version) + busybox" \
    "${PY_ENV[@]}" --cmd '["python3"]' --workdir /workspace --user 65532:65532 \
    --label org.opencontainers.image.title=agentnest-python >/dev/null
}

case ${1:-} in
  inputs) inputs ;;
  build) [ $# -eq 2 ] || die "usage: $0 build OUTDIR"; build "$2" ;;
  rootfs) [ $# -eq 2 ] || die "usage: $0 rootfs DIR"; mkdir -p "$2"; l=$(mktemp); populate "$2" "$l"; rm -f "$l" ;;
  *) die "usage: $0 inputs | build OUTDIR | rootfs DIR" ;;
esac
