"""Native peers of rasterflow's per-pixel kernels, timed on the same bands (bench/peers/run.ts).

Usage: /usr/bin/python3 local_peers.py RED.f32 NIR.f32 SIZE LO HI (then serves runs: peers_common.py)
RED and NIR are SIZE x SIZE little-endian float32.

- numpy: the expressions as a NumPy user writes them, float32 arrays, a new output array per call
  (as NumPy returns one): NDVI (nir - red) / (nir + red), nir + red, nir * red, nir / red; the cast
  to U8 as np.clip(a + 0.5, 0, 255).astype(np.uint8) (round half up and saturate for the clipped
  range); the linear stretch to U8 as np.clip((a - lo) * (255 / (hi - lo)) + 0.5, 0, 255).astype(np.uint8).
- numpy tiled: the same expressions over the same SIZE x SIZE done as tiles of TILE x TILE (256,
  the render's default tile), each tile's bands contiguous arrays made before the timing (as a
  render's source read puts a tile's planes in its own blocks); the sum of the per-tile times.
  The peer of rasterflow's "wasm tiled" figure: both sides then work on cache-sized arrays.
  A run is the sum of the per-tile times (the loop's own time left out, as rasterflow's is).
- numexpr: the NDVI expression with numexpr.evaluate on one thread (the expression engine's peer).
"""
import sys
import time

from peers_common import serve, skipped, timed, timed_self

TILE = 256


def tiled_ms(fn, tiles):
    """The summed per-tile times (ms) of fn(nir, red) over the tiles."""
    total = 0.0
    for n, r in tiles:
        t0 = time.perf_counter()
        fn(n, r)
        total += time.perf_counter() - t0
    return total * 1000


def main():
    red_path, nir_path, size, lo, hi = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
    try:
        import numpy as np
    except ImportError as e:
        skipped("numpy", f"no numpy ({e})")
        return serve()
    red = np.fromfile(red_path, dtype="<f4").reshape(size, size)
    nir = np.fromfile(nir_path, dtype="<f4").reshape(size, size)
    scale = np.float32(255 / (hi - lo))
    lo32 = np.float32(lo)

    ops = {
        "NDVI f32": lambda n, r: (n - r) / (n + r),
        "a+b f32": lambda n, r: n + r,
        "a*b f32": lambda n, r: n * r,
        "a/b f32": lambda n, r: n / r,
        "stretch f32->u8": lambda n, r: np.clip((n - lo32) * scale + np.float32(0.5), 0, 255).astype(np.uint8),
        "expression NDVI f32": lambda n, r: (n - r) / (n + r),
        "cast f32->u8": lambda n, r: np.clip(n + np.float32(0.5), 0, 255).astype(np.uint8),
    }
    for op, fn in ops.items():
        timed("numpy", op, lambda fn=fn: fn(nir, red))

    tiles = [
        (np.ascontiguousarray(nir[y : y + TILE, x : x + TILE]), np.ascontiguousarray(red[y : y + TILE, x : x + TILE]))
        for y in range(0, size, TILE)
        for x in range(0, size, TILE)
    ]
    for op, fn in ops.items():
        timed_self("numpy tiled", op, lambda fn=fn: tiled_ms(fn, tiles))

    try:
        import numexpr as ne

        ne.set_num_threads(1)
        timed("numexpr", "expression NDVI f32", lambda: ne.evaluate("(nir - red) / (nir + red)", local_dict={"nir": nir, "red": red}))
    except ImportError as e:
        skipped("numexpr", f"no numexpr ({e})")
    serve()


if __name__ == "__main__":
    main()
