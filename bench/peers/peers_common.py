"""What the peer scripts of bench/peers share: timing and the one-JSON-object-per-line output run.ts reads.

RASTERFLOW_PEER_OPS (a JSON list of op names), when set, limits a script to those ops: the families
run a script once per op, just before timing rasterflow on it, so both sides of a ratio are timed
back to back.
"""
import json
import os
import time

_OPS = os.environ.get("RASTERFLOW_PEER_OPS")
_WANTED = None if not _OPS else set(json.loads(_OPS))


def steady_malloc():
    """Give glibc's allocator the state a long-running process reaches by itself: its mmap
    threshold raised to 32 MiB and its trim threshold to twice that (glibc raises both, up to
    these, when it frees a mapped block of up to 32 MiB, e.g. a 4096 x 4096 uint8 result). A fresh
    process otherwise maps and faults in every temporary of 128 KiB or more at each call, which
    made NumPy's NDVI over 256 x 256 tiles 25 times slower when run alone than after other ops.
    Whole 4096 x 4096 float32 arrays (64 MiB) are mapped either way."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 32 * 1024 * 1024)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 64 * 1024 * 1024)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        pass


steady_malloc()


def wanted(op):
    """Whether this run times `op` (every op when RASTERFLOW_PEER_OPS is unset)."""
    return _WANTED is None or op in _WANTED


def median_ms(fn, repeats):
    """Median wall time of fn() in ms over `repeats` runs after one warm-up run."""
    fn()  # warm up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return times[len(times) // 2]


def timed(peer, op, fn, repeats, pixels):
    """emit() of median_ms(fn, repeats) when `op` is wanted; nothing (not even the timing) when not."""
    if wanted(op):
        emit(peer, op, median_ms(fn, repeats), pixels)


def emit(peer, op, ms, pixels, note=None):
    """One measured line: {"peer", "op", "medianMs", "mpxPerSec"[, "note"]}."""
    line = {"peer": peer, "op": op, "medianMs": ms, "mpxPerSec": pixels / 1e6 / (ms / 1000)}
    if note:
        line["note"] = note
    print(json.dumps(line), flush=True)
