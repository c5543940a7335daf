#!/usr/bin/python3
"""Inputs and reference rasters of the change/trend goldens (golden/change/cases.json).

Run from the repository root:  GDAL_PAM_ENABLED=NO /usr/bin/python3 golden/change/make-goldens.py
Needs GDAL 3.6 (python osgeo, netCDF and Zarr drivers) and NumPy. Deterministic (seeded).

1. A time series built honestly from the one real scene we have, golden/data/L7_ETMs.tif: a 20 x 16
   crop (srcwin 150 150 20 16, all six bands) is the base of every date; each of the 60 dates
   (2000-01-05 then every 36 days) adds a seasonal term A_b sin(2 pi t / 365.25 + 0.3) (A = 4, 5,
   6, 20, 15, 10 DN per band) and Gaussian noise (sigma 1.5), rounded to Int16. Synthetic changes
   (steps added from their date on, all bands) at known pixels and dates (BREAKS below):
   patch A (rows 2-5, cols 3-6) at date 25, patch B (rows 9-12, cols 12-15) at date 40, patch C
   (rows 12-14, cols 2-5) at dates 15 and 45. Clouds: 3% of (pixel, date) get +80 DN in every band
   (never at a break date of a changed pixel or the date before it: a cloud just before a step
   is indistinguishable from the step's start); missing observations: 2% are -9999 (NoData;
   never at those dates either). Nothing else changes, so CCDC must find exactly these breaks.
   Written three ways (the three multidimensional source kinds of src/io/multidim-source.ts):
   - l7-series.tif: a netCDF file made with GDAL's multidimensional API (variable L7 (time, band,
     y, x), time in "days since 1970-01-01"), turned into a GeoTIFF by gdal_translate, which keeps
     the NETCDF_DIM_time / NETCDF_VARNAME band metadata (kind b);
   - l7-series.zarr: a Zarr v2 store made by GDAL's Zarr driver, one array per band
     (blue, green, red, nir, swir1, swir2: (time, y, x)), zlib-compressed (kind c);
   - l7-series-manifest.json: a JSON manifest whose 60 slices take their bands from
     l7-series.tif (kind a).
   Expected DetectChange rasters come from BREAKS alone (the truth), not from a CCDC run.
2. An NDVI-like F32 series for the trend goldens: 9 single-band slices (ndvi-*.tif, dates in
   NDVI_DATES) listed by ndvi-manifest.json; 4% of values are NoData (NaN). References:
   numpy.polyfit (linear, order 2) and numpy.linalg.lstsq (harmonic) per pixel on the valid
   slices, t = days since 1970-01-01, RMSE = sqrt(mean residual^2); Trend predictions with
   numpy.polyval. Also numpy.polyfit linear trends of every band of the L7 series (clouds
   included, -9999 dates left out), in the band orders of the GeoTIFF and of the Zarr store.
3. ComputeChange inputs: dates 10 and 50 of the L7 series without clouds or gaps (cc-from.tif,
   cc-to.tif, 6 x Int16) and NDVI classes of both (cc-class-from.tif, cc-class-to.tif, U8:
   1 NDVI < 0.1, 2 NDVI < 0.3, 3 otherwise); references are NumPy formulations of each method.
"""
import json
import os
import shutil

import numpy as np
from osgeo import gdal, osr

gdal.UseExceptions()
os.environ["GDAL_PAM_ENABLED"] = "NO"
gdal.SetConfigOption("GDAL_PAM_ENABLED", "NO")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "golden", "change")
L7 = os.path.join(ROOT, "golden", "data", "L7_ETMs.tif")
NODATA = -9999
W, H, N = 20, 16, 60
rng = np.random.default_rng(20240601)

src = gdal.Open(L7)
crop = src.ReadAsArray(150, 150, W, H).astype(np.float64)  # (6, H, W)
gt0 = src.GetGeoTransform()
GT = (gt0[0] + 150 * gt0[1], gt0[1], 0.0, gt0[3] + 150 * gt0[5], 0.0, gt0[5])
SRS = src.GetSpatialRef()

EPOCH = np.datetime64("1970-01-01")
dates = np.datetime64("2000-01-05") + np.arange(N) * np.timedelta64(36, "D")
tdays = (dates - EPOCH).astype(np.int64).astype(np.float64)

