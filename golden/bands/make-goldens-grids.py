#!/usr/bin/python3
"""Reference rasters for Arithmetic across grids (ExtentType / CellsizeType, spec section 1.5).

Each case: every operand is put on the output grid with GDAL 3.6 `gdalwarp` (same -r as
rasterflow's rule: bilinear for float inputs, nearest for integer ones; -te/-tr = the output grid,
computed below with the rule documented in src/functions/local/grid.ts), then the arithmetic is
done in NumPy (float64, stored as Float32, NaN = NoData where either operand is NoData or outside
its extent). `reference` goldens: never regenerate them from rasterflow's output.

Run: /usr/bin/python3 golden/bands/make-goldens-grids.py   (needs GDAL 3.6 Python bindings)

Grid rule (grid.ts): the output grid is in the first raster's SR, anchored at its top-left corner;
FirstOf extent = the first raster's extent rounded to whole cells; UnionOf = union of the extents
(others transformed: bounding box of 21 points per edge) with edges moved outwards to grid lines;
CellsizeType per axis over the rasters' cell sizes (others: transformed extent / pixel count).
Reprojection: gdalwarp with -et 0 (exact transforms), rasterflow with its own approximate
transformer (<= 0.125 source pixel), hence the tolerance of the reprojected case.
"""
import math
import os
import subprocess
import tempfile

import numpy as np
from osgeo import gdal, osr

gdal.UseExceptions()
os.environ['GDAL_PAM_ENABLED'] = 'NO'
gdal.SetConfigOption('GDAL_PAM_ENABLED', 'NO')

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(ROOT, 'golden', 'data')
L7 = os.path.join(DATA, 'L7_ETMs.tif')
OLINDA = os.path.join(DATA, 'olinda_dem_utm25s.tif')
UTM = os.path.join(DATA, 'jacksboro_fault_dem_utm16n_75m.tif')
GEO = os.path.join(DATA, 'jacksboro_fault_dem_3arcsec.tif')
TMP = tempfile.mkdtemp()


def grid_of(path):
    ds = gdal.Open(path)
    gt = ds.GetGeoTransform()
    return dict(xmin=gt[0], ymax=gt[3], cx=gt[1], cy=-gt[5], w=ds.RasterXSize, h=ds.RasterYSize)


def extent(g):
    return (g['xmin'], g['ymax'] - g['h'] * g['cy'], g['xmin'] + g['w'] * g['cx'], g['ymax'])


def warp(src, out, g, r, t_srs=None, band=None):
    """gdalwarp `src` onto grid g = (xmin, ymax, cx, cy, w, h); returns float64 array with NaN NoData."""
    cmd = ['gdalwarp', '-q', '-overwrite', '-r', r, '-et', '0', *([] if r == 'near' else ['-dstnodata', 'nan']),
           '-te', *map(repr, (g['xmin'], g['ymax'] - g['h'] * g['cy'], g['xmin'] + g['w'] * g['cx'], g['ymax'])),
           '-ts', str(g['w']), str(g['h'])]
    if t_srs:
        cmd += ['-t_srs', t_srs]
    if band:
        # a single-band copy first (gdalwarp -b exists, but keep the band selection explicit)
        single = os.path.join(TMP, f'band{band}.tif')
        subprocess.run(['gdal_translate', '-q', '-b', str(band), src, single], check=True)
        src = single
    # Nearest on integer data: mark outside pixels with an alpha band instead of a NoData value.
    if r == 'near':
        cmd += ['-dstalpha']
    subprocess.run(cmd + [src, out], check=True)
    ds = gdal.Open(out)
    a = ds.GetRasterBand(1).ReadAsArray().astype(np.float64)
    if r == 'near':
        alpha = ds.GetRasterBand(2).ReadAsArray()
        a[alpha == 0] = np.nan
    return a


def write(name, arr, g, wkt):
    drv = gdal.GetDriverByName('GTiff')
    path = os.path.join(HERE, name)
    ds = drv.Create(path, g['w'], g['h'], 1, gdal.GDT_Float32, options=['COMPRESS=DEFLATE', 'ZLEVEL=9', 'PREDICTOR=3'])
    ds.SetGeoTransform((g['xmin'], g['cx'], 0, g['ymax'], 0, -g['cy']))
    ds.SetProjection(wkt)
    b = ds.GetRasterBand(1)
    b.SetNoDataValue(float('nan'))
    out = np.where(np.isfinite(arr), arr, np.nan).astype(np.float32)
    b.WriteArray(out)
    ds = None
    print(name, g['w'], 'x', g['h'], 'valid', int(np.isfinite(out).sum()))


