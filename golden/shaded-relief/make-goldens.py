#!/usr/bin/env python3
"""Regenerates the ShadedRelief reference rasters in golden/shaded-relief/ and their cases.json.

These are `reference` goldens: never regenerate them from rasterflow's output. Nothing here
imports or runs rasterflow. Each expected raster is assembled from independent pieces:

  hillshade  GDAL 3.6 `gdaldem hillshade` (Horn), turned from GDAL's byte scale round(1 + 254 x)
             (0 = NoData) into the vendor's trunc(255 x) the way golden/README.md's
             `gdal-hillshade` compare mode does: A = trunc((v - 1) * 255 / 254). The vendor's
             multidirectional hillshade is six gdaldem hillshades at doubled z, weighted
             3/5/3/2/1/4 of 18 (as golden/terrain/make-goldens.sh).
  colour     GDAL `gdaldem color-relief -nearest_color_entry` over an integer index raster (an
             index equal to an entry gets that entry; see color_relief for why not -exact_color_entry):
             - ramps: the index k = floor((z - zmin) * 255.00001 / (zmax - zmin)) clamped to
               0..255 (spec "ShadedRelief" step 2; zmin/zmax = the DEM's STATISTICS_MINIMUM/MAXIMUM
               as written in its GeoTIFF metadata), with a 256-line colour file whose colours this
               script computes from the spec's Appendix B.1 formulas (its own Python
               implementation below, written from the spec text, not from rasterflow's code);
             - colormaps: the index is trunc(z) and the colour file is the colormap itself;
               values without an entry are NoData (found with numpy.isin).
  blend      the spec's step 3 (the hillshade replaces the colour's HSV value) with Python's
             standard-library `colorsys` (rgb_to_hsv, then hsv_to_rgb with value A / 255), x 255,
             rounded to nearest with ties to even (numpy.rint), as the vendor's Uint8ClampedArray.

The expected rasters are 3-band Byte GeoTIFFs with a GDAL internal mask (0 = NoData). The DEM
with statistics (dem-utm16n-75m-stats.tif) is an input: golden/data's DEM carries none, and
without statistics the vendor falls back to the range 0..8000.

Tolerance 1 DN per channel: the vendor's trunc(255 x) hillshade can only be recovered from
GDAL's round(1 + 254 x) byte to within 1, and a channel is the hillshade times a factor in
[0, 1], so it moves by at most 1 too (floating-point order can also move a rounding tie by 1).

Needs GDAL 3.6 (Python bindings and the gdaldem program) and NumPy: run with
    /usr/bin/python3 golden/shaded-relief/make-goldens.py
"""
import colorsys
import json
import math
import os
import platform
import subprocess
import tempfile

import numpy as np
from osgeo import gdal

gdal.UseExceptions()
os.environ["GDAL_PAM_ENABLED"] = "NO"  # no .aux.xml side files (also for the gdaldem runs)
gdal.SetConfigOption("GDAL_PAM_ENABLED", "NO")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEM = os.path.join(ROOT, "golden/data/jacksboro_fault_dem_utm16n_75m.tif")  # Float32 383 x 407, 75 m
STATS_DEM = os.path.join(HERE, "dem-utm16n-75m-stats.tif")
rel = lambda p: os.path.relpath(p, ROOT)

# --------------------------------------------------------------------------------------------
# Spec Appendix B.1: ramps to colours (sRGB D65, the spec's 4-digit matrices).

M = [[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]
MI = [[3.2406, -1.5372, -0.4986], [-0.9689, 1.8758, 0.0415], [0.0557, -0.2040, 1.0570]]
WHITE = [95.047, 100.0, 108.883]
D = 6 / 29


def half_up(v):
    return min(255, max(0, math.floor(v + 0.5)))


def lin(c):
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def f(t):
    return t ** (1 / 3) if t > D ** 3 else t / (3 * D * D) + 4 / 29


def finv(u):
    return u ** 3 if u > D else 3 * D * D * (u - 4 / 29)


def rgb_to_lab(c):
    v = [lin(x / 255) for x in c[:3]]
    X, Y, Z = (sum(M[i][j] * v[j] for j in range(3)) * 100 for i in range(3))
    fx, fy, fz = f(X / WHITE[0]), f(Y / WHITE[1]), f(Z / WHITE[2])
    return [116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)]