AMP = np.array([4, 5, 6, 20, 15, 10], dtype=np.float64)
season = AMP[None, :, None, None] * np.sin(2 * np.pi * tdays / 365.25 + 0.3)[:, None, None, None]
series = crop[None] + season + rng.normal(0, 1.5, size=(N, 6, H, W))

# (rows, cols, date index, step per band)
BREAKS = [
    ((2, 6), (3, 7), 25, [10, 15, 30, -45, 35, 25]),
    ((9, 13), (12, 16), 40, [-8, -10, -20, 40, -30, -20]),
    ((12, 15), (2, 6), 15, [5, 8, 20, -35, 25, 15]),
    ((12, 15), (2, 6), 45, [-5, -8, -20, 60, -35, -25]),
]
protect = np.zeros((N, H, W), dtype=bool)
for (r0, r1), (c0, c1), k, step in BREAKS:
    series[k:, :, r0:r1, c0:c1] += np.array(step, dtype=np.float64)[None, :, None, None]
    protect[k - 1 : k + 1, r0:r1, c0:c1] = True
clouds = (rng.random((N, H, W)) < 0.03) & ~protect
series += 80.0 * clouds[:, None, :, :]
series = np.round(series).astype(np.int16)
missing = (rng.random((N, H, W)) < 0.02) & ~protect
series[np.broadcast_to(missing[:, None], series.shape)] = NODATA


def write_tif(path, arr, dtype, nodata=None, band_meta=None):
    arr = np.asarray(arr)
    if arr.ndim == 2:
        arr = arr[None]
    drv = gdal.GetDriverByName("GTiff")
    ds = drv.Create(path, arr.shape[2], arr.shape[1], arr.shape[0], dtype, ["COMPRESS=DEFLATE"])
    ds.SetGeoTransform(GT)
    ds.SetSpatialRef(SRS)
    for b in range(arr.shape[0]):
        band = ds.GetRasterBand(b + 1)
        if nodata is not None:
            band.SetNoDataValue(nodata)
        band.WriteArray(arr[b])
    ds = None


def xy_coordinates():
    x = GT[0] + (np.arange(W) + 0.5) * GT[1]
    y = GT[3] + (np.arange(H) + 0.5) * GT[5]
    return x, y


# ---- 1b. netCDF -> GeoTIFF with NETCDF_DIM_* band metadata
nc = os.path.join("/tmp", "rasterflow-l7-series.nc")
if os.path.exists(nc):
    os.remove(nc)
ds = gdal.GetDriverByName("netCDF").CreateMultiDimensional(nc)
rg = ds.GetRootGroup()
f64 = gdal.ExtendedDataType.Create(gdal.GDT_Float64)
dim_t = rg.CreateDimension("time", None, None, N)
dim_b = rg.CreateDimension("band", None, None, 6)
dim_y = rg.CreateDimension("y", gdal.DIM_TYPE_HORIZONTAL_Y, None, H)
dim_x = rg.CreateDimension("x", gdal.DIM_TYPE_HORIZONTAL_X, None, W)
xc, yc = xy_coordinates()
for name, dim, values in (("time", dim_t, tdays), ("band", dim_b, np.arange(1, 7.0)), ("y", dim_y, yc), ("x", dim_x, xc)):
    v = rg.CreateMDArray(name, [dim], f64)
    v.Write(values)
    if name == "time":
        a = v.CreateAttribute("units", [], gdal.ExtendedDataType.CreateString())
        a.Write("days since 1970-01-01")
var = rg.CreateMDArray("L7", [dim_t, dim_b, dim_y, dim_x], gdal.ExtendedDataType.Create(gdal.GDT_Int16))
var.SetSpatialRef(SRS)
var.SetNoDataValueDouble(NODATA)
var.Write(series)
del var, rg, ds
gdal.Translate(os.path.join(OUT, "l7-series.tif"), nc, creationOptions=["COMPRESS=DEFLATE"])
os.remove(nc)

