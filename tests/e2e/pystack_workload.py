"""Allocations from known Python functions and lines, for pystack_check.py.

Run under LD_PRELOAD=libmemshim.so with simcuda's libcudart.so.13 on the library path. Each
allocation prints one JSON line: its size, how it was called (`pydll` keeps the GIL during the
foreign call, `cdll` releases it) and the Python stack at the call, innermost first, as
[file, line, function] with the function named as co_qualname names it.
"""

import ctypes
import json
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


def report(size, how, stack, ptr):
    print(json.dumps({"size": size, "how": how, "stack": stack, "ptr": ptr}), flush=True)


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


def repeat_same_line(size, times):
    for _ in range(times):
        free(alloc_with(PYDLL, "pydll", size))


def generated(size, count):
    """Code objects made at run time, each from its own pseudo-file."""
    for i in range(count):
        scope = {"alloc_with": alloc_with, "PYDLL": PYDLL}
        exec(compile("def gen():\n    return alloc_with(PYDLL, 'pydll', %d)\n" % (size + i),
                     "<generated-%d>" % i, "exec"), scope)
        scope["gen"]()


def main():
    Model().forward(1 * MIB)
    alloc_with(CDLL, "cdll", 2 * MIB)
    t = threading.Thread(target=worker, args=(3 * MIB,))
    t.start()
    t.join()
    recurse(60, 4 * MIB)
    repeat_same_line(5 * MIB, 200)
    generated(6 * MIB, 5)


if __name__ == "__main__":
    main()