def lab_to_rgb(L, a, b):
    fy = (L + 16) / 116
    xyz = [WHITE[0] * finv(fy + a / 500) / 100, WHITE[1] * finv(fy) / 100, WHITE[2] * finv(fy - b / 200) / 100]
    out = []
    for i in range(3):
        c = sum(MI[i][j] * xyz[j] for j in range(3))
        c = 12.92 * c if c <= 0.0031308 else 1.055 * c ** (1 / 2.4) - 0.055
        out.append(half_up(min(1.0, max(0.0, c)) * 255))
    return out


def rgb_to_hsv(c):
    """ColorspaceConversion: H 0..360 (0 for greys), S 0..100, V = max * 100 / 255."""
    r, g, b = c[:3]
    mx, d = max(r, g, b), max(r, g, b) - min(r, g, b)
    if d == 0:
        h = 0.0
    elif mx == r:
        h = ((g - b) / d) % 6
    elif mx == g:
        h = (b - r) / d + 2
    else:
        h = (r - g) / d + 4
    return [60 * h, 0.0 if mx == 0 else 100 * d / mx, mx * 100 / 255]


def hsv_to_rgb(H, S, V):
    v, s, h = V / 100, S / 100, H / 60
    c = v * s
    x = c * (1 - abs(h % 2 - 1))
    m = v - c
    sector = [(c, x, 0), (x, c, 0), (0, c, x), (0, x, c), (x, 0, c), (c, 0, x)][min(int(math.floor(h)), 5)]
    return [half_up((k + m) * 255) for k in sector]


def algorithmic(part, ts):
    """Colours of one algorithmic ramp at local fractions ts."""
    frm, to, alg = part["fromColor"], part["toColor"], part["algorithm"]
    out = []
    if alg == "geoHSVAlgorithm":
        p, q = rgb_to_hsv(frm), rgb_to_hsv(to)
        if p[1] == 0 and q[1] != 0:
            p[0] = q[0]
        elif q[1] == 0 and p[1] != 0:
            q[0] = p[0]
        dh = q[0] - p[0]
        span = dh if abs(dh) < 180 else (360 - abs(dh)) * (1 if p[0] > q[0] else -1)
        for t in ts:
            out.append(hsv_to_rgb((p[0] + span * t) % 360, p[1] + (q[1] - p[1]) * t, p[2] + (q[2] - p[2]) * t))
    elif alg == "geoCIELabAlgorithm":
        p, q = rgb_to_lab(frm), rgb_to_lab(to)
        for t in ts:
            out.append(lab_to_rgb(*(p[k] + (q[k] - p[k]) * t for k in range(3))))
    else:
        raise ValueError(alg)
    return out


def ramp_colors(parts, n=256):
    """B.1: parts of equal weight; each makes ceil((w - o) / step) colours from the carried offset o
    (the last one what is left of n - 1), then the final toColor."""
    step = 1 / (n - 1)
    w = 1 / len(parts)
    colors = []
    for i, part in enumerate(parts):
        o = len(colors) * step - i * w  # where this part's first colour falls past the part's start
        count = n - 1 - len(colors) if i == len(parts) - 1 else math.ceil((w - o) / step)
        colors += algorithmic(part, [o / w + j * step / w for j in range(count)])
    colors.append(list(parts[-1]["toColor"][:3]))
    assert len(colors) == n
    return colors


def lab_part(a, b):
    return {"type": "algorithmic", "fromColor": a, "toColor": b, "algorithm": "geoCIELabAlgorithm"}


# Spec B.2 "Elevation #1" (a name expands every part with CIELab and equal weights).
ELEVATION_1 = [lab_part(*p) for p in [
    ([175, 240, 233], [255, 255, 179]), ([255, 255, 179], [0, 128, 64]), ([0, 128, 64], [252, 186, 3]),
    ([252, 186, 3], [128, 0, 0]), ([120, 0, 0], [105, 48, 13]), ([105, 48, 13], [171, 171, 171]),
    ([171, 171, 171], [255, 252, 255]),
]]

# A multipart ramp object: an HSV part whose hue goes the short way through 0 (H 14 -> 276:
# |dh| = 262 >= 180), then a CIELab part.
MULTIPART_OBJECT = {
    "type": "multipart",
    "colorRamps": [
        {"type": "algorithmic", "fromColor": [255, 60, 0, 255], "toColor": [96, 0, 160, 255], "algorithm": "geoHSVAlgorithm"},
        {"type": "algorithmic", "fromColor": [96, 0, 160, 255], "toColor": [230, 255, 230, 255], "algorithm": "geoCIELabAlgorithm"},
    ],
}