# ---- 1c. Zarr store, one array per band
zpath = os.path.join(OUT, "l7-series.zarr")
shutil.rmtree(zpath, ignore_errors=True)
ds = gdal.GetDriverByName("Zarr").CreateMultiDimensional(zpath)
rg = ds.GetRootGroup()
dim_t = rg.CreateDimension("time", None, None, N)
dim_y = rg.CreateDimension("y", gdal.DIM_TYPE_HORIZONTAL_Y, None, H)
dim_x = rg.CreateDimension("x", gdal.DIM_TYPE_HORIZONTAL_X, None, W)
for name, dim, values in (("time", dim_t, tdays), ("y", dim_y, yc), ("x", dim_x, xc)):
    v = rg.CreateMDArray(name, [dim], f64)
    v.Write(values)
    if name == "time":
        a = v.CreateAttribute("units", [], gdal.ExtendedDataType.CreateString())
        a.Write("days since 1970-01-01")
    dim.SetIndexingVariable(v)
for b, name in enumerate(["blue", "green", "red", "nir", "swir1", "swir2"]):
    var = rg.CreateMDArray(name, [dim_t, dim_y, dim_x], gdal.ExtendedDataType.Create(gdal.GDT_Int16), ["COMPRESS=ZLIB", f"BLOCKSIZE={N},{H},{W}"])
    var.SetSpatialRef(SRS)
    var.SetNoDataValueDouble(NODATA)
    var.Write(np.ascontiguousarray(series[:, b]))
del var, rg, ds

# ---- 1a. manifest over the GeoTIFF's bands
iso = [str(d) + "T00:00:00" for d in dates]
manifest = {
    "variables": [
        {
            "name": "L7",
            "description": "L7_ETMs crop with documented synthetic changes (make-goldens.py)",
            "dimensions": ["StdTime"],
            "slices": [{"dimensions": {"StdTime": iso[k]}, "path": "l7-series.tif", "bands": list(range(6 * k, 6 * k + 6))} for k in range(N)],
        }
    ]
}
with open(os.path.join(OUT, "l7-series-manifest.json"), "w") as f:
    json.dump(manifest, f, indent=1)
    f.write("\n")


# ---- Expected DetectChange rasters from the truth
def decimal_year(d):
    y = d.astype("datetime64[Y]")
    start = y.astype("datetime64[D]")
    end = (y + 1).astype("datetime64[D]")
    return int(str(y)) + float((d - start) / (end - start))


per_pixel = {}
for (r0, r1), (c0, c1), k, step in BREAKS:
    for r in range(r0, r1):
        for c in range(c0, c1):
            per_pixel.setdefault((r, c), []).append((decimal_year(dates[k]), float(np.linalg.norm(step))))

def change_raster(kind):
    out = np.full((H, W), np.nan if kind < 3 else 0, dtype=np.float32 if kind < 3 else np.uint16)
    for (r, c), items in per_pixel.items():
        if kind == 0:
            out[r, c] = max(t for t, _ in items)
        elif kind == 1:
            out[r, c] = min(t for t, _ in items)
        elif kind == 2:
            out[r, c] = max(items, key=lambda it: (it[1], it[0]))[0]
        else:
            out[r, c] = len(items)
    return out

for kind, name in enumerate(["latest", "earliest", "largest", "count"]):
    arr = change_raster(kind)
    write_tif(os.path.join(OUT, f"detect-{name}.tif"), arr, gdal.GDT_Float32 if kind < 3 else gdal.GDT_UInt16, float("nan") if kind < 3 else None)
# two bands of latest changes (MaxNumberChanges 2): second band 0 where only one change
two = np.full((2, H, W), np.nan, dtype=np.float32)
for (r, c), items in per_pixel.items():
    ts = sorted((t for t, _ in items), reverse=True)
    two[0, r, c] = ts[0]
    two[1, r, c] = ts[1] if len(ts) > 1 else 0
write_tif(os.path.join(OUT, "detect-latest-2.tif"), two, gdal.GDT_Float32, float("nan"))

