"""Native peers of rasterflow's focal kernels, timed on the same raster (bench/peers/run.ts).

Usage: /usr/bin/python3 focal_peers.py RASTER.f32 SIZE (then serves runs: peers_common.py)
The raster is SIZE x SIZE little-endian float32.

One thread each: OpenCV with cv2.setNumThreads(1); SciPy's ndimage is single-threaded. float32 in
and out, as rasterflow's F32 path. Kernels as rasterflow normalises them (Smoothing3x3,
Sharpening3x3 (not separable), Smoothing5x5 / 60, a 9x9 box as a separable kernel).
- scipy: ndimage.correlate (3x3, 5x5, 9x9), uniform_filter (mean), std from uniform_filter of x
  and x^2 (sqrt(E[x^2] - E[x]^2)), std through generic_filter(np.std) (a Python call per pixel:
  timed on a 256 x 256 crop and scaled to the whole raster's pixel count: the per-pixel cost of a
  Python call does not depend on the size), minimum_filter, maximum_filter.
- opencv: filter2D (3x3, 5x5), sepFilter2D (9x9), blur (box mean), std from blur of x and x^2,
  erode / dilate with a 3x3 rectangle (min / max).
"""
import sys
import time

from peers_common import serve, skipped, timed, timed_self

SMOOTH3 = [0.0625, 0.125, 0.0625, 0.125, 0.25, 0.125, 0.0625, 0.125, 0.0625]
SMOOTH5 = [1, 1, 1, 1, 1, 1, 4, 4, 4, 1, 1, 4, 12, 4, 1, 1, 4, 4, 4, 1, 1, 1, 1, 1, 1]


def main():
    path, size = sys.argv[1], int(sys.argv[2])
    try:
        import numpy as np
    except ImportError as e:
        skipped("numpy", f"no numpy ({e})")
        return serve()
    z = np.fromfile(path, dtype="<f4").reshape(size, size)
    pixels = size * size
    k3 = np.array(SMOOTH3, dtype=np.float32).reshape(3, 3)
    sharp3 = np.array([-1, -1, -1, -1, 9, -1, -1, -1, -1], dtype=np.float32).reshape(3, 3)
    k5 = (np.array(SMOOTH5, dtype=np.float64) / 60).astype(np.float32).reshape(5, 5)
    k9 = np.full((9, 9), 1 / 81, dtype=np.float32)
    box9 = np.full(9, 1 / 9, dtype=np.float32)

    try:
        from scipy import ndimage

        def sp_std_uniform():
            m = ndimage.uniform_filter(z, 3)
            return np.sqrt(np.maximum(ndimage.uniform_filter(z * z, 3) - m * m, 0))

        ops = {
            "convolution 3x3": lambda: ndimage.correlate(z, k3),
            "convolution 3x3 sharpening": lambda: ndimage.correlate(z, sharp3),
            "convolution 5x5": lambda: ndimage.correlate(z, k5),
            "convolution 9x9 separable": lambda: ndimage.correlate(z, k9),
            "mean 3x3": lambda: ndimage.uniform_filter(z, 3),
            "std 3x3": sp_std_uniform,
            "min 3x3": lambda: ndimage.minimum_filter(z, 3),
            "max 3x3": lambda: ndimage.maximum_filter(z, 3),
        }
        for op, fn in ops.items():
            timed("scipy", op, fn)
        crop = np.ascontiguousarray(z[:256, :256])

        def sp_generic_std():
            t = time.perf_counter()
            ndimage.generic_filter(crop, np.std, size=3)
            return (time.perf_counter() - t) * 1000 * pixels / crop.size

        timed_self("scipy-generic", "std 3x3", sp_generic_std)
    except ImportError as e:
        skipped("scipy", f"no SciPy ({e})")

    try:
        import cv2

        cv2.setNumThreads(1)
        rect3 = np.ones((3, 3), np.uint8)

        def cv_std():
            m = cv2.blur(z, (3, 3))
            return np.sqrt(np.maximum(cv2.blur(z * z, (3, 3)) - m * m, 0))

        ops = {
            "convolution 3x3": lambda: cv2.filter2D(z, -1, k3),
            "convolution 3x3 sharpening": lambda: cv2.filter2D(z, -1, sharp3),
            "convolution 5x5": lambda: cv2.filter2D(z, -1, k5),
            "convolution 9x9 separable": lambda: cv2.sepFilter2D(z, -1, box9, box9),
            "mean 3x3": lambda: cv2.blur(z, (3, 3)),
            "std 3x3": cv_std,
            "min 3x3": lambda: cv2.erode(z, rect3),
            "max 3x3": lambda: cv2.dilate(z, rect3),
        }
        for op, fn in ops.items():
            timed("opencv", op, fn)
    except ImportError as e:
        skipped("opencv", f"no OpenCV ({e})")
    serve()


if __name__ == "__main__":
    main()
