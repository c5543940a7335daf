#!/usr/bin/python3
"""Curvature references for golden/terrain (run by make-goldens.sh with /usr/bin/python3).

Written from the formulas of the functions spec ("Curvature", Zevenbergen & Thorne 1987 as the
vendor's "How Curvature works" gives them), not from rasterflow's code:

    D = ((z4 + z6) / 2 - z5) / Lx^2        E = ((z2 + z8) / 2 - z5) / Ly^2
    F = (-z1 + z3 + z7 - z9) / (4 Lx Ly)   G = (-z4 + z6) / (2 Lx)    H = (z2 - z8) / (2 Ly)
    standard = -2 (D + E) 100
    profile  = -2 (D G^2 + E H^2 + F G H) / (G^2 + H^2) 100      (0 where G^2 + H^2 = 0)
    planform =  2 (D H^2 + E G^2 - F G H) / (G^2 + H^2) 100      (0 where G^2 + H^2 = 0)

Edges: the vendor rule for a DEM without NoData is "the outer ring copies the adjacent inner
row/column", i.e. the interior result padded with numpy's mode='edge'; so every pixel is compared.

Subcommands:
  zt DEM OUT_PREFIX              standard/profile/planform of a projected DEM -> OUT_PREFIX-<type>.tif
  poly OUT.tif                   write the polynomial test surface (EPSG:32616, 10 m, Float32 exact)
  grass DEM DX DY DXX DYY PC TC OUT_PREFIX
                                 GRASS r.slope.aspect outputs -> vendor units, OUT_PREFIX-<type>.tif,
                                 and how far they are from `zt` on the same DEM (printed)

GRASS r.slope.aspect (8.2, raster/r.slope.aspect/main.c) measures different things: with its
dx = (west - east) / run, dy = (south - north) / run, its second derivatives come out negated
(dxx = -z_xx, dyy = -z_yy, dxy = -z_xy with y north) and
    pcurvature = (dxx dx^2 + 2 dxy dx dy + dyy dy^2) / (p^2 (1 + p^2)^1.5)
    tcurvature = (dxx dy^2 - 2 dxy dx dy + dyy dx^2) / (p^2 (1 + p^2)^0.5),    p^2 = dx^2 + dy^2
in 1/m, i.e. normalised (true) curvatures, while the vendor's are the Zevenbergen-Thorne
"simplified" ones in 1/100 m. Hence, with the same derivatives,
    standard = 100 (dxx + dyy)
    profile  = 100 pcurvature (1 + p^2)^1.5
    planform = -100 tcurvature (1 + p^2)^0.5
GRASS's derivative estimators also differ (its z_xx averages the three window rows 1:4:1, its
z_x is Horn's 1:2:1; Zevenbergen-Thorne uses the centre row/column only), so the two agree only
where those estimators agree: on surfaces whose second differences vary at most linearly across
the window and whose first differences do too, e.g. z = quadratic + a x^3 + b y^3. The `poly`
surface is such a surface; on real terrain GRASS is not comparable and is not used.
"""
import sys

import numpy as np
from osgeo import gdal, osr

gdal.UseExceptions()
CO = ["COMPRESS=DEFLATE", "PREDICTOR=3", "ZLEVEL=9"]


def read(path):
    """(dataset, float64 values, validity); the caller keeps the dataset alive."""
    ds = gdal.Open(path)
    band = ds.GetRasterBand(1)
    z = band.ReadAsArray().astype(np.float64)
    nd = band.GetNoDataValue()
    band = None
    valid = np.ones(z.shape, bool) if nd is None else ~((z == nd) | np.isnan(z))
    return ds, z, valid


def write(path, like, arr, nodata=float("nan")):
    drv = gdal.GetDriverByName("GTiff")
    out = drv.Create(path, like.RasterXSize, like.RasterYSize, 1, gdal.GDT_Float32, CO)
    out.SetGeoTransform(like.GetGeoTransform())
    out.SetProjection(like.GetProjection())
    b = out.GetRasterBand(1)
    b.SetNoDataValue(nodata)
    b.WriteArray(arr.astype(np.float32))
    out.FlushCache()
    b = None
    out = None


