#!/usr/bin/python3
"""Reference rasters for the geometry family (Resample, Geometric) in golden/geometry/.

Resample: GDAL 3.6 `gdalwarp -r near/bilinear/cubic/average/min/max/mode` on the DEMs, onto the
grid rasterflow's Resample produces (input top-left corner, -tr = OutputCellsize, size =
round(input size x input cell / output cell)); bilinear and cubic are checked when upsampling,
where gdalwarp uses its plain 4-tap / 16-tap kernels (when downsampling by more than 1/0.95 it
widens them into low-pass filters, which the spec's Resample does not do). VectorAverage: NumPy
(block means of u, v over 3 x 3 input pixels) on a two-band field made here from the UTM DEM.
Geometric: `gdal_translate -gcp` (pixel/line -> map) + `gdalwarp -order N -r bilinear -et 0`
onto the grid rasterflow computes, with the same control points as the rules in cases.json.

`reference` goldens: never regenerate them from rasterflow's output.
Run: /usr/bin/python3 golden/geometry/make-goldens.py   (needs GDAL 3.6 Python bindings + CLI)
"""
import json
import math
import os
import subprocess
import tempfile

import numpy as np
from osgeo import gdal

gdal.UseExceptions()
os.environ['GDAL_PAM_ENABLED'] = 'NO'
gdal.SetConfigOption('GDAL_PAM_ENABLED', 'NO')

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(ROOT, 'golden', 'data')
UTM = os.path.join(DATA, 'jacksboro_fault_dem_utm16n_75m.tif')
GEO = os.path.join(DATA, 'jacksboro_fault_dem_3arcsec.tif')
OLINDA = os.path.join(DATA, 'olinda_dem_utm25s.tif')
TMP = tempfile.mkdtemp()
CO = ['-co', 'COMPRESS=DEFLATE', '-co', 'ZLEVEL=9']


def grid(path):
    ds = gdal.Open(path)
    gt = ds.GetGeoTransform()
    return gt[0], gt[3], gt[1], -gt[5], ds.RasterXSize, ds.RasterYSize


def resample(name, src, r, cell, nodata='nan'):
    xmin, ymax, cx, cy, w, h = grid(src)
    ow, oh = max(1, round(w * cx / cell)), max(1, round(h * cy / cell))
    te = (xmin, ymax - oh * cell, xmin + ow * cell, ymax)
    out = os.path.join(HERE, name)
    if os.path.exists(out):
        os.remove(out)
    subprocess.run(['gdalwarp', '-q', *CO, '-r', r, '-et', '0', '-dstnodata', nodata, '-te', *map(repr, te),
                    '-ts', str(ow), str(oh), src, out], check=True)
    print(name, ow, 'x', oh)


print(gdal.__version__)
# Downsampling by 3 (75 m -> 225 m) and by 2.5 (-> 187.5 m), F32 DEM.
resample('resample-utm-near-225.tif', UTM, 'near', 225)
resample('resample-utm-near-187.5.tif', UTM, 'near', 187.5)
resample('resample-utm-average-225.tif', UTM, 'average', 225)
resample('resample-utm-average-187.5.tif', UTM, 'average', 187.5)
resample('resample-utm-min-187.5.tif', UTM, 'min', 187.5)
resample('resample-utm-max-187.5.tif', UTM, 'max', 187.5)
resample('resample-utm-mode-225.tif', UTM, 'mode', 225)
# Upsampling (Olinda DEM, 90 m -> 40 m): plain bilinear and cubic.
resample('resample-olinda-bilinear-40.tif', OLINDA, 'bilinear', 40)
resample('resample-olinda-cubic-40.tif', OLINDA, 'cubic', 40)
# Integer input (Int16 geographic DEM): average rounded to Int16, majority (repeated values).
g = grid(GEO)
resample('resample-geo-average-x2.tif', GEO, 'average', g[2] * 2, nodata='-32768')
resample('resample-geo-mode-x3.tif', GEO, 'mode', g[2] * 3, nodata='-32768')
# Olinda DEM (90 m) to 200 m: Average with partial footprints on a non-integer ratio.
resample('resample-olinda-average-200.tif', OLINDA, 'average', 200)

# VectorAverage: a magnitude/direction field from a 120 x 120 crop of the UTM DEM
# (magnitude = elevation / 100, direction = elevation * 7 mod 360 degrees), averaged by 3.
ds = gdal.Open(UTM)
dem = ds.GetRasterBand(1).ReadAsArray(0, 0, 120, 120).astype(np.float64)
mag = (dem / 100).astype(np.float32)
direc = np.mod(dem * 7, 360).astype(np.float32)
gt = ds.GetGeoTransform()
field = os.path.join(HERE, 'vector-magdir-120.tif')
drv = gdal.GetDriverByName('GTiff')
f = drv.Create(field, 120, 120, 2, gdal.GDT_Float32, options=['COMPRESS=DEFLATE', 'ZLEVEL=9'])
f.SetGeoTransform(gt)
f.SetProjection(ds.GetProjection())
f.GetRasterBand(1).WriteArray(mag)
f.GetRasterBand(2).WriteArray(direc)
f = None
m = mag.astype(np.float64)
d = np.radians(direc.astype(np.float64))
u = (m * np.sin(d)).reshape(40, 3, 40, 3).mean(axis=(1, 3))
v = (m * np.cos(d)).reshape(40, 3, 40, 3).mean(axis=(1, 3))
out = drv.Create(os.path.join(HERE, 'resample-vector-average-x3.tif'), 40, 40, 2, gdal.GDT_Float32, options=['COMPRESS=DEFLATE', 'ZLEVEL=9'])
out.SetGeoTransform((gt[0], gt[1] * 3, 0, gt[3], 0, gt[5] * 3))
out.SetProjection(ds.GetProjection())
out.GetRasterBand(1).WriteArray(np.hypot(u, v).astype(np.float32))
out.GetRasterBand(2).WriteArray(np.mod(np.degrees(np.arctan2(u, v)), 360).astype(np.float32))
out = None
print('resample-vector-average-x3.tif 40 x 40')

# Geometric: control points pixel/line -> map, as in the cases' rules (sourcePoints are pixel
# coordinates of the input: AppendGeodataXform false). A crop of the Olinda DEM georeferenced
# anew with a rotation + scale (order 1) and gentle 2nd / 3rd order distortions.
geometric_cases = json.load(open(os.path.join(HERE, 'geometric-gcps.json')))
for c in geometric_cases:
    gcps = []
    for s, t in zip(c['sourcePoints'], c['targetPoints']):
        gcps += ['-gcp', repr(s['x']), repr(s['y']), repr(t['x']), repr(t['y'])]
    with_gcps = os.path.join(TMP, c['name'] + '-gcps.tif')
    subprocess.run(['gdal_translate', '-q', '-a_srs', 'EPSG:31985', *gcps, OLINDA, with_gcps], check=True)
    out = os.path.join(HERE, c['name'] + '.tif')
    if os.path.exists(out):
        os.remove(out)
    g = c['grid']
    te = (g['xmin'], g['ymax'] - g['height'] * g['cy'], g['xmin'] + g['width'] * g['cx'], g['ymax'])
    subprocess.run(['gdalwarp', '-q', *CO, '-order', str(c['order']), '-r', c.get('r', 'bilinear'), '-et', '0',
                    '-dstnodata', 'nan', '-te', *map(repr, te), '-ts', str(g['width']), str(g['height']),
                    with_gcps, out], check=True)
    print(c['name'], g['width'], 'x', g['height'])