# A colormap over the DEM's integer elevations 236..1074 with every value ending in 3 left out
# (those cells are NoData), colours spread over all hue sectors.
COLORMAP = [[v, (v * 7) % 256, (v * 13 + 50) % 256, (v * 29 + 100) % 256] for v in range(236, 1075) if v % 10 != 3]

# --------------------------------------------------------------------------------------------


def run(*args):
    subprocess.run([str(a) for a in args], check=True)


def read(path, band=1):
    ds = gdal.Open(path)
    return ds.GetRasterBand(band).ReadAsArray()


def write_index(path, array, like):
    ref = gdal.Open(like)
    dt = gdal.GDT_Byte if array.dtype == np.uint8 else gdal.GDT_Int16
    ds = gdal.GetDriverByName("GTiff").Create(path, ref.RasterXSize, ref.RasterYSize, 1, dt)
    ds.SetGeoTransform(ref.GetGeoTransform())
    ds.SetProjection(ref.GetProjection())
    ds.GetRasterBand(1).WriteArray(array)
    ds = None


def vendor_hillshade(tmp, name, dem, extra, multi=False):
    """The vendor's trunc(255 x) hillshade from gdaldem (float, NaN = NoData)."""
    if not multi:
        out = os.path.join(tmp, name + ".tif")
        run("gdaldem", "hillshade", dem, out, "-q", *extra)
        v = read(out).astype(np.float64)
        valid = v > 0
    else:
        acc = 0.0
        valid = True
        for i, (az, alt, w) in enumerate([(315, 60, 3), (270, 60, 5), (225, 60, 3), (360, 60, 2), (180, 60, 1), (0, 90, 4)]):
            out = os.path.join(tmp, f"{name}{i}.tif")
            run("gdaldem", "hillshade", dem, out, "-q", "-az", az, "-alt", alt, "-z", 2, *extra)
            v = read(out).astype(np.float64)
            valid = valid & (v > 0)
            acc = acc + w * v
        v = acc / 18.0
    return np.where(valid, np.trunc((v - 1) * 255 / 254), np.nan)


def color_relief(tmp, name, index, entries, like):
    """gdaldem color-relief -nearest_color_entry over an integer index raster: (rgb, valid).

    GDAL 3.6.2's -exact_color_entry is broken (only the first entry ever matches; fixed by GDAL
    pull request 10596, 3.9.2), so the nearest entry is taken instead, which for an index equal to
    an entry value is that entry, and the cells whose index has no entry are found with numpy.isin.
    """
    src = os.path.join(tmp, name + "-index.tif")
    write_index(src, index, like)
    cfile = os.path.join(tmp, name + "-colors.txt")
    with open(cfile, "w") as fh:
        for e in entries:
            fh.write(" ".join(str(x) for x in e[:4]) + "\n")
    out = os.path.join(tmp, name + "-rgb.tif")
    run("gdaldem", "color-relief", src, cfile, out, "-nearest_color_entry", "-q")
    rgb = np.stack([read(out, b) for b in (1, 2, 3)]).astype(np.int64)
    return rgb, np.isin(index, [e[0] for e in entries])


def check_lookup(rgb, valid, index, table):
    """Sanity check: gdaldem picked exactly the table colour of every index."""
    assert valid.all() and (rgb == np.asarray(table).T[:, index]).all(), "gdaldem color-relief did not reproduce the table"


def blend(A, rgb, valid):
    """Spec step 3 through colorsys: hue and saturation of the colour, value A / 255."""
    h, w = A.shape
    out = np.zeros((3, h, w), np.uint8)
    mask = valid & ~np.isnan(A)
    cache = {}
    for y, x in zip(*np.nonzero(mask)):
        key = (int(rgb[0, y, x]), int(rgb[1, y, x]), int(rgb[2, y, x]), int(A[y, x]))
        c = cache.get(key)
        if c is None:
            hh, ss, _ = colorsys.rgb_to_hsv(key[0] / 255, key[1] / 255, key[2] / 255)
            c = [int(np.rint(k * 255)) for k in colorsys.hsv_to_rgb(hh, ss, key[3] / 255)]
            cache[key] = c
        out[:, y, x] = c
    return out, mask


