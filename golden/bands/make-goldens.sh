#!/usr/bin/env bash
# Regenerates the band and local-arithmetic reference rasters in golden/bands/ with GDAL's own
# tools (gdal_translate for band selection and copies, gdalbuildvrt -separate for band stacking,
# gdal_calc.py, i.e. NumPy, for per-pixel arithmetic). `reference` goldens: never regenerate them
# from rasterflow's output. The cases are in cases.json beside this script (fields: golden/README.md).
#
# Needs GDAL 3.6 (gdal_translate, gdalbuildvrt, gdal_calc.py on the Python that has `osgeo`,
# /usr/bin/python3 on Debian). Run from anywhere: bash golden/bands/make-goldens.sh
#
# NoData: rasterflow marks divide-by-zero and other non-finite results NoData and writes NaN for
# them in Float32; gdal_calc.py writes NumPy's result, so the expressions below turn every
# non-finite value into NaN with numpy.where, and -9999 is never produced.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
L7="$ROOT/golden/data/L7_ETMs.tif"                           # 6 x Byte, 349 x 352, EPSG:31985
DEM="$ROOT/golden/data/jacksboro_fault_dem_utm16n_75m.tif"   # Float32, 383 x 407, EPSG:32616
GEO="$ROOT/golden/data/jacksboro_fault_dem_3arcsec.tif"      # Int16, 403 x 344, EPSG:4326
OUT="$HERE"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
export GDAL_PAM_ENABLED=NO
gdalinfo --version
CO=(-co COMPRESS=DEFLATE -co ZLEVEL=9)

# Identity: the raster itself (band values, grid).
gdal_translate -q "${CO[@]}" "$GEO" "$OUT/identity-geo-dem.tif"

# ExtractBand BandIDs [2, 1, 0] (0-based on the wire) = GDAL bands 3, 2, 1 (1-based); [3, 3] repeats.
gdal_translate -q "${CO[@]}" -b 3 -b 2 -b 1 "$L7" "$OUT/extractband-l7-321.tif"
gdal_translate -q "${CO[@]}" -b 4 -b 4 "$L7" "$OUT/extractband-l7-44.tif"

# CompositeBand of three single-band extracts (NIR, red, green), stacked by gdalbuildvrt -separate.
for b in 4 3 2; do gdal_translate -q -b "$b" "$L7" "$TMP/b$b.tif"; done
gdalbuildvrt -q -separate "$TMP/stack.vrt" "$TMP/b4.tif" "$TMP/b3.tif" "$TMP/b2.tif"
gdal_translate -q "${CO[@]}" "$TMP/stack.vrt" "$OUT/compositeband-l7-432.tif"

# Arithmetic over Landsat bands (Byte inputs, Float32 output, computed in float64 like rasterflow).
PY='A.astype(numpy.float64)'
QY='B.astype(numpy.float64)'
calc() { # name expression
  gdal_calc.py --quiet --overwrite -A "$L7" --A_band=4 -B "$L7" --B_band=3 --type=Float32 --NoDataValue=nan \
    --calc="numpy.where(numpy.isfinite($2), $2, numpy.nan)" --outfile="$TMP/$1.tif"
  gdal_translate -q "${CO[@]}" "$TMP/$1.tif" "$OUT/$1.tif"
}
calc arithmetic-l7-nir-plus-red "$PY + $QY"
calc arithmetic-l7-nir-minus-red "$PY - $QY"
calc arithmetic-l7-nir-times-red "$PY * $QY"
calc arithmetic-l7-nir-over-red "numpy.divide($PY, $QY)"
calc arithmetic-l7-nir-pow-0.5 "numpy.power($PY, 0.5)"
calc arithmetic-l7-nir-mod-red "numpy.fmod($PY, $QY)"

# Arithmetic with a scalar operand: the DEM in feet (metres / 0.3048).
gdal_calc.py --quiet --overwrite -A "$DEM" --type=Float32 --NoDataValue=nan --calc="A.astype(numpy.float64) / 0.3048" --outfile="$TMP/feet.tif"
gdal_translate -q "${CO[@]}" "$TMP/feet.tif" "$OUT/arithmetic-dem-feet.tif"
ls -l "$OUT"/*.tif
