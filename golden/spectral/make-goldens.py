#!/usr/bin/python3
"""Regenerates the spectral/expression reference rasters in golden/spectral/ and their cases.json.

Reference implementation: NumPy (float64, like gdal_calc.py) on a 160 x 160 crop of
golden/data/L7_ETMs.tif (bands 1 blue, 2 green, 3 red, 4 NIR, 5 SWIR1, 6 = ETM+ band 7), read and
written with GDAL's Python bindings (osgeo). Each formula below is written from the spec
(raster-functions.md, sections BandArithmetic, NDVI, RasterCalculator, Local, CreateColorComposite)
independently of rasterflow's code; never regenerate these from rasterflow's output.

Conventions mirrored from the spec: BandArithmetic/CreateColorComposite leave a zero denominator at
0; NDVI scaled = trunc(ndvi*100 + 100.5) as U8; Local/RasterCalculator domain errors and
division by zero are NoData (NaN in the Float32 outputs); statistics are population statistics.

Needs GDAL 3.6 with Python bindings and NumPy (Debian: python3-gdal, python3-numpy).
Run from anywhere: /usr/bin/python3 golden/spectral/make-goldens.py
"""
import json
import os
import subprocess

import numpy as np
from osgeo import gdal

os.environ["GDAL_PAM_ENABLED"] = "NO"
gdal.SetConfigOption("GDAL_PAM_ENABLED", "NO")
gdal.UseExceptions()

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
L7 = os.path.join(ROOT, "golden/data/L7_ETMs.tif")
CROP = os.path.join(HERE, "l7-crop.tif")
CROP_REL = "golden/spectral/l7-crop.tif"
VERSION = gdal.VersionInfo("--version")
CO = ["COMPRESS=DEFLATE", "ZLEVEL=9"]

# The input: a 160 x 160 window of the Landsat image, all six bands, unchanged Byte values.
gdal.Translate(CROP, L7, srcWin=[100, 100, 160, 160], creationOptions=CO)
src = gdal.Open(CROP)
B = {i + 1: src.GetRasterBand(i + 1).ReadAsArray().astype(np.float64) for i in range(src.RasterCount)}


