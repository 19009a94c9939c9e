#!/usr/bin/env python3
"""End-to-end checks of MEMSHIM_POLICY=spill on simcuda. simcuda's SIMCUDA_STATS is the referee
for device bytes; the trace's RESIDENCY records and SUMMARY counters show the moves.

  patterns_host      spill-prog patterns: 100 buffers = 3x the ceiling, random copies, GEMMs and
                     kernels, every byte checked; spilled ranges keep host memory mapped
  patterns_unmapped  the same with SIMCUDA_HOST_VMM=0: spilled ranges are unmapped and restored
                     before each access the shim sees
  hostlimit          MEMSHIM_HOST_LIMIT exhausted: cudaMalloc returns out of memory, no crash,
                     nothing lost
  threads            4 threads allocating, spilling and checking at once
  mlp_50, mlp_30     the example trainer at 50% / 30% of its natural peak (measured without the
                     shim): bit-identical losses, peak_device_bytes <= the ceiling
Every scenario also checks that the RESIDENCY records agree with the SUMMARY counters.
"""
import argparse
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shim_trace  # noqa: E402

SKIP = 77
MIB = 1 << 20
REC_RESIDENCY = 18
RESIDENCY = struct.Struct("<QQQQQIBB2x")
RES_SPILL, RES_RESTORE, RES_PREFETCH = 1, 2, 3
# The trainer with buffers at or above MEMSHIM_SPILL_MIN (2 MiB), so there is something to move.
# Eight layers: at 30% the ceiling must still hold one Adam update (weight, gradient and two
# moments of one layer, used by one kernel) beside the small buffers' chunks. Batch 128 keeps
# the CPU GEMMs short enough for sanitizer builds (activations are then below SPILL_MIN and
# stay in chunks; weights, gradients and moments move).
MLP_ARGS = ["--steps", "4", "--batch", "128", "--input", "256", "--hidden", "1024",
            "--layers", "8"]
STEP_LINE = re.compile(r"step (\d+) loss (\S+)")


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def expect(cond, msg):
    if not cond:
        fail(msg)


