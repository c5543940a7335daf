#!/usr/bin/python3
"""Regenerates the reference rasters of golden/convert/ (Complex, UnitConversion, TransposeBits,
Recast) with GDAL 3.6 (osgeo) and NumPy, independently of rasterflow. `reference` goldens: never
regenerate them from rasterflow's output. Cases: cases.json beside this script (fields:
golden/README.md). Run from anywhere: /usr/bin/python3 golden/convert/make-goldens.py

Inputs made here from golden/data (small crops, DEFLATE):
  l7-complex-c64.tif   CFloat32, 96 x 80 window of L7_ETMs.tif at (100, 100): re = red - 60,
                       im = 40 - NIR (bands 3 and 4), so all four quadrants occur.
  dem-complex-c128.tif CFloat64, olinda_dem_utm25s.tif: re = z, im = 3 - z / 2.
  qa-u16.tif           UInt16 "QA word", 128 x 128 window of L7_ETMs.tif at (60, 60):
                       (band1 * 257 + band4 * 13) mod 65536, every bit position in use.
Expected rasters:
  Complex: NumPy abs() of the complex128 values, stored as Float32 (C64 input); GDAL's own `mod`
    VRT pixel function (a second, independent implementation) as Float64 (C128 input).
  UnitConversion: NumPy float64 with the NIST SP 811 factors (1 ft = 0.3048 m, 1 nmi = 1852 m,
    1 knot = 1.852 km/h, K = C + 273.15, C = (F - 32) * 5 / 9), stored as Float32.
  TransposeBits: NumPy bit operations on qa-u16.tif.
  Recast cases reuse golden/terrain/utm-hillshade-135-30-z2.tif (gdaldem) and the feet raster
  made here: the override must give exactly what the overridden value written in gives.
"""
import os

import numpy as np
from osgeo import gdal

gdal.UseExceptions()
gdal.SetConfigOption("GDAL_PAM_ENABLED", "NO")

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")
L7 = os.path.join(DATA, "L7_ETMs.tif")
OLINDA = os.path.join(DATA, "olinda_dem_utm25s.tif")
CO = ["COMPRESS=DEFLATE", "ZLEVEL=9"]
print(gdal.VersionInfo("--version"))


def read(path, band=1, win=None):
    ds = gdal.Open(path)
    b = ds.GetRasterBand(band)
    a = b.ReadAsArray(*(win or (0, 0, ds.RasterXSize, ds.RasterYSize)))
    return ds, a


def write(name, like, win, arrays, gdal_type):
    """Write `arrays` (one per band) on the grid of `like` (window `win`) as a DEFLATE GeoTIFF."""
    x0, y0, w, h = win
    gt = list(like.GetGeoTransform())
    gt[0] += x0 * gt[1]
    gt[3] += y0 * gt[5]
    path = os.path.join(HERE, name)
    ds = gdal.GetDriverByName("GTiff").Create(path, w, h, len(arrays), gdal_type, CO)
    ds.SetGeoTransform(gt)
    ds.SetProjection(like.GetProjection())
    for i, a in enumerate(arrays):
        ds.GetRasterBand(i + 1).WriteArray(a)
    ds = None
    return path


# ---- Complex
win = (100, 100, 96, 80)
l7, red = read(L7, 3, win)
_, nir = read(L7, 4, win)
z64 = (red.astype(np.float32) - 60) + 1j * (40 - nir.astype(np.float32))
write("l7-complex-c64.tif", l7, win, [z64.astype(np.complex64)], gdal.GDT_CFloat32)
write("complex-c64-magnitude.tif", l7, win, [np.abs(z64.astype(np.complex64).astype(np.complex128)).astype(np.float32)], gdal.GDT_Float32)

olinda, z = read(OLINDA)
full = (0, 0, olinda.RasterXSize, olinda.RasterYSize)
zc = z.astype(np.float64) + 1j * (3 - z.astype(np.float64) / 2)
c128 = write("dem-complex-c128.tif", olinda, full, [zc], gdal.GDT_CFloat64)
vrt = f"""<VRTDataset rasterXSize="{olinda.RasterXSize}" rasterYSize="{olinda.RasterYSize}">
  <SRS>{olinda.GetProjection()}</SRS>
  <GeoTransform>{", ".join(repr(v) for v in olinda.GetGeoTransform())}</GeoTransform>
  <VRTRasterBand dataType="Float64" band="1" subClass="VRTDerivedRasterBand">
    <PixelFunctionType>mod</PixelFunctionType>
    <SourceTransferType>CFloat64</SourceTransferType>
    <SimpleSource><SourceFilename relativeToVRT="0">{c128}</SourceFilename><SourceBand>1</SourceBand></SimpleSource>
  </VRTRasterBand>
</VRTDataset>"""
gdal.Translate(os.path.join(HERE, "complex-c128-magnitude.tif"), vrt, creationOptions=CO)

# ---- UnitConversion (olinda heights as the quantity; float64 maths, Float32 storage)
zf = z.astype(np.float64)
for name, values in [
    ("unitconversion-olinda-m-to-ft.tif", zf / 0.3048),
    ("unitconversion-olinda-m-to-nmi.tif", zf / 1852),
    ("unitconversion-olinda-knots-to-kmh.tif", zf * 1.852),
    ("unitconversion-olinda-c-to-k.tif", zf + 273.15),
    ("unitconversion-olinda-f-to-c.tif", (zf - 32) * 5 / 9),
]:
    write(name, olinda, full, [values.astype(np.float32)], gdal.GDT_Float32)

# ---- TransposeBits
win = (60, 60, 128, 128)
l7, b1 = read(L7, 1, win)
_, b4 = read(L7, 4, win)
qa = ((b1.astype(np.uint32) * 257 + b4.astype(np.uint32) * 13) % 65536).astype(np.uint16)
write("qa-u16.tif", l7, win, [qa], gdal.GDT_UInt16)
q = qa.astype(np.uint32)
bit = lambda k: (q >> k) & 1
# Cloud confidence, bits 14-15 -> 0-1, constant fill 0.
write("transposebits-qa-cloud.tif", l7, win, [(bit(14) | bit(15) << 1).astype(np.uint8)], gdal.GDT_Byte)
# Bits 4, 5, 0 -> 0, 1, 3 over the constant 160 (0b1010_0000): output bits 0, 1, 3 cleared first.
fill = 160 & ~((1 << 0) | (1 << 1) | (1 << 3))
write("transposebits-qa-fill160.tif", l7, win, [(fill | bit(4) | bit(5) << 1 | bit(0) << 3).astype(np.uint8)], gdal.GDT_Byte)
# FillRaster = the QA word itself (UInt16 output): bits 14-15 copied into bits 0-1.
write("transposebits-qa-fillraster.tif", l7, win, [((q & ~np.uint32(3)) | bit(14) | bit(15) << 1).astype(np.uint16)], gdal.GDT_UInt16)

for f in sorted(os.listdir(HERE)):
    if f.endswith(".tif"):
        print(f, os.path.getsize(os.path.join(HERE, f)))
