#!/usr/bin/python3
"""Regenerates the reference rasters and cases.json of golden/spectral-b/ (SpectralConversion,
TasseledCap, Pansharpening). `reference` goldens: never regenerate them from rasterflow.

Tools: NumPy (matrix products with the published coefficients, written independently of
rasterflow) and GDAL 3.6 `gdal_pansharpen.py` (weighted Brovey). Input: golden/data/L7_ETMs.tif,
6 x Byte, taken as Landsat 7 ETM+ bands 1, 2, 3, 4, 5, 7.
Run: /usr/bin/python3 golden/spectral-b/make-goldens.py
"""
import json
import os
import subprocess
import tempfile

import numpy as np
from osgeo import gdal

gdal.UseExceptions()
os.environ["GDAL_PAM_ENABLED"] = "NO"
gdal.SetConfigOption("GDAL_PAM_ENABLED", "NO")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
L7 = "golden/data/L7_ETMs.tif"
VERSION = gdal.VersionInfo("--version")
SCRIPT = "golden/spectral-b/make-goldens.py"
CO = ["COMPRESS=DEFLATE", "ZLEVEL=9"]

ds = gdal.Open(os.path.join(ROOT, L7))
l7 = np.stack([ds.GetRasterBand(b + 1).ReadAsArray() for b in range(ds.RasterCount)]).astype(np.float64)


def write(name, bands, dtype, nodata, window=None):
    h, w = bands[0].shape
    out = gdal.GetDriverByName("GTiff").Create(os.path.join(HERE, name), w, h, len(bands), dtype, CO)
    gt = list(ds.GetGeoTransform())
    if window is not None:
        gt[0] += window[0] * gt[1]
        gt[3] += window[1] * gt[5]
    out.SetGeoTransform(gt)
    out.SetProjection(ds.GetProjection())
    for i, b in enumerate(bands):
        rb = out.GetRasterBand(i + 1)
        if nodata is not None:
            rb.SetNoDataValue(nodata)
        rb.WriteArray(b)
    out = None
    return f"golden/spectral-b/{name}"


cases = []


def case(cid, rule, expected, tool, note, command, abs_tol=0.0, rel=None):
    tol = {"abs": abs_tol}
    if rel is not None:
        tol["rel"] = rel
    cases.append({
        "id": f"spectral-b/{cid}",
        "rule": rule,
        "inputs": [L7],
        "expected": expected,
        "kind": "reference",
        "tolerance": tol,
        "provenance": {"tool": tool, "version": VERSION, "command": command, "script": SCRIPT, "note": note},
    })


def extract(ids, raster=None):
    args = {"BandIDs": ids}
    if raster is not None:
        args["Raster"] = raster
    return {"rasterFunction": "ExtractBand", "rasterFunctionArguments": args}


# A 120 x 120 pixel window (columns and rows 100..219) cut with a Clip envelope on pixel edges, to
# keep the float goldens small; Clip passes values (and the source-values marker) through.
WIN = (100, 100, 120, 120)
gt0 = ds.GetGeoTransform()
ENV = {"xmin": gt0[0] + WIN[0] * gt0[1], "xmax": gt0[0] + (WIN[0] + WIN[2]) * gt0[1],
       "ymax": gt0[3] + WIN[1] * gt0[5], "ymin": gt0[3] + (WIN[1] + WIN[3]) * gt0[5]}
CLIP = {"rasterFunction": "Clip", "rasterFunctionArguments": {"ClippingGeometry": ENV}}
crop = lambda a: a[..., WIN[1]:WIN[1] + WIN[3], WIN[0]:WIN[0] + WIN[2]]


# ---- SpectralConversion of bands 1-3 by a 3 x 3 matrix (row k = weights for output band k).
M = np.array([[0.2, 0.5, 0.3], [-1.0, 0.0, 1.0], [0.25, -0.75, 1.5]])
out = np.einsum("kj,jyx->kyx", M, crop(l7[:3]))
exp = write("spectralconversion-l7.tif", list(out.astype(np.float32)), gdal.GDT_Float32, float("nan"), WIN)
case("spectralconversion-l7", {"rasterFunction": "SpectralConversion", "rasterFunctionArguments": {
    "Raster": extract([0, 1, 2], CLIP), "conversionMatrix": M.ravel().tolist()}},
    exp, "NumPy", "out_k = sum_j M[k][j] in_j in float64, stored as Float32; lower-case argument name as in the spec's example.",
    "numpy.einsum('kj,jyx->kyx', M, bands)")

