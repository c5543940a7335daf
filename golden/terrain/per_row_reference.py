#!/usr/bin/python3
"""Per-row geodesic references for a geographic DEM (run by make-goldens.sh with /usr/bin/python3).

rasterflow's default for geographic (degree) DEMs is `GeographicCellSize: Geodesic`: every row
gets its own cell size in metres on the WGS 84 ellipsoid. gdaldem has one scale (-s) for the whole
raster, so it cannot make these references; this script computes them independently, from the
formulas of the functions spec, with its own geodesy:

    phi_c  = latitude of the row centre, phi_n / phi_s = latitudes of the row's north/south edges
    cell x = N(phi_c) cos(phi_c) dlon          N = a / sqrt(1 - e2 sin^2 phi)   (parallel arc)
    cell y = m(phi_n) - m(phi_s)               m = meridian arc from the equator (Helmert's series)

(rasterflow takes y = M(phi_c) dlat, the meridional radius times the span: the two differ by
about 1e-10 relatively for 3" rows; the script prints the largest difference.)

Products (all with z-factor 1, the vendor's edge rule: a DEM without NoData has its outer ring
copied from the inner neighbour, numpy's pad mode='edge', so every pixel is compared):
  slope        Horn gradient, atan(|g|) in degrees                       [spec "Slope"]
  slope-scaled SlopeType 3: z-factor 1 + cell^0.664 * 0.024 per axis     [spec "Slope"]
  hillshade    Azimuth 315, Altitude 45, trunc(max(0, 255 cos(angle)))   [spec "Hillshade"]
  aspect       90 - atan2(gy, -gx) degrees in [0, 360), -1 when flat     [spec "Aspect"]
  curvature-standard, curvature-profile   Zevenbergen-Thorne (curvature_reference.py)

Usage: per_row_reference.py DEM OUT_PREFIX   -> OUT_PREFIX-<product>.tif (Float32, NaN NoData)
"""
import os
import sys

import numpy as np
from osgeo import gdal

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from curvature_reference import read, ring_copy, write, zt_curvatures  # noqa: E402

A = 6378137.0
F = 1 / 298.257223563
E2 = F * (2 - F)


def meridian_arc(phi):
    """Distance along the meridian from the equator to latitude phi (radians), Helmert's series."""
    n = F / (2 - F)
    return (A / (1 + n)) * (
        (1 + n**2 / 4 + n**4 / 64) * phi
        - 1.5 * (n - n**3 / 8) * np.sin(2 * phi)
        + (15 / 16) * (n**2 - n**4 / 4) * np.sin(4 * phi)
        - (35 / 48) * n**3 * np.sin(6 * phi)
        + (315 / 512) * n**4 * np.sin(8 * phi)
    )


def row_cells(gt, height):
    ymax, dlat, dlon = gt[3], -gt[5], gt[1]
    r = np.arange(height, dtype=np.float64)
    north = np.radians(ymax - r * dlat)
    south = np.radians(ymax - (r + 1) * dlat)
    centre = np.radians(ymax - (r + 0.5) * dlat)
    s2 = np.sin(centre) ** 2
    N = A / np.sqrt(1 - E2 * s2)
    M = A * (1 - E2) / (1 - E2 * s2) ** 1.5
    lx = N * np.cos(centre) * np.radians(dlon)
    ly = meridian_arc(north) - meridian_arc(south)
    rel = np.max(np.abs(ly / (M * np.radians(dlat)) - 1))
    print(f"rows {height}: cell x {lx.min():.4f}..{lx.max():.4f} m, y {ly.min():.4f}..{ly.max():.4f} m; "
          f"arc vs M*dlat max relative difference {rel:.2g}")
    return lx, ly


def horn(z, lx, ly):
    """Interior gx (east minus west), gy (south minus north), per-row cell sizes of the centre row."""
    a, b, c = z[:-2, :-2], z[:-2, 1:-1], z[:-2, 2:]
    d, f = z[1:-1, :-2], z[1:-1, 2:]
    g, h, i = z[2:, :-2], z[2:, 1:-1], z[2:, 2:]
    lx = lx[1:-1, None]
    ly = ly[1:-1, None]
    gx = ((c + 2 * f + i) - (a + 2 * d + g)) / (8 * lx)
    gy = ((g + 2 * h + i) - (a + 2 * b + c)) / (8 * ly)
    return gx, gy


def main(dem, prefix):
    ds, z, valid = read(dem)
    assert valid.all(), "the reference assumes a DEM without NoData"
    lx, ly = row_cells(ds.GetGeoTransform(), z.shape[0])
    gx, gy = horn(z, lx, ly)
    out = {}
    out["slope"] = np.degrees(np.arctan(np.hypot(gx, gy)))
    zx = (1 + lx**0.664 * 0.024)[1:-1, None]
    zy = (1 + ly**0.664 * 0.024)[1:-1, None]
    out["slope-scaled"] = np.degrees(np.arctan(np.hypot(gx * zx, gy * zy)))
    zen = np.radians(90 - 45)
    az = np.radians(360 - 315 + 90)
    cang = (np.cos(zen) + np.sin(zen) * np.sin(az) * gy - np.sin(zen) * np.cos(az) * gx) / np.sqrt(1 + gx * gx + gy * gy)
    out["hillshade"] = np.floor(np.maximum(0, 255 * cang))
    t = np.degrees(np.arctan2(gy, -gx))
    asp = 90 - t
    asp = np.where(asp < 0, asp + 360, asp)
    asp = np.where(asp.astype(np.float32) >= 360, 0, asp)
    out["aspect"] = np.where((gx == 0) & (gy == 0), -1.0, asp)
    curv = zt_curvatures(z, lx, ly)
    out["curvature-standard"] = curv["standard"]
    out["curvature-profile"] = curv["profile"]
    for name, arr in out.items():
        path = f"{prefix}-{name}.tif"
        write(path, ds, ring_copy(arr))
        print(f"{path}: {arr.min():.4f} .. {arr.max():.4f}")
    print(f"flat cells (aspect -1): {int((out['aspect'] == -1).sum())}")


if __name__ == "__main__":
    gdal.UseExceptions()
    main(*sys.argv[1:])
