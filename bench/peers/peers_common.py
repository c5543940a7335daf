"""What the peer scripts of bench/peers share: timing and the one-JSON-object-per-line output run.ts reads."""
import json
import time


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


def emit(peer, op, ms, pixels, note=None):
    """One measured line: {"peer", "op", "medianMs", "mpxPerSec"[, "note"]}."""
    line = {"peer": peer, "op": op, "medianMs": ms, "mpxPerSec": pixels / 1e6 / (ms / 1000)}
    if note:
        line["note"] = note
    print(json.dumps(line), flush=True)
