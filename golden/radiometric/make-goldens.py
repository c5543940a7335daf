#!/usr/bin/python3
"""Reference rasters for the radiometric family (Stretch, Threshold) in golden/radiometric/.

Run: /usr/bin/python3 golden/radiometric/make-goldens.py   (needs GDAL's osgeo, NumPy, scikit-image)
Writes the expected GeoTIFFs (DEFLATE) and cases.json beside this script. `reference` goldens:
never regenerate them from rasterflow's output.

Independent references:
  * Threshold (Otsu): scikit-image's `threshold_otsu` on the raw NIR band; the expected image is
    `nir > threshold_otsu(nir)` as 0/1 bytes. (skimage returns a bin centre, an integer for byte
    data, so this is the same binary image as rasterflow's bin-boundary threshold.)
  * Stretch: NumPy re-statements of the documented math of raster-functions.md "Stretch", written
    from the spec (not from rasterflow's code), in float64:
      - statistics with DRA: over all pixels of the request (= the whole raster here, or the
        DRAExtent window), population standard deviation (numpy.std);
      - histogram: byte data one bin per value (numpy.bincount); float data 256 bins over
        [min, max], bin = floor((v - min) / w) clipped to 255, w = (max - min) / 256;
      - PercentClip: zero bins 0, 1, 2 and the last two (>= 20 bins), C = cumsum, T = C[-1];
        minCut = first z with C[z] > MinPercent*T/100 (byte data: the value z);
        maxCut: first z scanning down from 254 with C[z] < (1 - MaxPercent/100)*T, then z + 1;
      - StandardDeviation: [max(mean - n*std, min), min(mean + n*std, max)];
      - MinMax: [min, max];
      - mapping: v <= minCut -> Min, v >= maxCut -> Max, else Min + (Max - Min)*m with
        m = (v - minCut)/(maxCut - minCut), or with gamma g: S*m**(1/g), S = 1 for g <= 1 else
        1 - (1/|Max-Min|)**(m*k), k = 6.5 + 100*(2-g)**4 (1 < g <= 2) or 6.5 + (g-2)**2.5 (g > 2);
        integer output = floor(x + 0.5);
      - HistogramEqualization: the CDF formulation level = min(255, ceil(256*C/T) - 1), 0 where
        C = 0, for each histogram bin; a pixel takes its bin's level (Min 0, Max 255).
"""
import json
import math
import os

import numpy as np
from osgeo import gdal
from skimage import __version__ as skimage_version
from skimage.filters import threshold_otsu

gdal.UseExceptions()
os.environ["GDAL_PAM_ENABLED"] = "NO"
gdal.SetConfigOption("GDAL_PAM_ENABLED", "NO")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
L7 = "golden/data/L7_ETMs.tif"
DEM = "golden/data/jacksboro_fault_dem_utm16n_75m.tif"
SCRIPT = "golden/radiometric/make-goldens.py"
cases = []


def read(path):
    ds = gdal.Open(os.path.join(ROOT, path))
    bands = [ds.GetRasterBand(b + 1).ReadAsArray() for b in range(ds.RasterCount)]
    return ds, bands


def write(name, like, planes, dtype=gdal.GDT_Byte):
    drv = gdal.GetDriverByName("GTiff")
    out = drv.Create(os.path.join(HERE, name), like.RasterXSize, like.RasterYSize, len(planes), dtype, ["COMPRESS=DEFLATE", "ZLEVEL=9"])
    out.SetGeoTransform(like.GetGeoTransform())
    out.SetProjection(like.GetProjection())
    for i, p in enumerate(planes):
        out.GetRasterBand(i + 1).WriteArray(p)
    out.FlushCache()


def add(cid, rule, inputs, expected, tool, note, tolerance=None):
    cases.append({
        "id": f"radiometric/{cid}",
        "rule": rule,
        "inputs": inputs,
        "expected": f"golden/radiometric/{expected}",
        "kind": "reference",
        "tolerance": tolerance or {"abs": 0},
        "provenance": {"tool": tool, "script": SCRIPT, "note": note},
    })


