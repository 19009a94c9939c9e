#!/usr/bin/env python3
"""pystack_bench: what Python frames add to a captured allocation (MEMSHIM_PY_STACKS).

Loads libpystack_bench.so (bench/pystack_bench.c: the shim's core linked into a library)
with ctypes.PyDLL, so the GIL stays held during the calls as in a framework's allocation, and
from several Python stack depths prints ns per call site capture with Python frames off and
on, their difference, and pystack_capture alone. Asserts nothing about time.

    pystack_bench.py LIB [--calls N] [--depths 5,20,50] [--stack-depth 24]
"""

import argparse
import ctypes
import sys
import time


def at_depth(n, fn):
    return at_depth(n - 1, fn) if n > 1 else fn()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("--calls", type=int, default=200000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--depths", default="5,20,50")
    ap.add_argument("--stack-depth", type=int, default=24)
    args = ap.parse_args()
    lib = ctypes.PyDLL(args.lib)
    lib.pystack_bench.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.POINTER(ctypes.c_double)]
    out = (ctypes.c_double * 4)()
    print("Call-site capture from Python (GIL held), MEMSHIM_STACK_DEPTH=%d, ns per capture"
          % args.stack_depth)
    print("%-12s %8s %10s %10s %10s %14s" % ("py depth", "frames", "py off", "py on",
                                             "on - off", "pystack alone"))
    for depth in (int(d) for d in args.depths.split(",")):
        best = None
        for _ in range(args.rounds):
            rc = at_depth(depth, lambda: lib.pystack_bench(args.calls, args.stack_depth, out))
            if rc != 0:
                sys.exit("the Python C API was not found in this process")
            best = list(out) if best is None else [min(a, b) for a, b in zip(best, out)]
        off, on, alone, frames = best
        print("%-12d %8d %10.0f %10.0f %10.0f %14.0f" % (depth, frames, off, on, on - off, alone))
    fresh_frames(lib, args)
    return 0


def fresh_frames(lib, args):
    """Each capture from a new chain of calls, as a training step's allocations are: the
    interpreter has no frame objects for them yet, the capture makes them. The same loop with
    Python frames off is subtracted (calls, recursion and native capture cancel out)."""
    once = lib.pystack_bench_once
    once.restype = ctypes.c_uint32
    on, off = (lambda: once(1)), (lambda: once(0))
    calls = max(args.calls // 20, 1)

    def loop(fn, depth):
        t = time.perf_counter_ns()
        for _ in range(calls):
            at_depth(depth, fn)
        return (time.perf_counter_ns() - t) / calls

    print("From fresh frames (new calls each time), ns per capture")
    print("%-12s %10s %10s %10s" % ("py depth", "py off", "py on", "on - off"))
    for depth in (int(d) for d in args.depths.split(",")):
        loop(on, depth)
        t_off = min(loop(off, depth) for _ in range(args.rounds))
        t_on = min(loop(on, depth) for _ in range(args.rounds))
        print("%-12d %10.0f %10.0f %10.0f" % (depth, t_off, t_on, t_on - t_off))


if __name__ == "__main__":
    sys.exit(main())
