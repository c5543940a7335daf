#!/usr/bin/python3
"""Reference rasters of the Mann-Kendall / Seasonal-Kendall TrendAnalysis goldens
(RegressionType 3 and 4; golden/change/cases.json, ids change/trend-mk-* and change/trend-sk-*).

Run from the repository root:  GDAL_PAM_ENABLED=NO /usr/bin/python3 golden/change/make-kendall-goldens.py
Needs GDAL 3.6 (python osgeo), NumPy and SciPy. Reads only the committed inputs made by
make-goldens.py (l7-series.tif: 60 dates x 6 Int16 bands of a real Landsat 7 crop with seasonal
terms, noise, steps, clouds and -9999 gaps, so plenty of tied values; ndvi-*.tif: 9 F32 dates with
NaN gaps, one pixel with no valid date, one with two) and writes the expected rasters below.

Independent formulation, per pixel and band, over the valid dates (IgnoreNoData true) or NaN when
any date is missing (IgnoreNoData false), t = days since 1970-01-01:
  - Sen's slope: scipy.stats.theilslopes(y, t)[0] (Mann-Kendall); for Seasonal-Kendall NumPy's
    median of the within-season pairwise slopes (x_j - x_i)/(t_j - t_i), i < j (scipy has no
    seasonal estimator), seasons = calendar months of the dates (SeasonalPeriod MONTHS);
  - S = sum_{i<j} sign(x_j - x_i) and Var(S) = [n(n-1)(2n+5) - sum_g t_g(t_g-1)(2t_g+5)] / 18,
    written here in NumPy straight from the formulas (np.sign over all pairs, np.unique counts for
    the tie groups), summed over the seasons for Seasonal-Kendall;
  - z = (S - 1)/sqrt(Var) for S > 0, (S + 1)/sqrt(Var) for S < 0, 0 for S = 0;
  - p = 2 * scipy.stats.norm.sf(|z|).
Output bands per input band: Sen's slope, p, S, Var(S), z (F64, NaN = NoData); a fit with no pair of
valid dates (in any season) is NaN.
"""
import os

import numpy as np
from osgeo import gdal
from scipy import stats

gdal.UseExceptions()
os.environ["GDAL_PAM_ENABLED"] = "NO"
gdal.SetConfigOption("GDAL_PAM_ENABLED", "NO")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "golden", "change")
EPOCH = np.datetime64("1970-01-01")


def write_tif(path, arr, like):
    src = gdal.Open(like)
    ds = gdal.GetDriverByName("GTiff").Create(path, arr.shape[2], arr.shape[1], arr.shape[0], gdal.GDT_Float64, ["COMPRESS=DEFLATE"])
    ds.SetGeoTransform(src.GetGeoTransform())
    ds.SetSpatialRef(src.GetSpatialRef())
    for b in range(arr.shape[0]):
        band = ds.GetRasterBand(b + 1)
        band.SetNoDataValue(float("nan"))
        band.WriteArray(arr[b])
    ds = None


def s_and_var(y):
    """S and Var(S) (ties corrected) of one ordered series, from the definitions."""
    n = len(y)
    if n < 2:
        return 0.0, 0.0, False
    i, j = np.triu_indices(n, 1)
    s = float(np.sign(y[j] - y[i]).sum())
    _, counts = np.unique(y, return_counts=True)
    g = counts[counts > 1].astype(np.float64)
    var = (n * (n - 1) * (2 * n + 5) - np.sum(g * (g - 1) * (2 * g + 5))) / 18.0
    return s, var, True


def z_and_p(s, var):
    sd = np.sqrt(var)
    z = 0.0 if s == 0 or sd == 0 else ((s - 1) / sd if s > 0 else (s + 1) / sd)
    return z, 2 * stats.norm.sf(abs(z))


