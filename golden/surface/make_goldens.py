#!/usr/bin/env python3
"""Expected rasters for golden/surface/ (SurfaceParamFunction and ElevationVoidFill).

Run by make-goldens.sh, which first runs GRASS r.param.scale and gdaldem into a temporary directory
(argv[1]). This script converts those outputs into rasterflow's conventions, computes the
parameters that have no outside tool with an independent NumPy implementation of the spec's
formulas, punches the documented voids for ElevationVoidFill and fills them with a NumPy/SciPy
implementation of the documented method, and writes the expected rasters and cases.json.

Conventions (spec raster-functions.md "SurfaceParamFunction", Minar et al. 2020 signs):
  z = r x^2/2 + t y^2/2 + s x y + p x + q y + c, x east, y NORTH, w = p^2 + q^2, m = 1 + w.
GRASS r.param.scale (Wood 1996; raster/r.param.scale/param.c) fits z = a x^2 + b y^2 + c xy + d x + e y + f
with y SOUTH (row index), unweighted least squares over the window when exponent=0 and without -c,
which is rasterflow's LocalSurface 1. Hence r = 2a, t = 2b, s = -c, p = d, q = -e, and
  slope  = atan(sqrt(d^2 + e^2))                       = rasterflow slope (degrees)
  aspect = atan2(e, d), degrees, 0 = downslope to the WEST, counter-clockwise through north
           -> compass azimuth of descent = atan2(-cos G, sin G); GRASS gives 0 for flat windows
           where rasterflow gives -1 (slope == 0 -> -1)
  profc  = -2(a d^2 + b e^2 + c d e) / ((d^2+e^2)(1+d^2+e^2)^1.5)  = spec Profile (2), same sign
  planc  =  2(b d^2 + a e^2 - c d e) / (d^2+e^2)^1.5                = -(spec Plan (6)): opposite sign
  crosc  = -2(b d^2 + a e^2 - c d e) / (d^2+e^2)                    = spec Tangential (3) * sqrt(m)
  minic, maxic = -a - b -+ sqrt((a-b)^2 + c^2)                      (unnormalised principal values)
so Tangential = crosc / sqrt(m), Plan = -planc, Mean = (minic + maxic + w crosc) / (2 m^1.5),
Gaussian = minic maxic / m^2, Casorati = sqrt(2 Mean^2 - Gaussian). GRASS curvatures are per map
unit (1/m here), like rasterflow's. GRASS accumulates its normal matrix in single precision, so its
coefficients carry relative errors near 1e-7: the tolerances below allow for that.
GRASS 8.2.1 r.param.scale also returns wrong values for a whole map in some runs (about one in
three here, any window size): every GRASS map is checked against GRASS's own formulas on NumPy
coefficients (`check` mode below) and recomputed by make-goldens.sh until it agrees.
Contour geodesic torsion has no GRASS counterpart (its sign needs the principal directions), the
biquadratic curvatures and UseAdaptiveScale have none either, and GRASS has no geographic mode:
those cases use the NumPy reference in this file (weights from numpy.linalg.pinv of the design
matrix, windows from sliding_window_view), written independently of rasterflow's TypeScript.
"""
import json
import os
import sys

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from osgeo import gdal, osr
from scipy import ndimage

gdal.UseExceptions()
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# 'check' (validate GRASS outputs, print the bad ones), 'build' (every case), or 'geographic' (only the
# two geographic-DEM cases, which need no GRASS: rewrites their rasters and their entries in cases.json)
MODE = sys.argv[1]
TMP = sys.argv[2] if len(sys.argv) > 2 else None
UTM = 'golden/data/jacksboro_fault_dem_utm16n_75m.tif'
GEO = 'golden/data/jacksboro_fault_dem_3arcsec.tif'
VOIDS = 'golden/surface/jacksboro-utm-voids-160.tif'
GRASS_VERSION = sys.argv[3] if MODE == 'build' and len(sys.argv) > 3 else 'GRASS GIS 8.2'
GDAL_VERSION = gdal.VersionInfo('--version')
DEG = 180 / np.pi


def read(path):
    ds = gdal.Open(path)
    b = ds.GetRasterBand(1)
    a = b.ReadAsArray().astype(np.float64)
    nd = b.GetNoDataValue()
    if nd is not None:
        a[a == nd] = np.nan
    return a, ds


