#!/usr/bin/env bash
# Regenerates the terrain reference rasters in golden/terrain/ with GDAL's gdaldem (an independent
# implementation of the same Horn formulas), GRASS GIS r.slope.aspect, and two NumPy scripts beside
# this one (per_row_reference.py, curvature_reference.py: the spec's formulas, written
# independently of rasterflow's code). These are `reference` goldens: never regenerate them from
# rasterflow's own output. The cases that use them are in cases.json beside this script; the case
# fields are described in golden/README.md.
#
# Needs GDAL 3.6 (gdaldem, gdal_translate, gdal_calc.py; gdal_calc.py and the NumPy scripts run on
# the Python that has `osgeo` and numpy, /usr/bin/python3 on Debian) and GRASS GIS 8.2
# (Debian grass-core; run headless with --tmp-location). Run from anywhere:
# bash golden/terrain/make-goldens.sh
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
# GDAL's own suggestion for degree DEMs, -s 111120: the vendor's documented desktop approach is the
# same thing, a z-factor that converts degrees (ZFactor = 1/111120, below 0.001, so rasterflow
# converts nothing itself); see the cases terrain/*-geographic-s111120.
gdaldem slope "$GEO" "$OUT/geo-slope-degree-s111120.tif" -s 111120 -q "${F32[@]}"
gdaldem hillshade "$GEO" "$OUT/geo-hillshade-315-45-s111120.tif" -s 111120 -q "${U8[@]}"

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


# ============================================================================================
# Aspect, Curvature and the per-row geodesic cell size (terrain issue 3). NumPy parts run on
# /usr/bin/python3 (osgeo + numpy); GRASS GIS 8.2 (grass-core) runs r.slope.aspect headless.
PY=/usr/bin/python3
grass --version | head -1

# ---- Aspect on the UTM DEM with gdaldem. gdaldem's default output is the vendor's convention
# (azimuth: 0 north, clockwise; -alg Horn), but a flat cell is NoData (-9999) (0 with
# -zero_for_flat, which also writes 0, not NoData, on the uncomputed outer ring, so it cannot tell
# them apart). The DEM has no NoData, so a -9999 is a flat cell unless it lies on the outer ring
# that gdaldem leaves uncomputed without -compute_edges: flat cells become the vendor's -1, the
# ring NaN. gdaldem does not divide by the cell sizes; the UTM cells are square, so no matter.
for ce in "" "-compute_edges"; do
  gdaldem aspect "$UTM" "$TMP/asp.tif" $ce -q
  name="utm-aspect${ce:+-compute-edges}"
  "$PY" - "$TMP/asp.tif" "${ce:-ring}" "$OUT/$name.tif" <<'PYEOF'
import sys
import numpy as np
from osgeo import gdal
gdal.UseExceptions()
a_ds = gdal.Open(sys.argv[1]); a = a_ds.GetRasterBand(1).ReadAsArray().astype(np.float64)
nd = a_ds.GetRasterBand(1).GetNoDataValue()
ring = np.zeros(a.shape, bool)
if sys.argv[2] == "ring":
    ring[0, :] = ring[-1, :] = ring[:, 0] = ring[:, -1] = True
flat = (a == nd) & ~ring
out = np.where(flat, -1.0, np.where(a == nd, np.nan, a))
drv = gdal.GetDriverByName("GTiff")
o = drv.Create(sys.argv[3], a_ds.RasterXSize, a_ds.RasterYSize, 1, gdal.GDT_Float32, ["COMPRESS=DEFLATE", "PREDICTOR=3", "ZLEVEL=9"])
o.SetGeoTransform(a_ds.GetGeoTransform()); o.SetProjection(a_ds.GetProjection())
ob = o.GetRasterBand(1); ob.SetNoDataValue(float("nan")); ob.WriteArray(out.astype(np.float32)); o.FlushCache(); ob = None; o = None
print(f"{sys.argv[3]}: {int(flat.sum())} flat cells -> -1, {int(np.isnan(out).sum())} NoData")
PYEOF
done

# ---- Per-row geodesic cell sizes on the geographic DEM (rasterflow's default for degrees):
# an independent NumPy implementation (slope, SCALED slope, hillshade, aspect, curvature).
"$PY" "$HERE/per_row_reference.py" "$GEO" "$OUT/geo-geodesic"

