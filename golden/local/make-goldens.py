#!/usr/bin/python3
"""Regenerates the reference rasters and cases.json of golden/local/ (Remap, Mask, WeightedSum,
WeightedOverlay, ArgStatistics, Clip). `reference` goldens: never regenerate them from rasterflow.

Tools: NumPy (the documented per-pixel rules, written independently of rasterflow's code) and
GDAL 3.6 `gdal_rasterize` for Clip (the pixel-centre rule, even-odd rings, reprojection of the
clipping geometry by OGR/PROJ). Inputs: golden/data/L7_ETMs.tif (6 x Byte) and
golden/data/jacksboro_fault_dem_utm16n_75m.tif (Float32). Run: /usr/bin/python3 golden/local/make-goldens.py
"""
import json
import os
import subprocess
import tempfile

import numpy as np
from osgeo import gdal, ogr, osr

gdal.UseExceptions()
os.environ["GDAL_PAM_ENABLED"] = "NO"
gdal.SetConfigOption("GDAL_PAM_ENABLED", "NO")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
L7 = "golden/data/L7_ETMs.tif"
DEM = "golden/data/jacksboro_fault_dem_utm16n_75m.tif"
VERSION = gdal.VersionInfo("--version")
SCRIPT = "golden/local/make-goldens.py"
CO = ["COMPRESS=DEFLATE", "ZLEVEL=9"]


def read(path):
    ds = gdal.Open(os.path.join(ROOT, path))
    return ds, np.stack([ds.GetRasterBand(b + 1).ReadAsArray() for b in range(ds.RasterCount)])


def write(name, like, bands, dtype, nodata, window=None):
    """Write bands (list of 2-D arrays) on `like`'s grid (or its pixel window (x, y, w, h))."""
    gt = list(like.GetGeoTransform())
    if window is not None:
        gt[0] += window[0] * gt[1]
        gt[3] += window[1] * gt[5]
    h, w = bands[0].shape
    ds = gdal.GetDriverByName("GTiff").Create(os.path.join(HERE, name), w, h, len(bands), dtype, CO)
    ds.SetGeoTransform(gt)
    ds.SetProjection(like.GetProjection())
    for i, b in enumerate(bands):
        rb = ds.GetRasterBand(i + 1)
        if nodata is not None:
            rb.SetNoDataValue(nodata)
        rb.WriteArray(b)
    ds = None
    return f"golden/local/{name}"


cases = []


def case(cid, rule, inputs, expected, tool, note, command, abs_tol=0):
    cases.append({
        "id": f"local/{cid}",
        "rule": rule,
        "inputs": inputs,
        "expected": expected,
        "kind": "reference",
        "tolerance": {"abs": abs_tol},
        "provenance": {"tool": tool, "version": VERSION, "command": command, "script": SCRIPT, "note": note},
    })


def rint(x):
    """Round half away from zero (the engine's float -> integer rule)."""
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


l7ds, l7 = read(L7)
demds, dem = read(DEM)
l7f = l7.astype(np.float64)
demf = dem[0].astype(np.float64)

# ---- Remap on the float DEM: ranges tested last to first, float bounds nudged by 1e-6 except the
# first from and the last to; NoDataRanges [from, to) for floats; unmatched -> NoData.
ranges = [(0, 300), (300, 500.5), (500.5, 700), (650, 2000)]
outs = [1, 2, 3, 4]
nd = [(900, 950)]
out = np.full(demf.shape, np.nan)
n = len(ranges)
for k in range(n):  # later ranges win: apply in order, later overwrite
    f, t = ranges[k]
    lo = f - (1e-6 if k > 0 else 0)
    hi = t - (1e-6 if k < n - 1 else 0)
    hit = (demf == f) | ((demf >= lo) & (demf < hi))
    out[hit] = outs[k]
for f, t in nd:
    out[(demf == f) | ((demf >= f) & (demf < t))] = np.nan
exp = write("remap-dem.tif", demds, [out.astype(np.float32)], gdal.GDT_Float32, float("nan"))
case("remap-dem", {"rasterFunction": "Remap", "rasterFunctionArguments": {
    "InputRanges": [v for r in ranges for v in r], "OutputValues": outs, "NoDataRanges": [v for r in nd for v in r]}},
    [DEM], exp, "NumPy", "Overlapping ranges (650..700 goes to the last range); NoData range [900, 950); output F32 (input type).",
    "numpy: last matching range wins, [from - 1e-6, to - 1e-6) interior bounds")

