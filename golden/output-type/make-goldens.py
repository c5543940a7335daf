#!/usr/bin/env python3
"""Makes the outputPixelType reference rasters in golden/output-type/ and their cases.json: a
rule's `outputPixelType` is the function's own output type (raster-functions.md 1.2 rule 1), so
the function computes into it and clamps, rounds or masks *to that type*. These are `reference`
goldens: nothing here imports or runs rasterflow, and they are never regenerated from its output.

Inputs (crops of golden/data/L7_ETMs.tif, Landsat 7 ETM+, Byte, no NoData; written here with
gdal_translate -srcwin 120 120 100 100, DEFLATE):
  l7-b3-100.tif   band 3 (red)
  l7-b4-100.tif   band 4 (NIR); the same window as golden/focal/l7-nir-100.tif
and golden/focal/dem-utm-100.tif (the jacksboro UTM DEM crop, Float64) for Remap.

References:
  Convolution  scipy.ndimage.correlate in float64 with the spec's normalisation (divide by the
               sum when it is neither 0 nor 1), then the spec's edge rule applied in NumPy (rows
               and columns without a full window mirror the computed interior: for 3x3 row 0 :=
               row 2), exactly as golden/focal/make-goldens.py, so no edge band is excluded and
               the input has no NoData. outputPixelType F32 on the Byte band: the float64 result
               stored as Float32 (negative responses and fractions kept; today's cast-after
               clamped them to 0..255 and rounded). One S16 case: round half away from zero,
               clip to -32768..32767.
  Remap        NumPy of the spec's Remap on the Float64 DEM with outputPixelType U8 (narrower
               than the natural Float64): ranges [from, to), later ranges win, unmatched values
               keep their value (AllowUnmatched); every output value is rounded half away from
               zero and CLAMPED to 0..255 (spec 1.2 rule 2: Remap clamps).
  Local        NumPy of Minus (b4 - b3), Plus (b4 + b3) and Divide (b4 / b3) with outputPixelType
               U8 (narrower than the natural F32): rounded half up (floor(v + 0.5), the vendor
               client's Math.round) and values outside 0..255 become NoData, NOT clamped (spec
               1.2 rule 2: Local).

Tolerances: Float32 outputs abs 1e-5 plus one Float32 ulp (rel 1.2e-7); integer outputs exact.

Run: GDAL_PAM_ENABLED=NO /usr/bin/python3 golden/output-type/make-goldens.py   (needs GDAL's
Python bindings, NumPy and SciPy).
"""
import json
import os
import platform
import subprocess

import numpy as np
import scipy
from osgeo import gdal
from scipy import ndimage

gdal.UseExceptions()
os.environ["GDAL_PAM_ENABLED"] = "NO"
gdal.SetConfigOption("GDAL_PAM_ENABLED", "NO")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
rel = lambda p: os.path.relpath(p, ROOT)
L7_SRC = os.path.join(ROOT, "golden/data/L7_ETMs.tif")
DEM = os.path.join(ROOT, "golden/focal/dem-utm-100.tif")
B3 = os.path.join(HERE, "l7-b3-100.tif")
B4 = os.path.join(HERE, "l7-b4-100.tif")
CO = ["COMPRESS=DEFLATE"]
VERSIONS = f"{gdal.VersionInfo('--version')}; Python {platform.python_version()}; NumPy {np.__version__}; SciPy {scipy.__version__}"
SCRIPT = "golden/output-type/make-goldens.py"
F32_TOL = {"abs": 1e-5, "rel": 1.2e-7}


def make_inputs():
    for band, path in ((3, B3), (4, B4)):
        subprocess.run(
            ["gdal_translate", "-q", "-b", str(band), "-srcwin", "120", "120", "100", "100", *sum((["-co", c] for c in CO), []), L7_SRC, path],
            check=True,
        )


def read(path):
    ds = gdal.Open(path)  # keep the dataset alive while its band is read
    return ds.GetRasterBand(1).ReadAsArray().astype(np.float64)


def write(path, arr, like, dtype, nodata=None):
    src = gdal.Open(like)
    ds = gdal.GetDriverByName("GTiff").Create(path, arr.shape[1], arr.shape[0], 1, dtype, options=CO)
    ds.SetGeoTransform(src.GetGeoTransform())
    ds.SetProjection(src.GetProjection())
    band = ds.GetRasterBand(1)
    if nodata is not None:
        band.SetNoDataValue(nodata)
    band.WriteArray(arr)
    ds = None


cases = []


def case(cid, rule, inputs, expected, pixel_type, note, tool, command, tol):
    cases.append(
        {
            "id": f"output-type/{cid}",
            "rule": rule,
            "inputs": [rel(p) for p in inputs],
            "expected": rel(expected),
            "kind": "reference",
            "compare": "values",
            "pixelType": pixel_type,
            "tolerance": tol,
            "provenance": {"tool": tool, "version": VERSIONS, "script": SCRIPT, "command": command, "note": note},
        }
    )


