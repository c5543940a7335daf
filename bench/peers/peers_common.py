"""What the peer scripts of bench/peers share: a peer script registers one timer per (peer, op) with
`timed` (or `timed_self`), says what it cannot time with `skipped`, then `serve()`s: it prints
{"ready": [[peer, op], ...]} and answers each request line {"peer", "op"} on stdin by running that
operation once, with {"ms": wall time} (or {"error": message}), until stdin closes.

The family (bench/peers/*.peers.ts) keeps the script running for the whole family and asks for one
run at a time, in turn with rasterflow's own runs of the same operation (PeerServer and
`alternating` in common.ts): both sides of a ratio are timed in the same seconds, round by round,
so a load that comes and goes on the machine weighs on both alike.
"""
import json
import sys
import time


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

_TIMERS = {}


def timed(peer, op, fn):
    """Register fn() as `peer`'s run of `op`, timed by its wall time."""

    def run():
        t = time.perf_counter()
        fn()
        return (time.perf_counter() - t) * 1000

    _TIMERS[(peer, op)] = run


def timed_self(peer, op, fn):
    """Register fn() as `peer`'s run of `op`; fn answers its own time in ms (e.g. a sum over tiles)."""
    _TIMERS[(peer, op)] = fn


def skipped(peer, reason):
    """Say that `peer` is not measured, and why."""
    print(json.dumps({"peer": peer, "skipped": reason}), flush=True)


def serve():
    """Answer run requests on stdin until it closes (see the module's doc)."""
    print(json.dumps({"ready": [list(k) for k in _TIMERS]}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            answer = {"ms": _TIMERS[(req["peer"], req["op"])]()}
        except Exception as e:  # the family reports it and stops: a failed peer is not a figure
            answer = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(answer), flush=True)
