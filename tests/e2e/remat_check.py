#!/usr/bin/env python3
"""End-to-end checks of MEMSHIM_POLICY=recompute on simcuda. Each scenario runs in the spill
mode named on the command line: host (spilled ranges keep host memory mapped) or unmapped
(SIMCUDA_HOST_VMM=0).

  invalidate_kernel   remat-prog invalidate kernel|copy|memset: C = A*B is dropped, A is
  invalidate_copy     overwritten; C must be recomputed before the overwrite (a RECOMPUTE record
  invalidate_memset   for C) and is spilled, not dropped, afterwards (its lineage is gone); the
                      program checks C holds the original product
  blind_rt            remat-prog blind rt|drv|far|far_extra: C = A*B is dropped, then A is written
  blind_drv           by a kernel the shim cannot see into: its parameter layout cannot be learnt
  blind_far           (registered without parameter information; through the runtime or the
  blind_far_extra     driver), or A's pointer lies past the 8 KiB of parameters scanned (as a
                      parameter array or a packed buffer): C must be recomputed before the launch
                      and spilled, not dropped, afterwards (every lineage is forgotten); the
                      program checks C bit for bit
  blind_none          remat-prog blind none: a kernel without parameters launched without a
                      parameter array gives nothing to write through: C stays dropped until
                      read (recomputed then, never spilled), so lineages survive such launches
  chain               C = A*B and E = C*D both dropped; reading E recomputes C (first) and E
  exposed             C's address went to the device in a pointer array: never dropped (a
                      SPILL record for C, no DROP)
  exposed_batched     the same, C's address seen only in a batched GEMM's pointer array
  readonly_only       remat-prog readonly only under a rules file `readonly sum_kernel 0`: C, read
                      by the kernel through a pointer inside its by-value struct parameter 0,
                      keeps its lineage (DROP and RECOMPUTE for C)
  readonly_both       the same with C also in the kernel's undeclared parameter 2: a possible
                      write, so C is spilled, never dropped
  readonly_norule     remat-prog readonly only without the rules file: spilled, never dropped
  free                A freed while C is dropped: C recomputed before the free, data right
  handle              a new workspace and cublasDestroy each recompute the dropped output of
                      their handle first (the same workspace set again does not)
  fuzz                remat-prog fuzz: random GEMMs, kernels, copies, sets, frees and reads,
                      every read checked bit for bit; drops and recomputes must have happened
  fuzz_chunks         the same over 64 buffers at the default MEMSHIM_SPILL_MIN, eight to a
                      chunk, under 12 MiB: GEMM outputs dropped with their chunk, read back right
  auto_fast           the fuzz under MEMSHIM_POLICY=auto with MEMSHIM_COSTS forcing a GEMM rate at
                      which a replay costs less than two copies: drops and recomputes happen
  auto_slow           the same with a GEMM rate at which spilling is always cheaper: no drops
  mlp_50, mlp_30      the example trainer (GELU) under recompute at 50% / 30% of its natural
                      peak with its readonly rules (examples/mlp/memshim.rules): bit-identical
                      losses, peak_device_bytes <= the ceiling, drops and recomputes > 0
  mlp_norules         the same at 50% without the rules file: every kernel may write the GEMM
                      outputs passed to it, so nothing is dropped (keeps mlp_50 honest)
  mlp_auto_fast       the trainer under auto at 50% with the rules and MEMSHIM_COSTS forcing a
                      fast GEMM: drops > 0, losses identical
  mlp_nomin_50/30     the trainer under recompute with its rules and the default
  mlp_auto_nomin_50/30  MEMSHIM_SPILL_MIN (under auto with a fast GEMM): its GEMM outputs are
                      blocks of chunks, dropped with their chunk; bit-identical losses, peak <=
                      the ceiling, and at 30% drops and recomputes > 0
Every scenario checks that the RESIDENCY records agree with the SUMMARY counters.
"""
import argparse
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shim_trace  # noqa: E402
from spill_check import MLP_ARGS, MIB, SKIP, expect, fail, losses, run, stats  # noqa: E402