NUMPY = f"NumPy {np.__version__} formulation of raster-functions.md Stretch (see script docstring)"


def byte_hist(v):
    return np.bincount(v.ravel().astype(np.int64), minlength=256).astype(np.float64), -0.5, 255.5


def float_hist(v):
    v = v.astype(np.float64).ravel()
    lo, hi = v.min(), v.max()
    w = (hi - lo) / 256
    j = np.floor((v - lo) / w).astype(np.int64)
    j = np.minimum(j, 255)
    return np.bincount(j, minlength=256).astype(np.float64), lo, hi


def percent_cuts(counts, hmin, hmax, min_pct, max_pct):
    c = counts.copy()
    size = len(c)
    if size >= 20:
        c[[0, 1, 2, size - 1, size - 2]] = 0
    cum = np.cumsum(c)
    total = cum[-1]
    w = (hmax - hmin) / size
    half = 0.5 if (w == 1 and hmin == -0.5) else 0.0
    z = int(np.argmax(cum > min_pct * total / 100))
    lo = hmin + w * (z + half)
    high = (1 - max_pct / 100) * total
    below = np.nonzero(cum[: size - 1] < high)[0]
    z = int(below[-1]) if len(below) else -1
    hi = hmin + w * (z + 2 - half)
    return lo, hi


def stretch(v, lo, hi, out_min=0.0, out_max=255.0, gamma=1.0):
    v = v.astype(np.float64)
    rng = out_max - out_min
    inside = (v > lo) & (v < hi)
    m = np.where(inside, (v - lo) / (hi - lo), 0.0)
    if gamma != 1.0:
        k = 6.5 + 100 * (2 - gamma) ** 4 if gamma <= 2 else 6.5 + (gamma - 2) ** 2.5
        s = 1 - (1 / abs(rng)) ** (m * k) if (gamma > 1 and abs(rng) > 1) else 1.0
        m = s * m ** (1 / gamma)
    x = np.where(v >= hi, out_max, np.where(inside, out_min + rng * m, out_min))
    return np.floor(x + 0.5).astype(np.uint8)


l7, lb = read(L7)
dem, (z,) = read(DEM)

# ---- Threshold: Otsu on the NIR band (band 4, BandIDs [3] on the wire).
nir = lb[3]
t = threshold_otsu(nir)
write("threshold-otsu-l7-nir.tif", l7, [(nir > t).astype(np.uint8)])
add("threshold-otsu-l7-nir",
    {"rasterFunction": "Threshold", "rasterFunctionArguments": {"ThresholdType": 1, "Raster": {"rasterFunction": "ExtractBand", "rasterFunctionArguments": {"BandIDs": [3]}}}},
    [L7], "threshold-otsu-l7-nir.tif", f"scikit-image {skimage_version} threshold_otsu",
    f"Expected = nir > threshold_otsu(nir) (t = {t}); rasterflow thresholds at the bin boundary t + 0.5, the same binary image for byte data.")

# ---- PercentClip with DRA on bands 4, 3, 2.
planes = []
for b in (3, 2, 1):
    h, hmin, hmax = byte_hist(lb[b])
    lo, hi = percent_cuts(h, hmin, hmax, 0.5, 1.5)
    planes.append(stretch(lb[b], lo, hi))
write("stretch-percentclip-l7-432-dra.tif", l7, planes)
add("stretch-percentclip-l7-432-dra",
    {"rasterFunction": "Stretch", "rasterFunctionArguments": {"StretchType": 6, "MinPercent": 0.5, "MaxPercent": 1.5, "DRA": True,
                                                              "Raster": {"rasterFunction": "ExtractBand", "rasterFunctionArguments": {"BandIDs": [3, 2, 1]}}}},
    [L7], "stretch-percentclip-l7-432-dra.tif", NUMPY, "PercentClip 0.5 / 1.5 with DRA over the whole raster; vendor bin zeroing and byte half-bin offsets.")