def snap(a, b, mode):
    eps = 1e-6
    if mode == 'out':
        lo, hi = math.floor(a + eps), math.ceil(b - eps)
    else:
        lo, hi = round(a), round(b)
    return lo, max(hi, lo + 1)


def make_grid(first, e, cx, cy, mode):
    c0, c1 = snap((e[0] - first['xmin']) / cx, (e[2] - first['xmin']) / cx, mode)
    r0, r1 = snap((first['ymax'] - e[3]) / cy, (first['ymax'] - e[1]) / cy, mode)
    return dict(xmin=first['xmin'] + c0 * cx, ymax=first['ymax'] - r0 * cy, cx=cx, cy=cy, w=c1 - c0, h=r1 - r0)


print(gdal.__version__)
ds_ = gdal.Open(L7)
wkt_l7 = ds_.GetProjection()

# 1. Landsat NIR (band 4, Byte, 28.5 m, EPSG:31985) + Olinda DEM (Float32, 90 m, user-defined UTM 25S
#    on GRS80 with TOWGS84 0: the same proj4 definition, so no reprojection), FirstOf / FirstOf:
#    the Landsat grid; the DEM bilinear (upsampling, gdalwarp's 4-sample formula).
gl7 = grid_of(L7)
l7ds = gdal.Open(L7)
nir = l7ds.GetRasterBand(4).ReadAsArray().astype(np.float64)
dem = warp(OLINDA, os.path.join(TMP, 'olinda-on-l7.tif'), gl7, 'bilinear')
write('arithmetic-grids-l7-nir-plus-olinda.tif', nir + dem, gl7, wkt_l7)

# 2. The same operands, UnionOf / MaxOf: the DEM's 89.994 m cells anchored at the Landsat corner;
#    the NIR band (integer) by nearest neighbour, the DEM bilinear (here on its own grid lines).
gol = grid_of(OLINDA)
e1, e2 = extent(gl7), extent(gol)
union = (min(e1[0], e2[0]), min(e1[1], e2[1]), max(e1[2], e2[2]), max(e1[3], e2[3]))
cell = max(gl7['cx'], gol['cx'])
gu = make_grid(gl7, union, cell, cell, 'out')
nir_u = warp(L7, os.path.join(TMP, 'nir-u.tif'), gu, 'near', band=4)
dem_u = warp(OLINDA, os.path.join(TMP, 'dem-u.tif'), gu, 'bilinear')
write('arithmetic-grids-l7-nir-plus-olinda-union-max.tif', nir_u + dem_u, gu, wkt_l7)

# 3. Reprojection: geographic Jacksboro DEM (Int16, EPSG:4326) minus the UTM 16N DEM (Float32),
#    FirstOf extent, MinOf cell size (per axis; the UTM cell in degrees = its extent transformed to
#    EPSG:4326, bounding box of 21 points per edge, / pixel count). The Int16 DEM by nearest, the
#    UTM DEM bilinear through PROJ (gdalwarp -et 0: exact).
gg = grid_of(GEO)
gu16 = grid_of(UTM)
s_utm = osr.SpatialReference()
s_utm.ImportFromEPSG(32616)
s_geo = osr.SpatialReference()
s_geo.ImportFromEPSG(4326)
s_geo.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
s_utm.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
ct = osr.CoordinateTransformation(s_utm, s_geo)
xmin, ymin, xmax, ymax = extent(gu16)
pts = []
for i in range(21):
    t = i / 20
    x = xmin + t * (xmax - xmin)
    y = ymin + t * (ymax - ymin)
    pts += [(x, ymin), (x, ymax), (xmin, y), (xmax, y)]
tp = [ct.TransformPoint(x, y)[:2] for x, y in pts]
bx = [p[0] for p in tp]
by = [p[1] for p in tp]
ucx = (max(bx) - min(bx)) / gu16['w']
ucy = (max(by) - min(by)) / gu16['h']
gm = make_grid(gg, extent(gg), min(gg['cx'], ucx), min(gg['cy'], ucy), 'round')
geo_m = warp(GEO, os.path.join(TMP, 'geo-m.tif'), gm, 'near')
utm_m = warp(UTM, os.path.join(TMP, 'utm-m.tif'), gm, 'bilinear', t_srs='EPSG:4326')
geods = gdal.Open(GEO)
write('arithmetic-grids-geo-minus-utm-minof.tif', geo_m - utm_m, gm, geods.GetProjection())
print('grid 3:', gm)
