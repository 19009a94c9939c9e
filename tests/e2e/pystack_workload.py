"""Allocations from known Python functions and lines, for pystack_check.py.

Run under LD_PRELOAD=libmemshim.so with simcuda's libcudart.so.13 on the library path. Each
allocation prints one JSON line: its size, how it was called (`pydll` keeps the GIL during the
foreign call, `cdll` releases it) and the Python stack at the call, innermost first, as
[file, line, function] with the function named as co_qualname names it.
"""

import ctypes
import gc
import json
import os
import sys
import threading

PYDLL = ctypes.PyDLL("libcudart.so.13")  # the GIL stays held during the call
CDLL = ctypes.CDLL("libcudart.so.13")  # the GIL is released during the call
MIB = 1 << 20


def stack_of(frame):
    out = []
    while frame is not None:
        code = frame.f_code
        out.append([code.co_filename, frame.f_lineno, getattr(code, "co_qualname", code.co_name)])
        frame = frame.f_back
    return out


PRINTING = threading.Lock()  # one JSON line at a time from many threads


def report(size, how, stack, ptr):
    line = json.dumps({"size": size, "how": how, "stack": stack, "ptr": ptr})
    with PRINTING:
        print(line, flush=True)


def malloc(lib, size):
    p = ctypes.c_void_p()
    rc = lib.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(size)); here = stack_of(sys._getframe())  # noqa: E702,E501
    if rc != 0:
        raise SystemExit("cudaMalloc(%d) failed: %d" % (size, rc))
    return p.value, here


def free(ptr):
    PYDLL.cudaFree(ctypes.c_void_p(ptr))


def alloc_with(lib, how, size):
    ptr, stack = malloc(lib, size)
    report(size, how, stack, ptr)
    return ptr


class Model:
    def forward(self, size):
        return alloc_with(PYDLL, "pydll", size)


def worker(size):
    alloc_with(PYDLL, "pydll", size)


def recurse(n, size):
    if n == 0:
        return alloc_with(PYDLL, "pydll", size)
    return recurse(n - 1, size)


def released(size):
    free(alloc_with(CDLL, "cdll", size))


def many_released(size, count):
    """More threads allocating with the GIL released than the shim keeps a table of chains for
    (64): the others read their frames without one."""
    threads = [threading.Thread(target=released, args=(size + i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def repeat_same_line(size, times):
    for _ in range(times):
        free(alloc_with(PYDLL, "pydll", size))


def released_in_turn(size, rounds):
    """Lines taking turns with the GIL released, one of them every other round: a thread's
    chain is first compared with the one that followed it last time, which is wrong here
    half the time, from the third frame out."""
    for i in range(rounds):
        free(alloc_with(CDLL, "cdll", size))
        free(alloc_with(CDLL, "cdll", size + 1))
        if i % 2:
            free(alloc_with(CDLL, "cdll", size + 2))


def generated(size, count):
    """Code objects made at run time, each from its own pseudo-file."""
    for i in range(count):
        scope = {"alloc_with": alloc_with, "PYDLL": PYDLL}
        exec(compile("def gen():\n    return alloc_with(PYDLL, 'pydll', %d)\n" % (size + i),
                     "<generated-%d>" % i, "exec"), scope)
        scope["gen"]()


class Holder:
    """Cyclic garbage whose finalizer frees CUDA memory, as a tensor's would."""

    def __init__(self, ptr):
        self.ptr, self.me = ptr, self

    def __del__(self):
        free(self.ptr)
        print(json.dumps({"freed": self.ptr}), flush=True)


def collect_inside_call(victim, size):
    """Garbage that only the collector frees, and a threshold that makes the next tracked
    allocation run it: with no such allocation before the foreign call, that is the frame
    objects the shim's stack capture creates (3.11: at allocation; 3.12+: later, safely)."""
    p = ctypes.c_void_p()
    ref, sz = ctypes.byref(p), ctypes.c_size_t(size)
    old = gc.get_threshold()
    gc.disable()
    Holder(victim)
    gc.enable()
    gc.set_threshold(1)
    rc = PYDLL.cudaMalloc(ref, sz)
    gc.set_threshold(*old)
    if rc != 0:
        raise SystemExit("cudaMalloc(%d) failed: %d" % (size, rc))
    report(size, "gc", None, p.value)


def fresh_frames(n, victim, size):
    if n == 0:
        return collect_inside_call(victim, size)
    return fresh_frames(n - 1, victim, size)


def gc_while_capturing(count):
    """None of the frees a finalizer makes, even inside the shim's capture, goes unrecorded."""
    for i in range(count):
        victim = alloc_with(PYDLL, "pydll", (7 << 20) + i)
        fresh_frames(8, victim, (8 << 20) + i)
    gc.collect()


def main():
    if os.environ.get("PYSTACK_RELEASED_FIRST"):
        alloc_with(CDLL, "cdll", 512 << 10)
    Model().forward(1 * MIB)
    alloc_with(CDLL, "cdll", 2 * MIB)
    t = threading.Thread(target=worker, args=(3 * MIB,))
    t.start()
    t.join()
    recurse(60, 4 * MIB)
    repeat_same_line(5 * MIB, 200)
    released_in_turn(9 * MIB, 8)
    generated(6 * MIB, 5)
    gc_while_capturing(50)
    many_released(4 << 10, 80)
    if not gc.isenabled():
        raise SystemExit("the collector was left disabled")


if __name__ == "__main__":
    main()
