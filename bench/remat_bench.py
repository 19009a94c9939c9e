#!/usr/bin/env python3
"""Recompute benchmark on simcuda: the example trainer (GELU) with its readonly rules
(examples/mlp/memshim.rules) at 50% of its natural peak under MEMSHIM_POLICY=auto (the costs the
shim measured at start-up, then MEMSHIM_COSTS forcing a fast GEMM), recompute, and spill. For
each run it reads the trace's SUMMARY (bytes spilled and restored, GEMM FLOPs replayed) and runs
`memshim-analyze whatif --limit <ceiling> --json` on the same trace, and prints per step what the
shim moved and replayed against whatif's MIN (the offline lower bound on bytes moved, no
recompute) and its auto replay (the same DTR choice at the same rates, on the recorded
accesses), as ratios.

simcuda copies are memcpy and its GEMMs run on the CPU, so its measured rates are the CPU's:
auto with measured costs shows what the shim decides on such a device, the forced costs what it
decides where a GEMM is cheap against the link.

  remat_bench.py --shim libmemshim.so --mlp mlp-train-sim --analyze memshim-analyze
                 --rules examples/mlp/memshim.rules [--steps 4] [--percent 50[,30...]]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
import shim_trace  # noqa: E402

# GEMM outputs of batch x hidden floats = 2 MiB: ranges of their own at the default
# MEMSHIM_SPILL_MIN, so they can be dropped.
ARGS = ["--batch", "512", "--input", "256", "--hidden", "1024", "--layers", "8", "--act", "gelu"]
FAST = "h2d=12g,d2h=12g,gemm=50t"
MIB = 1 << 20


def run(argv, env):
    e = dict(os.environ)
    e.update(env)
    return subprocess.run(argv, env=e, check=True, capture_output=True, text=True)


def ratio(a, b):
    if b == 0:
        return "  -  " if a == 0 else "  inf"
    return f"{a / b:5.2f}x"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shim", required=True)
    p.add_argument("--mlp", required=True)
    p.add_argument("--analyze", required=True)
    p.add_argument("--rules", required=True)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--percent", default="50", help="ceilings, %% of the natural peak: 50,30")
    a = p.parse_args()
    argv = [a.mlp, "--steps", str(a.steps)] + ARGS
    with tempfile.TemporaryDirectory() as tmp:
        stats = os.path.join(tmp, "stats.json")
        base = run(argv, {"SIMCUDA_STATS": stats}).stdout
        with open(stats) as f:
            natural = json.load(f)["peak_device_bytes"]
        print(f"trainer {' '.join(ARGS)}, {a.steps} steps; natural peak {natural / MIB:.1f} MiB, "
              f"rules {a.rules}; per step: bytes spilled + restored, GEMM GFLOP replayed")
        for pct in (int(x) for x in a.percent.split(",")):
            print(f"\nceiling {natural * pct // 100 / MIB:.1f} MiB ({pct}%)")
            table(a, argv, base, natural * pct // 100, tmp)
    return 0


def table(a, argv, base, limit, tmp):
    cases = [("auto (measured)", "auto", None), ("auto (" + FAST + ")", "auto", FAST),
             ("recompute", "recompute", None), ("spill", "spill", None)]
    head = (f"{'policy':38s} {'moved/step':>11s} {'GFLOP/step':>10s} {'drops':>6s} "
            f"{'MIN moved':>10s} {'auto moved':>10s} {'auto GFLOP':>10s} "
            f"{'vs MIN':>7s} {'vs auto':>7s} {'GFLOP vs auto':>13s}")
    print(head)
    print("-" * len(head))
    for name, policy, costs in cases:
        trace = os.path.join(tmp, policy + ("-fast" if costs else "") + ".mst")
        env = {"LD_PRELOAD": a.shim, "MEMSHIM_POLICY": policy, "MEMSHIM_LIMIT": str(limit),
               "MEMSHIM_RULES": a.rules, "MEMSHIM_TRACE": trace}
        if costs:
            env["MEMSHIM_COSTS"] = costs
        out = run(argv, env).stdout
        same = "" if out == base else "  LOSSES DIFFER"
        s = shim_trace.Trace(trace).summary()
        moved = (s["spilled_bytes"] + s["restored_bytes"]) / a.steps
        flops = s["recompute_flops"] / a.steps
        cmd = [a.analyze, "whatif", "--limit", str(limit), "--json", trace]
        if costs:
            cmd[2:2] = ["--costs", costs]
        w = json.loads(run(cmd, {}).stdout)["limits"][0]
        w_min = w["min"]["moved_bytes"] / a.steps if w["min"] else float("nan")
        au = w.get("auto") or {}
        w_auto = au.get("moved_bytes", 0) / a.steps
        w_auto_flops = au.get("flops", 0) / a.steps
        print(f"{name:38s} {moved / MIB:7.1f} MiB {flops / 1e9:10.2f} {s['drops']:6d} "
              f"{w_min / MIB:6.1f} MiB {w_auto / MIB:6.1f} MiB {w_auto_flops / 1e9:10.2f} "
              f"{ratio(moved, w_min):>7s} {ratio(moved, w_auto):>7s} "
              f"{ratio(flops, w_auto_flops):>13s}{same}")


if __name__ == "__main__":
    sys.exit(main())
