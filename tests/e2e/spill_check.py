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
  smallbufs_host     spill-prog smallbufs: 2000 buffers of 1-64 KiB = 3x the ceiling, all in
                     chunks, in four categories: random copies, sets, kernels, GEMMs, frees and
                     reallocations, every byte checked. Only whole chunks can move: every move
                     is a chunk's, blocks are freed in chunks that are away (and chunks emptied
                     there), two blocks are retagged (cuBLAS workspace) while away, and three
                     out-of-memory probes show the device budget per category exactly as a
                     replay of the trace computes it; everything is released at exit
  smallbufs_unmapped the same with SIMCUDA_HOST_VMM=0
  mlp_50, mlp_30     the example trainer at 50% / 30% of its natural peak (measured without the
                     shim): bit-identical losses, peak_device_bytes <= the ceiling, and chunks
                     (the activations) move too
  host_use_POLICY    the example trainer as it ships (3 steps), under spill, recompute or auto, at
                     whatif's min_ceiling_bytes for its unconstrained trace: the sizes of the
                     largest set of buffers one operation uses (its Adam update's four 2.25 MiB
                     buffers), below what they take in whole 2 MiB granules. With host VMM the run
                     completes with bit-identical losses, peak_device_bytes <= the ceiling, and
                     the ranges without room used in host memory: HOST_USE records, as many as
                     the exit summary and the analyzer count; under spill, whatif's replay of
                     the unconstrained trace predicts as many host uses and the bytes moved
                     within 1.1x. With MEMSHIM_HOST_USE=off, and with SIMCUDA_HOST_VMM=0, the
                     same run fails out of memory. The timeline's host-use marks count them all.