def write(name, arr, like, dtype=gdal.GDT_Float32, nodata=float('nan')):
    path = os.path.join(HERE, name)
    drv = gdal.GetDriverByName('GTiff')
    pred = '3' if dtype in (gdal.GDT_Float32, gdal.GDT_Float64) else '2'
    ds = drv.Create(path, arr.shape[1], arr.shape[0], 1, dtype, ['COMPRESS=DEFLATE', f'PREDICTOR={pred}', 'ZLEVEL=9'])
    ds.SetGeoTransform(like.GetGeoTransform())
    ds.SetProjection(like.GetProjection())
    b = ds.GetRasterBand(1)
    b.SetNoDataValue(nodata)
    out = arr.copy()
    if not np.isnan(nodata):
        out[np.isnan(out)] = nodata
    b.WriteArray(out)
    ds = None
    return f'golden/surface/{name}'


CASES = []


def coefficients(z, hx, hy, surface, lx, ly):
    """p, q, r, t, s (y north) for every interior pixel; NaN on the border of the window half-widths."""
    ky, kx = 2 * hy + 1, 2 * hx + 1
    win = sliding_window_view(z, (ky, kx))  # [row, col, wy, wx], wy = 0 is north
    u = np.arange(-hx, hx + 1)[None, :].repeat(ky, 0) * lx  # metres east
    v = -np.arange(-hy, hy + 1)[:, None].repeat(kx, 1) * ly  # metres north
    out = [np.full(z.shape, np.nan) for _ in range(5)]
    if surface == 1:
        X = np.stack([u.ravel(), v.ravel(), u.ravel() ** 2 / 2, v.ravel() ** 2 / 2, (u * v).ravel(), np.ones(u.size)], 1)
        pinv = np.linalg.pinv(X)  # 6 x K
        flat = win.reshape(win.shape[0], win.shape[1], -1)
        flat = flat - win[..., hy, hx][..., None]  # relative to the centre (exact zeros on flat windows)
        beta = flat @ pinv.T
        for i in range(5):
            out[i][hy:z.shape[0] - hy, hx:z.shape[1] - hx] = beta[..., i]
    else:
        c = win[..., hy, hx]
        e, w_, n_, s_ = win[..., hy, -1], win[..., hy, 0], win[..., 0, hx], win[..., -1, hx]
        ne, nw, se, sw = win[..., 0, -1], win[..., 0, 0], win[..., -1, -1], win[..., -1, 0]
        L, M = hx * lx, hy * ly
        vals = [(e - w_) / (2 * L), (n_ - s_) / (2 * M), (e + w_ - 2 * c) / L ** 2, (n_ + s_ - 2 * c) / M ** 2,
                (ne + sw - nw - se) / (4 * L * M)]
        for i in range(5):
            out[i][hy:z.shape[0] - hy, hx:z.shape[1] - hx] = vals[i]
    return out




def grass_check(specs):
    """GRASS 8.2.1 r.param.scale sometimes returns wrong values for a whole map (seen in about one run
    in three; presumably uninitialised memory in its normal-equation solve). Every GRASS map is
    therefore compared with GRASS's own formulas (param.c) evaluated on NumPy least-squares
    coefficients; make-goldens.sh reruns the maps printed here until all agree."""
    dem = read(os.path.join(ROOT, UTM))[0]
    for spec in specs:
        size, method, zscale = spec.split()
        h = (int(size) - 1) // 2
        zs = float(zscale)
        p, q, r, t, s_ = [x * zs for x in coefficients(dem, h, h, 1, 75.0, 75.0)]
        a, b, c, d, e = r / 2, t / 2, -s_, p, -q
        with np.errstate(divide='ignore', invalid='ignore'):
            ref = {
                'slope': np.arctan(np.sqrt(d * d + e * e)) * DEG,
                'aspect': np.arctan2(e, d) * DEG,
                'profc': -2 * (a * d * d + b * e * e + c * e * d) / ((e * e + d * d) * (1 + d * d + e * e) ** 1.5),
                'planc': 2 * (b * d * d + a * e * e - c * d * e) / (e * e + d * d) ** 1.5,
                'crosc': -2 * (b * d * d + a * e * e - c * d * e) / (d * d + e * e),
                'minic': -a - b - np.sqrt((a - b) ** 2 + c * c),
                'maxic': -a - b + np.sqrt((a - b) ** 2 + c * c),
            }[method]
        f = os.path.join(TMP, f'grass{size}{"" if zs == 1 else "z" + zscale}_{method}.tif')
        if not os.path.exists(f):
            print(spec)
            continue
        g = read(f)[0][h:-h, h:-h]
        ref = ref[h:-h, h:-h]
        if method in ('slope', 'aspect'):
            diff = np.abs(g - ref)
            if method == 'aspect':
                diff = np.minimum(diff, 360 - diff)
            ok = (diff <= 1e-4) | (np.hypot(d, e)[h:-h, h:-h] < 1e-9)
        else:
            ok = (np.abs(g - ref) <= 1e-5 * np.abs(ref) + 1e-12) | ~np.isfinite(ref)
        if not ok.all():
            print(spec)
            print(f'{spec}: {int((~ok).sum())} pixels disagree with NumPy', file=sys.stderr)


