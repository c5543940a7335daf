#!/usr/bin/env bash
# Regenerates the terrain reference rasters in golden/terrain/ with GDAL's gdaldem (an independent
# implementation of the same Horn formulas). These are `reference` goldens: never regenerate them
# from rasterflow's own output. The cases that use them are in cases.json beside this script; the
# case fields are described in golden/README.md.
#
# Needs GDAL 3.6 (gdaldem, gdal_translate, gdal_calc.py; gdal_calc.py runs on the Python that has
# `osgeo`, /usr/bin/python3 on Debian). Run from anywhere: bash golden/terrain/make-goldens.sh
#
# Scale conventions:
# - gdaldem `-s` is horizontal units per vertical unit, i.e. 1 / z-factor. `-s 111000` reproduces the
#   vendor's 111000 m/degree rule for geographic DEMs (GDAL's own suggestion is 111120).
# - gdaldem hillshade writes Byte 1 + 254 * cos(angle) (rounded, <= 0 -> 1) with 0 = NoData; the
#   vendor writes trunc(255 * cos(angle)). Cases using these files say `"compare": "gdal-hillshade"`.
# - gdaldem without -compute_edges leaves the outer ring NoData; rasterflow copies the inner
#   neighbour there (vendor rule), so those cases exclude a 1-pixel edge. With -compute_edges GDAL
#   extrapolates, which is what RemoveEdgeEffect: true does, so those cases compare every pixel.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
UTM="$ROOT/golden/data/jacksboro_fault_dem_utm16n_75m.tif"   # Float32, 383 x 407, 75 m, EPSG:32616
GEO="$ROOT/golden/data/jacksboro_fault_dem_3arcsec.tif"      # Int16, 403 x 344, 3", EPSG:4326
OUT="$HERE"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

export GDAL_PAM_ENABLED=NO   # no .aux.xml side files
gdalinfo --version

F32=(-co COMPRESS=DEFLATE -co PREDICTOR=3 -co ZLEVEL=9)
U8=(-co COMPRESS=DEFLATE -co PREDICTOR=2 -co ZLEVEL=9)

# ---- Slope (Float32, NoData -9999 on the ring unless -compute_edges)
gdaldem slope "$UTM" "$OUT/utm-slope-degree.tif" -q "${F32[@]}"
gdaldem slope "$UTM" "$OUT/utm-slope-percent.tif" -p -q "${F32[@]}"
gdaldem slope "$UTM" "$OUT/utm-slope-degree-compute-edges.tif" -compute_edges -q "${F32[@]}"
gdaldem slope "$GEO" "$OUT/geo-slope-degree.tif" -s 111000 -q "${F32[@]}"

# ---- Hillshade, one light (Byte 1..255, 0 = NoData)
gdaldem hillshade "$UTM" "$OUT/utm-hillshade-315-45.tif" -q "${U8[@]}"
gdaldem hillshade "$UTM" "$OUT/utm-hillshade-135-30-z2.tif" -az 135 -alt 30 -z 2 -q "${U8[@]}"
gdaldem hillshade "$UTM" "$OUT/utm-hillshade-315-45-compute-edges.tif" -compute_edges -q "${U8[@]}"
gdaldem hillshade "$GEO" "$OUT/geo-hillshade-315-45.tif" -s 111000 -q "${U8[@]}"

# ---- The vendor's multidirectional hillshade: six traditional gdaldem hillshades at z = 2 (the
# vendor doubles the z-factor), each already clamped at 0 (GDAL value 1), averaged with the vendor
# weights 3, 5, 3, 2, 1, 4 (/18). The weights sum to 1, so the result stays on GDAL's 1 + 254 * x
# scale (Float32, 0 = NoData) and compares like the single-light files.
# (GDAL's own -multidirectional is a different, aspect-weighted blend: not used.)
i=0
for src in "315 60" "270 60" "225 60" "360 60" "180 60" "0 90"; do
  set -- $src
  gdaldem hillshade "$UTM" "$TMP/md$i.tif" -az "$1" -alt "$2" -z 2 -q
  i=$((i + 1))
done
gdal_calc.py --quiet -A "$TMP/md0.tif" -B "$TMP/md1.tif" -C "$TMP/md2.tif" -D "$TMP/md3.tif" -E "$TMP/md4.tif" -F "$TMP/md5.tif" \
  --calc="(3.0*A + 5.0*B + 3.0*C + 2.0*D + 1.0*E + 4.0*F) / 18.0" \
  --type=Float32 --NoDataValue=0 --outfile="$TMP/md.tif" --overwrite
gdal_translate -q "$TMP/md.tif" "$OUT/utm-hillshade-multidirectional-vendor.tif" "${F32[@]}"

ls -l "$OUT"/*.tif