# ---- The same on the geographic DEM with GRASS r.slope.aspect in a lat/lon location: GRASS
# computes each row's run with G_distance (ellipsoidal distances between the window's cell
# centres), a second independent per-row implementation. -n: aspect clockwise from north, flat
# -9999 (-> -1 here). No -e: GRASS leaves the outer ring NULL (cases exclude it).
cat > "$TMP/grass-ll.sh" <<GRASSEOF
set -e
r.in.gdal -o input="$GEO" output=dem --quiet
g.region raster=dem
r.slope.aspect -n elevation=dem slope=slope aspect=aspect precision=DCELL --quiet
r.out.gdal -c -f input=slope output="$TMP/grass-ll-slope.tif" type=Float64 --quiet
r.out.gdal -c -f input=aspect output="$TMP/grass-ll-aspect.tif" type=Float64 --quiet
GRASSEOF
grass --tmp-location EPSG:4326 --exec bash "$TMP/grass-ll.sh"
"$PY" - "$TMP/grass-ll-slope.tif" "$TMP/grass-ll-aspect.tif" "$OUT/geo-grass" <<'PYEOF'
import sys
import numpy as np
from osgeo import gdal
gdal.UseExceptions()
def save(src, path, arr):
    drv = gdal.GetDriverByName("GTiff")
    o = drv.Create(path, src.RasterXSize, src.RasterYSize, 1, gdal.GDT_Float32, ["COMPRESS=DEFLATE", "PREDICTOR=3", "ZLEVEL=9"])
    o.SetGeoTransform(src.GetGeoTransform()); o.SetProjection(src.GetProjection())
    ob = o.GetRasterBand(1); ob.SetNoDataValue(float("nan")); ob.WriteArray(arr.astype(np.float32)); o.FlushCache(); ob = None; o = None
for src_path, name in ((sys.argv[1], "slope"), (sys.argv[2], "aspect")):
    ds = gdal.Open(src_path); b = ds.GetRasterBand(1); a = b.ReadAsArray().astype(np.float64)
    nd = b.GetNoDataValue()
    null = np.isnan(a) if nd is None or np.isnan(nd) else (a == nd)
    if name == "aspect":
        a = np.where(a == -9999, -1.0, a)
        a = np.where(a.astype(np.float32) >= 360, 0.0, a)
    save(ds, f"{sys.argv[3]}-{name}.tif", np.where(null, np.nan, a))
    print(f"{sys.argv[3]}-{name}.tif: {int(null.sum())} NULL")
PYEOF

# ---- Curvature. (1) The Zevenbergen-Thorne formulas of the spec in NumPy on the UTM DEM.
"$PY" "$HERE/curvature_reference.py" zt "$UTM" "$OUT/utm-curvature"
# (2) GRASS r.slope.aspect on a polynomial surface where its estimators and Zevenbergen-Thorne's
# agree (see curvature_reference.py), its normalised curvatures converted to the vendor's.
"$PY" "$HERE/curvature_reference.py" poly "$OUT/poly-dem.tif"
cat > "$TMP/grass-poly.sh" <<GRASSEOF
set -e
r.in.gdal -o input="$OUT/poly-dem.tif" output=poly --quiet
g.region raster=poly
r.slope.aspect elevation=poly dx=dx dy=dy dxx=dxx dyy=dyy pcurvature=pc tcurvature=tc precision=DCELL --quiet
for m in dx dy dxx dyy pc tc; do r.out.gdal -c -f input=\$m output="$TMP/grass-\$m.tif" type=Float64 --quiet; done
GRASSEOF
grass --tmp-location EPSG:32616 --exec bash "$TMP/grass-poly.sh"
"$PY" "$HERE/curvature_reference.py" grass "$OUT/poly-dem.tif" "$TMP/grass-dx.tif" "$TMP/grass-dy.tif" \
  "$TMP/grass-dxx.tif" "$TMP/grass-dyy.tif" "$TMP/grass-pc.tif" "$TMP/grass-tc.tif" "$OUT/poly-grass-curvature"

ls -l "$OUT"/*.tif