Every scenario also checks that the RESIDENCY records agree with the SUMMARY counters.
"""
import argparse
import bisect
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shim_trace  # noqa: E402

SKIP = 77
MIB = 1 << 20
REC_RESIDENCY = shim_trace.RESIDENCY_REC
RESIDENCY = shim_trace.RESIDENCY
RES_SPILL, RES_RESTORE, RES_PREFETCH, RES_HOST_USE = (shim_trace.mst_layout.RES_SPILL,
                                                      shim_trace.mst_layout.RES_RESTORE,
                                                      shim_trace.mst_layout.RES_PREFETCH,
                                                      shim_trace.mst_layout.RES_HOST_USE)
REC_ALLOC, REC_FREE, REC_OOM, REC_RETAG = (shim_trace.REC[n] for n in ("ALLOC", "FREE", "OOM",
                                                                      "RETAG"))
ALLOC = shim_trace.layout("ALLOC")
ALLOC_FIELDS = list(shim_trace.PAYLOAD[REC_ALLOC][1])
OOM = shim_trace.layout("OOM")
RETAG = shim_trace.layout("RETAG")
F_HOST = shim_trace.F_HOST
CHUNK = 2 * MIB  # MEMSHIM_SPILL_MIN's default: small allocations share chunks of this size
# The trainer with buffers at or above MEMSHIM_SPILL_MIN (2 MiB), so there is something to move.
# Eight layers: at 30% the ceiling must still hold one Adam update (weight, gradient and two
# moments of one layer, used by one kernel) beside the small buffers' chunks. Batch 128 keeps
# the CPU GEMMs short enough for sanitizer builds (activations are then below SPILL_MIN, in
# chunks, which move whole; weights, gradients and moments move as their own ranges).
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
    return [m[:4] for m in shim_trace.residency_moves(trace_path_of[id(trace)])]


trace_path_of = {}


class Replay:
    """The shim's device budget as the trace tells it, in file order (one thread: the order of
    events). A range that moved (RESIDENCY) is away after a SPILL and back after a RESTORE or
    PREFETCH; it is a chunk when it holds a live allocation smaller than itself. Every OOM
    record's by-category bytes must equal the live device allocations outside away ranges."""

    def __init__(self, path):
        self.live = {}  # addr -> [size, category]
        self.addrs = []  # sorted live addresses
        self.ranges = {}  # base -> [bytes, away]
        self.bases = []  # sorted range bases
        self.chunk_spills = self.chunk_restores = self.chunk_spilled_bytes = 0
        self.own_spills = 0
        self.chunk_sizes = set()
        self.frees_away = self.emptied_away = self.retags_away = self.retags = 0
        self.ooms = []  # (record by_category, replayed by_category, resident, ceiling)
        for kind, data, pos, length in shim_trace.raw_records(path):
            if kind == REC_ALLOC:
                a = shim_trace.alloc_short(data[pos:pos + length]) if length < ALLOC.size else \
                    dict(zip(ALLOC_FIELDS, ALLOC.unpack_from(data, pos)))
                addr, size, cat, flags = a["addr"], a["size"], a["category"], a["flags"]
                if not flags & F_HOST:
                    self.alloc(addr, size, cat)
            elif kind == REC_FREE:
                # both forms begin with time and addr, the short form's whole length
                self.free(shim_trace.FREE_SHORT.unpack_from(data, pos)[1])
            elif kind == REC_RETAG:
                _, addr, cat, _, _ = RETAG.unpack_from(data, pos)
                if addr in self.live:
                    self.retags += 1
                    r = self.range_of(addr)
                    self.retags_away += bool(r and self.ranges[r][1])
                    self.live[addr][1] = cat
            elif kind == REC_OOM:
                f = OOM.unpack_from(data, pos)
                self.ooms.append((list(f[4:14]), self.by_category(), f[3], f[2]))
            elif kind == REC_RESIDENCY:
                _, addr, nbytes, _, flops, _, event, _ = RESIDENCY.unpack_from(data, pos)
                self.move(addr, nbytes, event, flops)

    def range_of(self, addr):
        i = bisect.bisect_right(self.bases, addr) - 1
        if i >= 0 and addr < self.bases[i] + self.ranges[self.bases[i]][0]:
            return self.bases[i]
        return None

    def in_range(self, base):
        end = base + self.ranges[base][0]
        i = bisect.bisect_left(self.addrs, base)
        while i < len(self.addrs) and self.addrs[i] < end:
            yield self.addrs[i]
            i += 1

    def drop_range(self, base):
        del self.ranges[base]
        self.bases.remove(base)

    def alloc(self, addr, size, cat):
        r = self.range_of(addr)
        if r is not None and self.ranges[r][1]:
            # Nothing is allocated into a range that is away: its address was freed and
            # reserved again for a new, resident range.
            self.drop_range(r)
        self.live[addr] = [size, cat]
        bisect.insort(self.addrs, addr)

    def free(self, addr):
        if addr not in self.live:
            return
        r = self.range_of(addr)
        del self.live[addr]
        self.addrs.remove(addr)
        if r is not None and self.ranges[r][1]:
            self.frees_away += 1
            if next(self.in_range(r), None) is None:
                self.emptied_away += 1
                self.drop_range(r)

    def move(self, base, nbytes, event, flops=0):
        if event == RES_HOST_USE and not flops:
            return  # used in host memory where it was: nothing moved
        for b in [b for b in self.bases if b < base + nbytes and base < b + self.ranges[b][0]]:
            if b != base or self.ranges[b][0] != nbytes:
                self.drop_range(b)  # an older range at these addresses is gone
        if base not in self.ranges:
            self.ranges[base] = [nbytes, False]
            bisect.insort(self.bases, base)
        chunk = any(self.live[a][0] < nbytes for a in self.in_range(base))
        away = event in (RES_SPILL, RES_HOST_USE)  # a host use with flops: recomputed there
        self.ranges[base][1] = away
        if chunk:
            self.chunk_sizes.add(nbytes)
        if chunk and away:
            self.chunk_spills += 1
            self.chunk_spilled_bytes += nbytes
        elif chunk and event in (RES_RESTORE, RES_PREFETCH):
            self.chunk_restores += 1
        elif away:
            self.own_spills += 1

    def by_category(self):
        out = [0] * 10
        for addr, (size, cat) in self.live.items():
            r = self.range_of(addr)
            if r is None or not self.ranges[r][1]:
                out[cat] += size
        return out


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