# Remap on Landsat band 1 (Byte) with AllowUnmatched, an integer NoData range [60, 62] inclusive,
# and an outputPixelType that holds 1000 (planned as U16, no saturation at 255).
b1 = l7f[0]
out = b1.copy()
valid = np.ones(b1.shape, bool)
out[(b1 >= 0) & (b1 < 50)] = 1000
out[(b1 == 50) | ((b1 > 50) & (b1 < 70))] = 7
valid[(b1 >= 60) & (b1 <= 62)] = False
out[~valid] = 65535
exp = write("remap-l7-b1-u16.tif", l7ds, [out.astype(np.uint16)], gdal.GDT_UInt16, 65535)
case("remap-l7-b1-u16", {"rasterFunction": "Remap", "outputPixelType": "U16", "rasterFunctionArguments": {
    "InputRanges": "0 50 50 70", "OutputValues": "1000 7", "NoDataRanges": [60, 62], "AllowUnmatched": True}},
    [L7], exp, "NumPy", "Integer input: NoData range bounds both inclusive; unmatched values kept; outputPixelType U16 keeps 1000.",
    "numpy: b1<50 -> 1000, 50<=b1<70 -> 7, 60<=b1<=62 NoData, else b1")

# ---- Mask on Landsat: per band NoData values and included ranges, MatchAny and MatchAll.
ndv = [[0, 255], [], [40, 41, 42]]
inc = [(30, 120), (0, 255), (20, 200)]
for interp, name in [(0, "any"), (1, "all")]:
    bad = []
    for b in range(3):
        bb = np.zeros(l7[0].shape, bool)
        for v in ndv[b]:
            bb |= l7[b] == v
        lo, hi = inc[b]
        bb |= (l7[b] < lo) | (l7[b] > hi)
        bad.append(bb)
    if interp == 0:
        masked = np.any(bad, axis=0)
    else:
        masked = np.all(bad, axis=0)
    # NoData written as 0 only where no band value is 0... use a separate mask band instead: store
    # the values with NoData 0 after checking that no kept pixel is 0 in any band.
    kept = l7[:3].copy()
    assert not np.any((kept == 0) & ~masked), "a kept pixel holds 0"
    kept[:, masked] = 0
    exp = write(f"mask-l7-{name}.tif", l7ds, list(kept), gdal.GDT_Byte, 0)
    case(f"mask-l7-{name}", {"rasterFunction": "Mask", "rasterFunctionArguments": {
        "Raster": {"rasterFunction": "ExtractBand", "rasterFunctionArguments": {"BandIDs": [0, 1, 2]}},
        "NoDataValues": ["0 255", "", "40 41 42"], "IncludedRanges": [30, 120, 0, 255, 20, 200], "NoDataInterpretation": interp}},
        [L7], exp, "NumPy", f"Bands 1-3 of the Landsat image; NoDataInterpretation {interp} ({'MatchAll' if interp else 'MatchAny'}).",
        "numpy: per-band equality and inclusive range tests, any/all")


def extract(b):
    return {"rasterFunction": "ExtractBand", "rasterFunctionArguments": {"BandIDs": [b]}}


# ---- WeightedSum of three Landsat bands.
w = [0.5, -1.25, 2.0]
out = w[0] * l7f[3] + w[1] * l7f[2] + w[2] * l7f[4]
exp = write("weightedsum-l7.tif", l7ds, [out.astype(np.float32)], gdal.GDT_Float32, float("nan"))
case("weightedsum-l7", {"rasterFunction": "WeightedSum", "rasterFunctionArguments": {
    "Rasters": [extract(3), extract(2), extract(4)], "Fields": ["Value", "Value", "Value"], "Weights": w}},
    [L7], exp, "NumPy", "Float64 sum stored as Float32.", "numpy: 0.5*b4 - 1.25*b3 + 2*b5")

# ---- WeightedOverlay of two Landsat bands on a 1..9 scale with RESTRICTED and NODATA classes.
b4, b5 = l7f[3], l7f[4]
r1 = np.select([b4 <= 40, b4 <= 80, b4 <= 255], [1, 5, 9])
r1k = np.where(b4 > 200, 2, 0)  # 2 = restricted
r2 = np.select([b5 <= 30, b5 <= 100], [9, 4], 0)
r2k = np.where(b5 > 100, 1, 0)  # 1 = NoData
s = rint((r1 * 65 + r2 * 35) / 100.0)
restricted = r1k == 2
nodata = (r2k == 1) & ~restricted
out = np.where(restricted, 0, s)
out = np.where(nodata, -1, out)
exp = write("weightedoverlay-l7.tif", l7ds, [out.astype(np.int16)], gdal.GDT_Int16, -1)
case("weightedoverlay-l7", {"rasterFunction": "WeightedOverlay", "rasterFunctionArguments": {
    "Rasters": [extract(3), extract(4)], "Fields": ["Value", "Value"], "Influences": [65, 35],
    "Remaps": ["0 40 1, 40 80 5, 80 200 9, 201 255 RESTRICTED", "0 30 9; 30 100 4; 101 255 NODATA"], "EvalFrom": 1, "EvalTo": 9}},
    [L7], exp, "NumPy", "Shared bounds go to the first (lower) entry; RESTRICTED (EvalFrom - 1 = 0) wins over NODATA; output S16.",
    "numpy: round half away of (65*r1 + 35*r2)/100")