def dz(num, den):
    """num / den, 0 where den == 0 (the vendor client's BandArithmetic rule)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den == 0, 0.0, num / np.where(den == 0, 1.0, den))


def nodata(v):
    """Non-finite -> NaN (NoData)."""
    return np.where(np.isfinite(v), v, np.nan)


def write(name, bands, dtype=gdal.GDT_Float32):
    path = os.path.join(HERE, name)
    drv = gdal.GetDriverByName("GTiff")
    out = drv.Create(path, src.RasterXSize, src.RasterYSize, len(bands), dtype, options=CO)
    out.SetGeoTransform(src.GetGeoTransform())
    out.SetProjection(src.GetProjection())
    for i, b in enumerate(bands):
        band = out.GetRasterBand(i + 1)
        if dtype == gdal.GDT_Float32:
            band.SetNoDataValue(float("nan"))
        band.WriteArray(b)
    out = None
    return f"golden/spectral/{name}"


cases = []


def case(cid, rule, name, bands, formula, dtype=gdal.GDT_Float32, tol=None):
    expected = write(name, bands, dtype)
    cases.append({
        "id": f"spectral/{cid}",
        "rule": rule,
        "inputs": [CROP_REL],
        "expected": expected,
        "kind": "reference",
        "tolerance": tol or {"abs": 1e-6, "rel": 1e-6},
        "provenance": {
            "tool": "NumPy (float64) + GDAL Python bindings",
            "version": f"NumPy {np.__version__}, {VERSION}",
            "command": formula,
            "script": "golden/spectral/make-goldens.py",
            "note": "Formula written from the spec; stored as Float32 (NaN = NoData) unless stated.",
        },
    })


def extract(i):
    return {"rasterFunction": "ExtractBand", "rasterFunctionArguments": {"BandIDs": [i]}}


nir, red, green, blue, swir1, swir2 = B[4], B[3], B[2], B[1], B[5], B[6]
ndvi = dz(nir - red, nir + red)

# NDVI function: 0-based ids (red = 2, NIR = 3); scaled U8 and scientific F32.
scaled = np.where(nir + red == 0, 0, np.clip(np.trunc(ndvi * 100 + 100.5), 0, 255)).astype(np.uint8)
case("ndvi-scaled", {"rasterFunction": "NDVI", "rasterFunctionArguments": {"VisibleBandID": 2, "InfraredBandID": 3}},
     "ndvi-scaled.tif", [scaled], "trunc((B4-B3)/(B4+B3)*100 + 100.5) as Byte", gdal.GDT_Byte, {"abs": 0})
case("ndvi-scientific", {"rasterFunction": "NDVI", "rasterFunctionArguments": {"VisibleBandID": 2, "InfraredBandID": 3, "ScientificOutput": True}},
     "ndvi-scientific.tif", [ndvi], "(B4-B3)/(B4+B3)")

# BandArithmetic methods (1-based band numbers in BandIndexes).
def ba(cid, method, idx, bands, formula):
    case(cid, {"rasterFunction": "BandArithmetic", "rasterFunctionArguments": {"Method": method, "BandIndexes": idx}},
         f"{cid}.tif", [nodata(b) for b in bands], formula)


L = 0.5
ba("bandarithmetic-savi", 2, "4 3 0.5", [dz(nir - red, nir + red + L) * (1 + L)], "(B4-B3)/(B4+B3+0.5)*1.5")
ba("bandarithmetic-msavi", 4, "4 3", [0.5 * (2 * (nir + 1) - np.sqrt((2 * nir + 1) ** 2 - 8 * (nir - red)))],
   "0.5*(2*(B4+1) - sqrt((2*B4+1)**2 - 8*(B4-B3)))")
eta = dz(2 * (nir ** 2 - red ** 2) + 1.5 * nir + 0.5 * red, nir + red + 0.5)
gemi = np.where((red == 1) | (nir + red + 0.5 == 0), 0.0, eta * (1 - 0.25 * eta) - dz(red - 0.125, 1 - red))
ba("bandarithmetic-gemi", 5, "4 3", [gemi], "eta*(1-0.25*eta) - (B3-0.125)/(1-B3), eta=(2(B4^2-B3^2)+1.5B4+0.5B3)/(B4+B3+0.5)")
ba("bandarithmetic-pvi", 6, "4 3 0.3 0.5", [(nir - 0.3 * red - 0.5) / np.sqrt(1 + 0.3 ** 2)], "(B4 - 0.3*B3 - 0.5)/sqrt(1.09)")
ba("bandarithmetic-vari", 9, "3 2 1", [dz(green - red, green + red - blue)], "(B2-B3)/(B2+B3-B1)")
ba("bandarithmetic-gvitm", 7, "1 2 3 4 5 6",
   [-0.2848 * blue - 0.2435 * green - 0.5436 * red + 0.7243 * nir + 0.0840 * swir1 - 1.18 * swir2],
   "-0.2848B1 - 0.2435B2 - 0.5436B3 + 0.7243B4 + 0.0840B5 - 1.18B7 (vendor weight)")
ba("bandarithmetic-sultan", 8, "1 2 3 4 5 6",
   [dz(swir1, swir2) * 100, dz(swir1, blue) * 100, dz(red, nir) * dz(swir1, nir) * 100],
   "B5/B6*100, B5/B1*100, B3/B4*B5/B4*100")
ba("bandarithmetic-userdefined", 0, "(B4 - B3) / (B4 + B3) * 100 - -B5 / 2 + b6 * 0.25",
   [ndvi * 100 + swir1 / 2 + swir2 * 0.25], "(B4-B3)/(B4+B3)*100 - -B5/2 + B6*0.25")

# RasterCalculator: named rasters from ExtractBand; 0/0 and Ln of x <= 0 are NoData.
with np.errstate(divide="ignore", invalid="ignore"):
    cond = (nir - red) / (nir + red)
    cond = np.where(nir + red == 0, np.nan, cond)
    rc = np.where(np.isnan(cond), np.nan, np.where(cond > 0.2, nir * 2, np.sqrt(red)))
    rc = rc - np.where(nir + 1 > 0, np.log(nir + 1), np.nan)
    rc = rc + np.where((red > 60) & (green < 80), 1.0, 0.0) * 10 + green ** 0.5
case("rastercalculator-expression",
     {"rasterFunction": "RasterCalculator", "rasterFunctionArguments": {
         "Rasters": [extract(3), extract(2), extract(1)], "InputNames": ["nir", "red", "green"],
         "Expression": "Con((nir - red) / (nir + red) > 0.2, nir * 2, Sqrt(red)) - Ln(nir + 1) + (red > 60 & green < 80) * 10 + green ** 0.5"}},
     "rastercalculator-expression.tif", [nodata(rc)],
     "where(ndvi>0.2, 2*nir, sqrt(red)) - log(nir+1) + ((red>60)&(green<80))*10 + green**0.5")

# Local operations over ExtractBand rasters.
def loc(cid, op, rasters, bands, formula, extra=None):
    args = {"Operation": op, "Rasters": rasters}
    args.update(extra or {})
    case(cid, {"rasterFunction": "Local", "rasterFunctionArguments": args}, f"{cid}.tif", [nodata(b) for b in bands], formula)


three = np.stack([blue, green, red])
loc("local-median", 41, [extract(0), extract(1), extract(2)], [np.median(three, axis=0)], "numpy.median(B1, B2, B3)")
loc("local-std", 54, [extract(0), extract(1), extract(2)], [np.std(three, axis=0)], "numpy.std(B1, B2, B3) (population)")
def majority(values):
    """Most frequent value; ties go to the value that first reaches the top count in input order."""
    counts, best, top = {}, None, 0
    for x in values:
        counts[x] = counts.get(x, 0) + 1
        if counts[x] > top:
            best, top = x, counts[x]
    return best


stack4 = np.stack([blue, green, red, swir1], axis=-1)
loc("local-majority", 38, [extract(0), extract(1), extract(2), extract(4)],
    [np.array([[majority(v) for v in row] for row in stack4])],
    "most frequent of B1, B2, B3, B5 (ties: the value first reaching the top count)")
with np.errstate(divide="ignore", invalid="ignore"):
    loc("local-ln-of-difference", 35, [{"rasterFunction": "Local", "rasterFunctionArguments": {"Operation": 2, "Rasters": [extract(3), extract(2)]}}],
        [np.where(nir - red > 0, np.log(np.where(nir - red > 0, nir - red, 1)), np.nan)], "log(B4 - B3), NoData where B4 - B3 <= 0")
loc("local-atan2", 61, [extract(3), extract(2)], [np.arctan2(nir, red)], "numpy.arctan2(B4, B3)")
with np.errstate(divide="ignore", invalid="ignore"):
    loc("local-floordivide", 65, [extract(3), {"rasterFunction": "Local", "rasterFunctionArguments": {"Operation": 2, "Rasters": [extract(2), extract(1)]}}],
        [np.where(red - green == 0, np.nan, np.floor(nir / np.where(red - green == 0, 1, red - green)))], "floor(B4 / (B3 - B2)), NoData where B3 == B2")
loc("local-greaterthan", 28, [extract(3), extract(2)], [(nir > red).astype(np.float64)], "B4 > B3 as 0/1")

# CreateColorComposite, band ids (1-based) with one NDVI channel.
case("createcolorcomposite-ids-ndvi",
     {"rasterFunction": "CreateColorComposite", "rasterFunctionArguments": {
         "Method": 1, "BandIndexesR": "(B4 - B3)/(B4 + B3)", "BandIndexesG": "B2", "BandIndexesB": "B1 * 2"}},
     "createcolorcomposite-ids-ndvi.tif", [ndvi, green, blue * 2], "[(B4-B3)/(B4+B3), B2, 2*B1] as Float32")

with open(os.path.join(HERE, "cases.json"), "w") as f:
    json.dump(cases, f, indent=2)
    f.write("\n")
subprocess.run(["ls", "-l", HERE], check=True)
