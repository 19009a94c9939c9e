#!/usr/bin/env python3
"""What the shim adds to a PyTorch training step, counted in instructions: callgrind over
chosen steps of examples/pytorch/train.py on simcuda with no-op kernels, bare and under the shim
in each setting. Stable where CPU time on a shared machine is not (torch_overhead.py measures
time); all threads count, the trace's flusher included.

usage: torch_callgrind.py BUILD_DIR PYTHON [--first N] [--last M]

Each run starts uninstrumented (valgrind --instr-atstart=no); bench/callgrind_steps.c's client
requests start the count at the beginning of step --first and dump it at the end of step --last.
train.py reads process_time() at the start and the end of every step, which is where this hooks
in, so train.py itself is run unchanged. A measurement, not a test: prints, asserts nothing.
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

import torch_overhead  # beside this file

TRAIN = torch_overhead.TRAIN

# Run inside the measured interpreter: train.py as a module, its clock wrapped.
CHILD = r"""
import ctypes, importlib.util, sys, time, types
lib, train_py, first, last = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ctl = ctypes.CDLL(lib)
sys.argv = [train_py, "--steps", str(last)]
spec = importlib.util.spec_from_file_location("train", train_py)
train = importlib.util.module_from_spec(spec)
spec.loader.exec_module(train)
reads = [0]

def process_time():
    reads[0] += 1  # two a step: its start, its end
    if reads[0] == 2 * first - 1:
        ctl.callgrind_steps_begin()
    elif reads[0] == 2 * last:
        ctl.callgrind_steps_end()
    return time.process_time()

clock = types.ModuleType("time")
clock.__dict__.update(time.__dict__)
clock.process_time = process_time
train.time = clock
sys.exit(train.main(train.ARGS))
"""


def settings(trace):
    """torch_overhead.py's settings, and the trace without each kind of stack it may take."""
    return torch_overhead.settings(trace, None) + [
        ("MEMSHIM_TENSORS=off + trace", "shim", {"MEMSHIM_TRACE": trace,
                                                 "MEMSHIM_TENSORS": "off"}),
        ("MEMSHIM_PY_STACKS=off + trace", "shim", {"MEMSHIM_TRACE": trace,
                                                   "MEMSHIM_PY_STACKS": "off"})]


def count(a, tmp, shim, extra):
    shim_lib = shim and os.path.join(a.build, "lib", "libmemshim.so")
    env = torch_overhead.simcuda_env(a.build, shim_lib, dict(extra, OMP_NUM_THREADS="1"))
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    out = os.path.join(tmp, "cg.%p")
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
           a.python, "-c", CHILD, os.path.join(a.build, "lib", "libcallgrind_steps.so"), TRAIN,
           str(a.first), str(a.last)]
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    dumps = glob.glob(os.path.join(tmp, "cg.*.1"))
    if r.returncode != 0 or len(dumps) != 1:
        sys.exit(f"torch_callgrind: run failed ({r.returncode}): {r.stderr[-2000:]}")
    with open(dumps[0]) as f:
        for line in f:
            if line.startswith("summary:"):
                return int(line.split()[1])
    sys.exit("torch_callgrind: no summary line in the dump")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("build")
    p.add_argument("python")
    p.add_argument("--first", type=int, default=3, help="first counted step (1-based)")
    p.add_argument("--last", type=int, default=7, help="last counted step")
    a = p.parse_args()
    steps = a.last - a.first + 1
    with tempfile.TemporaryDirectory() as tmp:
        rows = [(label, count(a, tmp, shim, env))
                for label, shim, env in settings(os.path.join(tmp, "run-%p.mst"))]
    bare = rows[0][1]
    print(f"train.py defaults on simcuda (no-op kernels), steps {a.first}..{a.last}: "
          f"instructions per step (all threads), callgrind")
    for label, n in rows:
        print(f"  {label:30s} {n / steps / 1e6:9.2f} M   x{n / bare:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
