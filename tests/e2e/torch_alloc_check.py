#!/usr/bin/env python3
"""shim/hooks/torch_alloc.c on a stand-in for PyTorch's libc10_cuda.so (tests/e2e/fake_c10).

usage: torch_alloc_check.py BENCH_TENSOR_HOOK LIBMEMSHIM FAKE_LIBC10_CUDA MEMSHIM_ANALYZE

Runs bench_tensor_hook's measuring child under the shim with a trace and checks, through
`memshim-analyze summary --json` and `dump`: every tensor the fake allocator handed out is a
TENSOR_ALLOC with its TENSOR_FREE, inside a segment flagged as the pool; with
MEMSHIM_TENSORS=off, when the tensors have another deleter (caching off), and when the
DataPtr's layout is not the expected one (the shim must give up with one `memshim:` line, which
says why, and keep working), there are none.
"""
import json
import os
import subprocess
import sys
import tempfile

N = 1000
WARMUP = N // 10 + 1


def run(bench, shim, fake, trace, **env):
    e = dict(os.environ, LD_PRELOAD=shim, BENCH_TENSOR_CHILD="1", BENCH_FAKE_C10=fake,
             MEMSHIM_TRACE=trace, **env)
    r = subprocess.run([bench, shim, str(N)], env=e, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: bench_tensor_hook exit {r.returncode}: {r.stderr[-2000:]}")
    return r.stderr


def summary(analyze, trace):
    r = subprocess.run([analyze, "summary", "--json", trace], capture_output=True, text=True)
    return json.loads(r.stdout)


def expect(cond, what):
    if not cond:
        raise SystemExit(f"FAIL: {what}")


def main():
    bench, shim, fake, analyze = sys.argv[1:5]
    with tempfile.TemporaryDirectory() as tmp:
        t = os.path.join(tmp, "on.mst")
        run(bench, shim, fake, t)
        view = summary(analyze, t)["tensors"]
        expect(view and view["count"] == N + WARMUP, f"tensors recorded: {view}")
        dump = subprocess.run([analyze, "dump", t], capture_output=True, text=True).stdout
        frees = sum(1 for line in dump.splitlines() if line.startswith("tensor-free "))
        expect(frees == N + WARMUP, f"{frees} tensor frees, want {N + WARMUP}")
        pool = [line for line in dump.splitlines()
                if line.startswith("alloc ") and "size=67108864" in line]
        expect(len(pool) == 1 and "flags=0x20" in pool[0], f"the segment: {pool}")
        expect(view["pool_at_peak"] == 64 << 20 and view["peak_bytes"] == 4096,
               f"pool and peak: {view['pool_at_peak']} {view['peak_bytes']}")

        t = os.path.join(tmp, "off.mst")
        run(bench, shim, fake, t, MEMSHIM_TENSORS="off")
        expect(summary(analyze, t)["tensors"] is None, "MEMSHIM_TENSORS=off recorded tensors")

        t = os.path.join(tmp, "bad.mst")
        err = run(bench, shim, fake, t, FAKE_C10_LAYOUT="bad")
        lines = [x for x in err.splitlines() if "PyTorch's CUDA allocator" in x]
        expect(len(lines) == 1 and lines[0].startswith("memshim: "), f"give-up message: {err}")
        expect(summary(analyze, t)["tensors"] is None, "tensors recorded from a bad layout")

        t = os.path.join(tmp, "uncached.mst")
        err = run(bench, shim, fake, t, FAKE_C10_LAYOUT="uncached")
        lines = [x for x in err.splitlines() if "PyTorch's CUDA allocator" in x]
        expect(len(lines) == 1 and "caching is off" in lines[0],
               f"give-up message with caching off: {err}")
        expect(summary(analyze, t)["tensors"] is None, "tensors recorded with another deleter")
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