# ---- TasseledCap, Landsat 7 ETM+ (Huang et al. 2002), bands 1,2,3,4,5,7 = the file's 6 bands.
ETM = np.array([
    [0.3561, 0.3972, 0.3904, 0.6966, 0.2286, 0.1596],
    [-0.3344, -0.3544, -0.4556, 0.6966, -0.0242, -0.2630],
    [0.2626, 0.2141, 0.0926, 0.0656, -0.7629, -0.5388],
])
out = np.einsum("kj,jyx->kyx", ETM, crop(l7))
exp = write("tasseledcap-l7-etm.tif", list(out.astype(np.float32)), gdal.GDT_Float32, float("nan"), WIN)
case("tasseledcap-l7-etm", {"rasterFunction": "TasseledCap", "rasterFunctionArguments": {"Raster": CLIP, "SensorName": "Landsat 7 ETM+"}},
     exp, "NumPy", "Huang et al. 2002 at-satellite reflectance coefficients applied to the DN image (rasterflow warns; the file carries no sensor metadata, so SensorName names it).",
     "numpy.einsum with the published brightness/greenness/wetness rows")

# ---- Pansharpening: pan = band 4 (NIR), MS = bands 3, 2, 1 (red, green, blue), same grid, no IR.
pan = l7[3]
R, G, B = l7[2], l7[1], l7[0]
w = [0.3, 0.3, 0.4]


def rint_clamp(x):
    r = np.sign(x) * np.floor(np.abs(x) + 0.5)
    return np.clip(r, 0, 255).astype(np.uint8)


tmp = tempfile.mkdtemp()
panf = os.path.join(tmp, "pan.tif")
msf = os.path.join(tmp, "ms.tif")
gdal.Translate(panf, ds, bandList=[4])
gdal.Translate(msf, ds, bandList=[3, 2, 1])
brovey = os.path.join(tmp, "brovey.tif")
cmd = ["gdal_pansharpen.py", "-q", "-w", "0.3", "-w", "0.3", "-w", "0.4", "-r", "bilinear", panf, msf, brovey]
subprocess.run(cmd, check=True)
bds = gdal.Open(brovey)
bro = [bds.GetRasterBand(i + 1).ReadAsArray() for i in range(3)]
exp = write("pansharpening-l7-brovey.tif", bro, gdal.GDT_Byte, None)
rule = lambda t: {"rasterFunction": "Pansharpening", "rasterFunctionArguments": {
    "PanImage": extract([3]), "MSImage": extract([2, 1, 0]), "Weights": w, "PansharpeningType": t}}
case("pansharpening-l7-brovey", rule(1), exp, "gdal_pansharpen.py",
     "Weighted Brovey without infrared: out = MS * pan / (0.3 R + 0.3 G + 0.4 B); pan and MS on one grid (the MS resampling is the alignment node's, tested elsewhere). GDAL rounds to nearest too; abs 1 covers ties.",
     " ".join(["gdal_pansharpen.py", "-w", "0.3", "-w", "0.3", "-w", "0.4", "-r", "bilinear", "pan.tif(b4)", "ms.tif(b3,b2,b1)", "out.tif"]), 1)

ws = sum(w)
esri = [rint_clamp(b + pan - (w[0] * R + w[1] * G + w[2] * B) / ws) for b in (R, G, B)]
exp = write("pansharpening-l7-esri.tif", esri, gdal.GDT_Byte, None)
case("pansharpening-l7-esri", rule(2), exp, "NumPy", "Esri: out = b + P - (wR R + wG G + wB B)/(wR + wG + wB), rounded half away, clamped to 0..255.",
     "numpy per the spec formula")

ihs = [rint_clamp(b + pan / (w[0] + w[1] + w[2]) - (R + G + B) / 3) for b in (R, G, B)]
exp = write("pansharpening-l7-ihs.tif", ihs, gdal.GDT_Byte, None)
case("pansharpening-l7-ihs", rule(0), exp, "NumPy", "Linear IHS: out = b + P/(wR + wG + wB) - (R + G + B)/3 (no infrared).",
     "numpy per the documented IHS choice")

mean = [rint_clamp(0.5 * (b + pan)) for b in (R, G, B)]
exp = write("pansharpening-l7-simplemean.tif", mean, gdal.GDT_Byte, None)
case("pansharpening-l7-simplemean", rule(3), exp, "NumPy", "Simple mean: out = (b + P)/2.", "numpy")

S = (w[0] * R + w[1] * G + w[2] * B) / ws
a = S.std() / pan.std()
Pm = (pan - pan.mean()) * a + S.mean()
gs = []
for b in (R, G, B):
    g = ((b - b.mean()) * (S - S.mean())).mean() / S.var()
    gs.append(rint_clamp(b + g * (Pm - S)))
exp = write("pansharpening-l7-gramschmidt.tif", gs, gdal.GDT_Byte, None)
case("pansharpening-l7-gramschmidt", rule(4), exp, "NumPy",
     "Gram-Schmidt (component substitution form): simulated pan S = weighted mean of R, G, B; pan matched to S's mean/std; out = b + cov(b,S)/var(S) (P' - S); statistics over the whole image.",
     "numpy per Laben & Brower / Aiazzi 2007", 1)

with open(os.path.join(HERE, "cases.json"), "w") as fh:
    json.dump(cases, fh, indent=2)
    fh.write("\n")
print(f"{len(cases)} cases")