if MODE == 'check':
    grass_check(sys.argv[3:])
    sys.exit(0)



def case(id_, args, expected, tolerance, edge, provenance, inputs=(UTM,), function='SurfaceParamFunction'):
    CASES.append({
        'id': f'surface/{id_}',
        'rule': {'rasterFunction': function, 'rasterFunctionArguments': args},
        'inputs': list(inputs),
        'expected': expected,
        'kind': 'reference',
        'compare': 'values',
        'tolerance': tolerance,
        'edge': edge,
        'provenance': provenance,
    })


def grass(note, size, methods, zscale=1):
    z = f' zscale={zscale}' if zscale != 1 else ''
    cmds = '; '.join(f'r.param.scale input=dem output={m} method={m} size={size}{z}' for m in methods)
    return {
        'tool': 'GRASS r.param.scale (+ NumPy conversion)',
        'version': GRASS_VERSION,
        'command': f'r.in.gdal {UTM} output=dem; {cmds}; r.out.gdal type=Float64',
        'script': 'golden/surface/make-goldens.sh + golden/surface/make_goldens.py',
        'note': note + ' Each GRASS map was checked against GRASS\'s own formulas (param.c) on NumPy least-squares '
                       'coefficients and recomputed when r.param.scale 8.2.1 returned a wrong map (it intermittently does).',
    }


def numpy_prov(note, data=UTM):
    return {
        'tool': 'NumPy reference (golden/surface/make_goldens.py)',
        'version': f'NumPy {np.__version__}',
        'command': f'python3 golden/surface/make_goldens.py on {data}',
        'script': 'golden/surface/make-goldens.sh + golden/surface/make_goldens.py',
        'note': note,
    }


# Tolerances (measured max |diff| in the report): degrees, two Float32 roundings (< 8e-6 below 90) plus GRASS's
# single-precision normal matrix (~1e-7 relative); aspect up to 360 (two roundings < 3.1e-5) plus the convergence
# lattice (< 1e-5); curvatures relative (single-precision GRASS, ratios such as plan curvature near flat cells).
TOL_DEG = {'abs': 2e-5}
TOL_ASPECT = {'abs': 1e-4}
TOL_CURV = {'abs': 1e-9, 'rel': 1e-5}


def parameter(kind, p, q, r, t, s):
    w = p * p + q * q
    m = 1 + w
    with np.errstate(divide='ignore', invalid='ignore'):
        if kind == 'slope':
            return np.arctan(np.sqrt(w)) * DEG
        if kind == 'torsion':
            return np.where(w == 0, 0, (p * q * (r - t) - (p * p - q * q) * s) / (w * m))
        if kind == 'profile':
            return np.where(w == 0, 0, -(p * p * r + 2 * p * q * s + q * q * t) / (w * m ** 1.5))
        if kind == 'mean':
            return -((1 + q * q) * r - 2 * p * q * s + (1 + p * p) * t) / (2 * m ** 1.5)
    raise ValueError(kind)