SPILL, RESTORE, PREFETCH, DROP, RECOMPUTE = 1, 2, 3, 4, 5
LIMIT = 20 * MIB  # eight 2 MiB fillers and a chunk, with room to bring a chain back


def moves(path):
    return [(e, addr, nbytes, flops) for e, addr, nbytes, _, flops in
            shim_trace.residency_moves(path)]


def env_for(args, tmp, limit, mode, extra=None):
    env = {"LD_PRELOAD": args.shim, "MEMSHIM_POLICY": "recompute", "MEMSHIM_LIMIT": str(limit),
           "SIMCUDA_STATS": os.path.join(tmp, "stats.json"),
           "MEMSHIM_TRACE": os.path.join(tmp, "run.mst"),
           "SIMCUDA_HOST_VMM": "1" if mode == "host" else "0"}
    env.update(extra or {})
    return env


def check_trace(tmp, limit):
    st = stats(os.path.join(tmp, "stats.json"))
    expect(st["peak_device_bytes"] <= limit,
           f"peak_device_bytes {st['peak_device_bytes']} above the ceiling {limit}")
    path = os.path.join(tmp, "run.mst")
    s = shim_trace.Trace(path).summary()
    expect(s is not None, "no SUMMARY record")
    mv = moves(path)
    count = {e: [m for m in mv if m[0] == e] for e in (SPILL, RESTORE, PREFETCH, DROP, RECOMPUTE)}
    for e, key in ((SPILL, "spills"), (RESTORE, "restores"), (PREFETCH, "prefetches"),
                   (DROP, "drops"), (RECOMPUTE, "recomputes")):
        expect(len(count[e]) == s[key], f"{len(count[e])} records of event {e}, summary {key} "
               f"{s[key]}")
    expect(sum(m[2] for m in count[SPILL]) == s["spilled_bytes"], "spilled bytes disagree")
    expect(sum(m[2] for m in count[DROP]) == s["dropped_bytes"], "dropped bytes disagree")
    expect(sum(m[3] for m in count[RECOMPUTE]) == s["recompute_flops"],
           "recompute flops disagree")
    expect(all(m[3] > 0 for m in count[RECOMPUTE]), "a RECOMPUTE record without flops")
    expect(len(count[RECOMPUTE]) <= len(count[DROP]), "more recomputes than drops")
    return st, s, mv


def addr_of(out, name):
    m = re.search(name + r"=(0x[0-9a-f]+)", out)
    expect(m, f"no address of {name} in:\n{out}")
    return int(m.group(1), 16)


def events_at(mv, addr):
    return [m[0] for m in mv if m[1] == addr]


def prog(args, mode, argv, want):
    with tempfile.TemporaryDirectory() as tmp:
        env = env_for(args, tmp, LIMIT, mode, {"MEMSHIM_SPILL_MIN": "512k"})
        out = run([args.prog] + argv, env).stdout
        expect(want in out, out)
        st, s, mv = check_trace(tmp, LIMIT)
        return out, s, mv


def invalidate(args, mode, how):
    out, s, mv = prog(args, mode, ["invalidate", how], f"invalidate {how} ok")
    c = addr_of(out, "C")
    ev = events_at(mv, c)
    expect(DROP in ev, f"C was never dropped: {ev}")
    expect(RECOMPUTE in ev, f"C was not recomputed before A was overwritten: {ev}")
    after = ev[ev.index(RECOMPUTE) + 1:]
    expect(DROP not in after, f"C dropped again after its input changed: {ev}")
    expect(SPILL in after, f"C not spilled after its lineage was invalidated: {ev}")
    print(f"invalidate {how} ({mode}): C {ev}")


def blind(args, mode, api):
    out, s, mv = prog(args, mode, ["blind", api], f"blind {api} ok")
    c = addr_of(out, "C")
    ev = events_at(mv, c)
    expect(DROP in ev, f"C was never dropped: {ev}")
    if api == "none":
        expect(ev[ev.index(DROP):] == [DROP, RECOMPUTE],
               f"C did not stay dropped until read across a parameterless launch: {ev}")
        print(f"blind {api} ({mode}): C {ev}")
        return
    expect(RECOMPUTE in ev, f"C was not recomputed before the blind kernel ran: {ev}")
    after = ev[ev.index(RECOMPUTE) + 1:]
    expect(DROP not in after, f"C dropped again after the blind kernel: {ev}")
    expect(SPILL in after, f"C not spilled after its lineage was forgotten: {ev}")
    print(f"blind {api} ({mode}): C {ev}")


