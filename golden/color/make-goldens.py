#!/usr/bin/env python3
"""Regenerates the colour-family reference rasters in golden/color/ and their cases.json.

These are `reference` goldens: never regenerate them from rasterflow's output. Nothing here
imports or runs rasterflow. Inputs come from golden/data/L7_ETMs.tif (6 x Byte Landsat 7; band 1
blue, 2 green, 3 red, 4 NIR). Tools:

  palette       a palette GeoTIFF made with GDAL's Python bindings (SetColorTable on L7 band 4),
                an input for ColormapToRGB (the source's colormap) and for Colormap.
  ColormapToRGB `gdal_translate -expand rgb` of the palette GeoTIFF (GDAL's own palette expansion).
  Colormap      an explicit colormap (not every value listed, one colour with alpha 0) through
                ColormapToRGB, against `gdaldem color-relief -nearest_color_entry` over the band:
                GDAL 3.6.2's -exact_color_entry is broken (only the first entry ever matches; fixed
                by GDAL pull request 10596, 3.9.2), so the nearest entry is taken, which for a value
                equal to an entry is that entry; the values without an entry (found with numpy.isin)
                and the alpha-0 entry are NoData.
  ColorspaceConversion  scikit-image `skimage.color.rgb2hsv` on L7 bands 3, 2, 1 (a 128 x 128 crop,
                l7-rgb-crop.tif, so the Float32 result stays small): H x 360 (degrees), S, V as
                fractions; with outputPixelType U8 each of h, S, V (all 0..1) x 255 rounded half up
                (exact ties: see half_up);
                and HSV -> RGB with `skimage.color.hsv2rgb` x 255 rounded half up, from the F32 and
                from the U8 encodings.
  Grayscale     `gdal_calc.py` (NumPy in float64): (w1 A + w2 B + ...) / (w1 + w2 + ...) rounded
                half up (all values are positive) into Byte, as the spec's formula.

Expected rasters with NoData carry a GDAL internal mask (0 = NoData).

Needs GDAL 3.6 (Python bindings, gdal_translate, gdaldem, gdal_calc.py), NumPy and scikit-image:
    /usr/bin/python3 golden/color/make-goldens.py
"""
import json
import os
import subprocess
import tempfile

import numpy as np
import skimage
from osgeo import gdal
from skimage.color import hsv2rgb, rgb2hsv

gdal.UseExceptions()
os.environ["GDAL_PAM_ENABLED"] = "NO"  # no .aux.xml side files (also for the CLI runs)
gdal.SetConfigOption("GDAL_PAM_ENABLED", "NO")
os.environ["GDAL_TIFF_INTERNAL_MASK"] = "YES"
gdal.SetConfigOption("GDAL_TIFF_INTERNAL_MASK", "YES")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
L7 = os.path.join(ROOT, "golden/data/L7_ETMs.tif")  # 6 x Byte, 349 x 352, EPSG:31985
PALETTE = os.path.join(HERE, "palette-l7-nir.tif")
CROP = os.path.join(HERE, "l7-rgb-crop.tif")
CO = ["COMPRESS=DEFLATE", "ZLEVEL=9"]
rel = lambda p: os.path.relpath(p, ROOT)
GDAL_VERSION = gdal.VersionInfo("--version")


def run(*args):
    subprocess.run(args, check=True)


def read(path, band=1):
    ds = gdal.Open(path)
    return ds.GetRasterBand(band).ReadAsArray()


def write(path, bands, like, dtype, mask=None, predictor=None):
    """A DEFLATE GeoTIFF with the grid of `like`, and an internal mask (1 valid) when given."""
    src = gdal.Open(like)
    co = CO + ([f"PREDICTOR={predictor}"] if predictor else [])
    ds = gdal.GetDriverByName("GTiff").Create(path, src.RasterXSize, src.RasterYSize, len(bands), dtype, co)
    ds.SetGeoTransform(src.GetGeoTransform())
    ds.SetProjection(src.GetProjection())
    for i, b in enumerate(bands):
        ds.GetRasterBand(i + 1).WriteArray(b)
    if mask is not None:
        ds.CreateMaskBand(gdal.GMF_PER_DATASET)
        ds.GetRasterBand(1).GetMaskBand().WriteArray(mask.astype(np.uint8) * 255)
    ds = None