def geographic_cases():
    """The geographic DEM: metre cell sizes per row from pyproj's Geod (GeographicLib) on the DEM's own ellipsoid:
    Lx = the geodesic length of one cell along the row centre's parallel, Ly = the meridian arc between the row's
    edges. (Earlier versions of these cases used 111320 cos(lat) x 110574 m per degree, a spherical shortcut 0.35 % short
    north-south here; rasterflow now has one ellipsoidal geodesy for every function.)"""
    import pyproj
    geo, geo_ds = read(os.path.join(ROOT, GEO))
    srs = osr.SpatialReference()
    srs.ImportFromWkt(geo_ds.GetProjection())
    a, rf = srs.GetSemiMajor(), srs.GetInvFlattening()
    geod = pyproj.Geod(a=a, rf=rf)
    ggt = geo_ds.GetGeoTransform()
    dlon, dlat = ggt[1], -ggt[5]
    lon0 = ggt[0]
    lat = ggt[3] + (np.arange(geo.shape[0]) + 0.5) * ggt[5]
    geo_slope = np.full(geo.shape, np.nan)
    geo_mean = np.full(geo.shape, np.nan)
    for row in range(1, geo.shape[0] - 1):
        lx = geod.inv(lon0, lat[row], lon0 + dlon, lat[row])[2]
        ly = geod.inv(lon0, lat[row] - dlat / 2, lon0, lat[row] + dlat / 2)[2]
        c = coefficients(geo[row - 1:row + 2], 1, 1, 1, lx, ly)
        geo_slope[row] = parameter('slope', *[a_[1] for a_ in c])
        geo_mean[row] = parameter('mean', *[a_[1] for a_ in c])
    prov = lambda note: {
        'tool': 'NumPy reference with pyproj Geod (golden/surface/make_goldens.py)',
        'version': f'NumPy {np.__version__}, pyproj {pyproj.__version__} (PROJ {pyproj.proj_version_str})',
        'command': f'python3 golden/surface/make_goldens.py geographic (on {GEO})',
        'script': 'golden/surface/make-goldens.sh + golden/surface/make_goldens.py',
        'note': note,
    }
    cells = (f'per-row metre cell sizes on the DEM\'s ellipsoid (a = {a}, 1/f = {rf}) from pyproj Geod: Lx = the geodesic '
             'length of one cell along the row centre\'s parallel, Ly = the meridian arc between the row\'s edges')
    case('geographic-slope-3x3', {}, write('geo-slope-3x3.tif', geo_slope, geo_ds), TOL_DEG, 1,
         prov(f'Geographic DEM (EPSG:4326, Int16): {cells}; GRASS has no geographic mode, so NumPy reference.'), inputs=(GEO,))
    case('geographic-mean-3x3', {'SurfaceCalculation': 1}, write('geo-mean-3x3.tif', geo_mean, geo_ds), TOL_CURV, 1,
         prov(f'Geographic DEM, mean curvature (1/m), NumPy reference; {cells}.'), inputs=(GEO,))


if MODE == 'geographic':
    geographic_cases()
    path = os.path.join(HERE, 'cases.json')
    with open(path) as f:
        old = json.load(f)
    fresh = {c['id']: c for c in CASES}
    merged = [fresh.pop(c['id'], c) for c in old] + list(fresh.values())
    with open(path, 'w') as f:
        json.dump(merged, f, indent=2)
        f.write('\n')
    print(len(CASES), 'geographic cases rewritten')
    sys.exit(0)


# ---- GRASS-derived SurfaceParamFunction cases (UTM DEM, Float32, 75 m, no NoData)

dem, dem_ds = read(os.path.join(ROOT, UTM))


def grass_params(size, zscale=1):
    suffix = f'{size}' + ('' if zscale == 1 else f'z{zscale}')
    g = {}
    for m in ['slope', 'aspect', 'profc', 'planc', 'crosc', 'minic', 'maxic']:
        f = os.path.join(TMP, f'grass{suffix}_{m}.tif')
        if os.path.exists(f):
            g[m] = read(f)[0]
    n = (size - 1) // 2
    edge = np.zeros(dem.shape, bool)
    edge[:n, :] = edge[-n:, :] = edge[:, :n] = edge[:, -n:] = True
    for k in g:
        g[k][edge] = np.nan  # GRASS leaves the border NULL (and repeats a row at the bottom): not compared
    return g


def converted(g):
    slope = g['slope']
    w = np.tan(slope / DEG) ** 2
    m = 1 + w
    G = g['aspect'] / DEG
    aspect = np.mod(np.arctan2(-np.cos(G), np.sin(G)) * DEG, 360)
    aspect[slope == 0] = -1
    out = {'slope': slope, 'percent': 100 * np.tan(slope / DEG), 'aspect': aspect}
    if 'crosc' in g:
        out['profile'] = g['profc']
        out['plan'] = -g['planc']
        out['tangential'] = g['crosc'] / np.sqrt(m)
        H = (g['minic'] + g['maxic'] + w * g['crosc']) / (2 * m ** 1.5)
        K = g['minic'] * g['maxic'] / m ** 2
        out['mean'] = H
        out['gaussian'] = K
        out['casorati'] = np.sqrt(np.maximum(2 * H * H - K, 0))
    return out


