#!/usr/bin/env python3
"""Reference goldens for the multidimensional pairing (MatchVariable / UnionDimension, seed rule 6)
of CompositeBand, ArgStatistics, WeightedOverlay and VectorField, from NumPy formulations of the
documented behaviour (file headers of src/functions/bands/composite-band.ts,
local/arg-statistics.ts, local/weighted-overlay.ts, vector/vector-field.ts; core/multidim.ts).
Run from the repository root: GDAL_PAM_ENABLED=NO /usr/bin/python3 golden/local/make-goldens-multidim.py
(needs python3-gdal, NumPy). Merges its cases into golden/{bands,local,vector}/cases.json (replacing
earlier versions of the same ids); run it again after golden/local/make-goldens.py, which rewrites
golden/local/cases.json.

Inputs (a 96 x 80 crop of golden/data/L7_ETMs.tif at column 20, row 30; U8, NoData 0 = a missing
slice value, as the multidimensional sources read it):
  md-a.tif  L7 bands 1..6 with holes: bands 3-4 (slice 2002) are 0 in rows 10..19 x cols 10..29,
            every band is 0 in rows 60..69 x cols 70..89 (no slice at all there).
  md-b.tif  L7 bands 6, 5, 4 with band 2 (slice 2003) 0 in rows 30..39 x cols 40..59.
  md-a.json variable `refl`, 2-band slices: 2001 = bands 1-2, 2002 = 3-4, 2003 = 5-6 of md-a.tif.
  md-b.json variable `refl`, 1-band slices: 2002 = band 1, 2003 = band 2, 2004 = band 3 of md-b.tif.
  md-u.json variable `u`, 1-band slices: 2001 = band 1, 2003 = band 5 of md-a.tif.
  md-v.json variable `v`, 1-band slices: 2001 = band 2, 2002 = band 4, 2003 = band 6 of md-a.tif.
Common slices of md-a and md-b: 2002 and 2003 (2001 and 2004 are left out with a warning); of md-u
and md-v: 2001 and 2003 (2002 left out).

Per-slice NoData: a slice is missing at a pixel where a value it needs is 0. In the expected
rasters (Float32) a missing slice holds rasterflow's output NoData value for it (0 for the U8
composite, 255 for ArgStatistics, -32768 for WeightedOverlay) and a pixel with no slice at all is
NaN in every band (the harness reads NaN as NoData: mask 0). A float output's missing slice is NaN
in a valid pixel, which the harness cannot tell from NoData, so the VectorField case pairs slices
without partial holes (only the all-band hole); its per-slice NaN is checked by the unit tests.
"""
import json
import os
import numpy as np
from osgeo import gdal

gdal.UseExceptions()
HERE = 'golden/local'
X0, Y0, W, H = 20, 30, 96, 80
src = gdal.Open('golden/data/L7_ETMs.tif')
L7 = {i: src.GetRasterBand(i).ReadAsArray(X0, Y0, W, H).astype(np.float64) for i in range(1, 7)}
gt = list(src.GetGeoTransform())
gt[0] += X0 * gt[1]
gt[3] += Y0 * gt[5]


def write(path, bands, dtype, nodata=None):
    out = gdal.GetDriverByName('GTiff').Create(path, W, H, len(bands), dtype, ['COMPRESS=DEFLATE'])
    out.SetGeoTransform(gt)
    out.SetProjection(src.GetProjection())
    for k, a in enumerate(bands):
        band = out.GetRasterBand(k + 1)
        if nodata is not None:
            band.SetNoDataValue(nodata)
        band.WriteArray(a)
    out.FlushCache()
    return path


def manifest(path, name, slices):
    doc = {'variables': [{'name': name, 'dimensions': ['StdTime'], 'slices': [
        {'dimensions': {'StdTime': t}, 'path': os.path.basename(f), 'bands': b} for t, f, b in slices]}]}
    with open(path, 'w') as fh:
        json.dump(doc, fh, indent=1)
        fh.write('\n')
    return path


# ---- Inputs.
a = [L7[i].copy() for i in range(1, 7)]
a[2][10:20, 10:30] = 0
a[3][10:20, 10:30] = 0
for k in range(6):
    a[k][60:70, 70:90] = 0