# ---- StandardDeviation with DRA on bands 1, 5, 7 (BandIDs 0, 4, 5), n = 2.5, output 10..240.
planes = []
for v in (lb[0], lb[4], lb[5]):
    f = v.astype(np.float64)
    mean, std = f.mean(), f.std()
    lo, hi = max(mean - 2.5 * std, f.min()), min(mean + 2.5 * std, f.max())
    planes.append(stretch(v, lo, hi, 10, 240))
write("stretch-stddev-l7-dra.tif", l7, planes)
add("stretch-stddev-l7-dra",
    {"rasterFunction": "Stretch", "rasterFunctionArguments": {"StretchType": 3, "NumberOfStandardDeviations": 2.5, "DRA": True, "Min": 10, "Max": 240,
                                                              "Raster": {"rasterFunction": "ExtractBand", "rasterFunctionArguments": {"BandIDs": [0, 4, 5]}}}},
    [L7], "stretch-stddev-l7-dra.tif", NUMPY, "mean -+ 2.5 population std, clipped to [min, max], onto 10..240.")

# ---- StandardDeviation from statistics an upstream function publishes (StatisticsHistogram), no DRA.
mn, mx, mean, std = 236.4524230957, 1074.3540039062, 535.34460906637, 163.87618981817  # the DEM's GDAL statistics (aux.xml)
write("stretch-stddev-dem-upstream-stats.tif", dem, [stretch(z, max(mean - 2 * std, mn), min(mean + 2 * std, mx))])
add("stretch-stddev-dem-upstream-stats",
    {"rasterFunction": "Stretch", "rasterFunctionArguments": {"StretchType": 3, "Raster": {
        "rasterFunction": "StatisticsHistogram",
        "rasterFunctionArguments": {"Statistics": [{"min": mn, "max": mx, "mean": mean, "standardDeviation": std}]}}}},
    [DEM], "stretch-stddev-dem-upstream-stats.tif", NUMPY,
    "No DRA, no Statistics argument: the statistics StatisticsHistogram publishes (the DEM's GDAL statistics) and the default n = 2.")

# ---- MinMax over Slope, whose advertised statistics (0..90 degrees) give the cut-offs; gdaldem slope as the input.
tmp = os.path.join(HERE, "_slope.tif")
gdal.DEMProcessing(tmp, os.path.join(ROOT, DEM), "slope", computeEdges=True).FlushCache()
sds = gdal.Open(tmp)
sl = sds.GetRasterBand(1).ReadAsArray()
sds = None
os.remove(tmp)
write("stretch-minmax-slope-advertised.tif", dem, [stretch(sl, 0.0, 90.0)])
add("stretch-minmax-slope-advertised",
    {"rasterFunction": "Stretch", "rasterFunctionArguments": {"StretchType": 5, "Raster": {"rasterFunction": "Slope", "rasterFunctionArguments": {"RemoveEdgeEffect": True}}}},
    [DEM], "stretch-minmax-slope-advertised.tif", f"GDAL {gdal.__version__} gdaldem slope -compute_edges, then {NUMPY}",
    "MinMax without DRA takes Slope's advertised 0..90; slopes from gdaldem (Float32) may round to the neighbouring byte.",
    {"abs": 1, "maxBadFraction": 0.001})

# ---- MinMax with DRA on the Float32 DEM (float closed form).
write("stretch-minmax-dem-dra.tif", dem, [stretch(z, float(z.min()), float(z.max()))])
add("stretch-minmax-dem-dra",
    {"rasterFunction": "Stretch", "rasterFunctionArguments": {"StretchType": 5, "DRA": True}},
    [DEM], "stretch-minmax-dem-dra.tif", NUMPY, "MinMax with DRA on Float32 elevations: [min, max] -> 0..255.")