def smallbufs(args, host_vmm):
    limit = 16 * MIB
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.txt")
        env = shim_env(args, tmp, limit, {"SIMCUDA_HOST_VMM": "1" if host_vmm else "0",
                                          "MEMSHIM_REPORT": report})
        p = run([args.prog, "smallbufs", str(limit), "5", "600"], env)
        expect("smallbufs ok" in p.stdout, p.stdout)
        st, s = check_moves(tmp, limit)
        r = Replay(os.path.join(tmp, "run.mst"))
        # Every buffer of the program is in a chunk (own ranges: simcuda cuBLAS's workspace).
        expect(r.chunk_sizes == {CHUNK}, f"chunk moves of {r.chunk_sizes} bytes, not {CHUNK}")
        expect(r.chunk_spills > 0, "no chunk was spilled")
        expect(r.chunk_restores > 0, "no chunk came back")
        expect(r.frees_away > 0, "no block was freed while its chunk was away")
        expect(r.emptied_away > 0, "no chunk lost its last block while away")
        expect(r.retags == 2 and r.retags_away == 2,
               f"{r.retags_away} of {r.retags} retags while away, expected 2 of 2")
        expect(len(r.ooms) == 3 and s["failed_allocations"] == 3,
               f"{len(r.ooms)} OOM records, {s['failed_allocations']} failed allocations")
        for got, want, resident, ceiling in r.ooms:
            expect(got == want, f"device bytes by category {got}, replayed {want}")
            expect(sum(got) <= resident <= ceiling,
                   f"categories {sum(got)}, resident {resident}, ceiling {ceiling}")
        expect(st["device_bytes_at_exit"] == 0 and st["host_bytes_at_exit"] == 0,
               f"memory left at exit: device {st['device_bytes_at_exit']}, "
               f"host {st['host_bytes_at_exit']}")
        expect(s["resident_at_exit"] == 0, f"resident at exit {s['resident_at_exit']}")
        with open(report) as f:
            text = f.read()
        expect(text.count("resident at exit 0 B") == 2 and text.count("(nothing)") == 2,
               "budget not back to zero at exit (device and host):\n" + text)
        if host_vmm:
            expect(st["host_bytes_peak"] > 0, "host-mapped mode used no host-located memory")
        else:
            expect(st["host_bytes_peak"] == 0, "unmapped mode used host-located memory")
        print(f"smallbufs ({'host-mapped' if host_vmm else 'unmapped'}): {p.stdout.strip()}; "
              f"spills {s['spills']}, of chunks {r.chunk_spills} "
              f"({r.chunk_spilled_bytes / MIB:.0f} MiB), "
              f"restores {s['restores']} + prefetches {s['prefetches']}, frees in away chunks "
              f"{r.frees_away}, chunks emptied away {r.emptied_away}, OOM probes exact "
              f"{len(r.ooms)}, peak {st['peak_device_bytes'] / MIB:.1f} MiB <= "
              f"{limit / MIB:.0f} MiB")


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
        r = Replay(os.path.join(tmp, "run.mst"))
        # Batch 128: every activation is below SPILL_MIN, in chunks that now move too.
        expect(r.chunk_spills > 0, "no chunk was spilled")
        print(f"mlp at {percent}% of {natural / MIB:.1f} MiB: losses identical, peak "
              f"{st['peak_device_bytes'] / MIB:.1f} MiB <= {limit / MIB:.1f} MiB, spills "
              f"{s['spills']} ({s['spilled_bytes'] / MIB:.0f} MiB; chunks {r.chunk_spills}, "
              f"{r.chunk_spilled_bytes / MIB:.0f} MiB), restores {s['restores']} + "
              f"prefetches {s['prefetches']} ({s['restored_bytes'] / MIB:.0f} MiB)")


HOST_USE_LINE = re.compile(r"used in host memory .*: (\d+) uses")


