#!/bin/sh
# Benchmark inputs for bench/io.bench.ts, made with GDAL from the bundled DEM
# (golden/data/jacksboro_fault_dem_utm16n_75m.tif, 383 x 407 Float32) resampled bilinearly:
#   dem4096-deflate.tif       4096 x 4096 F32, 256-px tiles, DEFLATE           (whole-process + decoding)
#   dem4096-raw.tif           4096 x 4096 F32, 256-px tiles, uncompressed      (decoding)
#   dem4096-deflate-pred3.tif 4096 x 4096 F32, 256-px tiles, DEFLATE+PREDICTOR=3 (decoding)
#   dem16384-deflate.tif      16384 x 16384 F32, 256-px tiles, DEFLATE+PREDICTOR=3 (bounded memory; ~1 GiB of pixels)
# Usage: bench/make-big-dem.sh [outdir]   (default bench/data, git-ignored). Existing files are kept.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/data}
src=$here/../golden/data/jacksboro_fault_dem_utm16n_75m.tif
mkdir -p "$out"
export GDAL_PAM_ENABLED=NO
make() { # name size options...
  name=$1; size=$2; shift 2
  [ -s "$out/$name" ] && return 0
  gdal_translate -q -r bilinear -outsize "$size" "$size" -co TILED=YES -co BLOCKXSIZE=256 -co BLOCKYSIZE=256 "$@" "$src" "$out/$name.tmp.tif"
  mv "$out/$name.tmp.tif" "$out/$name"
}
make dem4096-deflate.tif 4096 -co COMPRESS=DEFLATE
make dem4096-raw.tif 4096 -co COMPRESS=NONE
make dem4096-deflate-pred3.tif 4096 -co COMPRESS=DEFLATE -co PREDICTOR=3
make dem16384-deflate.tif 16384 -co COMPRESS=DEFLATE -co PREDICTOR=3 -co BIGTIFF=IF_SAFER
ls -l "$out"
