#!/usr/bin/env python3
"""memshim-analyze whatif on real traces: the example trainer under the shim on simcuda.

plan   The trainer traced with accesses and no ceiling; whatif swept from its peak down to the
       smallest workable ceiling. The recorded peak is summary's; the peak itself fits with no
       traffic; at every ceiling MIN <= LRU and MIN <= the shim's policy (where it never fails),
       MIN copies out exactly what it copies back, and MIN's traffic never grows as the ceiling
       rises; the smallest workable ceiling is the largest working set of one op.
spill  The trainer run again under MEMSHIM_LIMIT=L MEMSHIM_POLICY=spill at three ceilings
       between the smallest workable one and the peak: what the shim actually moved (spilled +
       restored + prefetched bytes in the trace) against whatif's prediction at L, from the spill run's own
       trace and from the unconstrained one. The replay of the shim's policy must agree within
       FACTOR either way, MIN (the lower bound) must not exceed it, and where the shim runs out
       of room the replay must say it fails.
smallbufs  spill-prog smallbufs (2000 buffers of 1-64 KiB, all blocks in chunks, 3x the
       ceiling) under MEMSHIM_POLICY=spill at 16 MiB, traced with accesses: the replay of the
       shim's policy on that trace must never fail and agree with what the shim moved within
       SMALL_FACTOR (chunks spill whole in both).
"""
import json
import os
import subprocess
import sys
import tempfile

BUILD = os.environ["MEMSHIM_BUILD_DIR"]
ANALYZE = os.path.join(BUILD, "bin", "memshim-analyze")
TRAINER = os.path.join(BUILD, "bin", "mlp-train-sim")
SHIM = os.path.join(BUILD, "lib", "libmemshim.so")
ARGS = ["--steps", "4", "--layers", "4", "--hidden", "1024", "--batch", "256", "--act", "gelu"]
# Why not 1: the replay places chunks in the order the driver's first fit would give them
# addresses. Measured on this trainer: exactly 1.0x at all three ceilings (it was up
# to 2.0x while the replay packed blocks perfectly into chunks that never moved).
FACTOR = 1.1
# Measured: 1.03x (3126853632 bytes moved, 3233808384 replayed); the replay without chunk
# spilling moved nothing and failed 1808 times.
SMALL_FACTOR = 1.1
SMALL_LIMIT = 16 << 20
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    print("ok  " if cond else "FAIL", what)


def train(tmp, name, extra_env):
    env = dict(os.environ)
    env["LD_PRELOAD"] = SHIM + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    trace = os.path.join(tmp, name)
    env.update({"MEMSHIM_TRACE": trace, "MEMSHIM_ACCESS": "all"})
    env.update(extra_env)
    p = subprocess.run([TRAINER] + ARGS, env=env, capture_output=True, text=True)
    if not extra_env:
        check(p.returncode == 0, f"trainer {name} exit {p.returncode} {p.stderr.strip()[-300:]}")
    return trace, p.returncode


def analyze(*args):
    p = subprocess.run([ANALYZE] + list(args), capture_output=True, text=True)
    check(p.returncode == 0, f"{' '.join(args[:3])} exit {p.returncode} {p.stderr.strip()}")
    return json.loads(p.stdout)


def moved(policy):
    return policy["d2h_bytes"] + policy["h2d_bytes"]


def plan(tmp):
    trace, _ = train(tmp, "plain.mst", {})
    s = analyze("summary", "--json", trace)
    w = analyze("whatif", "--json", "--sweep=12", trace)
    check(w["status"] == "ok" and w["has_accesses"], "a clean trace with accesses")
    check(w["ops"] > 0 and w["untracked_accesses"] == 0,
          f"{w['ops']} ops, every access inside a tracked allocation")
    check(w["peak_bytes"] == s["peak_bytes"], f"peak {w['peak_bytes']} is summary's")
    pts = w["sweep"]
    check(pts[0]["limit_bytes"] == w["peak_bytes"] and pts[0]["fits"], "the sweep starts at the peak")
    check(moved(pts[0]["min"]) == 0 and moved(pts[0]["lru"]) == 0, "nothing moves at the peak")
    check(pts[-1]["limit_bytes"] == w["min_ceiling_bytes"], "and ends at the smallest ceiling")
    check(all(p["feasible"] for p in pts), "every point of the sweep is workable")
    below = analyze("whatif", "--json", "--limit", str(w["min_ceiling_bytes"] - 1), trace)
    check(not below["limits"][0]["feasible"], "one byte below the smallest ceiling nothing works")
    prev = None
    for p in pts:
        lim = p["limit_bytes"]
        check(p["min"]["d2h_bytes"] == p["min"]["h2d_bytes"], f"{lim}: MIN out = in")
        check(moved(p["min"]) <= moved(p["lru"]), f"{lim}: MIN {moved(p['min'])} <= LRU "
              f"{moved(p['lru'])}")
        if p["shim"]["failures"] == 0:
            check(moved(p["min"]) <= moved(p["shim"]), f"{lim}: MIN <= shim {moved(p['shim'])}")
        if prev is not None:  # the sweep runs from high ceilings to low
            check(moved(p["min"]) >= prev, f"{lim}: MIN grows as the ceiling falls")
        prev = moved(p["min"])
    return trace, w