b = [L7[6].copy(), L7[5].copy(), L7[4].copy()]
b[1][30:40, 40:60] = 0
TA = write(f'{HERE}/md-a.tif', [x.astype(np.uint8) for x in a], gdal.GDT_Byte, 0)
TB = write(f'{HERE}/md-b.tif', [x.astype(np.uint8) for x in b], gdal.GDT_Byte, 0)
MA = manifest(f'{HERE}/md-a.json', 'refl', [('2001-01-01', TA, [0, 1]), ('2002-01-01', TA, [2, 3]), ('2003-01-01', TA, [4, 5])])
MB = manifest(f'{HERE}/md-b.json', 'refl', [('2002-01-01', TB, [0]), ('2003-01-01', TB, [1]), ('2004-01-01', TB, [2])])
MU = manifest(f'{HERE}/md-u.json', 'u', [('2001-01-01', TA, [0]), ('2003-01-01', TA, [4])])
MV = manifest(f'{HERE}/md-v.json', 'v', [('2001-01-01', TA, [1]), ('2002-01-01', TA, [3]), ('2003-01-01', TA, [5])])

# Paired slices: (A's two bands, B's band) for 2002 and 2003.
PAIRS = [((a[2], a[3]), b[0]), ((a[4], a[5]), b[1])]
a_any = np.any([x != 0 for x in a], axis=0)  # md-a's mask: some slice valid
b_any = np.any([x != 0 for x in b], axis=0)


def finish(slices, missing, valid_any):
    """Float32 planes: missing slices hold `missing`, pixels with no valid slice NaN."""
    out = []
    for planes, ok in slices:
        for p in planes:
            q = np.where(ok, p, missing).astype(np.float64)
            q[~valid_any] = np.nan
            out.append(q.astype(np.float32))
    return out


def merge(path, cases):
    existing = json.load(open(path))
    ids = {c['id'] for c in cases}
    json.dump([c for c in existing if c['id'] not in ids] + cases, open(path, 'w'), indent=2)
    open(path, 'a').write('\n')


def case(cid, rule, inputs, expected, tol, note):
    return {'id': cid, 'rule': rule, 'inputs': inputs, 'expected': expected, 'kind': 'reference', 'tolerance': {'abs': tol},
            'provenance': {'tool': 'NumPy', 'version': np.__version__, 'script': 'golden/local/make-goldens-multidim.py', 'note': note}}


# ---- CompositeBand: slice s = A's slice bands then B's slice band; missing where any is 0.
slices = []
for (p, q), r in PAIRS:
    ok = (p != 0) & (q != 0) & (r != 0)
    slices.append(((p, q, r), ok))
anyok = np.any([ok for _, ok in slices], axis=0)
exp = write('golden/bands/compositeband-md.tif', finish(slices, 0, anyok), gdal.GDT_Float32)
merge('golden/bands/cases.json', [case(
    'bands/compositeband-multidim-slices',
    {'rasterFunction': 'CompositeBand', 'rasterFunctionArguments': {'Rasters': ['$1', '$2']}},
    [MA, MB], exp, 0,
    'Two multidimensional manifests (2-band slices 2001-2003, 1-band slices 2002-2004): common slices 2002, 2003 composited into 3-band slices; '
    'a slice is missing (0, the shared NoData) where any stacked value is 0; NaN = no slice valid.')])

# ---- ArgStatistics (ArgumentMax, UndefinedClass 100) per slice over [A b1, A b2, B b]: 0 values skipped.
slices = []
for (p, q), r in PAIRS:
    v = np.stack([p, q, r])
    valid = v != 0
    vm = np.where(valid, v, -np.inf)
    best = vm.max(axis=0)
    idx = vm.argmax(axis=0)
    ties = (vm == best).sum(axis=0) > 1
    ok = valid.any(axis=0)
    slices.append(((np.where(ties, 100, idx),), ok))
