#!/usr/bin/env python3
"""The shim's own CPU time in a real PyTorch step, sampled: perf over a long run and a short run
of the same training, differenced.

usage: torch_perf.py BUILD_DIR PYTHON [--short N] [--long N] [--rounds R] [--shim LIB]
                     [--other-shim LIB] [--top K] [--freq HZ]

The step is examples/pytorch/train.py's default GPT-style model on simcuda with no-op kernels,
under the shim with a trace (the setting of torch_overhead.py's "defaults + trace"). Each run is
sampled with `perf record` (all threads, the flusher included); samples are counted per shared
object and, in libmemshim.so, per function. A run of --short steps is taken from a run of --long
steps, so that start-up, import and the shim's first sight of each call site fall out, and the
rest is divided by the steps between them. Printed per step: all the process's sampled time,
the shim's own, its share, and the shim's functions that take the most.

What this sees that the others do not: torch_overhead.py's CPU time spreads a few percent from
round to round, more than most changes to the shim; torch_callgrind.py counts instructions and
simulates caches, but not prefetching, nor a hypervisor's page walks. The shim's own samples
are a narrower figure (the cache lines and TLB entries it takes from the framework show up in
the framework's samples, not its own) but steadier: about 15 us a step from run to run here.
With --other-shim, the runs of the two shims alternate. Needs perf (linux-tools) and a
perf_event_paranoid that lets this user sample; prints why and exits 0 otherwise. A
measurement, not a test.
"""
import argparse
import collections
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch_overhead  # noqa: E402  (simcuda_env, TRAIN)


def samples(data, *args):
    """Samples per key of `perf report` over `data`, sorted as args say (--sort dso, or sym
    within one --dso)."""
    out = subprocess.run(["perf", "report", "-i", data, "--no-children", "--stdio", "-n", *args],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    found = collections.Counter()
    for line in out.splitlines():
        cols = line.split()
        # "  12.34%  5678  libfoo.so" or, by symbol, "  0.47%  123  [.] name"
        if len(cols) >= 3 and cols[0].endswith("%") and cols[1].isdigit():
            found[cols[-1]] += int(cols[1])
    return found


def sample_run(a, lib, steps, tmp):
    """(samples per shared object, samples per function of lib) of one perf-recorded run."""
    data = os.path.join(tmp, "perf.data")
    env = torch_overhead.simcuda_env(a.build, lib, {"MEMSHIM_TRACE": os.path.join(tmp, "t.mst")})
    env.setdefault("OMP_NUM_THREADS", "1")
    p = subprocess.run(["perf", "record", "-q", "-F", str(a.freq), "-o", data, "--", a.python,
                        torch_overhead.TRAIN, "--steps", str(steps)],
                       env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"torch_perf: the run failed ({p.returncode}): {p.stderr[-2000:]}")
    by_dso = samples(data, "--sort", "dso")
    by_sym = samples(data, "--sort", "sym", "--dso", os.path.basename(lib))
    for f in ("perf.data", "t.mst"):
        if os.path.exists(os.path.join(tmp, f)):
            os.unlink(os.path.join(tmp, f))
    return by_dso, by_sym


def per_step(a, lib, tmp):
    """Microseconds per step: (all samples, the shim's, the shim's by function)."""
    short = sample_run(a, lib, a.short, tmp)
    long_ = sample_run(a, lib, a.long, tmp)
    us = 1e6 / a.freq / (a.long - a.short)
    dso = os.path.basename(lib)
    total = (sum(long_[0].values()) - sum(short[0].values())) * us
    own = (long_[0][dso] - short[0][dso]) * us
    funcs = {k: (long_[1][k] - short[1][k]) * us for k in set(long_[1]) | set(short[1])}
    return total, own, funcs


def perf_usable():
    if not shutil.which("perf"):
        return "perf is not installed (Debian: linux-perf)"
    p = subprocess.run(["perf", "record", "-q", "-o", os.devnull, "--", "true"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        return "perf cannot sample here: " + (p.stderr.strip().splitlines() or ["?"])[-1]
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("build")
    p.add_argument("python")
    p.add_argument("--short", type=int, default=200, help="steps of the short run")
    p.add_argument("--long", type=int, default=1200, help="steps of the long run")
    p.add_argument("--rounds", type=int, default=3, help="long and short runs of each shim")
    p.add_argument("--shim", help="libmemshim.so (default: BUILD/lib/libmemshim.so)")
    p.add_argument("--other-shim", help="another libmemshim.so, measured alternately")
    p.add_argument("--top", type=int, default=12, help="functions listed")
    p.add_argument("--freq", type=int, default=4000, help="samples per second")
    a = p.parse_args()
    if a.long <= a.short:
        sys.exit("torch_perf: --long must be more than --short")
    why = perf_usable()
    if why:
        print(f"torch_perf: {why}; nothing measured")
        return 0
    shims = [("this shim", a.shim or os.path.join(a.build, "lib", "libmemshim.so"))]
    if a.other_shim:
        shims.append(("--other-shim", a.other_shim))
    got = collections.defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            for label, lib in shims:
                got[label].append(per_step(a, lib, tmp))
            print(f"round {r + 1}/{a.rounds} done", file=sys.stderr, flush=True)
    print(f"train.py defaults + trace on simcuda (no-op kernels), perf at {a.freq} Hz, runs of "
          f"{a.long} minus {a.short} steps, {a.rounds} rounds; per step, median over the rounds")
    for label, _ in shims:
        rows = got[label]
        total = statistics.median(t for t, _, _ in rows)
        own = [o for _, o, _ in rows]
        print(f"  {label:14s} sampled {total / 1000:6.3f} ms, the shim's own "
              f"{statistics.median(own) / 1000:6.3f} ms ({min(own) / 1000:.3f}.."
              f"{max(own) / 1000:.3f}), {statistics.median(own) / total:6.2%} of the step")
        names = collections.Counter()
        for _, _, funcs in rows:
            names.update(funcs)
        for name, _ in names.most_common(a.top):
            print(f"      {statistics.median(f.get(name, 0) for _, _, f in rows):7.1f} us  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