def spill(tmp, plain, w):
    lo, hi = w["min_ceiling_bytes"], w["peak_bytes"]
    for frac in (0.25, 0.5, 0.75):
        limit = lo + int((hi - lo) * frac)
        trace, rc = train(tmp, f"spill-{frac}.mst",
                          {"MEMSHIM_LIMIT": str(limit), "MEMSHIM_POLICY": "spill"})
        pred = analyze("whatif", "--json", "--limit", str(limit), plain)["limits"][0]
        if rc != 0:  # the shim ran out of room: the replay must have predicted it
            check(pred["shim"]["failures"] > 0, f"{limit}: the shim failed, the replay says so")
            continue
        s = analyze("summary", "--json", trace)
        check(s["status"] == "ok", f"{limit}: the spill run's trace is clean ({s.get('error', '')})")
        res = s["residency"]
        measured = sum(res[k]["bytes"] for k in ("spill", "restore", "prefetch"))
        for name, t in (("spill run", trace), ("unconstrained run", plain)):
            r = analyze("whatif", "--json", "--limit", str(limit), t)["limits"][0]
            shim, low = moved(r["shim"]), moved(r["min"])
            print(f"     {limit} {name}: measured {measured}, whatif shim {shim}, MIN {low}, "
                  f"LRU {moved(r['lru'])}")
            check(r["shim"]["failures"] == 0, f"{limit} {name}: the replayed shim never fails")
            check(measured <= FACTOR * shim and shim <= FACTOR * measured,
                  f"{limit} {name}: replayed shim {shim} within {FACTOR}x of measured {measured}")
            check(low <= measured, f"{limit} {name}: MIN {low} <= measured {measured}")


def smallbufs(tmp, prog):
    env = dict(os.environ)
    trace = os.path.join(tmp, "smallbufs.mst")
    env.update({"LD_PRELOAD": SHIM, "MEMSHIM_POLICY": "spill", "MEMSHIM_LIMIT": str(SMALL_LIMIT),
                "MEMSHIM_TRACE": trace, "MEMSHIM_ACCESS": "all"})
    p = subprocess.run([prog, "smallbufs", str(SMALL_LIMIT), "5", "600"], env=env,
                       capture_output=True, text=True)
    check(p.returncode == 0 and "smallbufs ok" in p.stdout,
          f"spill-prog smallbufs exit {p.returncode} {p.stderr.strip()[-300:]}")
    if p.returncode != 0:
        return
    res = analyze("summary", "--json", trace)["residency"]
    measured = sum(res[k]["bytes"] for k in ("spill", "restore", "prefetch"))
    r = analyze("whatif", "--json", "--limit", str(SMALL_LIMIT), trace)["limits"][0]
    shim = moved(r["shim"])
    print(f"     smallbufs {SMALL_LIMIT}: measured {measured} ({res['spill']['count']} spills), "
          f"whatif shim {shim} ({r['shim']['evictions']} evictions), MIN {moved(r['min'])}")
    check(measured > 0, "the shim spilled chunks")
    check(r["shim"]["failures"] == 0, "the replayed shim never fails")
    check(measured <= SMALL_FACTOR * shim and shim <= SMALL_FACTOR * measured,
          f"replayed shim {shim} within {SMALL_FACTOR}x of measured {measured}")


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "plan"
    with tempfile.TemporaryDirectory() as tmp:
        if mode == "smallbufs":
            smallbufs(tmp, sys.argv[2])
            if failures:
                print(f"{len(failures)} failures")
                return 1
            return 0
        plain, w = plan(tmp)
        if mode == "spill":
            spill(tmp, plain, w)
    if failures:
        print(f"{len(failures)} failures")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
