#!/bin/bash
# build-all.sh: build (or reuse from the cache) AgentNest's OCI images.
#
#   build-all.sh [NAME...]     NAME: busybox python python-tests debian browser
#                              (default: all five, in that order)
#
# Cache: ${AN_IMAGE_CACHE:-/var/cache/agentnest/images}/NAME/ holds
#   layout/   the OCI image layout (oci-layout, index.json, blobs/sha256/)
#   rootfs/   the same root tree unpacked (a bundle rootfs for engine tests)
#   inputs    every .deb used: package, version, sha256
#   key       the cache key: sha256 over the tool scripts and the exact inputs
#   digest    the manifest digest
# NAME is a symlink to a directory .NAME.XXXXXX next to it; a build happens in
# a fresh such directory and the symlink is replaced by rename(2), so readers
# see either the old image or the new one, never a half-built one. A per-name
# flock(1) serialises concurrent runs: the second one waits, then reuses.
set -euo pipefail
AN_BUILDER=build-all
. "$(dirname "$0")/lib.sh"

ALL=(busybox python python-tests debian browser)
[ $# -gt 0 ] || set -- "${ALL[@]}"
for n in "$@"; do
  [ -x "$RT_DIR/build-$n.sh" ] || die "unknown image '$n' (known: ${ALL[*]})"
done
# python-tests is built on top of python: make sure python comes first.
want=()
for n in "$@"; do
  if [ "$n" = python-tests ] && [[ " ${want[*]} " != *" python "* ]]; then want+=(python); fi
  [[ " ${want[*]} " == *" $n "* ]] || want+=("$n")
done

[ "$(id -u)" = 0 ] || die "must run as root (images hold root-owned files; builders chroot)"
mkdir -p "$AN_IMAGE_CACHE"
AN_IMAGE_CACHE=$(cd "$AN_IMAGE_CACHE" && pwd -P)
export AN_IMAGE_CACHE

# cache_key NAME: sha256 over the scripts that build NAME, the epoch, and the
# builder's own statement of its inputs (package versions, mirror state).
cache_key() {
  local name=$1
  {
    echo "SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH"
    for f in lib.sh oci-layout.sh "build-$name.sh"; do echo "== $f"; cat "$RT_DIR/$f"; done
    # Files a builder copies into its image live in rootfs-tools/NAME/.
    for f in "$RT_DIR/$name"/*; do [ ! -f "$f" ] || { echo "== $name/${f##*/}"; cat "$f"; }; done
    echo "== inputs"
    "$RT_DIR/build-$name.sh" inputs
    [ "$name" != python-tests ] || { echo "== base"; cat "$AN_IMAGE_CACHE/python/key"; }
  } | sha256sum | cut -d' ' -f1
}

fresh() { # NAME KEY: is the cached image present and built from KEY?
  [ -f "$AN_IMAGE_CACHE/$1/key" ] && [ "$(cat "$AN_IMAGE_CACHE/$1/key")" = "$2" ] &&
    [ -f "$AN_IMAGE_CACHE/$1/layout/index.json" ] && [ -d "$AN_IMAGE_CACHE/$1/rootfs" ]
}

build_one() {
  local name=$1 key tmp old t0 t1 lockfd baselockfd=
  exec {lockfd}>"$AN_IMAGE_CACHE/.lock.$name"
  flock "$lockfd"
  # python-tests reads python's rootfs: keep python from being swapped meanwhile.
  if [ "$name" = python-tests ]; then
    exec {baselockfd}>"$AN_IMAGE_CACHE/.lock.python"
    flock "$baselockfd"
  fi
  key=$(cache_key "$name") || die "$name: cannot compute the cache key"
  if fresh "$name" "$key"; then
    echo "$name: reusing cached image $AN_IMAGE_CACHE/$name ($(cat "$AN_IMAGE_CACHE/$name/digest"))"
    exec {lockfd}>&-
    [ -z "$baselockfd" ] || exec {baselockfd}>&-
    return
  fi
  echo "$name: building (key ${key:0:16})"
  # Leftovers of builds that were killed (we hold the lock: none is running).
  local cur d
  cur=$(readlink "$AN_IMAGE_CACHE/$name" 2>/dev/null || true)
  for d in "$AN_IMAGE_CACHE/.$name".??????; do
    if [ -d "$d" ] && [ "${d##*/}" != "$cur" ]; then rm -rf "$d"; fi
  done
  t0=$(date +%s%N)
  tmp=$(mktemp -d "$AN_IMAGE_CACHE/.$name.XXXXXX")
  chmod 0755 "$tmp"
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'" EXIT
  AN_BASE_ROOTFS=$(readlink -f "$AN_IMAGE_CACHE/python")/rootfs "$RT_DIR/build-$name.sh" build "$tmp" ||
    die "$name: build failed (nothing was changed in the cache)"
  jq -r '.manifests[0].digest' "$tmp/layout/index.json" > "$tmp/digest"
  echo "$key" > "$tmp/key"
  # Atomic switch: a new symlink renamed over the old one.
  old=
  if [ -L "$AN_IMAGE_CACHE/$name" ]; then old=$(readlink "$AN_IMAGE_CACHE/$name")
  elif [ -e "$AN_IMAGE_CACHE/$name" ]; then old=.$name.old.$$; mv -T "$AN_IMAGE_CACHE/$name" "$AN_IMAGE_CACHE/$old"; fi
  ln -s "${tmp##*/}" "$AN_IMAGE_CACHE/.$name.link.$$"
  mv -T "$AN_IMAGE_CACHE/.$name.link.$$" "$AN_IMAGE_CACHE/$name"
  trap - EXIT
  [ -z "$old" ] || [ "$old" = "${tmp##*/}" ] || rm -rf "${AN_IMAGE_CACHE:?}/$old"
  t1=$(date +%s%N)
  printf '%s: built %s in %s s, layers:' "$name" "$(cat "$tmp/digest")" \
    "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')"
  jq -r '.layers[] | " \(.size)"' "$tmp/layout/blobs/sha256/$(cut -c8- "$tmp/digest")" | tr -d '\n'
  echo " bytes (gzip)"
  exec {lockfd}>&-
  [ -z "$baselockfd" ] || exec {baselockfd}>&-
}

for n in "${want[@]}"; do build_one "$n"; done