g3 = converted(grass_params(3))
g7 = converted(grass_params(7))
gz = converted(grass_params(3, 0.3048))

# Grid convergence with PROJ (through GDAL's osr): the grid azimuth of true north at every pixel centre.
utm_srs = osr.SpatialReference()
utm_srs.ImportFromWkt(dem_ds.GetProjection())
wgs = osr.SpatialReference()
wgs.ImportFromEPSG(4326)
for s in (utm_srs, wgs):
    s.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
to_geo = osr.CoordinateTransformation(utm_srs, wgs)
to_utm = osr.CoordinateTransformation(wgs, utm_srs)
gt = dem_ds.GetGeoTransform()
H_, W_ = dem.shape
cols, rows = np.meshgrid(np.arange(W_), np.arange(H_))
xs = gt[0] + (cols + 0.5) * gt[1]
ys = gt[3] + (rows + 0.5) * gt[5]
ll = np.array(to_geo.TransformPoints(np.stack([xs.ravel(), ys.ravel()], 1).tolist()))
d = 1e-5
north = np.array(to_utm.TransformPoints(np.stack([ll[:, 0], ll[:, 1] + d], 1).tolist()))
south = np.array(to_utm.TransformPoints(np.stack([ll[:, 0], ll[:, 1] - d], 1).tolist()))
theta_n = (np.arctan2(north[:, 0] - south[:, 0], north[:, 1] - south[:, 1]) * DEG).reshape(dem.shape)

EDGE_NOTE = 'GRASS leaves the {n}-cell border NULL; rasterflow copies the nearest full window there (spec 1.6), so the border is excluded.'

case('slope-3x3-degree', {}, write('utm-slope-3x3-degree.tif', g3['slope'], dem_ds), TOL_DEG, 1,
     grass('Slope, quadratic 3x3 (defaults). ' + EDGE_NOTE.format(n=1), 3, ['slope']))
case('slope-3x3-percent', {'SurfaceCalculation': 4, 'SlopeType': 2}, write('utm-slope-3x3-percent.tif', g3['percent'], dem_ds),
     {'abs': 1e-4, 'rel': 1e-6}, 1, grass('Percent rise = 100 tan(GRASS slope). ' + EDGE_NOTE.format(n=1), 3, ['slope']))
case('slope-3x3-zunit-feet', {'ZUnit': 'Feet'}, write('utm-slope-3x3-zunit-feet.tif', gz['slope'], dem_ds), TOL_DEG, 1,
     grass('ZUnit Feet: z x 0.3048 (GRASS zscale=0.3048). ' + EDGE_NOTE.format(n=1), 3, ['slope'], 0.3048))
case('aspect-3x3-grid', {'SurfaceCalculation': 5, 'ProjectAzimuths': True}, write('utm-aspect-3x3-grid.tif', g3['aspect'], dem_ds),
     TOL_ASPECT, 1,
     grass('ProjectAzimuths true: grid azimuths. GRASS aspect G (0 = facing west, counter-clockwise) -> compass '
           'atan2(-cos G, sin G); flat (slope 0) -> -1. ' + EDGE_NOTE.format(n=1), 3, ['slope', 'aspect']))
true_aspect = np.where(g3['aspect'] == -1, -1, np.mod(g3['aspect'] - theta_n, 360))
case('aspect-3x3-true-north', {'SurfaceCalculation': 5}, write('utm-aspect-3x3-true-north.tif', true_aspect, dem_ds),
     TOL_ASPECT, 1,
     grass('Default ProjectAzimuths false: true-north azimuths = grid azimuth minus the grid azimuth of true north, '
           'computed independently per pixel with PROJ through GDAL osr (UTM -> WGS 84 -> +-1e-5 degree of latitude). '
           'rasterflow interpolates the convergence from a 65 x 65 lattice computed with proj4js. ' + EDGE_NOTE.format(n=1),
           3, ['slope', 'aspect']))
