#!/bin/bash
# tests/bench/frontend_overhead.sh [N] — build tests/bench/frontend_overhead.c
# against build/libagentnest.a (the Makefile's own CFLAGS and LIBS, printed by
# make) and run it on a private store holding the busybox image of the
# `make images` cache; prints its JSON line (medians in ms, and each path's
# minimum as "min_ms"; see the .c file).
# Run as root from the worktree root after `make`.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-50}
vars=$(printf 'print-vars:\n\t@echo "$(CFLAGS)"\n\t@echo "$(LDFLAGS) $(LIBS)"\n' | make -s -f Makefile -f - print-vars)
cflags=$(sed -n 1p <<<"$vars"); libs=$(sed -n 2p <<<"$vars")
W=$(mktemp -d); chmod 0711 "$W"; trap 'build/agentnest --root "$W/root" prune --all >/dev/null 2>&1 || true; rm -rf "$W"' EXIT
# shellcheck disable=SC2086
cc $cflags -o "$W/frontend_overhead" tests/bench/frontend_overhead.c build/libagentnest.a $libs
export AGENTNEST_INIT=$PWD/build/agentnest-init AGENTNEST_PROFILES=$PWD/profiles
build/agentnest --root "$W/root" image import /var/cache/agentnest/images/busybox/layout --name busybox >/dev/null
"$W/frontend_overhead" "$PWD/build/agentnest" "$W/root" "$N"
