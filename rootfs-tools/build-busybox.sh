#!/bin/bash
# build-busybox.sh: the `busybox` image: Debian's static busybox with its
# applet symlinks, /etc/passwd and /etc/group (root, agent 65532, nobody),
# /tmp and /workspace. Builds in seconds; used by fast engine tests.
#
#   build-busybox.sh inputs      print the inputs (package versions) that
#                                determine the image, for the cache key
#   build-busybox.sh build OUT   write OUT/rootfs, OUT/layout, OUT/inputs
set -euo pipefail
AN_BUILDER=busybox
. "$(dirname "$0")/lib.sh"

ROOTS="busybox-static"

inputs() { deb_closure "$ROOTS" ""; }

build() {
  local out=$1 root=$1/rootfs
  inputs | deb_fetch > "$out/debs.list"
  mapfile -t debs < "$out/debs.list"
  rm -f "$out/debs.list"
  merged_usr_root "$root"
  deb_unpack "$root" "${debs[@]}"
  rm -rf "$root/usr/share/man"
  busybox_links "$root"
  base_files "$root"
  write_inputs "$out/inputs" "${debs[@]}"
  chroot "$root" /bin/sh -c '[ "$(id -u agent)" = 65532 ] && ls /workspace >/dev/null' ||
    die "self-check: /bin/sh in $root does not work"
  normalise_root "$root"
  "$RT_DIR/oci-layout.sh" --out "$out/layout" --tag busybox \
    --layer "$root=busybox-static $(dpkg-deb -f "${debs[0]}" Version) with applet links" \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --cmd '["sh"]' --workdir /workspace --user 65532:65532 \
    --label org.opencontainers.image.title=agentnest-busybox >/dev/null
}

case ${1:-} in
  inputs) inputs ;;
  build) [ $# -eq 2 ] || die "usage: $0 build OUTDIR"; build "$2" ;;
  *) die "usage: $0 inputs | build OUTDIR" ;;
esac
