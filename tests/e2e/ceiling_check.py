#!/usr/bin/env python3
"""The ceiling's property test: ceiling-prog (random programs: every allocation door, four
threads, virtual memory released while still mapped, a pool) under one MEMSHIM_POLICY, for a
fixed set of seeds and ceilings. For every run:
  - simcuda's own device peak (SIMCUDA_STATS) is at most the ceiling;
  - the shim's SUMMARY peak is at most the ceiling;
  - the analyzer's replay of the trace (summary --json peak_bytes) never shows more resident
    than the shim held (SUMMARY peak_resident);
  - the program's data checks pass (a spilled buffer comes back with its bytes, or is read and
    written where it is, in host memory, when the device has no room for it: at the lowest
    ceiling that happens, and under a policy that moves anything some run must show it).
Bounded: SEEDS x CEILINGS runs of OPS operations per thread."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shim_trace  # noqa: E402

MIB = 1 << 20
SEEDS = (1, 2, 3)
CEILINGS = (8 * MIB, 24 * MIB, 40 * MIB)
THREADS, OPS = 4, 150


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def run_one(args, tmp, seed, ceiling):
    stats = os.path.join(tmp, f"stats-{seed}-{ceiling}.json")
    trace = os.path.join(tmp, f"run-{seed}-{ceiling}.mst")
    env = dict(os.environ, LD_PRELOAD=args.shim, MEMSHIM_LIMIT=str(ceiling),
               MEMSHIM_POLICY=args.policy, SIMCUDA_STATS=stats, MEMSHIM_TRACE=trace)
    p = subprocess.run([args.prog, str(seed), str(THREADS), str(OPS)], env=env,
                       capture_output=True, text=True, timeout=300)
    what = f"policy {args.policy}, seed {seed}, ceiling {ceiling / MIB:.0f} MiB"
    if p.returncode != 0:
        fail(f"{what}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    with open(stats) as f:
        sim = json.load(f)["peak_device_bytes"]
    held = shim_trace.Trace(trace).summary()["peak_resident"]
    a = subprocess.run([args.analyze, "summary", "--json", trace], capture_output=True,
                       text=True, timeout=120)
    if a.returncode != 0:
        fail(f"{what}: analyzer exit {a.returncode}\n{a.stderr}")
    summary = json.loads(a.stdout)
    replay, host_uses = summary["peak_bytes"], summary["residency"]["host_use"]["count"]
    print(f"{what}: {p.stdout.strip()}; simcuda peak {sim}, shim {held}, analyzer {replay}, "
          f"host uses {host_uses}")
    if sim > ceiling:
        fail(f"{what}: simcuda's peak {sim} above the ceiling {ceiling}")
    if held > ceiling:
        fail(f"{what}: the shim's peak {held} above the ceiling {ceiling}")
    if replay > held:
        fail(f"{what}: the analyzer's peak {replay} above what the shim held, {held}")
    return host_uses


def main():
    p = argparse.ArgumentParser()
    p.add_argument("policy", choices=["none", "spill", "recompute", "auto"])
    p.add_argument("--shim", required=True)
    p.add_argument("--prog", required=True)
    p.add_argument("--analyze", required=True)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        host_uses = sum(run_one(args, tmp, seed, ceiling) for seed in SEEDS for ceiling in CEILINGS)
    if args.policy != "none" and host_uses == 0:
        fail(f"policy {args.policy}: no run used a range in host memory, so that path went "
             f"untested")


if __name__ == "__main__":
    main()
