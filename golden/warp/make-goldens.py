#!/usr/bin/python3
"""Reference rasters for the reprojection warp (src/graph/warp.ts, `rasterflow render --t_srs`).

GDAL 3.6 `gdalwarp` with its defaults (approximate transformer, -et 0.125; no -wo options) on the
jacksboro DEM (UTM 16N, 75 m, Float32, no NoData) to EPSG:3857 and EPSG:4326, and on band 1 of the
Landsat 7 image (SIRGAS 2000 / UTM 25S, Byte) to EPSG:4326, with -te/-ts inside the data (so every
output pixel samples the raster) and output pixels about as large as the input's (so gdalwarp's
scale is >= 0.95 and its 4-sample bilinear/cubic kernels apply, see warp.ts), for -r near,
bilinear and cubic. `-dstalpha` marks pixels gdalwarp left empty. Also records gdalwarp's
default output grid (no -te/-tr/-ts) for `suggestedGrid`, in grids.json.

`reference` goldens: never regenerate them from rasterflow's output.
Run: /usr/bin/python3 golden/warp/make-goldens.py   (needs gdalwarp 3.6 and its Python bindings)
"""
import json
import os
import subprocess

from osgeo import gdal

gdal.UseExceptions()
os.environ['GDAL_PAM_ENABLED'] = 'NO'

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEM = os.path.join(ROOT, 'golden', 'data', 'jacksboro_fault_dem_utm16n_75m.tif')
L7 = os.path.join(ROOT, 'golden', 'data', 'L7_ETMs.tif')

# (name, source, band, t_srs, te (xmin ymin xmax ymax), ts (w h))
CASES = [
    # DEM extent in 3857: x -9394... to -9359..., y 4374... to 4401...; inside, 91 m pixels ~ 75 m / cos(36.6)
    ('dem-3857', DEM, 1, 'EPSG:3857', (-9390000.0, 4378000.0, -9363000.0, 4400000.0), (290, 236)),
    # DEM in 4326: 84.39W..84.10W, 36.46N..36.72N; 0.0008 deg x 0.00068 deg
    ('dem-4326', DEM, 1, 'EPSG:4326', (-84.39, 36.46, -84.10, 36.72), (362, 382)),
    # Landsat band 1 (28.5 m) in 4326 inside its extent
    ('l7b1-4326', L7, 1, 'EPSG:4326', 'inside', None),
    # gdalwarp's default grid (no -te/-ts): the whole DEM with its rotated edges (empty corners)
    ('dem-3857-default', DEM, 1, 'EPSG:3857', None, None),
]
METHODS = ['near', 'bilinear', 'cubic']


def l7_window():
    """A window inside the Landsat image's footprint in EPSG:4326, at about its resolution."""
    info = gdal.Info(L7, format='json')
    corners = info['wgs84Extent']['coordinates'][0]
    xs = [c[0] for c in corners]
    ys = [c[1] for c in corners]
    # inset 10 % each side
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    dx, dy = (x1 - x0) * 0.1, (y1 - y0) * 0.1
    te = (round(x0 + dx, 4), round(y0 + dy, 4), round(x1 - dx, 4), round(y1 - dy, 4))
    res = 0.00026  # ~28.8 m
    ts = (int(round((te[2] - te[0]) / res)), int(round((te[3] - te[1]) / res)))
    return te, ts


def main():
    cases = []
    for name, src, band, t_srs, te, ts in CASES:
        if te == 'inside':
            te, ts = l7_window()
        single = src
        if band is not None and gdal.Open(src).RasterCount > 1:
            single = os.path.join('/tmp', f'warp-golden-{name}-b{band}.tif')
            subprocess.run(['gdal_translate', '-q', '-b', str(band), src, single], check=True)
        for r in METHODS:
            out = os.path.join(HERE, f'{name}-{r}.tif')
            if os.path.exists(out):
                os.remove(out)
            grid = [] if te is None else ['-te', *map(repr, te), '-ts', *map(str, ts)]
            cmd = ['gdalwarp', '-q', '-t_srs', t_srs, *grid, '-r', r, '-dstalpha', '-co', 'COMPRESS=DEFLATE', single, out]
            subprocess.run(cmd, check=True)
            ds = gdal.Open(out)
            gt = ds.GetGeoTransform()
            # the grid gdalwarp chose (the given one, or its default)
            te_out = [gt[0], gt[3] + ds.RasterYSize * gt[5], gt[0] + ds.RasterXSize * gt[1], gt[3]]
            ts_out = [ds.RasterXSize, ds.RasterYSize]
            ds = None
            cases.append({'id': f'{name}-{r}', 'source': os.path.relpath(src, ROOT), 'band': band, 't_srs': t_srs,
                          'te': te_out, 'ts': ts_out, 'default': te is None, 'r': r, 'expected': os.path.relpath(out, ROOT),
                          'command': ' '.join(['gdalwarp', *cmd[2:-2], os.path.basename(src) + (f' (band {band})' if single != src else ''), os.path.basename(out)])})
    grids = []
    for src, t_srs in [(DEM, 'EPSG:3857'), (DEM, 'EPSG:4326'), (L7, 'EPSG:4326')]:
        out = '/tmp/warp-golden-default.tif'
        if os.path.exists(out):
            os.remove(out)
        subprocess.run(['gdalwarp', '-q', '-t_srs', t_srs, '-of', 'GTiff', src, out], check=True)
        ds = gdal.Open(out)
        gt = ds.GetGeoTransform()
        grids.append({'source': os.path.relpath(src, ROOT), 't_srs': t_srs, 'geotransform': list(gt),
                      'width': ds.RasterXSize, 'height': ds.RasterYSize})
        ds = None
    with open(os.path.join(HERE, 'cases.json'), 'w') as f:
        json.dump({'tool': 'gdalwarp', 'version': gdal.__version__, 'script': 'golden/warp/make-goldens.py',
                   'cases': cases, 'defaultGrids': grids}, f, indent=2)
        f.write('\n')


if __name__ == '__main__':
    main()