# ---- 2. NDVI-like trend series
NDVI_DATES = np.array(["2001-03-02", "2001-09-17", "2002-02-11", "2002-08-30", "2003-04-05", "2003-11-21", "2004-06-10", "2005-01-15", "2005-07-04"], dtype="datetime64[D]")
tn = (NDVI_DATES - EPOCH).astype(np.int64).astype(np.float64)
red = crop[2]
nir = crop[3]
ndvi0 = (nir - red) / (nir + red)
years = (tn - tn[0]) / 365.25
gx = np.linspace(-0.03, 0.04, W)[None, :]
gy = np.linspace(0.02, -0.01, H)[:, None]
ndvi = ndvi0[None] + (gx + gy)[None] * years[:, None, None] + 0.08 * np.sin(2 * np.pi * tn / 365.25 + 1.1)[:, None, None] + rng.normal(0, 0.01, size=(len(tn), H, W))
ndvi = ndvi.astype(np.float32)
gaps = rng.random(ndvi.shape) < 0.04
gaps[:, 0, 0] = True  # one pixel with no valid slice at all
gaps[2:, 0, 1] = True  # one pixel with two valid slices only
ndvi[gaps] = np.nan
slices = []
for k, d in enumerate(NDVI_DATES):
    name = f"ndvi-{d}.tif"
    write_tif(os.path.join(OUT, name), ndvi[k], gdal.GDT_Float32, float("nan"))
    slices.append({"dimensions": {"StdTime": str(d)}, "path": name})
with open(os.path.join(OUT, "ndvi-manifest.json"), "w") as f:
    json.dump({"variables": [{"name": "NDVI", "dimensions": ["StdTime"], "slices": slices}]}, f, indent=1)
    f.write("\n")

yv = ndvi.astype(np.float64)


def per_pixel_fit(fit, bands, ignore=True):
    out = np.full((bands, H, W), np.nan)
    for r in range(H):
        for c in range(W):
            ok = ~np.isnan(yv[:, r, c])
            if not ignore and not ok.all():
                continue
            res = fit(tn[ok], yv[ok, r, c])
            if res is not None:
                out[:, r, c] = res
    return out


def linear(t, y):
    if len(t) < 2:
        return None
    p = np.polyfit(t, y, 1)
    e = y - np.polyval(p, t)
    return [p[0], p[1], np.sqrt(np.mean(e * e))]


def poly2(t, y):
    if len(t) < 3:
        return None
    p = np.polyfit(t, y, 2)
    e = y - np.polyval(p, t)
    return [p[0], p[1], p[2], np.sqrt(np.mean(e * e))]


def harmonic(t, y):
    if len(t) < 4:
        return None
    w = 2 * np.pi * t / 365.25
    X = np.stack([np.ones_like(t), t, np.cos(w), np.sin(w)], axis=1)
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    e = y - X @ coef
    return [coef[1], coef[0], coef[2], coef[3], np.sqrt(np.mean(e * e))]


lin = per_pixel_fit(linear, 3)
write_tif(os.path.join(OUT, "trend-linear.tif"), lin, gdal.GDT_Float64, float("nan"))
write_tif(os.path.join(OUT, "trend-linear-strict.tif"), per_pixel_fit(linear, 3, ignore=False), gdal.GDT_Float64, float("nan"))
write_tif(os.path.join(OUT, "trend-poly2.tif"), per_pixel_fit(poly2, 4), gdal.GDT_Float64, float("nan"))
write_tif(os.path.join(OUT, "trend-harmonic.tif"), per_pixel_fit(harmonic, 5), gdal.GDT_Float64, float("nan"))
# Trend: linear predictions at 2010-01-01 and 2012-06-30
tp = (np.array(["2010-01-01", "2012-06-30"], dtype="datetime64[D]") - EPOCH).astype(np.int64).astype(np.float64)
pred = np.stack([lin[0] * t + lin[1] for t in tp]).astype(np.float32)
write_tif(os.path.join(OUT, "trend-predict-linear.tif"), pred, gdal.GDT_Float32, float("nan"))
# Trend by interval from the order-2 polynomial: every 6 months from 2006-01-01 to 2007-01-01
p2 = per_pixel_fit(poly2, 4)
tq = (np.array(["2006-01-01", "2006-07-01", "2007-01-01"], dtype="datetime64[D]") - EPOCH).astype(np.int64).astype(np.float64)
pred2 = np.stack([p2[0] * t * t + p2[1] * t + p2[2] for t in tq]).astype(np.float32)
write_tif(os.path.join(OUT, "trend-predict-poly2.tif"), pred2, gdal.GDT_Float32, float("nan"))

