#!/usr/bin/env python3
"""The real PyTorch GPT (examples/pytorch/train.py, its default model) on simcuda under
MEMSHIM_POLICY=spill, at a fraction of its natural peak (the unconstrained run's, by whatif).

native   PyTorch's default caching allocator (no PYTORCH_CUDA_ALLOC_CONF) at 50%: the run
         completes with the unconstrained run's losses, simcuda's own peak (SIMCUDA_STATS) and
         the analyzer's stay under the ceiling, and something was spilled (the ceiling bit).
async    backend:cudaMallocAsync (one allocation per tensor) at 50% and 30%: the bytes the run
         moved (its RESIDENCY records: spilled + restored + prefetched) and the bytes whatif's
         replay of the shim's policy moves, each against whatif's MIN (the Belady lower bound,
         which drops a buffer nobody reads again for free) at the same ceiling. Bar:
         TRAFFIC_BAR x MIN, the replay within AGREE of the run (`--check async`, an e2e test).

Byte counts on simcuda are deterministic (no timings here). `--check native` and `--check
async` are e2e tests (tests/e2e/torch.cmake): exit 1 when a part misses, 77 when the torch
interpreter is missing. Without --check it prints every part and exits 0.

  torch_ceiling.py [--check] BUILD_DIR TORCH_PYTHON [native] [async]
"""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "..", "examples", "pytorch", "train.py")
MIB = 1 << 20
TRAFFIC_BAR = 1.30
AGREE = 1.10
STEP_LINE = re.compile(r"step (\d+) loss (\S+)")
# The default model; steps enough for the forecast (a step to learn from) to show.
NATIVE_STEPS = ["--steps", "3", "--nvtx"]
ASYNC_STEPS = ["--steps", "6", "--nvtx"]


def step_ratio(final, base):
    a, b = final.get("step_time_median_s"), base.get("step_time_median_s")
    return f"{a / b:.2f}x the unconstrained run's" if a and b else "n/a"