# ---- MinMax with statistics from a window only (our DRAExtent extension), applied to the whole raster.
gt = l7.GetGeoTransform()
wx, wy, ww, wh = 100, 120, 80, 60
extent = {"xmin": gt[0] + wx * gt[1], "xmax": gt[0] + (wx + ww) * gt[1], "ymax": gt[3] + wy * gt[5], "ymin": gt[3] + (wy + wh) * gt[5]}
planes = []
for v in lb[:3]:
    win = v[wy:wy + wh, wx:wx + ww].astype(np.float64)
    planes.append(stretch(v, win.min(), win.max()))
write("stretch-minmax-l7-draextent.tif", l7, planes)
add("stretch-minmax-l7-draextent",
    {"rasterFunction": "Stretch", "rasterFunctionArguments": {"StretchType": 5, "DRA": True, "DRAExtent": extent,
                                                              "Raster": {"rasterFunction": "ExtractBand", "rasterFunctionArguments": {"BandIDs": [0, 1, 2]}}}},
    [L7], "stretch-minmax-l7-draextent.tif", NUMPY,
    f"DRA from a fixed extent (rasterflow extension DRAExtent): min/max of the window x {wx}..{wx + ww - 1}, y {wy}..{wy + wh - 1} only, applied to every pixel.")

# ---- Gamma per band (no damping, the 1 < g <= 2 damping, the g > 2 damping) on a MinMax DRA stretch.
gammas = [0.6, 1.8, 2.5]
planes = []
for v, g in zip(lb[3:6], gammas):
    f = v.astype(np.float64)
    planes.append(stretch(v, f.min(), f.max(), gamma=g))
write("stretch-gamma-l7.tif", l7, planes)
add("stretch-gamma-l7",
    {"rasterFunction": "Stretch", "rasterFunctionArguments": {"StretchType": 5, "DRA": True, "UseGamma": True, "Gamma": gammas,
                                                              "Raster": {"rasterFunction": "ExtractBand", "rasterFunctionArguments": {"BandIDs": [3, 4, 5]}}}},
    [L7], "stretch-gamma-l7.tif", NUMPY, "Gamma 0.6 / 1.8 / 2.5 (one per band) with the vendor's damping for gamma > 1.")

# ---- HistogramEqualization with DRA: byte NIR (one bin per value) and the Float32 DEM (256 bins).
def equalize(v, counts, hmin, hmax):
    cum = np.cumsum(counts)
    total = cum[-1]
    level = np.where(cum == 0, 0, np.minimum(255, np.ceil(256 * cum / total) - 1)).astype(np.float64)
    w = (hmax - hmin) / len(counts)
    j = np.clip(np.floor((v.astype(np.float64) - hmin) / w).astype(np.int64), 0, len(counts) - 1)
    return np.floor(level[j] * 255 / 255 + 0.5).astype(np.uint8)

h, hmin, hmax = byte_hist(nir)
write("stretch-histeq-l7-nir-dra.tif", l7, [equalize(nir, h, hmin, hmax)])
add("stretch-histeq-l7-nir-dra",
    {"rasterFunction": "Stretch", "rasterFunctionArguments": {"StretchType": 4, "DRA": True,
                                                              "Raster": {"rasterFunction": "ExtractBand", "rasterFunctionArguments": {"BandIDs": [3]}}}},
    [L7], "stretch-histeq-l7-nir-dra.tif", NUMPY, "CDF equalization over the request's byte histogram: level = min(255, ceil(256 C / T) - 1).")
h, hmin, hmax = float_hist(z)
write("stretch-histeq-dem-dra.tif", dem, [equalize(z, h, hmin, hmax)])
add("stretch-histeq-dem-dra",
    {"rasterFunction": "Stretch", "rasterFunctionArguments": {"StretchType": 4, "DRA": True}},
    [DEM], "stretch-histeq-dem-dra.tif", NUMPY, "CDF equalization over a 256-bin histogram of Float32 elevations spanning [min, max].")

with open(os.path.join(HERE, "cases.json"), "w") as f:
    json.dump(cases, f, indent=2)
    f.write("\n")
print(f"wrote {len(cases)} cases")