# ---- ArgStatistics over the 6 Landsat bands.
n = 6
srt = np.sort(l7f, axis=0)
for t, name in [(0, "argmax"), (1, "argmin"), (2, "argmedian")]:
    if t == 0:
        ext = l7f.max(axis=0)
    elif t == 1:
        ext = l7f.min(axis=0)
    else:
        ext = srt[(n - 1) // 2]
    count = (l7f == ext).sum(axis=0)
    idx = np.argmax(l7f == ext, axis=0)
    out = np.where(count > 1, 100, idx)
    exp = write(f"argstatistics-l7-{name}.tif", l7ds, [out.astype(np.uint8)], gdal.GDT_Byte, None)
    case(f"argstatistics-l7-{name}", {"rasterFunction": "ArgStatistics", "rasterFunctionArguments": {"Rasters": ["$$"], "ArgStatisticsType": t}},
         [L7], exp, "NumPy", "Ties give UndefinedClass 100; the median is the lower median of 6 values (sorted position 2).",
         f"numpy: {name} over axis 0 with tie test")
inr = (l7f >= 40) & (l7f <= 90)
best = np.zeros(l7f.shape[1:], np.int32)
run = np.zeros_like(best)
for b in range(n):
    run = np.where(inr[b], run + 1, 0)
    best = np.maximum(best, run)
exp = write("argstatistics-l7-duration.tif", l7ds, [best.astype(np.uint8)], gdal.GDT_Byte, None)
case("argstatistics-l7-duration", {"rasterFunction": "ArgStatistics", "rasterFunctionArguments": {
    "Rasters": ["$$"], "ArgStatisticsType": 3, "MinValue": 40, "MaxValue": 90}},
    [L7], exp, "NumPy", "Longest run of consecutive bands with 40 <= v <= 90.", "numpy: running count over bands")

# ---- Clip the DEM with gdal_rasterize (pixel centres, even-odd, OGR reprojection).
srs = osr.SpatialReference()
srs.ImportFromWkt(demds.GetProjection())
gt = demds.GetGeoTransform()


def rasterize(geom_wkt, geom_srs):
    tmp = tempfile.mkdtemp()
    vec = os.path.join(tmp, "g.gpkg")
    drv = ogr.GetDriverByName("GPKG")
    vds = drv.CreateDataSource(vec)
    lyr = vds.CreateLayer("g", geom_srs, ogr.wkbUnknown)
    f = ogr.Feature(lyr.GetLayerDefn())
    f.SetGeometry(ogr.CreateGeometryFromWkt(geom_wkt))
    lyr.CreateFeature(f)
    vds = None
    target = os.path.join(tmp, "m.tif")
    t = gdal.GetDriverByName("GTiff").Create(target, demds.RasterXSize, demds.RasterYSize, 1, gdal.GDT_Byte)
    t.SetGeoTransform(gt)
    t.SetProjection(demds.GetProjection())
    t = None
    subprocess.run(["gdal_rasterize", "-q", "-burn", "1", "-l", "g", vec, target], check=True)
    m = gdal.Open(target).ReadAsArray().astype(bool)
    return m


def window_of(env):
    xmin, xmax, ymin, ymax = env
    eps = 1e-9
    x0 = max(0, int(np.floor((xmin - gt[0]) / gt[1] + eps)))
    x1 = min(demds.RasterXSize, int(np.ceil((xmax - gt[0]) / gt[1] - eps)))
    y0 = max(0, int(np.floor((gt[3] - ymax) / -gt[5] + eps)))
    y1 = min(demds.RasterYSize, int(np.ceil((gt[3] - ymin) / -gt[5] - eps)))
    return x0, y0, x1 - x0, y1 - y0


x0, y0 = gt[0], gt[3]
poly = [[x0 + 1000.3, y0 - 2000.7], [x0 + 20000.9, y0 - 1500.2], [x0 + 26000.4, y0 - 22000.6], [x0 + 3000.1, y0 - 27000.8], [x0 + 1000.3, y0 - 2000.7]]
hole = [[x0 + 8000.2, y0 - 8000.3], [x0 + 14000.6, y0 - 9000.1], [x0 + 11000.7, y0 - 16000.9], [x0 + 8000.2, y0 - 8000.3]]
ring_wkt = lambda r: "(" + ",".join(f"{x!r} {y!r}" for x, y in r) + ")"
wkt = f"POLYGON({ring_wkt(poly)},{ring_wkt(hole)})"
m = rasterize(wkt, srs)
env = ogr.CreateGeometryFromWkt(wkt).GetEnvelope()
wx, wy, ww, wh = window_of(env)
out = np.where(m, demf, np.nan)[wy:wy + wh, wx:wx + ww].astype(np.float32)
exp = write("clip-dem-polygon-hole.tif", demds, [out], gdal.GDT_Float32, float("nan"), (wx, wy, ww, wh))
case("clip-dem-polygon-hole", {"rasterFunction": "Clip", "rasterFunctionArguments": {
    "ClippingGeometry": {"rings": [poly, hole], "spatialReference": {"wkid": 32616}}, "ClippingType": 1}},
    [DEM], exp, "gdal_rasterize", "Polygon with a hole in the raster's SR; output cropped to the polygon's envelope snapped outward to the grid.",
    "gdal_rasterize -burn 1 (pixel centres), values where burnt, window = envelope")

# Multipolygon (GeoJSON) with overlapping parts, ClippingType 2 (remove the inside), full extent.
p1 = [[x0 + 2000.5, y0 - 3000.5], [x0 + 12000.5, y0 - 3000.5], [x0 + 12000.5, y0 - 12000.5], [x0 + 2000.5, y0 - 12000.5], [x0 + 2000.5, y0 - 3000.5]]
p2 = [[x0 + 9000.25, y0 - 9000.25], [x0 + 20000.25, y0 - 10000.25], [x0 + 15000.25, y0 - 25000.25], [x0 + 9000.25, y0 - 9000.25]]
wkt = f"MULTIPOLYGON(({ring_wkt(p1)}),({ring_wkt(p2)}))"
m = rasterize(wkt, srs)
out = np.where(m, np.nan, demf).astype(np.float32)
exp = write("clip-dem-multipolygon-inside.tif", demds, [out], gdal.GDT_Float32, float("nan"))
case("clip-dem-multipolygon-inside", {"rasterFunction": "Clip", "rasterFunctionArguments": {
    "ClippingGeometry": {"type": "MultiPolygon", "coordinates": [[p1], [p2]]}, "ClipType": 2}},
    [DEM], exp, "gdal_rasterize", "GeoJSON MultiPolygon with overlapping parts: parts are united (GDAL burns each polygon on its own); ClipType 2 keeps the outside.",
    "gdal_rasterize -burn 1; NoData where burnt")

# Envelope in EPSG:4326, densified into 32 pieces per edge (as rasterflow does) before OGR projects it.
geo = osr.SpatialReference()
geo.ImportFromEPSG(4326)
geo.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
srs.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
lon0, lat0, lon1, lat1 = -84.3, 36.5, -84.15, 36.62
corners = [(lon0, lat0), (lon0, lat1), (lon1, lat1), (lon1, lat0)]
dense = []
for i in range(4):
    (ax, ay), (bx, by) = corners[i], corners[(i + 1) % 4]
    for s in range(32):
        t = s / 32
        dense.append((ax + t * (bx - ax), ay + t * (by - ay)))
dense.append(dense[0])
wkt = "POLYGON(" + ring_wkt(dense) + ")"
m = rasterize(wkt, geo)
g = ogr.CreateGeometryFromWkt(wkt)
g.AssignSpatialReference(geo)
g.TransformTo(srs)
wx, wy, ww, wh = window_of(g.GetEnvelope())
out = np.where(m, demf, np.nan)[wy:wy + wh, wx:wx + ww].astype(np.float32)
exp = write("clip-dem-envelope-4326.tif", demds, [out], gdal.GDT_Float32, float("nan"), (wx, wy, ww, wh))
case("clip-dem-envelope-4326", {"rasterFunction": "Clip", "rasterFunctionArguments": {
    "ClippingGeometry": {"xmin": lon0, "ymin": lat0, "xmax": lon1, "ymax": lat1, "spatialReference": {"wkid": 4326}}}},
    [DEM], exp, "gdal_rasterize", "Envelope in geographic coordinates projected onto UTM 16N (edges densified 32x in both tools; PROJ vs proj4js agree to well under a pixel).",
    "gdal_rasterize with a 4326 layer (OGR reprojects), window = projected envelope")

with open(os.path.join(HERE, "cases.json"), "w") as fh:
    json.dump(cases, fh, indent=2)
    fh.write("\n")
print(f"{len(cases)} cases")
