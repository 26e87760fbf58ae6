#!/bin/bash
# tests/fuzz/run-fuzz.sh — build the libFuzzer harnesses (clang,
# -fsanitize=fuzzer,address,undefined) against the library sources they
# exercise and run each one briefly.  Exits non-zero when a harness finds a
# crash, leak, sanitizer report or broken round trip (the reproducer is left
# in $BUILD/fuzz/).
#   FUZZ_TIME=seconds per harness (default 60)    BUILD=build dir (default build)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
OUT=$BUILD/fuzz
TIME=${FUZZ_TIME:-60}
CC=${FUZZ_CC:-clang}
mkdir -p "$OUT"

CFLAGS=(-std=gnu11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer
        -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
        -Iinclude -Isrc $(pkg-config --cflags yajl libseccomp libcap))
LIBS=($(pkg-config --libs yajl libseccomp libcap libcrypto))
PARSER_SRC=(src/util/error.c src/util/json_tree.c src/util/json_gen.c src/util/fdcopy.c src/util/sha256.c
            src/util/safe_path.c src/util/quote.c src/engine/spec_*.c)

build() {   # build NAME SOURCES...
  local name=$1; shift
  echo "== build $OUT/$name"
  "$CC" "${CFLAGS[@]}" -o "$OUT/$name" "$@" "${LIBS[@]}"
}

run() {     # run NAME CORPUS_DIR DICT
  local name=$1 seeds=$2 dict=$3
  local work="$OUT/corpus-$name"
  mkdir -p "$work"
  echo "== run $name for ${TIME}s"
  # New inputs go to the work corpus; the seeds in git stay small.
  "$OUT/$name" -max_total_time="$TIME" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
    -dict="$dict" -artifact_prefix="$OUT/$name-" -print_final_stats=1 "$work" "$seeds"
}

build spec_fuzz tests/fuzz/spec_fuzz.c "${PARSER_SRC[@]}"
run spec_fuzz tests/fuzz/corpus/spec tests/fuzz/spec.dict
if [ -f tests/fuzz/seccomp_profile_fuzz.c ]; then
  build seccomp_profile_fuzz tests/fuzz/seccomp_profile_fuzz.c "${PARSER_SRC[@]}" \
    src/engine/seccomp_profile.c
  run seccomp_profile_fuzz tests/fuzz/corpus/seccomp_profile tests/fuzz/spec.dict
fi
# The egress proxy's ClientHello SNI / HTTP Host parsers (pure: no library sources).
build sni_fuzz tests/fuzz/sni_fuzz.c src/net/sni.c
run sni_fuzz tests/fuzz/corpus/sni tests/fuzz/sni.dict
# The DNS filter's message policy (net/dns_msg.c, over libldns).
build dns_msg_fuzz tests/fuzz/dns_msg_fuzz.c src/net/dns_msg.c $(pkg-config --libs ldns)
run dns_msg_fuzz tests/fuzz/corpus/dns_msg tests/fuzz/dns.dict
echo "fuzz: no crashes"
