#!/usr/bin/env python3
"""What the shim adds to a real PyTorch training step: CPU time per step, bare against under
the shim, and the trace's bytes per step and per kernel launch.

usage: torch_overhead.py BUILD_DIR PYTHON [--steps N] [--rounds R] [--shim LIB] [--other-shim LIB]
                        [--referee] [--quick] [--pin CPU]

The step is examples/pytorch/train.py's default GPT-style model on simcuda with no-op kernels
(SIMCUDA_COMPUTE=0): every kernel is free, so the step is pure framework CPU time, where a
shim's cost shows most. train.py reports the process CPU time of every step (all threads: the
shim's flusher counts; one OpenMP thread unless OMP_NUM_THREADS says otherwise); start-up and
import are left out, and so is the first step. The settings run alternately, round after round,
so that a drift of the machine falls on all of them alike; each run's figure is the median of
its steps, each setting's ratio the median over the rounds of its run's figure over that round's
bare run (pairs in time, so that a machine shared with other work disturbs both sides of a ratio
alike). A measurement, not a test: it prints what it finds and exits 0 whenever every run
succeeded.
"""
import argparse
import collections
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "..", "examples", "pytorch", "train.py")
HISTORY = os.path.join(HERE, "torch_history.py")


def settings(trace, other, referee=False):
    """(label, the shim to preload or None, environment) of each measured setting."""
    conf = [("bare", None, {}),
            ("defaults + trace", "shim", {"MEMSHIM_TRACE": trace}),
            ("MEMSHIM_ACCESS=off + trace", "shim", {"MEMSHIM_TRACE": trace,
                                                    "MEMSHIM_ACCESS": "off"}),
            ("defaults, no trace", "shim", {})]
    if other:
        conf.append(("--other-shim, defaults + trace", "other", {"MEMSHIM_TRACE": trace}))
    if referee:
        # The framework's own recorder, no shim: allocator events only (no launches, no
        # categories), with Python frames or with every frame.
        conf += [("PyTorch recorder, python", "history:python", {}),
                 ("PyTorch recorder, all", "history:all", {})]
    return conf


def simcuda_env(build, shim_lib, extra_env):
    """The environment of a run on simcuda with no-op kernels: simcuda's runtime and cuBLAS
    preloaded, after shim_lib (None: bare), no MEMSHIM_ setting but extra_env's."""
    sim = os.path.join(build, "simcuda")
    preload = [os.path.join(sim, lib) for lib in
               ("libcudart.so.13", "libcublasLt.so.13", "libcublas.so.13")]
    if shim_lib:
        preload.insert(0, shim_lib)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSHIM_")}
    env.update(extra_env)
    env["LD_PRELOAD"] = ":".join(preload)
    env["LD_LIBRARY_PATH"] = sim + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH")
                                     else "")
    env["SIMCUDA_COMPUTE"] = "0"
    return env


def pinned(a):
    """The command prefix that holds a run still: on one CPU, where the main thread and
    autograd's otherwise land on one core or two as it happens, and at the same addresses each
    time (no address randomisation; PYTHONHASHSEED in the environment). On a 2-core VM the
    median step of a bare run spread by 17% from run to run without it, 2% with it."""
    if a.pin < 0 or not shutil.which("taskset"):
        return []
    prefix = ["taskset", "-c", str(a.pin)]
    return prefix + (["setarch", platform.machine(), "-R"] if shutil.which("setarch") else [])


def history_stacks(shim):
    """The recorder's `stacks` of a setting whose shim is "history:STACKS" (bare, under
    PyTorch's own memory recorder, bench/torch_history.py); "" for any other setting."""
    return shim[len("history:"):] if shim and shim.startswith("history:") else ""