def chain(args, mode):
    out, s, mv = prog(args, mode, ["chain"], "chain ok")
    c, e = addr_of(out, "C"), addr_of(out, "E")
    ec, ee = events_at(mv, c), events_at(mv, e)
    expect(DROP in ec and DROP in ee, f"C {ec}, E {ee}: both should be dropped")
    rec = [m[1] for m in mv if m[0] == RECOMPUTE]
    expect(c in rec and e in rec, f"C and E not both recomputed: {rec}")
    expect(rec.index(c) < rec.index(e), "E recomputed before its input C")
    print(f"chain ({mode}): C {ec}, E {ee}")


def exposed(args, mode, which="exposed"):
    out, s, mv = prog(args, mode, [which], which + " ok")
    c = addr_of(out, "C")
    ev = events_at(mv, c)
    expect(DROP not in ev, f"an exposed buffer was dropped: {ev}")
    expect(SPILL in ev, f"the exposed buffer was not spilled either: {ev}")
    print(f"{which} ({mode}): C {ev}")


def readonly(args, mode, how, rules=True):
    with tempfile.TemporaryDirectory() as tmp:
        extra = {"MEMSHIM_SPILL_MIN": "512k"}
        if rules:
            path = os.path.join(tmp, "ro.rules")
            with open(path, "w") as f:
                f.write("# sum_kernel(struct {n, x}, out, y)\nreadonly sum_kernel 0\n")
            extra["MEMSHIM_RULES"] = path
        env = env_for(args, tmp, LIMIT, mode, extra)
        out = run([args.prog, "readonly", how], env).stdout
        expect(f"readonly {how} ok" in out, out)
        check_trace(tmp, LIMIT)
        ev = events_at(moves(os.path.join(tmp, "run.mst")), addr_of(out, "C"))
    if rules and how == "only":
        expect(DROP in ev and RECOMPUTE in ev, f"C not dropped and recomputed: {ev}")
    else:
        expect(DROP not in ev, f"C dropped although the kernel may write it: {ev}")
        expect(SPILL in ev, f"C not spilled either: {ev}")
    print(f"readonly {how} ({mode}, {'with' if rules else 'without'} rules): C {ev}")


def free(args, mode):
    out, s, mv = prog(args, mode, ["free"], "free ok")
    c = addr_of(out, "C")
    ev = events_at(mv, c)
    expect(DROP in ev and RECOMPUTE in ev, f"C not dropped and recomputed: {ev}")
    print(f"free ({mode}): C {ev}")


def fuzz(args, mode, extra=None, want_drops=True, chunks=False):
    # chunks: the default MEMSHIM_SPILL_MIN, 64 buffers eight to a chunk (16 MiB) under 12 MiB;
    # the GEMM outputs are blocks dropped with their chunk.
    limit = 12 * MIB if chunks else LIMIT
    with tempfile.TemporaryDirectory() as tmp:
        env = env_for(args, tmp, limit, mode,
                      dict({} if chunks else {"MEMSHIM_SPILL_MIN": "128k"}, **(extra or {})))
        out = run([args.prog, "fuzz", "7", "300"] + (["64"] if chunks else []), env).stdout
        expect("fuzz ok" in out, out)
        st, s, mv = check_trace(tmp, limit)
        policy = env["MEMSHIM_POLICY"]
        if not want_drops:
            expect(s["drops"] == 0, f"auto dropped although a spill was cheaper: {s['drops']}")
        else:
            expect(s["drops"] > 0 and s["recomputes"] > 0, f"no drops or recomputes: {s}")
        expect(s["spills"] > 0, "nothing spilled: every victim had a lineage?")
        print(f"fuzz ({mode}, {policy} {env.get('MEMSHIM_COSTS', '')}): {out.strip()}; drops {s['drops']}, recomputes {s['recomputes']} "
              f"({s['recompute_flops'] / 1e9:.2f} GFLOP), spills {s['spills']}")