def host_use(args, policy):
    if not args.mlp or not args.analyze:
        print("no mlp-train-sim or memshim-analyze", file=sys.stderr)
        sys.exit(SKIP)
    argv = [args.mlp, "--steps", "3"]
    with tempfile.TemporaryDirectory() as tmp:
        plain = os.path.join(tmp, "plain.mst")
        base = run(argv, {"LD_PRELOAD": args.shim, "MEMSHIM_TRACE": plain}).stdout
        w = json.loads(run([args.analyze, "whatif", "--json", "--limit", "1g", plain], {}).stdout)
        limit, granules = w["min_ceiling_bytes"], w["shim_min_ceiling_bytes"]
        expect(limit < granules, f"min_ceiling_bytes {limit} not below the granule bound "
               f"{granules}: nothing to use in host memory")
        report = os.path.join(tmp, "report.txt")
        extra = {"MEMSHIM_POLICY": policy, "MEMSHIM_REPORT": report, "SIMCUDA_HOST_VMM": "1",
                 "MEMSHIM_RULES": args.rules or ""}
        out = run(argv, shim_env(args, tmp, limit, extra)).stdout
        expect(losses(out) == losses(base), f"losses differ:\n{out}\nunconstrained:\n{base}")
        st, s = check_moves(tmp, limit, want_spills=True)
        uses = [m for m in residency(load_trace(tmp)) if m[0] == RES_HOST_USE]
        with open(report) as f:
            m = HOST_USE_LINE.search(f.read())
        summary = json.loads(run([args.analyze, "summary", "--json",
                                  os.path.join(tmp, "run.mst")], {}).stdout)
        counted = summary["residency"]["host_use"]["count"]
        expect(uses and m and int(m.group(1)) == len(uses) == counted,
               f"{len(uses)} HOST_USE records, exit summary {m and m.group(1)}, analyzer {counted}")
        expect(summary["peak_bytes"] <= s["peak_resident"] <= limit,
               f"analyzer peak {summary['peak_bytes']}, shim {s['peak_resident']}, ceiling {limit}")
        if policy == "spill":  # whatif replays the spill policy, host uses included
            r = json.loads(run([args.analyze, "whatif", "--json", "--limit", str(limit), plain],
                               {}).stdout)["limits"][0]["shim"]
            res = summary["residency"]
            moved = sum(res[k]["bytes"] for k in ("spill", "restore", "prefetch"))
            expect(r["host_uses"] == len(uses) and r["failures"] == 0 and
                   r["moved_bytes"] <= 1.1 * moved and moved <= 1.1 * r["moved_bytes"],
                   f"whatif's replay: {r['host_uses']} host uses, {r['failures']} failures, "
                   f"{r['moved_bytes']} bytes moved; the run: {len(uses)} host uses, {moved} bytes")
        # The timeline marks them: its host-use dots (read with ElementTree) count every one.
        svg = os.path.join(tmp, "timeline.svg")
        run([args.analyze, "timeline", os.path.join(tmp, "run.mst"), "-o", svg], {})
        ns = "{http://www.w3.org/2000/svg}"
        marks = [g for g in ET.parse(svg).getroot().iter(ns + "g") if g.get("class") == "host-use"]
        marked = sum(int(g.find(ns + "title").text.split()[0]) for g in marks)
        expect(marked == len(uses), f"the timeline marks {marked} host uses of {len(uses)}")
        for why, more in (("MEMSHIM_HOST_USE=off", {"MEMSHIM_HOST_USE": "off"}),
                          ("SIMCUDA_HOST_VMM=0", {"SIMCUDA_HOST_VMM": "0"})):
            p = run(argv, shim_env(args, tmp, limit, dict(extra, **more)), check=False)
            expect(p.returncode != 0 and "out of memory" in p.stderr,
                   f"{why}: exit {p.returncode}, expected a failure out of memory\n{p.stderr}")
        print(f"{policy} at min_ceiling_bytes {limit / MIB:.2f} MiB (granule bound "
              f"{granules / MIB:.2f} MiB): losses identical, simcuda peak "
              f"{st['peak_device_bytes'] / MIB:.2f} MiB, {len(uses)} host uses "
              f"({sum(u[2] for u in uses) / MIB:.0f} MiB), {s['spills']} spills; fails without "
              f"host use")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("scenario")
    p.add_argument("--shim", required=True)
    p.add_argument("--prog", required=True)
    p.add_argument("--mlp")
    p.add_argument("--analyze")
    p.add_argument("--rules")
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
    elif s == "smallbufs_host":
        smallbufs(args, True)
    elif s == "smallbufs_unmapped":
        smallbufs(args, False)
    elif s == "mlp_50":
        mlp(args, 50)
    elif s == "mlp_30":
        mlp(args, 30)
    elif s.startswith("host_use_"):
        host_use(args, s[len("host_use_"):])
    else:
        fail("unknown scenario " + s)


if __name__ == "__main__":
    main()
