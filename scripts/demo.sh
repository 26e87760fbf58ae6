#!/bin/bash
# The demo job on the default image, run by `make demo` after deps, build and
# images: import the default (python) image into the store, list it, check
# the host (doctor) and run `agentnest demo` on it.  Narrates each step.
# (The main job on real input, CPython's regression tests, is in `make check`.)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
CACHE=${AN_IMAGE_CACHE:-/var/cache/agentnest/images}
AN="$PWD/$BUILD/agentnest"
step() { printf '\n== %s\n' "$*"; }

step "import the default image (python) from $CACHE/python/layout"
"$AN" image import "$CACHE/python/layout" --name python
step "import it again: same digest, no work"
"$AN" image import "$CACHE/python/layout" --name python
step "image ls"
"$AN" image ls
step "agentnest doctor: what this host offers sandboxes"
# the store the demo used, in the hint too (AGENTNEST_ROOT=DIR make demo)
hint="$AN doctor"
[ -n "${AGENTNEST_ROOT:-}" ] && hint="$AN --root $AGENTNEST_ROOT doctor"
"$AN" doctor >/dev/null && echo "all required kernel features present (run '$hint' for the report)"
step "the demo job on the default image: agentnest demo"
"$AN" demo