def run(argv, env_extra, check=True):
    env = dict(os.environ)
    env.update(env_extra)
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=500)
    if check and p.returncode != 0:
        fail(f"{' '.join(argv)} exited {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def stats(path):
    with open(path) as f:
        return json.load(f)


def residency(trace):
    out = []
    with open(trace_path_of[id(trace)], "rb") as f:
        data = f.read()
    pos = shim_trace.HEADER.unpack_from(data)[2]
    while pos + 8 <= len(data):
        kind, _, length = shim_trace.RECORD.unpack_from(data, pos)
        pos += 8
        if kind == REC_RESIDENCY and length >= RESIDENCY.size:
            t, addr, nbytes, dur, _, _, event, _ = RESIDENCY.unpack_from(data, pos)
            out.append((event, addr, nbytes, dur))
        pos += length
    return out


trace_path_of = {}


def shim_env(args, tmp, limit, extra=None):
    env = {"LD_PRELOAD": args.shim, "MEMSHIM_POLICY": "spill", "MEMSHIM_LIMIT": str(limit),
           "SIMCUDA_STATS": os.path.join(tmp, "stats.json"),
           "MEMSHIM_TRACE": os.path.join(tmp, "run.mst")}
    env.update(extra or {})
    return env


def load_trace(tmp):
    path = os.path.join(tmp, "run.mst")
    t = shim_trace.Trace(path)
    trace_path_of[id(t)] = path
    return t


def check_moves(tmp, limit, want_spills=True):
    st = stats(os.path.join(tmp, "stats.json"))
    expect(st["peak_device_bytes"] <= limit,
           f"peak_device_bytes {st['peak_device_bytes']} above the ceiling {limit}")
    t = load_trace(tmp)
    s = t.summary()
    expect(s is not None, "no SUMMARY record")
    if want_spills:
        expect(s["spills"] > 0, "nothing was spilled")
    moves = residency(t)
    spills = [m for m in moves if m[0] == RES_SPILL]
    restores = [m for m in moves if m[0] == RES_RESTORE]
    prefetches = [m for m in moves if m[0] == RES_PREFETCH]
    expect(len(spills) == s["spills"], f"{len(spills)} SPILL records, summary {s['spills']}")
    expect(sum(m[2] for m in spills) == s["spilled_bytes"], "spilled bytes disagree")
    expect(len(restores) == s["restores"], f"{len(restores)} RESTORE records, "
           f"summary {s['restores']}")
    expect(len(prefetches) == s["prefetches"], f"{len(prefetches)} PREFETCH records, "
           f"summary {s['prefetches']}")
    expect(sum(m[2] for m in restores + prefetches) == s["restored_bytes"],
           "restored bytes disagree")
    # Every range comes home as often as it left, or fewer times: never more.
    expect(len(restores) + len(prefetches) <= len(spills), "more restores than spills")
    return st, s


def patterns(args, host_vmm):
    limit = 48 * MIB
    with tempfile.TemporaryDirectory() as tmp:
        env = shim_env(args, tmp, limit, {"SIMCUDA_HOST_VMM": "1" if host_vmm else "0"})
        out = run([args.prog, "patterns", str(limit), "11", "400"], env).stdout
        expect("patterns ok" in out, out)
        st, s = check_moves(tmp, limit)
        if host_vmm:
            expect(st["host_bytes_peak"] > 0, "host-mapped mode used no host-located memory")
        else:
            expect(st["host_bytes_peak"] == 0, "unmapped mode used host-located memory")
            expect(s["restores"] > 0, "unmapped mode restored nothing")
        print(f"patterns ({'host-mapped' if host_vmm else 'unmapped'}): spills {s['spills']} "
              f"({s['spilled_bytes'] / MIB:.0f} MiB), restores {s['restores']} + prefetches "
              f"{s['prefetches']} ({s['restored_bytes'] / MIB:.0f} MiB), peak {st['peak_device_bytes'] / MIB:.1f}"
              f" MiB <= {limit / MIB:.0f} MiB")


def hostlimit(args):
    limit = 32 * MIB
    with tempfile.TemporaryDirectory() as tmp:
        env = shim_env(args, tmp, limit, {"MEMSHIM_HOST_LIMIT": "64m"})
        p = run([args.prog, "hostlimit"], env)
        m = re.search(r"hostlimit ok: (\d+) buffers", p.stdout)
        expect(m, p.stdout + p.stderr)
        n = int(m.group(1))
        # 32 MiB on the device, 64 MiB on the host, 4 MiB each: 24 fit, the 25th cannot.
        expect(n == 24, f"{n} buffers before out of memory, expected 24")
        expect("out of memory" in p.stderr, "no out-of-memory report:\n" + p.stderr)
        st, s = check_moves(tmp, limit)
        expect(s["failed_allocations"] >= 1, "the failed allocation is not counted")


def threads(args):
    limit = 32 * MIB
    with tempfile.TemporaryDirectory() as tmp:
        env = shim_env(args, tmp, limit)
        out = run([args.prog, "threads", str(limit)], env).stdout
        expect("threads ok" in out, out)
        check_moves(tmp, limit)


def losses(text):
    got = STEP_LINE.findall(text)
    expect(got, "no loss lines:\n" + text)
    return got


def mlp(args, percent):
    if not args.mlp:
        print("no mlp-train-sim", file=sys.stderr)
        sys.exit(SKIP)
    with tempfile.TemporaryDirectory() as tmp:
        stats_path = os.path.join(tmp, "natural.json")
        base = run([args.mlp] + MLP_ARGS, {"SIMCUDA_STATS": stats_path}).stdout
        natural = stats(stats_path)["peak_device_bytes"]
        limit = natural * percent // 100
        out = run([args.mlp] + MLP_ARGS, shim_env(args, tmp, limit)).stdout
        expect(losses(out) == losses(base),
               f"losses differ at {percent}%:\n{out}\nunconstrained:\n{base}")
        st, s = check_moves(tmp, limit)
        print(f"mlp at {percent}% of {natural / MIB:.1f} MiB: losses identical, peak "
              f"{st['peak_device_bytes'] / MIB:.1f} MiB <= {limit / MIB:.1f} MiB, spills "
              f"{s['spills']} ({s['spilled_bytes'] / MIB:.0f} MiB), restores {s['restores']} + "
              f"prefetches {s['prefetches']} ({s['restored_bytes'] / MIB:.0f} MiB)")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("scenario")
    p.add_argument("--shim", required=True)
    p.add_argument("--prog", required=True)
    p.add_argument("--mlp")
    args = p.parse_args()
    s = args.scenario
    if s == "patterns_host":
        patterns(args, True)
    elif s == "patterns_unmapped":
        patterns(args, False)
    elif s == "hostlimit":
        hostlimit(args)
    elif s == "threads":
        threads(args)
    elif s == "mlp_50":
        mlp(args, 50)
    elif s == "mlp_30":
        mlp(args, 30)
    else:
        fail("unknown scenario " + s)


if __name__ == "__main__":
    main()