def run(a, shim, extra_env, steps, stats=None):
    """One run of train.py. `shim`: None (bare), "shim", "other", or "history:STACKS" (see
    history_stacks)."""
    history = history_stacks(shim)
    if history:
        shim = None
    env = simcuda_env(a.build, a.other_shim if shim == "other" else shim and a.shim, extra_env)
    if stats:
        env["SIMCUDA_STATS"] = stats
    # One intra-op thread, unless asked otherwise: the other would spin after each parallel
    # region, CPU time that grows with the step's wall time rather than its work (a fifth of the
    # process's samples, bare or not), which blurs the ratio.
    env.setdefault("OMP_NUM_THREADS", "1")
    # Timed runs only: the size runs read the trace, which a run that aborts at exit (below)
    # may leave without its last write-out.
    prefix = pinned(a) if stats is None else []
    if prefix:
        env.setdefault("PYTHONHASHSEED", "0")
    script = [HISTORY, history] if history else [TRAIN]
    out = subprocess.run(prefix + [a.python, *script, "--steps", str(steps)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    final = [ln for ln in out.stdout.splitlines() if ln.startswith("final ")]
    # PyTorch's exit race, bare or not: the autograd thread, dropping a Python reference while
    # the interpreter finalizes, is ended inside a noexcept destructor (std::terminate). On one
    # CPU it ends about one run in five; the steps were all timed before it.
    exit_race = (prefix and out.returncode == -signal.SIGABRT and
                 "terminate called without an active exception" in out.stderr)
    if (out.returncode != 0 and not exit_race) or not final:
        sys.exit(f"torch_overhead: train.py failed ({out.returncode}): {out.stderr[-2000:]}")
    return json.loads(final[0][len("final "):])


GROUPS = {"op": "operations", "access": "operations", "tensor": "tensors",
          "tensor-free": "tensors"}


def bytes_by_group(a, trace):
    """The trace's bytes by what they record, from `memshim-analyze dump --offsets`: a record
    runs to the next record's offset (a repeat's expanded records share its offset, and a
    checksum, which dump does not list, counts with the record before it)."""
    analyze = os.path.join(a.build, "bin", "memshim-analyze")
    out = subprocess.run([analyze, "dump", "--offsets", trace], stdout=subprocess.PIPE,
                         text=True, check=True).stdout
    starts = []
    for line in out.splitlines():
        at = line.rsplit(" @", 1)
        if len(at) == 2 and at[1].isdigit() and (not starts or int(at[1]) != starts[-1][0]):
            starts.append((int(at[1]), GROUPS.get(line.split(" ", 1)[0], "other")))
    total = collections.Counter()
    ends = [off for off, _ in starts[1:]] + [os.path.getsize(trace)]
    for (off, group), end in zip(starts, ends):
        total[group] += end - off
    return total


def trace_cost(a, tmp):
    """Trace bytes (by group) and kernel launches of one step: a short run and a longer one,
    differenced, so that start-up's records fall out."""
    seen = {}
    for steps in (2, 2 + a.size_steps):
        trace = os.path.join(tmp, f"size-{steps}.mst")
        stats = os.path.join(tmp, f"stats-{steps}.json")
        run(a, "shim", {"MEMSHIM_TRACE": trace}, steps, stats)
        with open(stats) as f:
            launches = json.load(f).get("kernel_launches", 0)
        seen[steps] = (bytes_by_group(a, trace), launches)
        os.unlink(trace)
    (b0, l0), (b1, l1) = seen[2], seen[2 + a.size_steps]
    per_step = {g: (b1[g] - b0[g]) / a.size_steps for g in set(b0) | set(b1)}
    return per_step, (l1 - l0) / a.size_steps


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("build")
    p.add_argument("python")
    p.add_argument("--steps", type=int, default=40, help="steps per run")
    p.add_argument("--rounds", type=int, default=4, help="runs of each setting")
    p.add_argument("--size-steps", type=int, default=5, help="extra steps of the size runs")
    p.add_argument("--shim", help="libmemshim.so (default: BUILD/lib/libmemshim.so)")
    p.add_argument("--other-shim", help="another libmemshim.so to measure alongside (a baseline)")
    p.add_argument("--referee", action="store_true",
                   help="also PyTorch's own memory recorder (_record_memory_history, stacks "
                        "python and all), without the shim")
    p.add_argument("--quick", action="store_true", help="one short round (smoke test)")
    p.add_argument("--pin", type=int, default=os.cpu_count() - 1,
                   help="the CPU every run is held on, without address randomisation "
                        "(default: the last; -1: neither)")
    a = p.parse_args()
    a.shim = a.shim or os.path.join(a.build, "lib", "libmemshim.so")
    if a.quick:
        a.steps, a.rounds, a.size_steps = 3, 1, 1
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "run-%p.mst")
        conf = settings(trace, a.other_shim, a.referee)
        per_step = {label: [] for label, _, _ in conf}
        per_run = {label: [] for label, _, _ in conf}
        for r in range(a.rounds):
            for label, shim, env in conf:
                steps = run(a, shim, env, a.steps)["step_cpu_s"]
                per_step[label] += steps
                per_run[label].append(statistics.median(steps))
                for f in os.listdir(tmp):
                    os.unlink(os.path.join(tmp, f))
            print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)
        bytes_step, launches_step = trace_cost(a, tmp)
    bare = statistics.median(per_step["bare"])
    print(f"train.py defaults on simcuda (no-op kernels), {a.rounds} runs x {a.steps} steps "
          f"per setting, alternated; CPU time per step (median)")
    for label, _, _ in conf:
        med = statistics.median(per_step[label])
        ratios = [x / b for x, b in zip(per_run[label], per_run["bare"])]
        print(f"  {label:28s} {med * 1e3:8.3f} ms   paired ratio x{statistics.median(ratios):.4f} "
              f"(rounds {min(ratios):.3f}..{max(ratios):.3f}; pooled x{med / bare:.4f})")
    ops = bytes_step.get("operations", 0)
    per_launch = ops / launches_step if launches_step else float("nan")
    print(f"trace: {sum(bytes_step.values()):.0f} bytes per step: operations {ops:.0f} "
          f"({per_launch:.1f} per kernel launch, {launches_step:.0f} launches), tensors "
          f"{bytes_step.get('tensors', 0):.0f}, other {bytes_step.get('other', 0):.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