def zt_curvatures(z, lx, ly, zf=1.0):
    """Interior (H-2, W-2) standard, profile, planform; lx, ly scalars or per-row (H,) arrays."""
    z = z * zf
    z1, z2, z3 = z[:-2, :-2], z[:-2, 1:-1], z[:-2, 2:]
    z4, z5, z6 = z[1:-1, :-2], z[1:-1, 1:-1], z[1:-1, 2:]
    z7, z8, z9 = z[2:, :-2], z[2:, 1:-1], z[2:, 2:]
    lx = np.broadcast_to(np.asarray(lx, float), (z.shape[0],))[1:-1, None]
    ly = np.broadcast_to(np.asarray(ly, float), (z.shape[0],))[1:-1, None]
    D = ((z4 + z6) / 2 - z5) / lx**2
    E = ((z2 + z8) / 2 - z5) / ly**2
    F = (-z1 + z3 + z7 - z9) / (4 * lx * ly)
    G = (-z4 + z6) / (2 * lx)
    H = (z2 - z8) / (2 * ly)
    s = G * G + H * H
    safe = np.where(s == 0, 1.0, s)
    standard = -2 * (D + E) * 100
    profile = np.where(s == 0, 0.0, -2 * (D * G * G + E * H * H + F * G * H) / safe * 100)
    planform = np.where(s == 0, 0.0, 2 * (D * H * H + E * G * G - F * G * H) / safe * 100)
    return {"standard": standard, "profile": profile, "planform": planform}


def ring_copy(interior):
    """The vendor edge rule for a DEM without NoData: the outer ring copies its inner neighbour."""
    return np.pad(interior, 1, mode="edge")


def cmd_zt(dem, prefix):
    ds, z, valid = read(dem)
    assert valid.all(), "the reference assumes a DEM without NoData"
    gt = ds.GetGeoTransform()
    curv = zt_curvatures(z, gt[1], -gt[5])
    for name, arr in curv.items():
        write(f"{prefix}-{name}.tif", ds, ring_copy(arr))
        print(f"{prefix}-{name}.tif: {np.nanmin(arr):.4f} .. {np.nanmax(arr):.4f}")


def poly_surface(width=64, height=48):
    col = np.arange(width, dtype=np.float64)[None, :]
    row = np.arange(height, dtype=np.float64)[:, None]
    X = col - 32  # east, cells
    Y = 24 - row  # north, cells
    # Dyadic coefficients: every value is exact in Float32 (about 20 significant bits).
    z = 400 + 3 * X + 2 * Y + X * X / 16 - Y * Y / 32 + 3 * X * Y / 64 + X**3 / 512 + Y**3 / 1024
    assert np.array_equal(z.astype(np.float32).astype(np.float64), z), "not exact in Float32"
    return z


def cmd_poly(path):
    z = poly_surface()
    h, w = z.shape
    drv = gdal.GetDriverByName("GTiff")
    out = drv.Create(path, w, h, 1, gdal.GDT_Float32, CO)
    out.SetGeoTransform((740000.0, 10.0, 0.0, 4050000.0, 0.0, -10.0))
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(32616)
    out.SetProjection(srs.ExportToWkt())
    out.GetRasterBand(1).WriteArray(z.astype(np.float32))
    out.FlushCache()
    # GRASS sets curvatures to 0 where its gradient is <= 0.001: keep the surface away from that.
    gx = (z[1:-1, 2:] - z[1:-1, :-2]) / 20
    gy = (z[:-2, 1:-1] - z[2:, 1:-1]) / 20
    print(f"{path}: {w}x{h}, min |gradient| {np.hypot(gx, gy).min():.4f}")


def cmd_grass(dem, dx, dy, dxx, dyy, pc, tc, prefix):
    dds, z, _ = read(dem)
    gt = dds.GetGeoTransform()
    zt = zt_curvatures(z, gt[1], -gt[5])
    ds, gdx, v = read(dx)
    _, gdy, _ = read(dy)
    _, gdxx, _ = read(dxx)
    _, gdyy, _ = read(dyy)
    _, gpc, _ = read(pc)
    _, gtc, _ = read(tc)
    p2 = gdx * gdx + gdy * gdy
    out = {
        "standard": 100 * (gdxx + gdyy),
        "profile": 100 * gpc * (1 + p2) ** 1.5,
        "planform": -100 * gtc * np.sqrt(1 + p2),
    }
    for name, arr in out.items():
        arr = np.where(v, arr, np.nan)
        write(f"{prefix}-{name}.tif", ds, arr)
        diff = np.nanmax(np.abs(arr[1:-1, 1:-1] - zt[name]))
        print(f"{prefix}-{name}.tif: {np.nanmin(arr):.5f} .. {np.nanmax(arr):.5f}; max |GRASS - ZT| {diff:.3g}")


if __name__ == "__main__":
    cmd, *rest = sys.argv[1:]
    {"zt": cmd_zt, "poly": cmd_poly, "grass": cmd_grass}[cmd](*rest)
