#!/usr/bin/env bash
# Regenerates the SurfaceParamFunction and ElevationVoidFill reference rasters in golden/surface/.
# These are `reference` goldens: never regenerate them from rasterflow's output. The cases are in
# cases.json beside this script (written by make_goldens.py; fields: golden/README.md).
#
# - GRASS GIS 8.2 r.param.scale (Wood 1996 quadratic least squares, unweighted, not constrained
#   through the centre = LocalSurface 1) at 3x3 and 7x7 on the UTM DEM: slope, aspect, profc,
#   planc, crosc, minic, maxic, exported as Float64; make_goldens.py converts them to rasterflow's
#   conventions (y north, Minar signs, aspect as a compass azimuth, tangential/mean/Gaussian/
#   Casorati from GRASS's unnormalised curvatures) and documents every conversion.
# - gdaldem slope/aspect -alg ZevenbergenThorne = LocalSurface 2 at 3x3.
# - The grid convergence for true-north aspect: PROJ through GDAL's osr, per pixel.
# - Torsion, larger biquadratic windows, UseAdaptiveScale, the geographic DEM and ElevationVoidFill
#   have no outside tool with the same definition: an independent NumPy/SciPy implementation in
#   make_goldens.py (which also punches the documented voids into a 160 x 160 crop of the DEM).
#
# - The geographic DEM's per-row metre cell sizes come from pyproj's Geod (GeographicLib) on the
#   DEM's ellipsoid, not from rasterflow's geodesy. Those two cases need no GRASS and can be
#   rebuilt alone: GDAL_PAM_ENABLED=NO /usr/bin/python3 golden/surface/make_goldens.py geographic
#
# Needs GRASS 8.2 (`grass`), GDAL 3.6 (gdaldem) and /usr/bin/python3 with osgeo, numpy, scipy and
# pyproj (Debian python3-pyproj). Run from anywhere: bash golden/surface/make-goldens.sh
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
UTM="$ROOT/golden/data/jacksboro_fault_dem_utm16n_75m.tif"   # Float32, 383 x 407, 75 m, EPSG:32616
PY=/usr/bin/python3
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
export GDAL_PAM_ENABLED=NO   # no .aux.xml side files
gdalinfo --version
GRASS_VERSION="$(grass --version 2>&1 | sed -n 1p)"
echo "$GRASS_VERSION"

# ---- GRASS r.param.scale: "size method zscale" for every map the cases use (size 3; size 7;
# size 3 with zscale 0.3048 for ZUnit Feet). GRASS 8.2.1 r.param.scale sometimes returns wrong
# values for a whole map (about one run in three here, at any size; presumably uninitialised memory
# in its normal-equation solve), so make_goldens.py checks every map against GRASS's own formulas
# (param.c) on NumPy least-squares coefficients and the maps it rejects are computed again.
todo=()
for m in slope aspect profc planc crosc minic maxic; do todo+=("3 $m 1" "7 $m 1"); done
todo+=("3 slope 0.3048" "3 aspect 0.3048")
for attempt in 1 2 3 4 5 6 7 8 9 10; do
  {
    echo 'set -e'
    echo "r.in.gdal -o input=\"$UTM\" output=dem --quiet"
    echo 'g.region raster=dem'
    for spec in "${todo[@]}"; do
      read -r size m z <<<"$spec"
      suffix="$size"; [ "$z" = 1 ] || suffix="${size}z${z}"
      echo "r.param.scale input=dem output=p_$m method=$m size=$size zscale=$z --overwrite --quiet"
      echo "r.out.gdal -c -f input=p_$m output=\"$TMP/grass${suffix}_$m.tif\" type=Float64 --overwrite --quiet"
    done
  } > "$TMP/grass.sh"
  grass --tmp-location EPSG:32616 --exec bash "$TMP/grass.sh"
  mapfile -t todo < <("$PY" "$HERE/make_goldens.py" check "$TMP" "${todo[@]}")
  [ "${#todo[@]}" -eq 0 ] && break
  echo "attempt $attempt: r.param.scale maps to redo: ${todo[*]}" >&2
done
if [ "${#todo[@]}" -ne 0 ]; then echo "GRASS r.param.scale kept disagreeing with NumPy: ${todo[*]}" >&2; exit 1; fi

# ---- gdaldem Zevenbergen-Thorne (LocalSurface 2, 3x3)
gdaldem slope -alg ZevenbergenThorne -q "$UTM" "$TMP/zt-slope.tif"
gdaldem aspect -alg ZevenbergenThorne -q "$UTM" "$TMP/zt-aspect.tif"

# ---- Conversions, NumPy references, voids, cases.json
rm -f "$HERE"/*.tif
"$PY" "$HERE/make_goldens.py" build "$TMP" "$GRASS_VERSION"
ls -l "$HERE"/*.tif