def palette_color(i):
    """The palette GeoTIFF's colour of value i (any deterministic, varied colours)."""
    return ((i * 37) % 256, (i * 91 + 17) % 256, 255 - i)


# The explicit colormap of the Colormap case: every third value from 30 to 150, one colour with
# alpha 0 (NoData after ColormapToRGB), colours never (0, 0, 0).
COLORMAP = [[v, 10 + (v * 7) % 240, 20 + (v * 13) % 230, 5 + (v * 29) % 250] + ([0] if v == 60 else []) for v in range(30, 151, 3)]


def without_nodata(src, out):
    """gdal_calc.py always declares a NoData value (255 for Byte), which would mask real 255s."""
    run("gdal_translate", "-q", "-a_nodata", "none", *sum([["-co", c] for c in CO], []), src, out)


def half_up(x):
    """Round half up; exact ties stay ties: float64 lands up to ~1e-13 either side of an exact .5
    (skimage computes h as ((g - b) / d / 6) % 1), so values are first rounded to 9 decimals."""
    return np.floor(np.round(x, 9) + 0.5)


def main():
    cases = []
    common = {"kind": "reference"}
    with tempfile.TemporaryDirectory() as tmp:
        # ---- Palette GeoTIFF: L7 band 4 with a 256-entry colour table.
        nir = read(L7, 4)
        src = gdal.Open(L7)
        ds = gdal.GetDriverByName("GTiff").Create(PALETTE, src.RasterXSize, src.RasterYSize, 1, gdal.GDT_Byte, CO)
        ds.SetGeoTransform(src.GetGeoTransform())
        ds.SetProjection(src.GetProjection())
        band = ds.GetRasterBand(1)
        band.WriteArray(nir)
        table = gdal.ColorTable()
        for i in range(256):
            table.SetColorEntry(i, palette_color(i) + (255,))
        band.SetColorTable(table)
        band.SetRasterColorInterpretation(gdal.GCI_PaletteIndex)
        ds = src = None

        # ---- ColormapToRGB of the palette GeoTIFF: gdal_translate -expand rgb.
        out = os.path.join(HERE, "colormaptorgb-palette.tif")
        run("gdal_translate", "-q", "-expand", "rgb", *sum([["-co", c] for c in CO], []), PALETTE, out)
        provenance = {"tool": "gdal_translate", "version": GDAL_VERSION, "script": "golden/color/make-goldens.py"}
        cases.append({
            "id": "color/colormaptorgb-palette-geotiff",
            "rule": {"rasterFunction": "ColormapToRGB"},
            "inputs": [rel(PALETTE)],
            "expected": rel(out),
            **common,
            "tolerance": {"abs": 0},
            "provenance": {**provenance, "command": "gdal_translate -expand rgb palette-l7-nir.tif colormaptorgb-palette.tif",
                           "note": "The source's colour table (TIFF ColorMap, 16-bit c x 257) read as info.colormap and expanded; GDAL expands the same table."},
        })

        # ---- Colormap (explicit, overriding the source palette) -> ColormapToRGB, vs gdaldem color-relief.
        cfile = os.path.join(tmp, "colors.txt")
        with open(cfile, "w") as fh:
            for e in COLORMAP:
                fh.write(" ".join(str(x) for x in e[:4]) + "\n")
        rgbfile = os.path.join(tmp, "relief.tif")
        run("gdaldem", "color-relief", "-q", "-nearest_color_entry", "-b", "4", L7, cfile, rgbfile)
        rgb = [read(rgbfile, b) for b in (1, 2, 3)]
        listed = [e[0] for e in COLORMAP]
        valid = np.isin(nir, listed) & (nir != 60)
        table = {e[0]: e[1:4] for e in COLORMAP}
        for y, x in zip(*np.nonzero(valid)):  # sanity: gdaldem gave exactly the entry's colour
            assert [int(rgb[c][y, x]) for c in range(3)] == table[int(nir[y, x])]
        out = os.path.join(HERE, "colormap-explicit-to-rgb.tif")
        write(out, [np.where(valid, b, 0) for b in rgb], L7, gdal.GDT_Byte, mask=valid)
        cases.append({
            "id": "color/colormap-explicit-over-palette-to-rgb",
            "rule": {
                "rasterFunction": "ColormapToRGB",
                "rasterFunctionArguments": {"Raster": {"rasterFunction": "Colormap", "rasterFunctionArguments": {"Colormap": COLORMAP}}},
            },
            "inputs": [rel(PALETTE)],
            "expected": rel(out),
            **common,
            "tolerance": {"abs": 0},
            "provenance": {**provenance, "tool": "gdaldem color-relief",
                           "command": "gdaldem color-relief -nearest_color_entry -b 4 L7_ETMs.tif colors.txt relief.tif; unlisted values and the alpha-0 entry (60) masked with numpy",
                           "note": "An explicit Colormap wins over the source's palette. Values without an entry and the entry with alpha 0 are NoData (internal mask); -nearest_color_entry stands in for GDAL 3.6's broken -exact_color_entry, checked entry by entry."},
        })

        # ---- ColorspaceConversion on a 128 x 128 crop of L7 bands 3, 2, 1 (R, G, B).
        run("gdal_translate", "-q", "-srcwin", "100", "100", "128", "128", "-b", "3", "-b", "2", "-b", "1",
            *sum([["-co", c] for c in CO], []), L7, CROP)
        img = np.stack([read(CROP, b) for b in (1, 2, 3)], axis=-1)  # (y, x, rgb) uint8
        hsv = rgb2hsv(img)  # float64, h in [0, 1), s and v in [0, 1]
        sk = {"tool": "scikit-image", "version": f"scikit-image {skimage.__version__}, NumPy {np.__version__}", "script": "golden/color/make-goldens.py"}
        out = os.path.join(HERE, "hsv-l7-321-f32.tif")
        write(out, [hsv[..., 0] * 360, hsv[..., 1], hsv[..., 2]], CROP, gdal.GDT_Float32, predictor=3)
        cases.append({
            "id": "color/colorspace-rgb-to-hsv-f32",
            "rule": {"rasterFunction": "ColorspaceConversion", "rasterFunctionArguments": {"ConversionType": 0}},
            "inputs": [rel(CROP)],
            "expected": rel(out),
            **common,
            "tolerance": {"abs": 1e-6, "rel": 1e-6},
            "provenance": {**sk, "command": "rgb2hsv(img); H x 360 (float64, stored as Float32)",
                           "note": "H in degrees, S and V in [0, 1]. rasterflow stores Float32 (7 significant digits), hence rel 1e-6 for H up to 360; S and V agree within 1e-6 absolute."},
        })
        hsv8 = half_up(hsv * 255).astype(np.uint8)
        out = os.path.join(HERE, "hsv-l7-321-u8.tif")
        write(out, [hsv8[..., i] for i in range(3)], CROP, gdal.GDT_Byte)
        cases.append({
            "id": "color/colorspace-rgb-to-hsv-u8",
            "rule": {"rasterFunction": "ColorspaceConversion", "rasterFunctionArguments": {"ConversionType": 0}, "outputPixelType": "U8"},
            "inputs": [rel(CROP)],
            "expected": rel(out),
            **common,
            "tolerance": {"abs": 0},
            "provenance": {**sk, "command": "floor(rgb2hsv(img) * 255 + 0.5)",
                           "note": "outputPixelType U8: the function writes H x 255/360, S x 255, V x 255 rounded half up itself (not a clamping cast)."},
        })
        back = half_up(hsv2rgb(hsv) * 255).astype(np.uint8)
        assert (back == img).all(), "skimage round trip is not exact"
        out = os.path.join(HERE, "rgb-from-hsv-l7-321.tif")
        write(out, [back[..., i] for i in range(3)], CROP, gdal.GDT_Byte)
        cases.append({
            "id": "color/colorspace-hsv-f32-to-rgb",
            "rule": {
                "rasterFunction": "ColorspaceConversion",
                "rasterFunctionArguments": {"ConversionType": 1, "Raster": {"rasterFunction": "ColorspaceConversion", "rasterFunctionArguments": {"ConversionType": 0}}},
            },
            "inputs": [rel(CROP)],
            "expected": rel(out),
            **common,
            "tolerance": {"abs": 0},
            "provenance": {**sk, "command": "floor(hsv2rgb(rgb2hsv(img)) * 255 + 0.5)",
                           "note": "HSV (Float32 degrees and fractions) back to RGB: the original bands."},
        })
        back8 = half_up(hsv2rgb(hsv8 / 255.0) * 255).astype(np.uint8)
        out = os.path.join(HERE, "rgb-from-hsv-u8-l7-321.tif")
        write(out, [back8[..., i] for i in range(3)], CROP, gdal.GDT_Byte)
        cases.append({
            "id": "color/colorspace-hsv-u8-to-rgb",
            "rule": {
                "rasterFunction": "ColorspaceConversion",
                "rasterFunctionArguments": {
                    "ConversionType": 1,
                    "Raster": {"rasterFunction": "ColorspaceConversion", "rasterFunctionArguments": {"ConversionType": 0}, "outputPixelType": "U8"},
                },
            },
            "inputs": [rel(CROP)],
            "expected": rel(out),
            **common,
            "tolerance": {"abs": 0},
            "provenance": {**sk, "command": "h8 = floor(rgb2hsv(img) * 255 + 0.5); floor(hsv2rgb(h8 / 255) * 255 + 0.5)",
                           "note": "HSV -> RGB reads U8 input as the 0..255 encoding (H = h x 360/255)."},
        })

        # ---- Grayscale with gdal_calc.py.
        calc = {"tool": "gdal_calc.py", "version": GDAL_VERSION, "script": "golden/color/make-goldens.py"}
        out = os.path.join(HERE, "grayscale-l7-equal.tif")
        letters = "ABCDEF"
        args = sum([[f"-{l}", L7, f"--{l}_band={i + 1}"] for i, l in enumerate(letters)], [])
        expr = "numpy.floor((" + " + ".join(f"{l}.astype(numpy.float64)" for l in letters) + ") / 6 + 0.5)"
        run("gdal_calc.py", "--quiet", "--overwrite", *args, "--type=Byte", f"--calc={expr}", f"--outfile={tmp}/calc.tif")
        without_nodata(f"{tmp}/calc.tif", out)
        cases.append({
            "id": "color/grayscale-l7-equal-weights",
            "rule": {"rasterFunction": "Grayscale"},
            "inputs": [rel(L7)],
            "expected": rel(out),
            **common,
            "tolerance": {"abs": 0},
            "provenance": {**calc, "command": f"gdal_calc.py -A..-F L7 bands 1..6 --type=Byte --calc='{expr}'",
                           "note": "No ConversionParameters: equal weights, the mean of the six bands, rounded (half up) into the input type Byte."},
        })
        out = os.path.join(HERE, "grayscale-l7-rgb-132.tif")
        expr = "numpy.floor((1 * A.astype(numpy.float64) + 3 * B.astype(numpy.float64) + 2 * C.astype(numpy.float64)) / 6 + 0.5)"
        run("gdal_calc.py", "--quiet", "--overwrite", "-A", L7, "--A_band=3", "-B", L7, "--B_band=2", "-C", L7, "--C_band=1",
            "--type=Byte", f"--calc={expr}", f"--outfile={tmp}/calc.tif")
        without_nodata(f"{tmp}/calc.tif", out)
        cases.append({
            "id": "color/greyscale-l7-rgb-weights-1-3-2",
            "rule": {
                "rasterFunction": "Greyscale",
                "rasterFunctionArguments": {"conversionParameters": [1, 3, 2], "Raster": {"rasterFunction": "ExtractBand", "rasterFunctionArguments": {"BandIDs": [2, 1, 0]}}},
            },
            "inputs": [rel(L7)],
            "expected": rel(out),
            **common,
            "tolerance": {"abs": 0},
            "provenance": {**calc, "command": f"gdal_calc.py -A L7 band 3 -B band 2 -C band 1 --type=Byte --calc='{expr}'",
                           "note": "The vendor's example weights [1, 3, 2] on red, green, blue (spelled Greyscale / conversionParameters as in the spec), normalised by their sum 6."},
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
