#!/bin/bash
# build-python-tests.sh: the `python-tests` image: the `python` image's layer
# unchanged (same blob digest) plus one extra layer holding Debian's
# libpython3.11-testsuite (CPython's regression tests, /usr/lib/python3.11/test)
# and what it alone depends on. For the CPython regression-test job:
# `python3 -m test test_json` works inside.
#
# Needs the python image: AN_BASE_ROOTFS (default $AN_IMAGE_CACHE/python/rootfs).
#   build-python-tests.sh inputs      print what determines the image
#   build-python-tests.sh build OUT   write OUT/rootfs, OUT/layout, OUT/inputs
set -euo pipefail
AN_BUILDER=python-tests
. "$(dirname "$0")/lib.sh"

BASE=${AN_BASE_ROOTFS:-$AN_IMAGE_CACHE/python/rootfs}
PY_ROOTS=$(sed -n 's/^ROOTS="\(.*\)"$/\1/p' "$RT_DIR/build-python.sh")
PY_EXCLUDES=$(sed -n 's/^EXCLUDES="\(.*\)"$/\1/p' "$RT_DIR/build-python.sh")

# The test suite's packages: closure(python + testsuite) minus closure(python).
inputs() {
  comm -23 <(deb_closure "$PY_ROOTS libpython3.11-testsuite" "$PY_EXCLUDES") \
           <(deb_closure "$PY_ROOTS" "$PY_EXCLUDES")
}

build() {
  local out=$1 root=$1/rootfs extra=$1/layer-testsuite debs
  [ -x "$BASE/usr/bin/python3" ] || die "base python rootfs $BASE missing (build the python image first)"
  inputs | deb_fetch > "$out/debs.list"
  mapfile -t debs < "$out/debs.list"
  rm -f "$out/debs.list"
  [ ${#debs[@]} -gt 0 ] || die "no test suite packages resolved"
  # The extra layer repeats the merged-/usr links so that applying it over the
  # base never replaces /bin (a symlink) with a directory.
  merged_usr_root "$extra"
  deb_unpack "$extra" "${debs[@]}"
  rm -rf "$extra/usr/share/man"
  find "$extra/usr/share/doc" -type f ! -name copyright -delete 2>/dev/null || true
  cp -a "$BASE" "$root"
  # Apply the layer over the base the way an unpacker must: replace what is
  # there, never write through it.  The base holds busybox applet links with
  # absolute targets (usr/sbin/arp -> /bin/busybox); a plain `cp -a` followed
  # them and overwrote the HOST's /bin/busybox with net-tools' arp.
  cp -a --remove-destination "$extra/." "$root/"
  write_inputs "$out/inputs" "${debs[@]}"
  env -i PATH=/usr/bin:/bin LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 HOME=/tmp \
    /usr/sbin/chroot "$root" /usr/bin/python3 -m test -q test_json >/dev/null ||
    die "self-check: python3 -m test test_json fails in $root"
  rm -rf "$root/tmp/"* "$root/tmp/".[!.]* 2>/dev/null || true
  normalise_root "$extra"
  normalise_root "$root"
  "$RT_DIR/oci-layout.sh" --out "$out/layout" --tag python-tests \
    --layer "$BASE=Debian 12 python3 + busybox (the python image's layer)" \
    --layer "$extra=Debian 12 libpython3.11-testsuite $(dpkg-deb -f "$(printf '%s\n' "${debs[@]}" | grep /libpython3.11-testsuite_)" Version)" \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env LANG=C.UTF-8 --env PYTHONDONTWRITEBYTECODE=1 \
    --cmd '["python3", "-m", "test"]' --workdir /workspace --user 65532:65532 \
    --label org.opencontainers.image.title=agentnest-python-tests >/dev/null
  rm -rf "$extra"
}

case ${1:-} in
  inputs) inputs ;;
  build) [ $# -eq 2 ] || die "usage: $0 build OUTDIR"; build "$2" ;;
  *) die "usage: $0 inputs | build OUTDIR" ;;
esac