def handle(args, mode):
    out, s, mv = prog(args, mode, ["handle"], "handle ok")
    c1, c2 = addr_of(out, "C1"), addr_of(out, "C2")
    e1, e2 = events_at(mv, c1), events_at(mv, c2)
    for name, ev in (("C1", e1), ("C2", e2)):
        expect(DROP in ev and ev[ev.index(DROP) + 1:ev.index(DROP) + 2] == [RECOMPUTE],
               f"{name} not dropped, then recomputed: {ev}")
    # Recomputed at the repeated workspace, C2 would be spilled by the pressure that follows and
    # restored to be read; recomputed at the destroy, it is read where it is (and at most
    # spilled afterwards, to bring C1 back).
    after = e2[e2.index(DROP) + 1:]
    expect(after in ([RECOMPUTE], [RECOMPUTE, SPILL]), f"C2 came back too early: {e2}")
    rec = [m[1] for m in mv if m[0] == RECOMPUTE]
    expect(rec == [c1, c2], f"recomputes {rec}")
    print(f"handle ({mode}): C1 {e1}, C2 {e2}")


# Two steps instead of spill's four: the second already repeats the first step's pattern, and
# sanitizer builds take minutes per run. GELU, because ReLU frees each GEMM output z as soon
# as bias_act_fwd has read it, leaving nothing to drop; the GEMM outputs (batch x hidden floats,
# 512 KiB) get ranges of their own with MEMSHIM_SPILL_MIN at 256 KiB, where the default 2 MiB
# would put them in chunk blocks, which are never dropped.
MLP_REMAT_ARGS = list(MLP_ARGS) + ["--act", "gelu"]
MLP_REMAT_ARGS[MLP_REMAT_ARGS.index("--steps") + 1] = "2"
MLP_REMAT_ENV = {"MEMSHIM_SPILL_MIN": "256k"}