def write_expected(path, rgb, mask, like):
    ref = gdal.Open(like)
    gdal.SetConfigOption("GDAL_TIFF_INTERNAL_MASK", "YES")
    ds = gdal.GetDriverByName("GTiff").Create(
        path, ref.RasterXSize, ref.RasterYSize, 3, gdal.GDT_Byte,
        ["COMPRESS=DEFLATE", "PREDICTOR=2", "ZLEVEL=9", "INTERLEAVE=PIXEL", "PHOTOMETRIC=RGB"],
    )
    ds.SetGeoTransform(ref.GetGeoTransform())
    ds.SetProjection(ref.GetProjection())
    for b in range(3):
        ds.GetRasterBand(b + 1).WriteArray(rgb[b])
    ds.CreateMaskBand(gdal.GMF_PER_DATASET)
    ds.GetRasterBand(1).GetMaskBand().WriteArray(np.where(mask, 255, 0).astype(np.uint8))
    ds = None


def ramp_index(z, zmin, zmax):
    k = np.floor((z.astype(np.float64) - zmin) * (255.00001 / (zmax - zmin)))
    return np.clip(k, 0, 255).astype(np.uint8)


def main():
    version = gdal.VersionInfo("--version")
    print(version)

    # The DEM with band statistics in its GeoTIFF metadata (what a published image service has).
    ds = gdal.Translate(STATS_DEM, DEM, creationOptions=["COMPRESS=DEFLATE", "PREDICTOR=3", "ZLEVEL=9"])
    band = ds.GetRasterBand(1)
    band.SetStatistics(*band.ComputeStatistics(False))
    band = ds = None
    ds = gdal.Open(STATS_DEM)
    md = ds.GetRasterBand(1).GetMetadata()
    ds = None
    # The values exactly as written (and as rasterflow parses them), not the full-precision ones.
    zmin, zmax = float(md["STATISTICS_MINIMUM"]), float(md["STATISTICS_MAXIMUM"])
    z = read(DEM)

    common = {
        "kind": "reference",
        "compare": "values",
        "tolerance": {"abs": 1},
    }
    provenance = {
        "tool": "gdaldem hillshade + gdaldem color-relief + Python colorsys/NumPy",
        "version": f"{version}; Python {platform.python_version()}; NumPy {np.__version__}",
        "script": "golden/shaded-relief/make-goldens.py",
    }
    tol_note = (
        "Hillshade from gdaldem, converted from round(1 + 254 x) to the vendor's trunc(255 x) (within 1); "
        "the colour channels scale with it, so they agree within 1 DN."
    )
    ring_note = "GDAL leaves the outer ring NoData; rasterflow copies the inner neighbour there (vendor rule), so the ring is excluded."

    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        # 1. A predefined ramp (CIELab multipart, 7 parts) stretched over the DEM statistics.
        table = ramp_colors(ELEVATION_1)
        A = vendor_hillshade(tmp, "hs", DEM, [])
        index = ramp_index(z, zmin, zmax)
        rgb, valid = color_relief(tmp, "elev1", index, [[k, *c] for k, c in enumerate(table)], DEM)
        check_lookup(rgb, valid, index, table)
        out, mask = blend(A, rgb, valid)
        write_expected(os.path.join(HERE, "utm-elevation1-315-45.tif"), out, mask, DEM)
        cases.append({
            "id": "shaded-relief/utm-elevation1-315-45",
            "rule": {"rasterFunction": "ShadedRelief", "rasterFunctionArguments": {"Colorramp": "Elevation #1"}},
            "inputs": [rel(STATS_DEM)],
            "expected": "golden/shaded-relief/utm-elevation1-315-45.tif",
            **common,
            "edge": 1,
            "provenance": {
                **provenance,
                "command": "gdaldem hillshade DEM hs.tif; gdaldem color-relief index.tif colors.txt rgb.tif -nearest_color_entry; blend in Python",
                "note": f"Traditional 315/45, z 1. Ramp 'Elevation #1' (B.2, CIELab, equal weights) as 256 colours by the script's B.1 code; "
                f"index over the DEM statistics {zmin}..{zmax}. {tol_note} {ring_note}",
            },
        })

        # 2. A multipart ramp object (HSV part through hue 0, then CIELab), multidirectional hillshade.
        table = ramp_colors(MULTIPART_OBJECT["colorRamps"])
        A = vendor_hillshade(tmp, "md", DEM, [], multi=True)
        index = ramp_index(z, zmin, zmax)
        rgb, valid = color_relief(tmp, "obj", index, [[k, *c] for k, c in enumerate(table)], DEM)
        check_lookup(rgb, valid, index, table)
        out, mask = blend(A, rgb, valid)
        write_expected(os.path.join(HERE, "utm-multipart-object-multidirectional.tif"), out, mask, DEM)
        cases.append({
            "id": "shaded-relief/utm-multipart-object-multidirectional",
            "rule": {"rasterFunction": "ShadedRelief", "rasterFunctionArguments": {"HillshadeType": 1, "Colorramp": MULTIPART_OBJECT}},
            "inputs": [rel(STATS_DEM)],
            "expected": "golden/shaded-relief/utm-multipart-object-multidirectional.tif",
            **common,
            "edge": 1,
            "provenance": {
                **provenance,
                "command": "six gdaldem hillshade -az AZ -alt ALT -z 2 (vendor lights, weights 3/5/3/2/1/4 of 18); gdaldem color-relief -nearest_color_entry; blend in Python",
                "note": f"The vendor's multidirectional hillshade from six gdaldem traditional ones (as golden/terrain). Multipart ramp object as 256 colours by the script's B.1 code; "
                f"index over the DEM statistics {zmin}..{zmax}. {tol_note} {ring_note}",
            },
        })

        # 3. An explicit colormap looked up with trunc(z); unlisted values are NoData. Every pixel
        #    compared: RemoveEdgeEffect true = gdaldem -compute_edges. Light 135/30, z 2.
        A = vendor_hillshade(tmp, "ce", DEM, ["-compute_edges", "-az", 135, "-alt", 30, "-z", 2])
        rgb, valid = color_relief(tmp, "cmap", np.trunc(z).astype(np.int16), COLORMAP, DEM)
        out, mask = blend(A, rgb, valid)
        write_expected(os.path.join(HERE, "utm-colormap-135-30-z2-compute-edges.tif"), out, mask, DEM)
        cases.append({
            "id": "shaded-relief/utm-colormap-135-30-z2-remove-edge-effect",
            "rule": {
                "rasterFunction": "ShadedRelief",
                "rasterFunctionArguments": {"Azimuth": 135, "Altitude": 30, "ZFactor": 2, "RemoveEdgeEffect": True, "Colormap": COLORMAP},
            },
            "inputs": [rel(DEM)],
            "expected": "golden/shaded-relief/utm-colormap-135-30-z2-compute-edges.tif",
            **common,
            "edge": 0,
            "provenance": {
                **provenance,
                "command": "gdaldem hillshade DEM hs.tif -compute_edges -az 135 -alt 30 -z 2; gdaldem color-relief trunc-dem.tif colormap.txt rgb.tif -nearest_color_entry; blend in Python",
                "note": f"Colormap looked up with trunc(z); values ending in 3 are not listed, so those cells are NoData (the masks must match exactly). "
                f"RemoveEdgeEffect: true is gdaldem -compute_edges; every pixel is compared. {tol_note}",
            },
        })

    with open(os.path.join(HERE, "cases.json"), "w") as fh:
        fh.write(dump(cases) + "\n")
    for name in sorted(os.listdir(HERE)):
        print(f"{os.path.getsize(os.path.join(HERE, name)):>9}  {name}")


def dump(v, indent=0):
    """JSON with two-space indent, but colormap entries and colours on one line each."""
    pad = "  " * indent
    if isinstance(v, list) and all(not isinstance(e, (list, dict)) for e in v):
        return json.dumps(v)
    if isinstance(v, list):
        inner = [dump(e, indent + 1) for e in v]
        if all(isinstance(e, list) for e in v):
            return "[" + ", ".join(inner) + "]"
        return "[\n" + ",\n".join("  " * (indent + 1) + s for s in inner) + "\n" + pad + "]"
    if isinstance(v, dict):
        items = [f"{json.dumps(k)}: {dump(e, indent + 1)}" for k, e in v.items()]
        return "{\n" + ",\n".join("  " * (indent + 1) + s for s in items) + "\n" + pad + "}"
    return json.dumps(v)


if __name__ == "__main__":
    main()
