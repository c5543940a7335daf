"""Native peers of rasterflow's terrain kernels, timed on the same DEM (bench/peers/run.ts).

Usage: /usr/bin/python3 terrain_peers.py DEM.f32 DEM.s16 SIZE CELL (then serves runs: peers_common.py)
The DEM is SIZE x SIZE little-endian float32 (row 0 north), CELL metres per cell (projected, UTM 16N);
DEM.s16 the same elevations rounded to int16 (the "S16" ops: gdaldem on an Int16 dataset).

- gdaldem: gdal.DEMProcessing on an in-memory (MEM) dataset to a MEM dataset: GDAL's compute,
  no file I/O (the output dataset's allocation is included, as it is in a kernel call's output).
- numpy: the Horn slope and hillshade as a NumPy user writes them (array slices, float64), and
  curvature: the Zevenbergen & Thorne (1987) polynomial, the formula rasterflow's Curvature uses
  (standard -2 (D + E) 100, profile and planform as in ArcGIS's "How Curvature works"), float64.
- scipy: the Horn gradients with scipy.ndimage.correlate, then NumPy for the formula.
"""
import sys

from peers_common import serve, skipped, timed


def main():
    path, path16, size, cell = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    try:
        import numpy as np
    except ImportError as e:
        skipped("numpy", f"no numpy ({e})")
        return serve()
    z = np.fromfile(path, dtype="<f4").reshape(size, size)
    z16 = np.fromfile(path16, dtype="<i2").reshape(size, size)

    try:
        from osgeo import gdal, osr

        gdal.UseExceptions()
        def mem(array, gdal_type):
            ds = gdal.GetDriverByName("MEM").Create("", size, size, 1, gdal_type)
            ds.SetGeoTransform((0, cell, 0, size * cell, 0, -cell))
            srs = osr.SpatialReference()
            srs.ImportFromEPSG(32616)
            ds.SetProjection(srs.ExportToWkt())
            ds.GetRasterBand(1).WriteArray(array)
            return ds

        src = mem(z, gdal.GDT_Float32)
        src16 = mem(z16, gdal.GDT_Int16)
        ops = {
            "hillshade": (src, dict(processing="hillshade", azimuth=315, altitude=45)),
            "hillshade multidirectional": (src, dict(processing="hillshade", multiDirectional=True)),
            "slope": (src, dict(processing="slope")),
            "slope percent": (src, dict(processing="slope", slopeFormat="percent")),
            "aspect": (src, dict(processing="aspect")),
            "hillshade S16": (src16, dict(processing="hillshade", azimuth=315, altitude=45)),
            "slope S16": (src16, dict(processing="slope")),
            "aspect S16": (src16, dict(processing="aspect")),
        }
        for op, (ds, kw) in ops.items():
            processing = kw.pop("processing")
            timed("gdaldem", op, lambda ds=ds, processing=processing, kw=kw: gdal.DEMProcessing("", ds, processing, format="MEM", **kw))
    except ImportError as e:
        skipped("gdaldem", f"no GDAL Python bindings ({e})")

    def horn(zz):
        a, b, c = zz[:-2, :-2], zz[:-2, 1:-1], zz[:-2, 2:]
        d, f = zz[1:-1, :-2], zz[1:-1, 2:]
        g, h, i = zz[2:, :-2], zz[2:, 1:-1], zz[2:, 2:]
        gx = ((c + 2 * f + i) - (a + 2 * d + g)) / (8 * cell)
        gy = ((g + 2 * h + i) - (a + 2 * b + c)) / (8 * cell)
        return gx, gy

    z64 = z.astype(np.float64)

    def np_slope():
        gx, gy = horn(z64)
        return np.degrees(np.arctan(np.sqrt(gx * gx + gy * gy))).astype(np.float32)

    zen, az = np.radians(45.0), np.radians(360 - 315 + 90)

    def np_hillshade():
        gx, gy = horn(z64)
        n = np.cos(zen) - np.sin(zen) * np.cos(az) * gx + np.sin(zen) * np.sin(az) * gy
        return (255 * np.maximum(n, 0) / np.sqrt(1 + gx * gx + gy * gy)).astype(np.uint8)

    def zevenbergen_thorne(zz):
        a, b, c = zz[:-2, :-2], zz[:-2, 1:-1], zz[:-2, 2:]
        d, e, f = zz[1:-1, :-2], zz[1:-1, 1:-1], zz[1:-1, 2:]
        g, h, i = zz[2:, :-2], zz[2:, 1:-1], zz[2:, 2:]
        L = cell
        D = ((d + f) / 2 - e) / L**2
        E = ((b + h) / 2 - e) / L**2
        F = (-a + c + g - i) / (4 * L * L)
        G = (-d + f) / (2 * L)
        H = (b - h) / (2 * L)
        return D, E, F, G, H

    def np_curv_standard():
        D, E, _, _, _ = zevenbergen_thorne(z64)
        return (-2 * (D + E) * 100).astype(np.float32)

    def np_curv_profile():
        D, E, F, G, H = zevenbergen_thorne(z64)
        s = G * G + H * H
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(s == 0, 0, -2 * (D * G * G + E * H * H + F * G * H) / s * 100).astype(np.float32)

    def np_curv_planform():
        D, E, F, G, H = zevenbergen_thorne(z64)
        s = G * G + H * H
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(s == 0, 0, 2 * (D * H * H + E * G * G - F * G * H) / s * 100).astype(np.float32)

    timed("numpy", "slope", np_slope)
    timed("numpy", "curvature standard", np_curv_standard)
    timed("numpy", "curvature profile", np_curv_profile)
    timed("numpy", "curvature planform", np_curv_planform)
    timed("numpy", "hillshade", np_hillshade)

    try:
        from scipy import ndimage

        kx = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], dtype=np.float64) / (8 * cell)
        ky = np.array([[-1, -2, -1], [0, 0, 0], [1, 2, 1]], dtype=np.float64) / (8 * cell)

        def sp_slope():
            gx = ndimage.correlate(z64, kx, mode="nearest")
            gy = ndimage.correlate(z64, ky, mode="nearest")
            return np.degrees(np.arctan(np.sqrt(gx * gx + gy * gy))).astype(np.float32)

        timed("scipy", "slope", sp_slope)
    except ImportError as e:
        skipped("scipy", f"no SciPy ({e})")
    skipped("opencv", "OpenCV has no hillshade, slope, aspect or curvature operation")
    serve()


if __name__ == "__main__":
    main()
