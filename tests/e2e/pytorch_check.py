#!/usr/bin/env python3
"""CPU checks of examples/pytorch/train.py, the PyTorch workload of tests/gpu/run.sh.

Needs torch (any build; only the CPU is used). The interpreter is $MEMSHIM_TORCH_PYTHON when
set, else this one; without torch the test is skipped (exit 77): CI does not install torch.

Checks: the loss falls; the same seed repeats bit for bit and another seed differs;
activation checkpointing leaves the fp32 losses unchanged; gradient accumulation, bf16
autocast and the fused attention run; --tokens gives ceil(tokens / tokens-per-step) steps;
the NVTX ranges (echoed with --echo-ranges) are `step N` around `data load`, `forward`,
`backward` and `optimizer`, balanced, with the names memshim's step glob and built-in phase
rules match; an out-of-memory error exits 3 with "oom" in the final line; a bad command line
exits 2.
"""
import fnmatch
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "..", "..", "examples", "pytorch", "train.py")
PY = os.environ.get("MEMSHIM_TORCH_PYTHON") or sys.executable
SMALL = ["--device", "cpu", "--layers", "2", "--hidden", "64", "--heads", "4", "--seq-len", "32",
         "--batch", "4", "--vocab", "256"]
# One thread: faster for a model this small, and the same reduction order on any machine.
ENV = dict(os.environ, OMP_NUM_THREADS="1")
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def train(*args, expect=0):
    r = subprocess.run([PY, TRAIN, *SMALL, *args], capture_output=True, text=True, timeout=300,
                       env=ENV)
    if r.returncode != expect:
        sys.stderr.write(r.stderr)
        raise SystemExit(f"train.py {' '.join(args)}: exit {r.returncode}, want {expect}")
    steps = [l for l in r.stdout.splitlines() if l.startswith("step ")]
    finals = [l for l in r.stdout.splitlines() if l.startswith("final ")]
    final = json.loads(finals[-1][len("final "):]) if finals else None
    return steps, final, r.stderr


def losses(steps):
    return [float(l.split()[3]) for l in steps]


def main():
    if not os.path.exists(PY) or subprocess.run([PY, "-c", "import torch"],
                                                capture_output=True).returncode != 0:
        print(f"SKIP: torch does not import in {PY}")
        return 77

    steps, final, _ = train("--steps", "40", "--lr", "3e-3")
    ls = losses(steps)
    check(len(ls) == 40 and [l.split()[1] for l in steps] == [str(i) for i in range(1, 41)],
          "one `step N loss X` line per step, N from 1")
    check(final["steps"] == 40 and final["tokens"] == 40 * 4 * 32 and not final["oom"],
          f"final line: steps, tokens, no OOM ({final})")
    check(sum(ls[-10:]) / 10 < ls[0] - 0.5, f"the loss falls: {ls[0]:.3f} -> {ls[-1]:.3f}")

    # The ranges go to stderr only: the losses are those of a run without them.
    again, _, err = train("--steps", "2", "--seed", "5", "--grad-accum", "2", "--nvtx",
                          "--echo-ranges")
    twice, _, _ = train("--steps", "2", "--seed", "5", "--grad-accum", "2")
    other, _, _ = train("--steps", "2", "--seed", "6", "--grad-accum", "2")
    check(again == twice, "the same seed gives the same losses")
    check(again != other, "another seed gives other losses")
    ckpt, _, _ = train("--steps", "2", "--seed", "5", "--grad-accum", "2", "--checkpoint")
    check(ckpt == again, "activation checkpointing leaves the fp32 losses unchanged")

    extra = ["--amp", "bf16", "--checkpoint", "--attention", "sdpa"]
    s, f, _ = train("--steps", "3", *extra)
    check(len(s) == 3 and all(x == x and x > 0 for x in losses(s)) and f["steps"] == 3,
          f"{' '.join(extra)} runs")

    s, f, _ = train("--tokens", "1000", "--grad-accum", "2")  # 256 tokens a step: 4 steps
    check(len(s) == 4 and f["tokens"] == 1024, f"--tokens 1000 at 256 a step: {len(s)} steps")

    stack, seen, names = [], [], []
    balanced = True
    for line in err.splitlines():
        if not line.startswith("range "):
            continue
        words = line.split(None, 2)
        if words[1] == "push":
            stack.append(words[2])
            names.append(words[2])
            seen.append(tuple(stack))
        elif not stack:
            balanced = False
        else:
            stack.pop()
    check(balanced and not stack, "NVTX pushes and pops balance")
    steps_ranges = [n for n in names if fnmatch.fnmatch(n, "step*")]
    check(steps_ranges == ["step 1", "step 2"], f"one `step N` range a step: {steps_ranges}")
    want = [("step 1", "data load"), ("step 1", "forward"), ("step 1", "backward"),
            ("step 1", "data load"), ("step 1", "forward"), ("step 1", "backward"),
            ("step 1", "optimizer")]
    check([s for s in seen if s[0] == "step 1" and len(s) == 2] == want,
          "inside a step: data load, forward, backward per micro-batch, then optimizer")
    check(("model init",) in seen, "model construction inside `model init`")
    # The built-in phase rules (shim/builtin_rules.txt) these names must meet.
    rules = {"data load": "*data*load*", "forward": "*forward*", "backward": "*backward*",
             "optimizer": "*optim*", "model init": "*model*init*"}
    check(all(fnmatch.fnmatch(n, g) for n, g in rules.items()),
          "range names match the built-in phase globs")

    # An out-of-memory error (what a memshim ceiling produces): exit 3 and "oom" in the final
    # line. The CPU cannot run out, so the optimizer is made to raise PyTorch's error.
    boom = ("import runpy, sys, torch\n"
            "err = getattr(torch, 'OutOfMemoryError', None) or torch.cuda.OutOfMemoryError\n"
            "def step(*a, **k): raise err('CUDA out of memory. Tried to allocate 2.00 MiB')\n"
            "torch.optim.AdamW.step = step\n"
            f"sys.argv = {[TRAIN, *SMALL, '--steps', '3']!r}\n"
            "runpy.run_path(sys.argv[0], run_name='__main__')\n")
    r = subprocess.run([PY, "-c", boom], capture_output=True, text=True, timeout=120, env=ENV)
    finals = [l for l in r.stdout.splitlines() if l.startswith("final ")]
    oom = json.loads(finals[-1][len("final "):]) if finals else {}
    check(r.returncode == 3 and oom.get("oom") is True and oom.get("steps") == 0
          and "out of memory at step 1" in r.stderr,
          f"out of memory: exit {r.returncode}, want 3, final line {oom}")

    r = subprocess.run([PY, TRAIN, "--device", "cpu", "--hidden", "10", "--heads", "3"],
                       capture_output=True, text=True, timeout=120, env=ENV)
    check(r.returncode == 2, f"heads not dividing hidden: exit {r.returncode}, want 2")

    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
