#!/usr/bin/env python3
"""What recording PyTorch's tensors costs (MEMSHIM_TENSORS=auto against off).

usage: torch_tensor_cost.py BUILD_DIR PYTHON [RUNS [STEPS]]

Runs examples/pytorch/train.py (the GPT of bench/torch_categories.py, STEPS steps, default 20)
under BUILD_DIR/bin/memshim --sim with a trace, RUNS times each way (default 3), alternating:
off, auto, and auto without call stacks (MEMSHIM_STACK_DEPTH=0, the record alone), and
prints per setting the median of train.py's steady step time and of the process's CPU time
(user + system), then the difference per tensor record (TENSOR_ALLOC + TENSOR_FREE, counted by
`memshim-analyze summary --json`). A measurement, not a test: noisy on a loaded machine.
"""
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "..", "examples", "pytorch", "train.py")
GPT = ["--layers", "2", "--hidden", "128", "--heads", "4", "--seq-len", "64", "--batch", "4",
       "--vocab", "512", "--attention", "sdpa"]
MODES = {"off": {"MEMSHIM_TENSORS": "off"}, "auto": {"MEMSHIM_TENSORS": "auto"},
         "auto-nostack": {"MEMSHIM_TENSORS": "auto", "MEMSHIM_STACK_DEPTH": "0"}}


def once(build, py, mode, trace, steps):
    env = dict(os.environ, OMP_NUM_THREADS="1", **MODES[mode])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run([os.path.join(build, "bin", "memshim"), "--sim", "--trace", trace, "--",
                        py, TRAIN, *GPT, "--steps", str(steps)], env=env, capture_output=True, text=True, timeout=900)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise SystemExit(f"train.py failed ({mode}):\n{r.stderr[-2000:]}")
    final = json.loads(r.stdout.splitlines()[-1].split(" ", 1)[1])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return final["step_time_median_s"], cpu


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    build, py = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    steps = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    got = {m: [] for m in MODES}
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "t.mst")
        for _ in range(runs):
            for mode in MODES:
                got[mode].append(once(build, py, mode, trace, steps))
        once(build, py, "auto", trace, steps)
        s = subprocess.run([os.path.join(build, "bin", "memshim-analyze"), "summary", "--json",
                            trace], capture_output=True, text=True)
        tensors = (json.loads(s.stdout).get("tensors") or {}).get("count", 0)
    med = {m: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v))
           for m, v in got.items()}
    for m, (step, cpu) in med.items():
        print(f"{m:12}: step {step * 1e3:8.2f} ms (median), process CPU {cpu:6.2f} s")
    print(f"tensors recorded: {tensors} (each an allocation and a free)")
    for m in ("auto", "auto-nostack"):
        d_cpu = med[m][1] - med["off"][1]
        if tensors:
            print(f"{m}: CPU per tensor (allocation + free) {d_cpu / tensors * 1e6:.1f} us; "
                  f"step time ratio to off {med[m][0] / med['off'][0]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
