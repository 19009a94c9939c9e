#!/usr/bin/env python3
"""What the shim adds to a PyTorch training step, counted in instructions: callgrind over
chosen steps of examples/pytorch/train.py on simcuda with no-op kernels, bare and under the shim
in each setting. Stable where CPU time on a shared machine is not (torch_overhead.py measures
time); all threads count, the trace's flusher included.

usage: torch_callgrind.py BUILD_DIR PYTHON [--first N] [--last M] [--cache] [--referee]

Each run starts uninstrumented (valgrind --instr-atstart=no); bench/callgrind_steps.c's client
requests start the count at the beginning of step --first and dump it at the end of step --last.
train.py reads process_time() at the start and the end of every step, which is where this hooks
in, so train.py itself is run unchanged. A measurement, not a test: prints, asserts nothing.

Instructions leave out what the shim costs in cache misses: its tables and trace buffer are cold
each time the framework calls it, and its lines evict the framework's. --cache runs callgrind's
cache simulation as well and adds an estimate of cycles from it, the formula iai-callgrind uses
(after pythonspeed.com's "consistent benchmarking in CI"): L1 hits + 5 x last-level hits + 35 x
memory accesses. The caches simulated are one core's own, as on the server this was measured on:
64 KiB I1, 48 KiB D1, and its 2 MiB second level as the last (valgrind would otherwise take the
shared L3, hundreds of MiB there, which other work shares).
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
history = sys.argv[5] if len(sys.argv) > 5 else ""  # PyTorch's own recorder: its `stacks`
ctl = ctypes.CDLL(lib)
sys.argv = [train_py, "--steps", str(last)]
spec = importlib.util.spec_from_file_location("train", train_py)
train = importlib.util.module_from_spec(spec)
spec.loader.exec_module(train)
if history:
    train.torch.cuda.memory._record_memory_history(max_entries=1 << 22, stacks=history)
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


def settings(trace, referee=False):
    """torch_overhead.py's settings, and the trace without each kind of stack it may take."""
    return torch_overhead.settings(trace, None, referee) + [
        ("MEMSHIM_TENSORS=off + trace", "shim", {"MEMSHIM_TRACE": trace,
                                                 "MEMSHIM_TENSORS": "off"}),
        ("MEMSHIM_PY_STACKS=off + trace", "shim", {"MEMSHIM_TRACE": trace,
                                                   "MEMSHIM_PY_STACKS": "off"})]


CACHES = ["--cache-sim=yes", "--I1=65536,8,64", "--D1=49152,12,64", "--LL=2097152,16,64"]


def misses(ev):
    """First-level and last-level misses (instructions, data reads and writes together)."""
    return (ev["I1mr"] + ev["D1mr"] + ev["D1mw"], ev["ILmr"] + ev["DLmr"] + ev["DLmw"])


def estimated_cycles(ev):
    """iai-callgrind's EstimatedCycles from a callgrind summary's events."""
    l1_miss, ll_miss = misses(ev)
    l1_hits = ev["Ir"] + ev["Dr"] + ev["Dw"] - l1_miss
    return l1_hits + 5 * (l1_miss - ll_miss) + 35 * ll_miss


def count(a, tmp, shim, extra):
    """The dump's events over the counted steps: {"Ir": ...}, with the cache's under --cache."""
    history = torch_overhead.history_stacks(shim)
    shim_lib = shim and not history and os.path.join(a.build, "lib", "libmemshim.so")
    env = torch_overhead.simcuda_env(a.build, shim_lib, dict(extra, OMP_NUM_THREADS="1"))
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    out = os.path.join(tmp, "cg.%p")
    cmd = (["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"] +
           (CACHES if a.cache else []) +
           [a.python, "-c", CHILD, os.path.join(a.build, "lib", "libcallgrind_steps.so"), TRAIN,
            str(a.first), str(a.last), history])
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    dumps = glob.glob(os.path.join(tmp, "cg.*.1"))
    if r.returncode != 0 or len(dumps) != 1:
        sys.exit(f"torch_callgrind: run failed ({r.returncode}): {r.stderr[-2000:]}")
    names = None
    with open(dumps[0]) as f:
        for line in f:
            if line.startswith("events:"):
                names = line.split()[1:]
            elif line.startswith("summary:") and names:
                return dict(zip(names, (int(v) for v in line.split()[1:])))
    sys.exit("torch_callgrind: no summary line in the dump")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("build")
    p.add_argument("python")
    p.add_argument("--first", type=int, default=3, help="first counted step (1-based)")
    p.add_argument("--last", type=int, default=7, help="last counted step")
    p.add_argument("--cache", action="store_true",
                   help="simulate the caches too, and estimate cycles from their misses")
    p.add_argument("--referee", action="store_true",
                   help="also PyTorch's own memory recorder (torch_overhead.py --referee)")
    a = p.parse_args()
    steps = a.last - a.first + 1
    with tempfile.TemporaryDirectory() as tmp:
        rows = [(label, count(a, tmp, shim, env))
                for label, shim, env in settings(os.path.join(tmp, "run-%p.mst"), a.referee)]
    bare = rows[0][1]
    print(f"train.py defaults on simcuda (no-op kernels), steps {a.first}..{a.last}: "
          f"instructions per step (all threads), callgrind" +
          ("; L1 and last-level misses and estimated cycles per step" if a.cache else ""))
    for label, ev in rows:
        line = f"  {label:30s} {ev['Ir'] / steps / 1e6:9.2f} M   x{ev['Ir'] / bare['Ir']:.4f}"
        if a.cache:
            l1, ll = misses(ev)
            cyc, cyc0 = estimated_cycles(ev), estimated_cycles(bare)
            line += (f"   L1 miss {l1 / steps / 1e3:6.1f} K  LL miss {ll / steps / 1e3:5.1f} K"
                     f"   cycles {cyc / steps / 1e6:7.2f} M  x{cyc / cyc0:.4f}")
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
