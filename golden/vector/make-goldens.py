#!/usr/bin/env python3
"""Reference goldens for VectorField and ContrastBrightness, from NumPy formulations of the spec
(raster-functions.md "VectorField" and "ContrastBrightness"), on the Landsat sample. Appends the
cases to golden/vector/cases.json and golden/radiometric/cases.json (replacing earlier versions of
the same ids). Run from the repository root with /usr/bin/python3 (needs python3-gdal, NumPy).

VectorField, UV -> magnitude/direction (geographic): U = L7 band 4 (NIR), V = band 3 (red) minus 40
(so directions cover all quadrants), in float64:
    mag = hypot(u, v); theta = degrees(arctan2(v, u)) mod 360; dir = (450 - theta) mod 360
and magnitude/direction -> UV with arithmetic angles (AngleReferenceSystem 1):
    u = mag cos(radians(dir)), v = mag sin(radians(dir)), with mag = band 4, dir = 1.5 * band 3.
Stored as Float32 (rasterflow's output type).

ContrastBrightness, per band of L7 bands 3,2,1 (U8), with C = ContrastOffset, B = BrightnessOffset:
    k = 200 v - 25500 + 510 B;  0 < C < 100: k / (2 (100 - C)) + 128;  -100 < C <= 0: k (100 + C) / 20000 + 128
    then clipped to 0..255 and truncated to a byte.
"""
import json
import numpy as np
from osgeo import gdal

gdal.UseExceptions()
SRC = 'golden/data/L7_ETMs.tif'
src = gdal.Open(SRC)
b = {i: src.GetRasterBand(i).ReadAsArray().astype(np.float64) for i in range(1, 7)}


def write(path, bands, dtype):
    drv = gdal.GetDriverByName('GTiff')
    out = drv.Create(path, src.RasterXSize, src.RasterYSize, len(bands), dtype, ['COMPRESS=DEFLATE'])
    out.SetGeoTransform(src.GetGeoTransform())
    out.SetProjection(src.GetProjection())
    for k, a in enumerate(bands):
        out.GetRasterBand(k + 1).WriteArray(a)
    out.FlushCache()


def extract(i):
    return {'rasterFunction': 'ExtractBand', 'rasterFunctionArguments': {'BandIDs': [i]}}


def scaled(i, op, value):
    return {'rasterFunction': 'Arithmetic', 'rasterFunctionArguments': {'Raster': extract(i), 'Raster2': value, 'Operation': op}}


def merge(path, cases):
    existing = json.load(open(path))
    ids = {c['id'] for c in cases}
    json.dump([c for c in existing if c['id'] not in ids] + cases, open(path, 'w'), indent=2)
    open(path, 'a').write('\n')


vector_cases = []
u, v = b[4], b[3] - 40
mag = np.hypot(u, v)
theta = np.mod(np.degrees(np.arctan2(v, u)), 360)
write('golden/vector/vectorfield-uv-to-magdir.tif', [mag.astype(np.float32), np.mod(450 - theta, 360).astype(np.float32)], gdal.GDT_Float32)
vector_cases.append({
    'id': 'vector/vectorfield-uv-to-magdir',
    'rule': {'rasterFunction': 'VectorField', 'rasterFunctionArguments': {'Raster1': extract(3), 'Raster2': scaled(2, 2, 40), 'InputDataType': 'Vector-UV', 'OutputDataType': 'Vector-MagDir', 'AngleReferenceSystem': 0}},
    'inputs': [SRC], 'expected': 'golden/vector/vectorfield-uv-to-magdir.tif', 'kind': 'reference',
    'tolerance': {'abs': 1e-4, 'rel': 1e-6},
    'provenance': {'tool': 'NumPy (float64, stored as Float32)', 'script': 'golden/vector/make-goldens.py',
                   'note': 'U = NIR, V = red - 40; magnitude = hypot, direction clockwise from north = (450 - atan2 degrees) mod 360. abs 1e-4 covers Float32 rounding of angles near 360.'},
})
m, d = b[4], 1.5 * b[3]
write('golden/vector/vectorfield-magdir-to-uv.tif', [(m * np.cos(np.radians(d))).astype(np.float32), (m * np.sin(np.radians(d))).astype(np.float32)], gdal.GDT_Float32)
vector_cases.append({
    'id': 'vector/vectorfield-magdir-to-uv-arithmetic',
    'rule': {'rasterFunction': 'VectorField', 'rasterFunctionArguments': {'Raster1': extract(3), 'Raster2': scaled(2, 3, 1.5), 'InputDataType': 'Vector-MagDir', 'OutputDataType': 'Vector-UV', 'AngleReferenceSystem': 1}},
    'inputs': [SRC], 'expected': 'golden/vector/vectorfield-magdir-to-uv.tif', 'kind': 'reference',
    'tolerance': {'abs': 1e-4, 'rel': 1e-6},
    'provenance': {'tool': 'NumPy (float64, stored as Float32)', 'script': 'golden/vector/make-goldens.py',
                   'note': 'magnitude = NIR, direction = 1.5 x red degrees counter-clockwise from east; u = m cos, v = m sin.'},
})
merge('golden/vector/cases.json', vector_cases)

radiometric_cases = []
for C, B in ((30, -10), (-40, 20)):
    outs = []
    for i in (3, 2, 1):
        k = 200 * b[i] - 25500 + 510 * B
        o = k / (2 * (100 - C)) + 128 if 0 < C < 100 else k * (100 + C) / 20000 + 128
        outs.append(np.trunc(np.clip(o, 0, 255)).astype(np.uint8))
    name = f'contrast-brightness-c{C}-b{B}'
    path = f'golden/radiometric/{name}.tif'
    write(path, outs, gdal.GDT_Byte)
    radiometric_cases.append({
        'id': f'radiometric/{name}',
        'rule': {'rasterFunction': 'ContrastBrightness', 'rasterFunctionArguments': {'ContrastOffset': C, 'BrightnessOffset': B, 'Raster': {'rasterFunction': 'ExtractBand', 'rasterFunctionArguments': {'BandIDs': [2, 1, 0]}}}},
        'inputs': [SRC], 'expected': path, 'kind': 'reference', 'tolerance': {'abs': 0},
        'provenance': {'tool': 'NumPy (float64)', 'script': 'golden/vector/make-goldens.py',
                       'note': 'The spec lookup-table formula applied per pixel in float64, clipped to 0..255 and truncated.'},
    })
merge('golden/radiometric/cases.json', radiometric_cases)
