#!/bin/bash
# build-browser.sh: the `browser` image: Debian 12's Chromium (headless),
# fonts (fonts-liberation: Liberation Sans, Serif, Mono), fontconfig, Node.js 18 and
# playwright-core, for browser automation (`agentnest --profile browser`).
# Built like the python image: the apt dependency closure's .deb files
# unpacked without maintainer scripts (what they would do is done here:
# ldconfig, the fontconfig cache), minus the packaging and init machinery
# (dpkg, debconf, perl, systemd, dbus daemons, xdg-utils) that a headless
# browser never runs.  playwright-core comes from npm, pinned with its
# integrity hash in rootfs-tools/browser/package-lock.json and installed by
# `npm ci --ignore-scripts` on the host in a temporary directory (no package
# script runs on the host; npm checks every tarball against the lock).
#
# Chromium runs with --no-sandbox: its setuid and user-namespace sandboxes
# need what an AgentNest sandbox denies (new user namespaces, setuid); the
# AgentNest sandbox around it is the boundary (see README "Browser").
#
#   build-browser.sh inputs      print what determines the image
#   build-browser.sh build OUT   write OUT/rootfs, OUT/layout, OUT/inputs
set -euo pipefail
AN_BUILDER=browser
. "$(dirname "$0")/lib.sh"

ROOTS="chromium fonts-liberation fontconfig nodejs libc-bin busybox-static"
EXCLUDES="dpkg debconf perl-base perl tar adduser systemd systemd-sysv dbus dbus-daemon dbus-user-session libpam-systemd usrmerge init-system-helpers x11-utils xdg-utils sysvinit-utils lsb-base procps"
NPM_DIR=$RT_DIR/browser
CHROMIUM=/usr/lib/chromium/chromium

inputs() {
  deb_closure "$ROOTS" "$EXCLUDES"
  echo "npm $(sha256sum "$NPM_DIR/package-lock.json" | cut -d' ' -f1) package-lock.json"
}

# npm_install ROOT: playwright-core from the lock file into ROOT/usr/lib/node_modules.
npm_install() {
  local root=$1 tmp
  command -v npm >/dev/null || die "npm is needed on the build host (rootfs-tools/install-deps.sh)"
  tmp=$(mktemp -d)
  cp "$NPM_DIR/package.json" "$NPM_DIR/package-lock.json" "$tmp/"
  (cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund --cache "$tmp/.npm-cache" >/dev/null 2>"$tmp/npm.log") ||
    { cat "$tmp/npm.log" >&2; rm -rf "$tmp"; die "npm ci of rootfs-tools/browser/package-lock.json failed"; }
  mkdir -p "$root/usr/lib/node_modules"
  cp -a "$tmp/node_modules/." "$root/usr/lib/node_modules/"
  rm -rf "$root/usr/lib/node_modules/.package-lock.json" "$tmp"
  chown -R 0:0 "$root/usr/lib/node_modules"
  chmod -R u=rwX,go=rX "$root/usr/lib/node_modules"
}

build() {
  local out=$1 root=$1/rootfs debs
  mkdir -p "$root"
  inputs | grep -v '^npm ' | deb_fetch > "$out/debs.list"
  mapfile -t debs < "$out/debs.list"
  rm -f "$out/debs.list"
  merged_usr_root "$root"
  deb_unpack "$root" "${debs[@]}"
  rm -rf "$root/usr/share/man" "$root/usr/share/info" "$root/usr/share/lintian" "$root/usr/share/locale"
  find "$root/usr/share/doc" ! -type d ! -name copyright -delete
  busybox_links "$root"
  base_files "$root"
  npm_install "$root"
  ldconfig -r "$root"
  # What fontconfig's maintainer script does: the font cache, so that
  # Chromium does not rescan every font at each start (the root is read-only).
  env -i PATH=/usr/bin:/bin /usr/sbin/chroot "$root" fc-cache -s -f >/dev/null ||
    die "fc-cache in $root failed"
  [ -x "$root$CHROMIUM" ] || die "self-check: $CHROMIUM missing in $root"
  env -i PATH=/usr/bin:/bin NODE_PATH=/usr/lib/node_modules /usr/sbin/chroot "$root" /usr/bin/node -e \
    'const { chromium } = require("playwright-core"); if (typeof chromium.launch !== "function") process.exit(1)' ||
    die "self-check: node cannot load playwright-core in $root"
  env -i PATH=/usr/bin:/bin /usr/sbin/chroot "$root" fc-match sans-serif | grep -q . ||
    die "self-check: fontconfig finds no sans-serif font in $root"
  # Reproducibility: ldconfig's aux cache records inodes and ctimes of this build.
  rm -rf "$root/tmp/"* "$root/tmp/".[!.]* "$root/var/cache/ldconfig/aux-cache" 2>/dev/null || true
  write_inputs "$out/inputs" "${debs[@]}"
  echo "playwright-core $(jq -r '.packages["node_modules/playwright-core"] | "\(.version) \(.integrity)"' \
    "$NPM_DIR/package-lock.json")" >> "$out/inputs"
  normalise_root "$root"
  "$RT_DIR/oci-layout.sh" --out "$out/layout" --tag browser \
    --layer "$root=Debian 12 chromium $(dpkg-deb -f "$(printf '%s\n' "${debs[@]}" | grep /chromium_)" Version) + nodejs + playwright-core" \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --env LANG=C.UTF-8 \
    --env NODE_PATH=/usr/lib/node_modules --env CHROME_BIN=$CHROMIUM \
    --cmd '["node"]' --workdir /workspace --user 65532:65532 \
    --label org.opencontainers.image.title=agentnest-browser >/dev/null
}

case ${1:-} in
  inputs) inputs ;;
  build) [ $# -eq 2 ] || die "usage: $0 build OUTDIR"; build "$2" ;;
  *) die "usage: $0 inputs | build OUTDIR" ;;
esac