# Linear trends of the L7 series (per band, valid dates only) in the band orders of the GeoTIFF
# (one variable, 6 bands per slice) and of the Zarr store (one variable per band, name order).
fits = np.full((6, 3, H, W), np.nan)
for b in range(6):
    for r in range(H):
        for c in range(W):
            yb = series[:, b, r, c].astype(np.float64)
            ok = yb != NODATA
            p = np.polyfit(tdays[ok], yb[ok], 1)
            e = yb[ok] - np.polyval(p, tdays[ok])
            fits[b, :, r, c] = [p[0], p[1], np.sqrt(np.mean(e * e))]
write_tif(os.path.join(OUT, "trend-l7-linear-tif.tif"), fits.reshape(18, H, W), gdal.GDT_Float64, float("nan"))
zorder = [0, 1, 3, 2, 4, 5]  # blue, green, nir, red, swir1, swir2
write_tif(os.path.join(OUT, "trend-l7-linear-zarr.tif"), fits[zorder].reshape(18, H, W), gdal.GDT_Float64, float("nan"))

# ---- 3. ComputeChange
# the two dates without clouds or gaps: rebuild them from the base, season and the breaks only
def date_image(k):
    img = crop + AMP[:, None, None] * np.sin(2 * np.pi * tdays[k] / 365.25 + 0.3)
    for (r0, r1), (c0, c1), kb, step in BREAKS:
        if k >= kb:
            img[:, r0:r1, c0:c1] += np.array(step, dtype=np.float64)[:, None, None]
    return np.round(img).astype(np.int16)

fa = date_image(10)
fb = date_image(50)
write_tif(os.path.join(OUT, "cc-from.tif"), fa, gdal.GDT_Int16)
write_tif(os.path.join(OUT, "cc-to.tif"), fb, gdal.GDT_Int16)
A = fa.astype(np.float64)
B = fb.astype(np.float64)
write_tif(os.path.join(OUT, "cc-difference.tif"), (B[3] - A[3]).astype(np.float32), gdal.GDT_Float32, float("nan"))
den = np.maximum(A[3], B[3])
with np.errstate(divide="ignore", invalid="ignore"):
    rel = np.where(den != 0, (B[3] - A[3]) / den, np.nan)
write_tif(os.path.join(OUT, "cc-relative.tif"), rel.astype(np.float32), gdal.GDT_Float32, float("nan"))
write_tif(os.path.join(OUT, "cc-euclidean.tif"), np.sqrt(((B - A) ** 2).sum(0)).astype(np.float32), gdal.GDT_Float32, float("nan"))
cosang = (A * B).sum(0) / (np.sqrt((A * A).sum(0)) * np.sqrt((B * B).sum(0)))
write_tif(os.path.join(OUT, "cc-angle.tif"), np.arccos(np.clip(cosang, -1, 1)).astype(np.float32), gdal.GDT_Float32, float("nan"))
write_tif(os.path.join(OUT, "cc-most-band.tif"), (np.argmax(np.abs(B - A), axis=0) + 1).astype(np.uint8), gdal.GDT_Byte)


def classes(img):
    nd = (img[3] - img[2]) / (img[3] + img[2])
    return np.where(nd < 0.1, 1, np.where(nd < 0.3, 2, 3)).astype(np.uint8)

ca = classes(A)
cb = classes(B)
write_tif(os.path.join(OUT, "cc-class-from.tif"), ca, gdal.GDT_Byte)
write_tif(os.path.join(OUT, "cc-class-to.tif"), cb, gdal.GDT_Byte)


def categorical(fc, tc, keep):
    codes = {}
    n = 1
    for f in fc:
        for t in tc:
            changed = f != t
            if keep == 0 or (keep == 1 and changed) or (keep == 2 and not changed):
                codes[(f, t)] = n
                n += 1
    out = np.zeros((H, W), dtype=np.uint16)
    for (f, t), code in codes.items():
        out[(ca == f) & (cb == t)] = code
    return out

# KeepMethod 1 with explicit lists (U8 output); KeepMethod 0 with classes read from the rasters (U16)
write_tif(os.path.join(OUT, "cc-categorical-changed.tif"), categorical([1, 2, 3], [1, 2, 3], 1).astype(np.uint8), gdal.GDT_Byte, 0)
present_f = sorted(set(ca.ravel().tolist()))
present_t = sorted(set(cb.ravel().tolist()))
write_tif(os.path.join(OUT, "cc-categorical-all.tif"), categorical(present_f, present_t, 0), gdal.GDT_UInt16, 0)
print("classes from", present_f, "to", present_t)
print("done")
