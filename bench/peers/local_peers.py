"""Native peers of rasterflow's per-pixel kernels, timed on the same bands (bench/peers/run.ts).

Usage: /usr/bin/python3 local_peers.py RED.f32 NIR.f32 SIZE REPEATS LO HI
RED and NIR are SIZE x SIZE little-endian float32. Prints one JSON object per line:
{"peer", "op", "medianMs", "mpxPerSec"} or {"peer", "skipped": reason}.

- numpy: the expressions as a NumPy user writes them, float32 arrays, a new output array per call
  (as NumPy returns one): NDVI (nir - red) / (nir + red), nir + red, nir * red, nir / red; the cast
  to U8 as np.clip(a + 0.5, 0, 255).astype(np.uint8) (round half up and saturate for the clipped
  range); the linear stretch to U8 as np.clip((a - lo) * (255 / (hi - lo)) + 0.5, 0, 255).astype(np.uint8).
- numexpr: the NDVI expression with numexpr.evaluate on one thread (the expression engine's peer).
"""
import json
import sys
import time

from peers_common import emit, median_ms






def main():
    red_path, nir_path, size, repeats, lo, hi = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
    try:
        import numpy as np
    except ImportError as e:
        print(json.dumps({"peer": "numpy", "skipped": f"no numpy ({e})"}), flush=True)
        return
    red = np.fromfile(red_path, dtype="<f4").reshape(size, size)
    nir = np.fromfile(nir_path, dtype="<f4").reshape(size, size)
    pixels = size * size
    scale = np.float32(255 / (hi - lo))
    lo32 = np.float32(lo)

    ops = {
        "NDVI f32": lambda: (nir - red) / (nir + red),
        "a+b f32": lambda: nir + red,
        "a*b f32": lambda: nir * red,
        "a/b f32": lambda: nir / red,
        "stretch f32->u8": lambda: np.clip((nir - lo32) * scale + np.float32(0.5), 0, 255).astype(np.uint8),
        "expression NDVI f32": lambda: (nir - red) / (nir + red),
        "cast f32->u8": lambda: np.clip(nir + np.float32(0.5), 0, 255).astype(np.uint8),
    }
    for op, fn in ops.items():
        emit("numpy", op, median_ms(fn, repeats), pixels)

    try:
        import numexpr as ne

        ne.set_num_threads(1)
        emit("numexpr", "expression NDVI f32", median_ms(lambda: ne.evaluate("(nir - red) / (nir + red)", local_dict={"nir": nir, "red": red}), repeats), pixels)
    except ImportError as e:
        print(json.dumps({"peer": "numexpr", "skipped": f"no numexpr ({e})"}), flush=True)


if __name__ == "__main__":
    main()
