#!/usr/bin/env python3
"""memshim-analyze estimate --trace on real traces: the example trainer under the shim on simcuda.

The trainer is fp32 with Adam, so the textbook gives 4 bytes of parameters, 4 of gradients and
8 of optimizer state per parameter. For three model sizes the estimate beside the measurement
must agree on those three categories to within the allocator's rounding (256 bytes per buffer),
for models large enough that the peak is in training rather than at cuBLAS set-up (the 4 MiB
default workspace of cublasCreate, replaced by the trainer's own, is the peak of tiny models),
— the check that the estimate and the trace count the same thing.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

BUILD = os.environ["MEMSHIM_BUILD_DIR"]
ANALYZE = os.path.join(BUILD, "bin", "memshim-analyze")
TRAINER = os.path.join(BUILD, "bin", "mlp-train-sim")
SHIM = os.path.join(BUILD, "lib", "libmemshim.so")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    print("ok  " if cond else "FAIL", what)


def train(tmp, layers, hidden):
    env = dict(os.environ)
    env["LD_PRELOAD"] = SHIM + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    trace = os.path.join(tmp, f"mlp-{layers}-{hidden}.mst")
    env["MEMSHIM_TRACE"] = trace
    p = subprocess.run([TRAINER, "--steps", "3", "--layers", str(layers), "--hidden", str(hidden)],
                       env=env, check=True, capture_output=True, text=True)
    m = re.search(r"(\d+) parameters", p.stderr + p.stdout)
    return trace, int(m.group(1))


def estimate(trace, params, layers, hidden):
    p = subprocess.run([ANALYZE, "estimate", "--params", str(params), "--layers", str(layers),
                        "--hidden", str(hidden), "--heads", "1", "--seq-len", "1",
                        "--micro-batch", "64", "--precision", "fp32", "--optimizer", "adam",
                        "--trace", trace, "--json"], capture_output=True, text=True)
    check(p.returncode == 0, f"estimate exit {p.returncode} {p.stderr.strip()}")
    return json.loads(p.stdout)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for layers, hidden in ((3, 512), (4, 768), (6, 512)):
            trace, params = train(tmp, layers, hidden)
            d = estimate(trace, params, layers, hidden)
            nbuf = 2 * layers  # weight and bias per linear layer
            for cat, per in (("parameter", 4), ("gradient", 4), ("optimizer_state", 8)):
                row = d["trace"]["by_category"][cat]
                check(row["estimate"] == per * params,
                      f"{layers}x{hidden}: {cat} estimate {row['estimate']} = {per} x {params}")
                slack = (per // 4) * nbuf * 256
                check(row["estimate"] <= row["measured"] <= row["estimate"] + slack,
                      f"{layers}x{hidden}: {cat} measured {row['measured']} within {slack} B")
                check(row["ratio"] is not None and abs(row["ratio"] - 1) < 0.01,
                      f"{layers}x{hidden}: {cat} ratio {row['ratio']}")
            check(d["trace"]["peak_bytes"] > 0 and d["trace"]["traces"] == 1, "one trace, a peak")
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