class Bench:
    def __init__(self, build, py, tmp):
        self.build, self.py, self.tmp, self.misses = build, py, tmp, []
        self.launcher = os.path.join(build, "bin", "memshim")
        self.analyzer = os.path.join(build, "bin", "memshim-analyze")

    def run(self, name, args, conf, env_extra=None):
        """(exit status, losses, final JSON, trace, simcuda's stats)."""
        trace = os.path.join(self.tmp, name + ".mst")
        stats = os.path.join(self.tmp, name + ".stats.json")
        env = dict(os.environ, OMP_NUM_THREADS="1", SIMCUDA_STATS=stats, **(env_extra or {}))
        env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
        env["PYTORCH_ALLOC_CONF"] = conf
        p = subprocess.run([self.launcher, "--sim", "--trace", trace, "--", self.py, TRAIN, *args],
                           env=env, capture_output=True, text=True, timeout=1500)
        final = {}
        for line in p.stdout.splitlines():
            if line.startswith("final "):
                final = json.loads(line[6:])
        if p.returncode != 0:
            sys.stderr.write(p.stderr[-3000:])
        with open(stats) as f:
            sim = json.load(f)
        return p.returncode, STEP_LINE.findall(p.stdout), final, trace, sim

    def analyze(self, *args):
        p = subprocess.run([self.analyzer, *args], capture_output=True, text=True, check=True)
        return json.loads(p.stdout)

    def miss(self, what):
        print("  missed:", what)
        self.misses.append(what)

    def spill(self, name, args, conf, base, pct, base_final):
        """Runs under spill at pct% of the base trace's peak; prints and returns the figures
        (with the median step time against the unconstrained run's, on simcuda: a ratio for
        reading, never asserted)."""
        peak = self.analyze("whatif", "--json", "--limit", "1g", base)["peak_bytes"]
        limit = peak * pct // 100
        rc, losses, final, trace, sim = self.run(
            f"{name}_{pct}", args, conf, {"MEMSHIM_POLICY": "spill", "MEMSHIM_LIMIT": str(limit)})
        w = self.analyze("whatif", "--json", "--limit", str(limit), base)["limits"][0]
        s = self.analyze("summary", "--json", trace)
        moved = sum(s["residency"][k]["bytes"] for k in ("spill", "restore", "prefetch"))
        # Below whatif's smallest workable ceiling no replay runs (the trace's accesses say no
        # policy fits); the run may still complete, with what it moved and no ratio to MIN.
        low = replay = None
        if w.get("min") and w.get("shim"):
            low = w["min"]["d2h_bytes"] + w["min"]["h2d_bytes"]
            replay = w["shim"]["d2h_bytes"] + w["shim"]["h2d_bytes"]
            vs = (f"MIN {low / MIB:7.1f} MiB, run {moved / MIB:7.1f} MiB "
                  f"{moved / max(low, 1):4.2f}x, replay {replay / MIB:7.1f} MiB "
                  f"{replay / max(low, 1):4.2f}x")
        else:
            vs = f"run {moved / MIB:7.1f} MiB, below whatif's smallest workable ceiling"
        print(f"  {name} {pct}%: limit {limit / MIB:6.1f} MiB (peak {peak / MIB:6.1f}), exit {rc}, "
              f"simcuda peak {sim['peak_device_bytes'] / MIB:6.1f} MiB, analyzer peak "
              f"{s['peak_bytes'] / MIB:6.1f} MiB | {vs} | step time {step_ratio(final, base_final)}",
              flush=True)
        return dict(rc=rc, losses=losses, final=final, limit=limit, sim=sim, summary=s,
                    moved=moved, replay=replay, low=low)

    def native(self):
        print("native: the default caching allocator under spill at 50% of its peak")
        rc, losses, base_final, base, _ = self.run("native_base", NATIVE_STEPS, "")
        if rc != 0 or not losses:
            self.miss(f"native: the unconstrained run failed ({rc})")
            return
        r = self.spill("native", NATIVE_STEPS, "", base, 50, base_final)
        if r["rc"] != 0 or r["final"].get("oom", True):
            self.miss(f"native 50%: the run failed (exit {r['rc']})")
        if r["losses"] != losses:
            self.miss(f"native 50%: losses {r['losses']} differ from {losses}")
        if r["sim"]["peak_device_bytes"] > r["limit"]:
            self.miss(f"native 50%: simcuda's peak {r['sim']['peak_device_bytes']} above "
                      f"the ceiling {r['limit']}")
        if r["summary"]["peak_bytes"] > r["limit"]:
            self.miss(f"native 50%: the analyzer's peak {r['summary']['peak_bytes']} above "
                      f"the ceiling {r['limit']}")
        if r["summary"]["residency"]["spill"]["count"] == 0:
            self.miss("native 50%: nothing was spilled, so the ceiling was not tested")

    def async_(self):
        print(f"async: backend:cudaMallocAsync under spill, traffic / whatif MIN "
              f"(bar {TRAFFIC_BAR}x, replay within {AGREE}x of the run)")
        conf = "backend:cudaMallocAsync"
        rc, losses, base_final, base, _ = self.run("async_base", ASYNC_STEPS, conf)
        if rc != 0 or not losses:
            self.miss(f"async: the unconstrained run failed ({rc})")
            return
        for pct in (50, 30):
            r = self.spill("async", ASYNC_STEPS, conf, base, pct, base_final)
            if r["rc"] != 0 or r["losses"] != losses:
                self.miss(f"async {pct}%: the run failed ({r['rc']}) or its losses differ")
                continue
            if r["sim"]["peak_device_bytes"] > r["limit"]:
                self.miss(f"async {pct}%: simcuda's peak above the ceiling")
            if r["low"] is None:
                self.miss(f"async {pct}%: below whatif's smallest workable ceiling")
                continue
            low = max(r["low"], 1)
            if r["moved"] > TRAFFIC_BAR * low or r["replay"] > TRAFFIC_BAR * low:
                self.miss(f"async {pct}%: run {r['moved'] / low:.2f}x, replay "
                          f"{r['replay'] / low:.2f}x MIN")
            if not (r["moved"] <= AGREE * r["replay"] and r["replay"] <= AGREE * r["moved"]):
                self.miss(f"async {pct}%: run {r['moved']} and replay {r['replay']} disagree")


def main():
    argv = sys.argv[1:]
    check = bool(argv) and argv[0] == "--check"
    argv = argv[1:] if check else argv
    if len(argv) < 2:
        sys.exit(__doc__)
    build, py, parts = argv[0], argv[1], argv[2:] or ["native", "async"]
    if not py or not os.path.exists(py):
        print(f"skipped: no torch interpreter ({py!r})")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        b = Bench(build, py, tmp)
        for part in parts:
            {"native": b.native, "async": b.async_}[part]()
    return 1 if check and b.misses else 0


if __name__ == "__main__":
    sys.exit(main())