# ---------------------------------------------------------------------------------------------
# Convolution (raster-functions.md "Convolution"; kernels rows top to bottom, as the spec's table).
KERNELS = {
    0: ("LineDetectionHorizontal", [-1, -1, -1, 2, 2, 2, -1, -1, -1]),
    4: ("GradientNorth", [-1, -2, -1, 0, 0, 0, 1, 2, 1]),
    8: ("GradientNorthEast", [0, -1, -2, 1, 0, -1, 2, 1, 0]),
    10: ("SmoothArithmeticMean", [0.111111111111] * 9),
    12: ("Smoothing5x5", [1, 1, 1, 1, 1, 1, 4, 4, 4, 1, 1, 4, 12, 4, 1, 1, 4, 4, 4, 1, 1, 1, 1, 1, 1]),
    15: ("Laplacian3x3", [0, -1, 0, -1, 4, -1, 0, -1, 0]),
    16: ("Laplacian5x5", [0, 0, -1, 0, 0, 0, -1, -2, -1, 0, -1, -2, 17, -2, -1, 0, -1, -2, -1, 0, 0, 0, -1, 0, 0]),
    17: ("SobelHorizontal", [-1, -2, -1, 0, 0, 0, 1, 2, 1]),
    18: ("SobelVertical", [-1, 0, 1, -2, 0, 2, -1, 0, 1]),
}


def normalised(weights):
    w = np.array(weights, dtype=np.float64)
    s = w.sum()
    return w / s if abs(s) > 1e-9 and abs(s - 1) > 1e-9 else w


def mirror_index(n, before, after):
    idx = np.arange(n)
    idx = np.where(idx < before, 2 * before - idx, idx)
    idx = np.where(idx > n - 1 - after, 2 * (n - 1 - after) - idx, idx)
    return idx


def convolve_spec(z, weights, cols, rows):
    w = normalised(weights).reshape(rows, cols)
    top, left = rows // 2, cols // 2
    c = ndimage.correlate(z, w, mode="nearest")  # the mode is irrelevant: only the interior is kept
    return c[np.ix_(mirror_index(z.shape[0], top, rows - 1 - top), mirror_index(z.shape[1], left, cols - 1 - left))]


def round_half_away(v):
    return np.where(v < 0, -np.floor(0.5 - v), np.floor(v + 0.5))


def conv_cases():
    for t, (name, weights) in KERNELS.items():
        inp = B4 if t % 2 == 0 else B3
        z = read(inp)
        size = int(round(len(weights) ** 0.5))
        out = convolve_spec(z, weights, size, size)
        assert out.min() < 0 or t in (10, 12), name  # the edge and gradient cases must have negative responses
        cid = f"conv-{'b4' if inp == B4 else 'b3'}-u8-to-f32-{t:02d}-{name.lower()}"
        path = os.path.join(HERE, f"{cid}.tif")
        write(path, out, inp, gdal.GDT_Float32)
        case(
            cid,
            {"rasterFunction": "Convolution", "rasterFunctionArguments": {"Type": t}, "outputPixelType": "F32"},
            [inp],
            path,
            "F32",
            f"Type {t} {name} on a Byte Landsat band with outputPixelType F32: the float64 correlation stored as Float32 "
            f"(range {out.min():.4g}..{out.max():.4g}; a cast after a Byte convolution would clamp it to 0..255 and round). "
            "Edges mirror the computed interior (NumPy), so no edge band is excluded; the input has no NoData.",
            "scipy.ndimage.correlate (float64) + NumPy edge mirror",
            f"ndimage.correlate(z, normalised({name}).reshape({size}, {size})); out = c[mirror rows][:, mirror cols]; Float32",
            F32_TOL,
        )
    # User-defined kernels: an even 4 x 3 one given as a string, and a non-separable 5 x 5 one.
    user = [
        ("conv-b4-u8-to-f32-user-4x3", B4, 4, 3, [1, -2, 3, 0.5, 2, 0, -1, 4, 0, 1, 1, -3], "1 -2 3 0.5 2 0 -1 4 0 1 1 -3"),
        ("conv-b3-u8-to-f32-user-5x5", B3, 5, 5, [2, 0, -1, 0, 1, 0, 3, -2, 1, 0, -1, -2, 4, -2, -1, 0, 1, -2, 3, 0, 1, 0, -1, 0, 2], None),
    ]
    for cid, inp, cols, rows, weights, as_string in user:
        z = read(inp)
        out = convolve_spec(z, weights, cols, rows)
        path = os.path.join(HERE, f"{cid}.tif")
        write(path, out, inp, gdal.GDT_Float32)
        case(
            cid,
            {
                "rasterFunction": "Convolution",
                "rasterFunctionArguments": {"Type": -1, "Columns": cols, "Rows": rows, "Kernel": as_string if as_string is not None else weights},
                "outputPixelType": "F32",
            },
            [inp],
            path,
            "F32",
            f"User-defined {cols} x {rows} kernel (sum {sum(weights)}: normalised by it) on a Byte band with outputPixelType F32 "
            f"(range {out.min():.4g}..{out.max():.4g}); mirrored edges in NumPy.",
            "scipy.ndimage.correlate (float64) + NumPy edge mirror",
            f"ndimage.correlate(z, normalised(kernel).reshape({rows}, {cols})); Float32",
            F32_TOL,
        )
    # An integer type wider than the natural Byte: S16 keeps the signs, rounded half away, clamped.
    z = read(B4)
    name, weights = KERNELS[15]
    out = np.clip(round_half_away(convolve_spec(z, weights, 3, 3)), -32768, 32767)
    cid = "conv-b4-u8-to-s16-15-laplacian3x3"
    path = os.path.join(HERE, f"{cid}.tif")
    write(path, out, B4, gdal.GDT_Int16)
    case(
        cid,
        {"rasterFunction": "Convolution", "rasterFunctionArguments": {"Type": 15}, "outputPixelType": "S16"},
        [B4],
        path,
        "S16",
        f"Type 15 Laplacian3x3 on the Byte NIR band with outputPixelType S16: integer weights, so exact integers (range {out.min():.0f}..{out.max():.0f}).",
        "scipy.ndimage.correlate (float64) + NumPy edge mirror, round half away, clip",
        "clip(round_half_away(correlate(z, Laplacian3x3)), -32768, 32767)",
        {"abs": 0},
    )