valid_any = (a_any | b_any) & np.any([ok for _, ok in slices], axis=0)
exp = write(f'{HERE}/argstatistics-md-argmax.tif', finish(slices, 255, valid_any), gdal.GDT_Float32)
local_cases = [case(
    'local/argstatistics-multidim-argmax',
    {'rasterFunction': 'ArgStatistics', 'rasterFunctionArguments': {'Rasters': ['$1', '$2'], 'ArgStatisticsType': 0, 'UndefinedClass': 100}},
    [MA, MB], f'{HERE}/argstatistics-md-argmax.tif', 0,
    'Per common slice (2002, 2003) the argmax over A\'s two slice bands (indexes 0, 1) and B\'s band (2); 0 = missing value, skipped; '
    'ties -> 100; a slice with no value -> 255 (U8 NoData); NaN = no slice valid.')]

# ---- WeightedOverlay per slice band: A's band j with B's (broadcast) band, influences 60/40.
RA = [(1, 50, 1), (51, 80, 5), (81, 120, 9)]   # 121..255 RESTRICTED, missing -> NoData
RB = [(1, 40, 2), (41, 90, 6), (91, 255, 8)]   # missing -> NODATA entry 4


def remap(x, table):
    out = np.full(x.shape, np.nan)
    for lo, hi, v in reversed(table):
        out[(x >= lo) & (x <= hi)] = v
    return out


slices = []
for (p, q), r in PAIRS:
    rb = np.where(r == 0, 4, remap(r, RB))
    for s in (p, q):
        ra = remap(s, RA)
        restricted = (s >= 121) & (s <= 255)
        acc = 0 + ra * 0.6 + rb * 0.4
        val = np.where(restricted, 0, np.floor(acc + 0.5))
        ok = restricted | ((s != 0) & ~np.isnan(ra))
        slices.append(((val,), ok))
valid_any = np.any([ok for _, ok in slices], axis=0)
exp = write(f'{HERE}/weightedoverlay-md.tif', finish(slices, -32768, valid_any), gdal.GDT_Float32)
local_cases.append(case(
    'local/weightedoverlay-multidim',
    {'rasterFunction': 'WeightedOverlay', 'rasterFunctionArguments': {
        'Rasters': ['$1', '$2'], 'Influences': [60, 40], 'EvalFrom': 1, 'EvalTo': 9,
        'Remaps': ['1 50 1, 51 80 5, 81 120 9, 121 255 RESTRICTED', '1 40 2, 41 90 6, 91 255 8, NODATA 4']}},
    [MA, MB], f'{HERE}/weightedoverlay-md.tif', 0,
    'One overlay per slice band (A\'s 2-band slices, B\'s 1-band slice broadcast): round(0.6 remapA + 0.4 remapB) half up (never .5 here); '
    'RESTRICTED -> 0; a missing A value (no NODATA entry) makes the slice band NoData (-32768), a missing B value takes NODATA 4; NaN = no slice band valid.'))
merge(f'{HERE}/cases.json', local_cases)

# ---- VectorField (MatchVariable false): u = md-u slice, v = md-v slice (A bands 1/2 and 5/6); magnitude, geographic direction.
slices = []
for u, v in ((a[0], a[1]), (a[4], a[5])):
    ok = (u != 0) & (v != 0)
    mag = np.hypot(u, v)
    theta = np.mod(np.degrees(np.arctan2(v, u)), 360)
    slices.append(((mag, np.mod(450 - theta, 360)), ok))
valid_any = np.any([ok for _, ok in slices], axis=0)
exp = write('golden/vector/vectorfield-md.tif', finish(slices, np.nan, valid_any), gdal.GDT_Float32)
merge('golden/vector/cases.json', [case(
    'vector/vectorfield-multidim-slices',
    {'rasterFunction': 'VectorField', 'rasterFunctionArguments': {'Raster1': '$1', 'Raster2': '$2', 'MatchVariable': False}},
    [MU, MV], 'golden/vector/vectorfield-md.tif', 1e-4,
    'Variables u and v paired by position (MatchVariable false); common slices 2001, 2003 (v 2002 left out); magnitude = hypot, direction = (450 - atan2 degrees) mod 360; '
    'NaN = no slice valid (the all-band hole). abs 1e-4 covers Float32 rounding.')])
print('multidimensional goldens written')
