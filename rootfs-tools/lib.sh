# shellcheck shell=bash
# lib.sh: shell functions shared by the image builders (sourced, not run).
#
# What lives here: logging, resolving a Debian package dependency closure
# from this machine's apt indexes, fetching .deb files into a cache,
# unpacking them into a merged-/usr root WITHOUT running maintainer scripts,
# busybox applet links, the passwd/group files every image carries, and
# normalising a root for a reproducible layer. What does not: the OCI layout
# writer (oci-layout.sh) and the cache/locking logic (build-all.sh).

export LC_ALL=C
# Modes of files the builders create must not depend on the caller's umask.
umask 022
# Fixed timestamp for every file and JSON "created" field (reproducible-builds.org).
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1700000000}
# shellcheck disable=SC2034 # used by the scripts that source this file
RT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
AN_IMAGE_CACHE=${AN_IMAGE_CACHE:-/var/cache/agentnest/images}
DEB_CACHE=${AN_DEB_CACHE:-$AN_IMAGE_CACHE/.debs}

log() { echo "[${AN_BUILDER:-rootfs-tools}] $*" >&2; }
die() { echo "[${AN_BUILDER:-rootfs-tools}] error: $*" >&2; exit 1; }

# deb_closure "ROOTS..." "EXCLUDES..." -> lines "PACKAGE VERSION", sorted.
# Resolves the dependency closure (Depends + Pre-Depends, no Recommends) of
# ROOTS as apt would install it on an empty system, then keeps only what is
# reachable from ROOTS without passing through an excluded package (e.g. dpkg,
# debconf: needed by maintainer scripts, which these images never run).
deb_closure() {
  # Memoised per state of the apt indexes: resolving takes apt several seconds.
  local memo
  memo=$AN_IMAGE_CACHE/.closure/$( { echo "v2|$1|$2"; stat -c '%n %s %Y' /var/lib/apt/lists/*Packages* \
    /etc/apt/preferences* /etc/apt/preferences.d/* 2>/dev/null; } | sha256sum | cut -c1-32)
  if [ -s "$memo" ]; then cat "$memo"; return; fi
  mkdir -p "${memo%/*}"
  deb_closure_resolve "$1" "$2" > "$memo.$$" || { rm -f "$memo.$$"; exit 1; }
  mv -f "$memo.$$" "$memo"
  cat "$memo"
}

deb_closure_resolve() {
  local roots=$1 excludes=$2 sim
  # shellcheck disable=SC2086
  sim=$(apt-get -s -o Dir::State::status=/dev/null -o APT::Install-Recommends=0 \
    -o Debug::NoLocking=1 install $roots 2>&1) || die "apt cannot resolve '$roots': $sim"
  local resolved
  resolved=$(awk '$1 == "Inst" { v = $3; gsub(/[()]/, "", v); print $2, v }' <<<"$sim" |
    sed 's/:amd64 / /' | sort -u)
  [ -n "$resolved" ] || die "apt resolved no packages for '$roots'"
  # The dependencies of the versions the simulation chose, as on an empty
  # system too (Dir::State::status): with the host's own status, apt-cache
  # describes an installed version instead (a host nodejs from another
  # repository lacked Debian's libnode108 dependency).
  # shellcheck disable=SC2046 # one argument per package name
  apt-cache -o Dir::State::status=/dev/null depends --no-recommends --no-suggests --no-conflicts --no-breaks \
    --no-replaces --no-enhances $(cut -d' ' -f1 <<<"$resolved") 2>/dev/null |
  awk -v roots="$roots" -v excl="$excludes" -v res="$resolved" '
    BEGIN {
      n = split(res, r, "\n"); for (i = 1; i <= n; i++) { split(r[i], f, " "); ver[f[1]] = f[2] }
      n = split(excl, e, " "); for (i = 1; i <= n; i++) ex[e[i]] = 1
      n = split(roots, q, " "); head = 1; tail = n
      for (i = 1; i <= n; i++) seen[q[i]] = 1
    }
    /^[^ ]/ { cur = $1; next }
    /Depends:|^    / { d = $NF; gsub(/[<>]/, "", d); sub(/:any$/, "", d)
                        if (d in ver && !(d in ex)) edge[cur] = edge[cur] " " d }
    END {
      while (head <= tail) {
        p = q[head++]; m = split(edge[p], ds, " ")
        for (i = 1; i <= m; i++) if (!(ds[i] in seen)) { seen[ds[i]] = 1; q[++tail] = ds[i] }
      }
      for (p in seen) { if (!(p in ver)) { print "unresolved " p > "/dev/stderr"; exit 1 }
                        print p, ver[p] }
    }' | sort
}

# deb_fetch "PACKAGE VERSION" lines on stdin -> prints the .deb paths, one a
# line, downloading (apt-get download verifies them against the signed apt
# indexes) only what $DEB_CACHE lacks.
deb_fetch() {
  mkdir -p "$DEB_CACHE"
  local pkg ver f want=()
  local -a lines
  mapfile -t lines
  for l in "${lines[@]}"; do
    read -r pkg ver <<<"$l"
    compgen -G "$DEB_CACHE/${pkg}_${ver//:/%3a}_*.deb" >/dev/null || want+=("$pkg=$ver")
  done
  if [ ${#want[@]} -gt 0 ]; then
    log "downloading ${#want[@]} packages"
    local tmp
    tmp=$(mktemp -d "$DEB_CACHE/.dl.XXXXXX")
    (cd "$tmp" && apt-get download -q -o APT::Sandbox::User=root "${want[@]}" >/dev/null) || { rm -rf "$tmp"; die "apt-get download ${want[*]} failed"; }
    for f in "$tmp"/*.deb; do mv -f "$f" "$DEB_CACHE/"; done
    rm -rf "$tmp"
  fi
  for l in "${lines[@]}"; do
    read -r pkg ver <<<"$l"
    f=$(compgen -G "$DEB_CACHE/${pkg}_${ver//:/%3a}_*.deb" | head -1)
    [ -n "$f" ] || die "no .deb for $pkg $ver after download"
    echo "$f"
  done
}

# merged_usr_root ROOT: the Debian 12 merged-/usr skeleton (bin, sbin, lib,
# lib64 are symlinks into /usr), as debootstrap creates it.
merged_usr_root() {
  local root=$1 d
  mkdir -p "$root/usr/bin" "$root/usr/sbin" "$root/usr/lib" "$root/usr/lib64"
  for d in bin sbin lib lib64; do ln -sfn "usr/$d" "$root/$d"; done
}

# deb_unpack ROOT DEB...: extract each package's data (as `dpkg-deb -x`
# would, but keeping the merged-/usr directory symlinks); no maintainer
# scripts run, no dpkg database is written.
deb_unpack() {
  local root=$1 deb; shift
  for deb in "$@"; do
    dpkg-deb --fsys-tarfile "$deb" |
      tar -x --keep-directory-symlink --numeric-owner --same-permissions -C "$root" ||
      die "unpacking $deb into $root failed"
  done
}

# busybox_links ROOT: a symlink to busybox for every applet whose path is
# still free (files from packages win).  Targets are relative
# (usr/sbin/arp -> ../../bin/busybox) so that host-side tools working on the
# tree can never be led out of it by an applet link.
busybox_links() {
  local root=$1 a
  [ -x "$root/bin/busybox" ] || die "$root/bin/busybox missing"
  while read -r a; do
    [ -e "$root/$a" ] || [ -L "$root/$a" ] || { mkdir -p "$root/$(dirname "$a")"; ln -s "$(realpath -ms --relative-to="/$(dirname "$a")" /bin/busybox)" "$root/$a"; }
  done < <("$root/bin/busybox" --list-full | grep -vx linuxrc | sort)
}

# base_files ROOT: /etc/passwd, /etc/group (root, agent 65532, nobody), and
# the /tmp and /workspace directories every AgentNest image carries.
base_files() {
  local root=$1
  mkdir -p "$root/etc" "$root/tmp" "$root/workspace" "$root/root" "$root/home/agent" \
    "$root/proc" "$root/sys" "$root/dev" "$root/run"
  printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' \
    'agent:x:65532:65532:agent:/home/agent:/bin/sh' \
    'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin' > "$root/etc/passwd"
  printf '%s\n' 'root:x:0:' 'agent:x:65532:' 'nogroup:x:65534:' > "$root/etc/group"
  printf '%s\n' 'root:*:19000:0:99999:7:::' 'agent:*:19000:0:99999:7:::' \
    'nobody:*:19000:0:99999:7:::' > "$root/etc/shadow"
  printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' > "$root/etc/hosts"
  echo sandbox > "$root/etc/hostname"
  printf 'passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n' > "$root/etc/nsswitch.conf"
  chmod 0644 "$root/etc/passwd" "$root/etc/group" "$root/etc/hosts" "$root/etc/hostname" \
    "$root/etc/nsswitch.conf"
  chmod 0640 "$root/etc/shadow"
  chmod 1777 "$root/tmp"
  chmod 0700 "$root/root"
  chmod 0755 "$root/workspace" "$root/home/agent"
  # The agent's own directories belong to it; everything else stays root's.
  chown 65532:65532 "$root/workspace" "$root/home/agent"
}

# normalise_root ROOT: every mtime = SOURCE_DATE_EPOCH, so the unpacked tree
# equals what the layer tar records.
normalise_root() {
  find "$1" -depth -print0 | xargs -0r touch -h -d "@$SOURCE_DATE_EPOCH"
}

# write_inputs FILE DEB...: "package version sha256" of every .deb used.
write_inputs() {
  local file=$1 deb; shift
  for deb in "$@"; do
    printf '%s %s %s\n' "$(dpkg-deb -f "$deb" Package)" "$(dpkg-deb -f "$deb" Version)" \
      "$(sha256sum "$deb" | cut -d' ' -f1)"
  done | sort > "$file"
}