# ---------------------------------------------------------------------------------------------
# Remap to a narrower integer type: clamped (spec 1.2 rule 2).
def remap_cases():
    z = read(DEM)
    ranges = [300, 400, 400, 500, 500, 600, 800, 900]
    values = [-20, 100.5, 300, 250.5]
    out = z.copy()  # AllowUnmatched: values in no range keep their value
    for k in range(len(values)):
        lo, hi = ranges[2 * k], ranges[2 * k + 1]
        out = np.where((z >= lo) & (z < hi), values[k], out)
    out = np.clip(round_half_away(out), 0, 255)
    cid = "remap-dem-f64-to-u8-clamp"
    path = os.path.join(HERE, f"{cid}.tif")
    write(path, out, DEM, gdal.GDT_Byte)
    case(
        cid,
        {
            "rasterFunction": "Remap",
            "rasterFunctionArguments": {"InputRanges": ranges, "OutputValues": values, "AllowUnmatched": True},
            "outputPixelType": "U8",
        },
        [DEM],
        path,
        "U8",
        "Remap of the Float64 DEM (310..996 m) with outputPixelType U8, narrower than the natural Float64: OutputValues -20 -> 0, "
        "100.5 -> 101, 300 -> 255, 250.5 -> 251 and unmatched elevations (600..800, 900..996) -> 255: clamped, never NoData.",
        "NumPy",
        "clip(round_half_away(where(in range k, OutputValues[k], z)), 0, 255)",
        {"abs": 0},
    )


# ---------------------------------------------------------------------------------------------
# Local to a narrower integer type: out-of-range values are NoData (spec 1.2 rule 2, Local).
def local_cases():
    b3, b4 = read(B3), read(B4)
    ops = [
        ("local-minus-u8-to-u8-nodata", 2, "Minus", "b4 - b3", "U8", b4 - b3, 0, 255, True),
        ("local-plus-u8-to-u8-nodata", 1, "Plus", "b4 + b3", "U8", b4 + b3, 0, 255, True),
        ("local-divide-u8-to-u8-round", 23, "Divide", "b4 / b3", "U8", b4 / b3, 0, 255, False),
    ]
    for cid, code, name, formula, pixel_type, v, lo, hi, some_out in ops:
        r = np.floor(v + 0.5)
        bad = np.isnan(r) | (r < lo) | (r > hi)
        assert bad.any() == some_out and not bad.all(), cid
        # Stored as Int16 with NoData -32768, which no valid result can take (the comparison is
        # by value and mask; the output's own type is checked through the case's pixelType).
        out = np.where(bad, -32768, r)
        path = os.path.join(HERE, f"{cid}.tif")
        write(path, out, B3, gdal.GDT_Int16, nodata=-32768)
        case(
            cid,
            {"rasterFunction": "Local", "rasterFunctionArguments": {"Operation": code, "Rasters": ["$2", "$1"]}, "outputPixelType": pixel_type},
            [B3, B4],
            path,
            pixel_type,
            f"Local {name} (operation {code}) of NIR (b4) and red (b3) with outputPixelType {pixel_type}, narrower than the natural F32: "
            f"rounded half up; {int(bad.sum())} pixels outside {lo}..{hi} are NoData, not clamped.",
            "NumPy",
            f"r = floor(({formula}) + 0.5); NoData where r < {lo} or r > {hi}",
            {"abs": 0},
        )


if __name__ == "__main__":
    make_inputs()
    conv_cases()
    remap_cases()
    local_cases()
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump(cases, f, indent=2)
        f.write("\n")
    print(f"{len(cases)} cases")
