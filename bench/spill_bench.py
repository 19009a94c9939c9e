#!/usr/bin/env python3
"""Spill benchmark on simcuda: the example trainer unconstrained, under the shim with
MEMSHIM_POLICY=spill and no ceiling (the cost of VMM backing alone), and at 50% (and 30%) of its
natural peak. Prints the step-time ratios against the unconstrained run and the bytes moved per
step (spilled + restored, from the trace's SUMMARY record).

Step time = (CPU time of a long run - of a short run) / (difference in steps), so start-up and
the first step's allocations cancel out. simcuda copies are memcpy and its GEMMs run on the CPU,
so these ratios say how much work the shim adds, not what a GPU's link would cost.

  spill_bench.py --shim libmemshim.so --mlp mlp-train-sim [--steps 8] [--repeat 3]
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import resource

ARGS = ["--batch", "512", "--input", "256", "--hidden", "1024", "--layers", "8"]
SUMMARY = 20
MIB = 1 << 20


def cpu_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(exe, steps, env):
    """CPU seconds (user + system) of one run: on simcuda all device work is CPU work, and CPU
    time does not depend on what else the machine is running, as wall time would."""
    e = dict(os.environ)
    e.update(env)
    t0 = cpu_children()
    subprocess.run([exe, "--steps", str(steps)] + ARGS, env=e, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return cpu_children() - t0


def summary(path):
    with open(path, "rb") as f:
        data = f.read()
    pos = struct.unpack_from("<8sHHI", data)[2]
    out = None
    while pos + 8 <= len(data):
        kind, _, length = struct.unpack_from("<HHI", data, pos)
        pos += 8
        if kind == SUMMARY:
            v = struct.unpack_from("<" + "Q" * 16, data, pos)
            out = {"spills": v[6], "restores": v[7], "spilled_bytes": v[11],
                   "restored_bytes": v[12]}
        pos += length
    return out


def step_time(exe, short, long_, env, repeat):
    best = None
    for _ in range(repeat):
        t = (run(exe, long_, env) - run(exe, short, env)) / (long_ - short)
        best = t if best is None or t < best else best
    return best


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shim", required=True)
    p.add_argument("--mlp", required=True)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="only the 50%% case (smoke test)")
    a = p.parse_args()
    short, long_ = 2, max(a.steps, 3)
    with tempfile.TemporaryDirectory() as tmp:
        stats = os.path.join(tmp, "stats.json")
        run(a.mlp, 2, {"SIMCUDA_STATS": stats})
        with open(stats) as f:
            natural = json.load(f)["peak_device_bytes"]
        base = step_time(a.mlp, short, long_, {}, a.repeat)
        print(f"natural peak {natural / MIB:.1f} MiB; unconstrained step {base * 1e3:.1f} ms")
        cases = [("spill, no ceiling", None), ("spill at 50%", 50), ("spill at 30%", 30)]
        if a.quick:
            cases = cases[1:2]
        for name, pct in cases:
            env = {"LD_PRELOAD": a.shim, "MEMSHIM_POLICY": "spill"}
            if pct:
                env["MEMSHIM_LIMIT"] = str(natural * pct // 100)
            t = step_time(a.mlp, short, long_, env, a.repeat)
            moved = ""
            if pct:
                sums = []
                for steps in (short, long_):
                    trace = os.path.join(tmp, f"t{pct}-{steps}.mst")
                    run(a.mlp, steps, dict(env, MEMSHIM_TRACE=trace))
                    sums.append(summary(trace))
                per = [(s["spilled_bytes"] + s["restored_bytes"]) for s in sums]
                moved = (f"; moved per step {(per[1] - per[0]) / (long_ - short) / MIB:.1f} MiB"
                         f" (spilled+restored)")
            print(f"{name:18s} step {t * 1e3:7.1f} ms  ratio {t / base:5.2f}x{moved}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
