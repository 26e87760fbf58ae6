#!/bin/bash
# The main job on the default image, run by `make demo` after deps, build and
# images: import the default (python) image into the store, list it, and run
# what the current build can run on it.  Narrates each step.
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
if [ -x "$BUILD/agentnest-oci" ] && "$BUILD/agentnest-oci" --version >/dev/null 2>&1; then
  step "run Python in a container of the default image (agentnest-oci spec + run)"
  b=$(mktemp -d); trap 'rm -rf "$b"' EXIT
  ln -s "$CACHE/python/rootfs" "$b/rootfs"
  (cd "$b" && "$OLDPWD/$BUILD/agentnest-oci" spec)
  id="demo-$$"
  sed -i 's|"args": *\[[^]]*\]|"args": ["python3", "-c", "import sys, sqlite3, json; print(json.dumps({\\"python\\": sys.version.split()[0], \\"sqlite\\": sqlite3.sqlite_version}))"]|' "$b/config.json"
  "$BUILD/agentnest-oci" run --bundle "$b" "$id"
fi
