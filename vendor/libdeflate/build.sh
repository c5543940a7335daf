#!/bin/sh
# Builds libdeflate.wasm from libdeflate's source with Debian's clang, lld and wasi-libc
# (apt-get install clang lld wasi-libc). The module is vendored: installing rasterflow never builds it.
#   sh vendor/libdeflate/build.sh <libdeflate source tree, tag v1.25> [output, default beside this script]
# The source: `git archive v1.25` of https://github.com/ebiggers/libdeflate (MIT, see LICENSE).
set -eu
src=${1:?usage: sh vendor/libdeflate/build.sh <libdeflate v1.25 source tree> [output]}
out=${2:-$(dirname "$0")/libdeflate.wasm}
grep -q '#define LIBDEFLATE_VERSION_STRING.*"1.25"' "$src/libdeflate.h" || { echo "$src is not libdeflate 1.25" >&2; exit 1; }
# -O3 with SIMD128 (clang vectorizes some loops) and bulk memory (memcpy and memset as single
# instructions); a reactor module: no entry point, no imports, wasi-libc's malloc over its own memory.
clang --target=wasm32-wasi --sysroot=/usr -I/usr/include/wasm32-wasi -O3 -msimd128 -mbulk-memory \
  -mexec-model=reactor -Wl,--no-entry -Wl,--strip-debug \
  -Wl,--export=_initialize -Wl,--export=malloc -Wl,--export=free \
  -Wl,--export=libdeflate_alloc_compressor -Wl,--export=libdeflate_free_compressor \
  -Wl,--export=libdeflate_zlib_compress -Wl,--export=libdeflate_zlib_compress_bound \
  "$src"/lib/*.c -o "$out"
echo "wrote $out ($(wc -c < "$out") bytes, SHA-256 $(sha256sum "$out" | cut -d' ' -f1))"