for key, calc, name, extra in [
    ('profile', 2, 'Profile curvature = GRASS profc (same sign).', []),
    ('plan', 6, 'Plan curvature = -GRASS planc (GRASS: positive = concave contours).', []),
    ('tangential', 3, 'Tangential curvature = GRASS crosc / sqrt(1 + tan^2 slope).', ['slope']),
    ('mean', 1, 'Mean curvature = (minic + maxic + w crosc) / (2 m^1.5), w = tan^2 slope.', ['slope', 'crosc', 'minic', 'maxic']),
    ('gaussian', 8, 'Gaussian curvature = minic maxic / m^2.', ['slope', 'minic', 'maxic']),
    ('casorati', 9, 'Casorati curvature = sqrt(2 H^2 - K) from the mean and Gaussian above.', ['slope', 'crosc', 'minic', 'maxic']),
]:
    methods = sorted(set(['profc' if key == 'profile' else 'planc' if key == 'plan' else 'crosc'] + extra))
    case(f'{key}-3x3', {'SurfaceCalculation': calc}, write(f'utm-{key}-3x3.tif', g3[key], dem_ds),
         TOL_CURV, 1, grass(name + ' Units 1/m (Gaussian 1/m^2). ' + EDGE_NOTE.format(n=1), 3, methods))
for key, calc in [('slope', 4), ('profile', 2), ('mean', 1)]:
    tol = TOL_DEG if key == 'slope' else TOL_CURV
    case(f'{key}-7x7', {'SurfaceCalculation': calc, 'AnalysisScaleWithUnits': '225 Meters'}, write(f'utm-{key}-7x7.tif', g7[key], dem_ds),
         tol, 3, grass(f'AnalysisScaleWithUnits 225 Meters = 3 cells: 7x7 window (GRASS size=7). ' + EDGE_NOTE.format(n=3), 7,
                       ['slope', 'profc'] if key != 'mean' else ['slope', 'crosc', 'minic', 'maxic']))

# ---- gdaldem Zevenbergen-Thorne = LocalSurface 2 at 3x3 (slope and aspect)

zt_slope = read(os.path.join(TMP, 'zt-slope.tif'))[0]
zt_aspect = read(os.path.join(TMP, 'zt-aspect.tif'))[0]
zt_aspect[np.isnan(zt_aspect) & ~np.isnan(zt_slope)] = -1  # gdaldem: flat -> NoData; rasterflow: -1
for a in (zt_slope, zt_aspect):
    a[0, :] = a[-1, :] = a[:, 0] = a[:, -1] = np.nan
gdal_prov = lambda cmd, note: {  # noqa: E731
    'tool': 'gdaldem', 'version': GDAL_VERSION, 'command': cmd,
    'script': 'golden/surface/make-goldens.sh + golden/surface/make_goldens.py', 'note': note,
}
case('slope-3x3-biquadratic', {'LocalSurface': 2}, write('utm-slope-3x3-biquadratic.tif', zt_slope, dem_ds), TOL_DEG, 1,
     gdal_prov(f'gdaldem slope -alg ZevenbergenThorne {UTM}', 'Biquadratic 3x3 = Zevenbergen-Thorne gradient; gdaldem leaves the ring NoData.'))
case('aspect-3x3-biquadratic-grid', {'SurfaceCalculation': 5, 'LocalSurface': 2, 'ProjectAzimuths': True},
     write('utm-aspect-3x3-biquadratic-grid.tif', zt_aspect, dem_ds), TOL_ASPECT, 1,
     gdal_prov(f'gdaldem aspect -alg ZevenbergenThorne {UTM}',
               'Grid azimuth of descent, 0 = north, clockwise (same convention); gdaldem flat -> NoData, here -1.'))

# ---- NumPy reference (independent of rasterflow's TypeScript)


torsion = parameter('torsion', *coefficients(dem, 1, 1, 1, 75, 75))
case('torsion-3x3', {'SurfaceCalculation': 7}, write('utm-torsion-3x3.tif', torsion, dem_ds), TOL_CURV, 1,
     numpy_prov('Contour geodesic torsion (pq(r - t) - (p^2 - q^2) s) / (w m): no outside tool computes it with its sign, '
                'so this is an independent NumPy least-squares implementation of the spec formula.'))
bq5 = coefficients(dem, 2, 2, 2, 75, 75)
case('mean-5x5-biquadratic', {'SurfaceCalculation': 1, 'LocalSurface': 2, 'AnalysisScaleWithUnits': '150 Meters'},
     write('utm-mean-5x5-biquadratic.tif', parameter('mean', *bq5), dem_ds), TOL_CURV, 2,
     numpy_prov('Biquadratic (Zevenbergen-Thorne through the 9 points at 0 and +-2 cells), mean curvature; NumPy reference.'))
