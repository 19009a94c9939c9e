#!/usr/bin/env python3
"""How close the shim comes to what `memshim-analyze whatif` says is possible, on simcuda.

fit      For each workload and policy (spill, recompute, auto), with the unconstrained run's
         losses as the referee of completion:
         - on the device: the smallest ceiling at which the policy completes with every range
           an operation uses on the device (MEMSHIM_HOST_USE=off), found by bisection (to
           FIT_STEP bytes), against whatif's `shim_min_ceiling_bytes` for the unconstrained
           trace (the smallest ceiling at the shim's charges: ranges in whole 2 MiB granules,
           small buffers in whole chunks). Bar: <= FIT_BAR x. Also printed: the ratio to
           `min_ceiling_bytes` (the sizes asked for, which no granule-mapped allocator reaches
           when an operation's buffers are not multiples of the granule);
         - with the defaults: the run at exactly `min_ceiling_bytes` must complete (bar), using
           in host memory what the device has no room for; its host uses are printed.
traffic  The example trainer (relu and gelu) under `spill` at 50% and 30% of its natural peak:
         the bytes the run moved (its RESIDENCY records: spilled + restored + prefetched) and
         the bytes whatif's replay of the shim's policy moves, each against whatif's MIN (the
         Belady lower bound) at the same ceiling. Bar: both <= TRAFFIC_BAR x MIN, and the
         replay within AGREE of the run.

Byte counts on simcuda are deterministic, so `--check` exits 1 when a bar is missed (a test
may assert them; no timings here). Without --check it prints the table and exits 0.

  ceiling_bar.py --shim libmemshim.so --mlp mlp-train-sim --analyze memshim-analyze
                 --rules examples/mlp/memshim.rules [--check] [fit] [traffic]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

MIB = 1 << 20
FIT_BAR = 1.10
TRAFFIC_BAR = 1.30
AGREE = 1.10
FIT_STEP = 64 << 10
STEP_LINE = re.compile(r"step (\d+) loss (\S+)")
# The trainer as it ships, the spill e2e test's trainer (tests/e2e/spill_check.py), and one of
# odd sizes (weights of 5.5 and 1.4 MiB, activations and biases of a few hundred KiB or less).
FIT_WORKLOADS = {
    "trainer default": ["--steps", "3"],
    "spill e2e": ["--steps", "3", "--batch", "128", "--input", "256", "--hidden", "1024",
                  "--layers", "8"],
    "mixed odd sizes": ["--steps", "3", "--batch", "100", "--input", "300", "--hidden", "1200",
                        "--layers", "5", "--classes", "13"],
}
# The spill e2e trainer (its 30% still holds one Adam update), for the trainer's default 20
# steps: the first step has no previous one to forecast from and moves as LRU would.
TRAFFIC_ARGS = ["--steps", "20", "--batch", "128", "--input", "256", "--hidden", "1024",
                "--layers", "8"]
POLICIES = ("spill", "recompute", "auto")
COSTS = "h2d=12g,d2h=12g,gemm=50t"


class Bench:
    def __init__(self, a, tmp):
        self.a, self.tmp, self.misses = a, tmp, []

    def run(self, args, env, trace=None):
        e = dict(os.environ)
        e.update({"LD_PRELOAD": self.a.shim, "MEMSHIM_ACCESS": "all"})
        e.update(env)
        if trace:
            e["MEMSHIM_TRACE"] = trace
        p = subprocess.run([self.a.mlp] + args, env=e, capture_output=True, text=True)
        return p.returncode, STEP_LINE.findall(p.stdout)

    def analyze(self, *args):
        p = subprocess.run([self.a.analyze] + list(args), capture_output=True, text=True,
                           check=True)
        return json.loads(p.stdout)

    def baseline(self, name, args):
        trace = os.path.join(self.tmp, name.replace(" ", "_") + ".mst")
        rc, losses = self.run(args, {}, trace)
        if rc != 0 or not losses:
            sys.exit(f"{name}: the unconstrained run failed ({rc})")
        return trace, losses

    def completes(self, args, policy, limit, losses, host_use="off", trace=None):
        env = {"MEMSHIM_POLICY": policy, "MEMSHIM_LIMIT": str(limit), "MEMSHIM_HOST_USE": host_use}
        if policy != "spill":
            env["MEMSHIM_RULES"] = self.a.rules
        if policy == "auto":
            env["MEMSHIM_COSTS"] = COSTS
        rc, got = self.run(args, env, trace)
        return rc == 0 and got == losses

    def smallest(self, args, policy, losses, lo, hi):
        """Smallest ceiling in (lo, hi] that completes on the device, to FIT_STEP (hi must)."""
        while hi - lo > FIT_STEP:
            mid = (lo + hi) // 2
            if self.completes(args, policy, mid, losses):
                hi = mid
            else:
                lo = mid
        return hi

    def host_uses(self, args, policy, limit, losses):
        """Whether the defaults complete at `limit`, and how many host uses the trace holds."""
        trace = os.path.join(self.tmp, "host_use.mst")
        if not self.completes(args, policy, limit, losses, "on", trace):
            return False, "no host use counted"
        n = self.analyze("summary", "--json", trace)["residency"]["host_use"]["count"]
        return True, f"{n} host uses" if n else "no host use"

    def miss(self, what):
        self.misses.append(what)

    def fit(self):
        print(f"fit: smallest ceiling completed on the device / whatif shim_min_ceiling_bytes "
              f"(bar {FIT_BAR}x; in parentheses / min_ceiling_bytes); then the defaults at "
              f"min_ceiling_bytes (bar: completes)")
        for name, args in FIT_WORKLOADS.items():
            trace, losses = self.baseline(name, args)
            w = self.analyze("whatif", "--json", "--limit", "1g", trace)
            bound, peak = w["shim_min_ceiling_bytes"], w["peak_bytes"]
            sizes = w["min_ceiling_bytes"]
            cells = []
            for policy in POLICIES:
                hi = 2 * peak
                if not self.completes(args, policy, hi, losses):
                    self.miss(f"{name} {policy}: fails even at twice the peak")
                    cells.append(f"{policy} fails")
                    continue
                got = self.smallest(args, policy, losses, sizes // 2, hi)
                r = got / bound
                ok, uses = self.host_uses(args, policy, sizes, losses)
                cells.append(f"{policy} {got / MIB:6.2f} MiB {r:4.2f}x ({got / sizes:4.2f}x), "
                             f"at sizes {'ok' if ok else 'FAILS'} ({uses})")
                if r > FIT_BAR:
                    self.miss(f"{name} {policy}: {got} > {FIT_BAR} x {bound}")
                if not ok:
                    self.miss(f"{name} {policy}: the defaults fail at min_ceiling_bytes {sizes}")
            print(f"  {name:16s} peak {peak / MIB:6.2f} MiB whatif {bound / MIB:6.2f} MiB "
                  f"(sizes {sizes / MIB:6.2f} MiB) | " + " | ".join(cells))

    def traffic(self):
        print(f"traffic under spill / whatif MIN (bar {TRAFFIC_BAR}x; replay within {AGREE}x "
              f"of the run)")
        for act in ("relu", "gelu"):
            args = TRAFFIC_ARGS + ["--act", act]
            plain, losses = self.baseline("traffic_" + act, args)
            w = self.analyze("whatif", "--json", "--limit", "1g", plain)
            for pct in (50, 30):
                limit = w["peak_bytes"] * pct // 100
                trace = os.path.join(self.tmp, f"spill_{act}_{pct}.mst")
                rc, got = self.run(args, {"MEMSHIM_POLICY": "spill",
                                          "MEMSHIM_LIMIT": str(limit)}, trace)
                r = self.analyze("whatif", "--json", "--limit", str(limit), plain)["limits"][0]
                low = r["min"]["d2h_bytes"] + r["min"]["h2d_bytes"]
                replay = r["shim"]["d2h_bytes"] + r["shim"]["h2d_bytes"]
                label = f"{act} {pct}%"
                if rc != 0 or got != losses:
                    self.miss(f"{label}: the spill run failed ({rc}) or its losses differ")
                    print(f"  {label}: run failed")
                    continue
                res = self.analyze("summary", "--json", trace)["residency"]
                moved = sum(res[k]["bytes"] for k in ("spill", "restore", "prefetch"))
                rm, rr = moved / max(low, 1), replay / max(low, 1)
                print(f"  {label:9s} limit {limit / MIB:6.2f} MiB  MIN {low / MIB:8.1f} MiB  "
                      f"run {moved / MIB:8.1f} MiB {rm:4.2f}x  replay {replay / MIB:8.1f} MiB "
                      f"{rr:4.2f}x  failures {r['shim']['failures']}")
                if rm > TRAFFIC_BAR or rr > TRAFFIC_BAR:
                    self.miss(f"{label}: run {rm:.2f}x, replay {rr:.2f}x MIN")
                if not (moved <= AGREE * replay and replay <= AGREE * moved):
                    self.miss(f"{label}: run {moved} and replay {replay} disagree")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shim", required=True)
    p.add_argument("--mlp", required=True)
    p.add_argument("--analyze", required=True)
    p.add_argument("--rules", required=True)
    p.add_argument("--check", action="store_true", help="exit 1 when a bar is missed")
    p.add_argument("parts", nargs="*", default=["fit", "traffic"])
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        b = Bench(a, tmp)
        for part in a.parts:
            getattr(b, part)()
    for m in b.misses:
        print("missed:", m)
    return 1 if a.check and b.misses else 0


if __name__ == "__main__":
    sys.exit(main())