def mlp(args, percent, rules=True, extra=None, check_drops=True, spill_min=True):
    if not args.mlp:
        print("no mlp-train-sim", file=sys.stderr)
        sys.exit(SKIP)
    expect(args.rules and os.path.exists(args.rules), "--rules: examples/mlp/memshim.rules")
    with tempfile.TemporaryDirectory() as tmp:
        stats_path = os.path.join(tmp, "natural.json")
        base = run([args.mlp] + MLP_REMAT_ARGS, {"SIMCUDA_STATS": stats_path}).stdout
        natural = stats(stats_path)["peak_device_bytes"]
        limit = natural * percent // 100
        env = dict(MLP_REMAT_ENV if spill_min else {}, **(extra or {}))
        if rules:
            env["MEMSHIM_RULES"] = args.rules
        env = env_for(args, tmp, limit, "host", env)
        out = run([args.mlp] + MLP_REMAT_ARGS, env).stdout
        expect(losses(out) == losses(base),
               f"losses differ at {percent}%:\n{out}\nunconstrained:\n{base}")
        st, s, mv = check_trace(tmp, limit)
        if rules and not check_drops:
            pass  # the measured costs decide (simcuda's GEMM runs on the CPU), or no chunk leaves
        elif rules:
            # The rules say which kernel parameters are only read: the GEMM outputs passed to
            # bias_act_fwd and act_bwd keep their lineages and the ceiling drops them.
            expect(s["drops"] > 0 and s["recomputes"] > 0, f"no drops or recomputes: {s}")
        else:
            # Without them every kernel may write what it is passed: each GEMM output goes to
            # a kernel within an operation or two and loses its lineage, so only spills remain.
            expect(s["drops"] == 0, f"dropped without readonly rules: {s['drops']}")
        what = env["MEMSHIM_POLICY"] + (" " + env["MEMSHIM_COSTS"] if "MEMSHIM_COSTS" in env
                                        else "")
        what += " with rules" if rules else " without rules"
        what += "" if spill_min else ", default MEMSHIM_SPILL_MIN"
        print(f"mlp at {percent}% of {natural / MIB:.1f} MiB under {what}: losses identical, "
              f"peak {st['peak_device_bytes'] / MIB:.1f} MiB <= {limit / MIB:.1f} MiB, drops "
              f"{s['drops']} ({s['dropped_bytes'] / MIB:.0f} MiB), recomputes {s['recomputes']} "
              f"({s['recompute_flops'] / 1e9:.2f} GFLOP), spills {s['spills']} "
              f"({s['spilled_bytes'] / MIB:.0f} MiB), restores {s['restores']} + prefetches "
              f"{s['prefetches']}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("scenario")
    p.add_argument("mode", choices=["host", "unmapped"])
    p.add_argument("--shim", required=True)
    p.add_argument("--prog", required=True)
    p.add_argument("--mlp")
    p.add_argument("--rules", help="examples/mlp/memshim.rules")
    args = p.parse_args()
    s = args.scenario
    if s.startswith("invalidate_"):
        invalidate(args, args.mode, s[len("invalidate_"):])
    elif s.startswith("blind_"):
        blind(args, args.mode, s[len("blind_"):])
    elif s == "chain":
        chain(args, args.mode)
    elif s in ("exposed", "exposed_batched"):
        exposed(args, args.mode, s)
    elif s == "free":
        free(args, args.mode)
    elif s in ("readonly_only", "readonly_both"):
        readonly(args, args.mode, s[len("readonly_"):])
    elif s == "readonly_norule":
        readonly(args, args.mode, "only", rules=False)
    elif s == "handle":
        handle(args, args.mode)
    elif s == "fuzz":
        fuzz(args, args.mode)
    elif s == "fuzz_chunks":
        fuzz(args, args.mode, chunks=True)
    elif s == "auto_fast":
        # A 2 MiB range: two copies at 12 GB/s take ~350 us; its 256^3 GEMM (34 MFLOP) at
        # 50 TFLOP/s under 1 us: every victim with a lineage is dropped.
        fuzz(args, args.mode, {"MEMSHIM_POLICY": "auto", "MEMSHIM_COSTS": "h2d=12g,d2h=12g,gemm=50t"})
    elif s == "auto_slow":
        # At 1 GFLOP/s the replay takes ~34 ms: never cheaper.
        fuzz(args, args.mode, {"MEMSHIM_POLICY": "auto", "MEMSHIM_COSTS": "h2d=12g,d2h=12g,gemm=1g"},
             want_drops=False)
    elif s == "mlp_50":
        mlp(args, 50)
    elif s == "mlp_30":
        mlp(args, 30)
    elif s == "mlp_norules":
        mlp(args, 50, rules=False)
    elif s == "mlp_auto_fast":
        mlp(args, 50, extra={"MEMSHIM_POLICY": "auto", "MEMSHIM_COSTS": "h2d=12g,d2h=12g,gemm=50t"})
    elif s.startswith("mlp_nomin_"):
        # The default MEMSHIM_SPILL_MIN: the GEMM outputs are blocks of chunks, dropped with their
        # chunk when it leaves. At 30% chunks leave and their GEMM outputs must be dropped; at
        # 50% the victims are the 4 MiB weights, gradients and moments (own ranges, whose
        # lineages end with backward), so drops are not required there.
        pct = int(s.rsplit("_", 1)[1])
        mlp(args, pct, check_drops=pct <= 30, spill_min=False)
    elif s.startswith("mlp_auto_nomin_"):
        pct = int(s.rsplit("_", 1)[1])
        mlp(args, pct, check_drops=pct <= 30, spill_min=False,
            extra={"MEMSHIM_POLICY": "auto", "MEMSHIM_COSTS": "h2d=12g,d2h=12g,gemm=50t"})
    elif s.startswith("mlp_auto_measured_"):
        # No MEMSHIM_COSTS: the rates are measured at the first need, on probes the ceiling
        # must hold as well (check_trace: simcuda's peak <= the ceiling).
        mlp(args, int(s.rsplit("_", 1)[1]), extra={"MEMSHIM_POLICY": "auto"}, check_drops=False)
    else:
        fail("unknown scenario " + s)


if __name__ == "__main__":
    main()
