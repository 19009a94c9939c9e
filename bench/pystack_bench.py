#!/usr/bin/env python3
"""pystack_bench: what Python frames add to a captured allocation (MEMSHIM_PY_STACKS).

Loads libpystack_bench.so (bench/pystack_bench.c: the shim's core linked into a library)
with ctypes.PyDLL, so the GIL stays held during the calls as in a framework's allocation, and
from several Python stack depths prints ns per call site capture with Python frames off and
on, their difference, and pystack_capture alone. Then a worker thread without the GIL, named
as PyTorch's autograd threads are, that borrows the frames of this thread while it waits in a
function named as PyTorch's engine entry (shim/core/pyborrow.h): ns per capture there and on a
thread of another name. Asserts nothing about time; --check-borrow fails (exit 1) when the
worker's frames do not name the line that called the waiting function.

    pystack_bench.py LIB [--calls N] [--depths 5,20,50] [--stack-depth 24] [--check-borrow]
"""

import argparse
import ctypes
import os
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
    ap.add_argument("--check-borrow", action="store_true")
    args = ap.parse_args()
    if not borrowed(args):
        return 1
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


def _engine_run_backward(lib, calls, out, text):
    """The waiting thread's innermost frame, by the name the worker looks for."""
    return lib.pystack_bench_borrow(calls, out, text, len(text))


def borrowed(args):
    setup = ctypes.PyDLL(args.lib).pystack_bench_borrow_setup
    if not setup(args.stack_depth):
        print("borrowed frames: off (the layout check failed; see memshim's message)")
        return not args.check_borrow
    lib = ctypes.CDLL(args.lib)  # releases the GIL for the call, as the engine does
    lib.pystack_bench_borrow.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_double),
                                         ctypes.c_char_p, ctypes.c_size_t]
    out, text = (ctypes.c_double * 7)(), ctypes.create_string_buffer(8192)
    best = None
    for _ in range(args.rounds):
        if _engine_run_backward(lib, args.calls, out, text) != 0:  # the lender's call
            sys.exit("pystack_bench_borrow failed")
        best = list(out) if best is None else [min(a, b) for a, b in zip(best, out)]
    print("Worker thread without the GIL borrowing this thread's frames, ns per capture")
    print("%-32s %8s %12s %16s" % ("thread", "frames", "pystack", "callsite_capture"))
    print("%-32s %8d %12.0f %16.0f" % ("pt_autograd_0, chain read", best[2], best[0], best[1]))
    print("%-32s %8d %12.0f %16.0f" % ("pt_autograd_0, same pass id", best[2], best[3], best[4]))
    print("%-32s %8d %12.0f %16.0f" % ("another name", 0, best[5], best[6]))
    frames = text.value.decode().splitlines()
    with open(__file__) as f:
        line = next(i for i, s in enumerate(f, 1) if s.rstrip().endswith("# the lender's call"))
    want = "%s:%d borrowed" % (os.path.abspath(__file__), line)
    print("borrowed frames:\n  " + "\n  ".join(frames))
    ok = (len(frames) >= 2 and frames[0].endswith(" _engine_run_backward") and
          any(os.path.abspath(f.split(":")[0]) + f[f.index(":"):] == want for f in frames))
    if not (3, 11) <= sys.version_info[:2] <= (3, 13):
        print("borrowed frames: none, as expected (memshim reads the layouts of 3.11 to 3.13)")
        ok = not frames
    if args.check_borrow:
        print(("ok   " if ok else "FAIL ") + "the worker's frames name " + want)
    return ok or not args.check_borrow


if __name__ == "__main__":
    sys.exit(main())