case('profile-5x5-biquadratic', {'SurfaceCalculation': 2, 'LocalSurface': 2, 'AnalysisScaleWithUnits': '150 Meters'},
     write('utm-profile-5x5-biquadratic.tif', parameter('profile', *bq5), dem_ds), TOL_CURV, 2,
     numpy_prov('Biquadratic at +-2 cells, profile curvature; NumPy reference.'))

# Cross-check of the NumPy reference against GRASS (printed, not stored).
np_slope = parameter('slope', *coefficients(dem, 1, 1, 1, 75, 75))
print('NumPy vs GRASS slope 3x3, max |diff| deg:', np.nanmax(np.abs(np_slope - g3['slope'])))

# UseAdaptiveScale (rasterflow's documented rule, surface-param.ts): J = 3 (225 m); sigma_j = sqrt(RSS_j / (cells - 6));
# the largest j with sigma_j <= 2 sigma_1 + 1e-6 m, else 1; slope from the quadratic at that j.
J = 3
sig = {}
coef = {}
for j in range(1, J + 1):
    k = 2 * j + 1
    u = np.arange(-j, j + 1)[None, :].repeat(k, 0) * 75.0
    v = -np.arange(-j, j + 1)[:, None].repeat(k, 1) * 75.0
    X = np.stack([u.ravel(), v.ravel(), u.ravel() ** 2 / 2, v.ravel() ** 2 / 2, (u * v).ravel(), np.ones(u.size)], 1)
    win = sliding_window_view(dem, (k, k)).reshape(dem.shape[0] - 2 * j, dem.shape[1] - 2 * j, -1)
    zc = win - win[..., (k * k) // 2][..., None]  # relative to the centre, as both implementations do
    beta = zc @ np.linalg.pinv(X).T
    rss = ((zc - beta @ X.T) ** 2).sum(-1)
    full = lambda a: np.pad(a, j, constant_values=np.nan)  # noqa: E731
    sig[j] = full(np.sqrt(rss / (k * k - 6)))
    coef[j] = [full(beta[..., i]) for i in range(5)]
chosen = np.ones(dem.shape, int)
limit = 2 * sig[1] + 1e-6
for j in (2, 3):
    chosen = np.where(sig[j] <= limit, j, chosen)  # later (larger) j wins
adaptive = np.full(dem.shape, np.nan)
for j in (1, 2, 3):
    sl = parameter('slope', *coef[j])
    adaptive = np.where(chosen == j, sl, adaptive)
print('adaptive scale counts (j=1,2,3):', [(int(((chosen == j) & ~np.isnan(sig[3])).sum())) for j in (1, 2, 3)])
case('slope-7x7-adaptive', {'AnalysisScaleWithUnits': '225 Meters', 'UseAdaptiveScale': True},
     write('utm-slope-7x7-adaptive.tif', adaptive, dem_ds), TOL_DEG, 3,
     numpy_prov('UseAdaptiveScale is undocumented by the vendor; this checks rasterflow\'s documented rule (surface-param.ts '
                'ASSUMPTION: largest window whose quadratic residual error is <= 2 x the 3x3 one + 1e-6 m) with an independent '
                'NumPy implementation. The 3-cell border is excluded (windows there are clamped).'))

geographic_cases()

# ---- ElevationVoidFill: a 160 x 160 crop of the UTM DEM with documented voids

crop = dem[100:260, 100:260].copy()
# A planar patch (so the plane branch is exercised): 20 x 20 at x 40..59, y 125..144.
yy, xx = np.mgrid[0:20, 0:20]
crop[125:145, 40:60] = 600 + 3.75 * xx - 1.5 * yy
voids = {
    'single pixels': [(20, 20, 1, 1), (100, 30, 1, 1), (140, 141, 1, 1)],
    '2 x 1': [(50, 50, 2, 1)],
    '3 x 3': [(70, 80, 3, 3)],
    '9 x 6 block with a diagonal tail': [(30, 110, 9, 6), (39, 116, 1, 1), (40, 117, 1, 1)],
    '10 x 10 (750 m)': [(120, 20, 10, 10)],
    '12 x 4 (900 m wide)': [(10, 140, 12, 4)],
    '1 x 12 (900 m high)': [(150, 40, 1, 12)],
    '40 x 30': [(90, 90, 40, 30)],
    '6 x 6 inside the planar patch': [(47, 132, 6, 6)],
    'touching the west edge': [(0, 60, 6, 4)],
}
mask = np.ones(crop.shape, bool)
for rects in voids.values():
    for x, y, w, h in rects:
        mask[y:y + h, x:x + w] = False
voided = np.where(mask, crop, np.nan)
crop_ds = gdal.GetDriverByName('MEM').Create('', 160, 160, 1, gdal.GDT_Float32)
crop_ds.SetGeoTransform((gt[0] + 100 * gt[1], gt[1], 0, gt[3] + 100 * gt[5], 0, gt[5]))
crop_ds.SetProjection(dem_ds.GetProjection())
write('jacksboro-utm-voids-160.tif', voided, crop_ds, nodata=-9999.0)
z32 = np.where(mask, crop.astype(np.float32).astype(np.float64), np.nan)  # what the engine reads (Float32)


def void_fill(z, max_width, cell=75.0):
    """The documented method (elevation-void-fill.ts), written independently with SciPy."""
    out = z.copy()
    if max_width < 0:
        return out
    k = int(np.floor(max_width / cell + 1e-9)) if max_width > 0 else 0
    valid = ~np.isnan(z)
    labels, count = ndimage.label(~valid, structure=np.ones((3, 3)))
    for idx, sl in enumerate(ndimage.find_objects(labels), start=1):
        ys, xs = sl
        if ys.start == 0 or xs.start == 0 or ys.stop == z.shape[0] or xs.stop == z.shape[1]:
            continue  # touches the raster edge
        hgt, wid = ys.stop - ys.start, xs.stop - xs.start
        if k > 0 and (wid > k or hgt > k):
            continue
        comp = labels == idx
        rim = ndimage.binary_dilation(comp, structure=np.ones((3, 3))) & valid
        ry, rx = np.nonzero(rim)  # row-major
        rz = z[ry, rx]
        vy, vx = np.nonzero(comp)
        if comp.sum() == 1:
            out[vy, vx] = rz.mean()
            continue
        A = np.stack([np.ones(len(rx)), rx - xs.start, ry - ys.start], 1).astype(float)
        coef, *_ = np.linalg.lstsq(A, rz, rcond=None)
        rms = np.sqrt(np.mean((rz - A @ coef) ** 2))
        if rms <= 0.01 * (rz.max() - rz.min()):
            out[vy, vx] = coef[0] + coef[1] * (vx - xs.start) + coef[2] * (vy - ys.start)
        else:
            d2 = ((vx[:, None] - rx[None, :]) * cell) ** 2 + ((vy[:, None] - ry[None, :]) * cell) ** 2
            wgt = 1 / d2
            out[vy, vx] = (wgt * rz[None, :]).sum(1) / wgt.sum(1)
    return out


VOID_NOTE = ('Voids punched by make_goldens.py into a 160 x 160 crop (pixels 100..259 in x and y) of the UTM DEM, with a planar '
             'patch z = 600 + 3.75 x - 1.5 y at x 40..59, y 125..144; void rectangles (x, y, width, height): '
             + '; '.join(f'{k}: {v}' for k, v in voids.items())
             + '. Expected values: an independent NumPy/SciPy implementation of the documented method (8-connected voids, '
               'edge voids stay NoData, one-pixel voids take the mean of their 8 neighbours, else a least-squares plane on '
               'the rim when its RMS residual <= 1 % of the rim range, else IDW power 2 over the rim); tolerance: two Float32 '
               'roundings of ~1000 m values (6e-5 each). gdal_fillnodata.py '
               'uses a different interpolation (4-direction search, smoothing) and is not used as the reference.')
for id_, width, name in [('void-fill-all', 0, 'all'), ('void-fill-750m', 750, '750m'), ('void-fill-none', -1, 'none')]:
    filled = void_fill(z32, width)
    case(id_, {'MaxVoidWidth': width}, write(f'void-fill-{name}.tif', filled, crop_ds), {'abs': 2e-4}, 0,
         numpy_prov(f'MaxVoidWidth {width}. ' + VOID_NOTE, VOIDS), inputs=(VOIDS,), function='ElevationVoidFill')
    print(f'void fill {name}: {int(np.isnan(filled).sum())} NoData pixels left')

with open(os.path.join(HERE, 'cases.json'), 'w') as f:
    json.dump(CASES, f, indent=2)
    f.write('\n')
print(len(CASES), 'cases written')