def mann_kendall(t, y):
    s, var, ok = s_and_var(y)
    if not ok:
        return None
    z, p = z_and_p(s, var)
    slope = stats.theilslopes(y, t)[0]
    return [slope, p, s, var, z]


def seasonal_kendall(t, y, season):
    s_tot, v_tot, any_pair, slopes = 0.0, 0.0, False, []
    for k in np.unique(season):
        m = season == k
        tk, yk = t[m], y[m]
        s, var, ok = s_and_var(yk)
        if not ok:
            continue
        any_pair = True
        s_tot += s
        v_tot += var
        i, j = np.triu_indices(len(yk), 1)
        slopes.append((yk[j] - yk[i]) / (tk[j] - tk[i]))
    if not any_pair:
        return None
    z, p = z_and_p(s_tot, v_tot)
    return [float(np.median(np.concatenate(slopes))), p, s_tot, v_tot, z]


def per_pixel(values, valid, test, ignore=True):
    """values, valid: (N, H, W); test(mask) -> 5 numbers or None."""
    _, h, w = values.shape
    out = np.full((5, h, w), np.nan)
    for r in range(h):
        for c in range(w):
            ok = valid[:, r, c]
            if not ignore and not ok.all():
                continue
            res = test(ok, values[ok, r, c])
            if res is not None:
                out[:, r, c] = res
    return out


# ---- L7 series (GeoTIFF of the netCDF variable; band order: time-major, 6 bands per date)
l7 = os.path.join(OUT, "l7-series.tif")
ds = gdal.Open(l7)
raw = ds.ReadAsArray().astype(np.float64)  # (60 * 6, H, W)
tdays = np.array([float(ds.GetRasterBand(6 * k + 1).GetMetadataItem("NETCDF_DIM_time")) for k in range(raw.shape[0] // 6)])
ds = None
N = len(tdays)
H, W = raw.shape[1:]
series = raw.reshape(N, 6, H, W)
months = (EPOCH + tdays.astype(np.int64).astype("timedelta64[D]")).astype("datetime64[M]").astype(np.int64) % 12
assert np.all(np.diff(tdays) > 0)

mk = np.full((6, 5, H, W), np.nan)
sk = np.full((6, 5, H, W), np.nan)
for b in range(6):
    vb = series[:, b]
    ok = vb != -9999
    mk[b] = per_pixel(vb, ok, lambda m, y: mann_kendall(tdays[m], y))
    sk[b] = per_pixel(vb, ok, lambda m, y: seasonal_kendall(tdays[m], y, months[m]))
write_tif(os.path.join(OUT, "trend-mk-l7.tif"), mk.reshape(30, H, W), l7)
write_tif(os.path.join(OUT, "trend-sk-months-l7.tif"), sk.reshape(30, H, W), l7)

# ---- NDVI series (manifest of single-band F32 dates, NaN gaps)
NDVI_DATES = np.array(["2001-03-02", "2001-09-17", "2002-02-11", "2002-08-30", "2003-04-05", "2003-11-21", "2004-06-10", "2005-01-15", "2005-07-04"], dtype="datetime64[D]")
tn = (NDVI_DATES - EPOCH).astype(np.int64).astype(np.float64)
ndvi = np.stack([gdal.Open(os.path.join(OUT, f"ndvi-{d}.tif")).ReadAsArray().astype(np.float64) for d in NDVI_DATES])
nvalid = ~np.isnan(ndvi)
NDVI_LIKE = os.path.join(OUT, f"ndvi-{NDVI_DATES[0]}.tif")
write_tif(os.path.join(OUT, "trend-mk-ndvi.tif"), per_pixel(ndvi, nvalid, lambda m, y: mann_kendall(tn[m], y)), NDVI_LIKE)
write_tif(os.path.join(OUT, "trend-mk-ndvi-strict.tif"), per_pixel(ndvi, nvalid, lambda m, y: mann_kendall(tn[m], y), ignore=False), NDVI_LIKE)
print("done")
