#!/usr/bin/env python3
"""End-to-end checks of access tracking on simcuda.

    access_check.py prog    --shim LIB --prog ACCESS_PROG   exact ops and ranges, in order
    access_check.py levels  --shim LIB --prog ACCESS_PROG   MEMSHIM_ACCESS=off/gemm: no ops
    access_check.py mlp     --shim LIB --prog MLP_TRAIN_SIM the trainer's launches and copies
    access_check.py compact --shim LIB --prog MLP_TRAIN_SIM repeats written compactly read back
                                                            as if written in full

`prog` runs access-prog, which writes each operation it makes and the exact ranges the trace
must hold for it; every OP of the trace (with the ACCESS records after it) must match that
list one for one and in order.
"""

import argparse
import os
import re
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shim_trace  # noqa: E402

REC_OP, REC_ACCESS = shim_trace.REC["OP"], shim_trace.REC["ACCESS"]
OP = shim_trace.layout("OP")
ACCESS = shim_trace.layout("ACCESS")
OP_NAMES = {1: "GEMM", 2: "MEMCPY", 3: "MEMSET", 4: "KERNEL"}
F_ACCESSES = shim_trace.mst_layout.FILE_F_ACCESSES


class Failure(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Failure(what)


def read(path):
    """The trace's ops: (kind, name, stream, [(addr, size, alloc, mode)]), and its flags."""
    with open(path, "rb") as f:
        flags = shim_trace.HEADER.unpack_from(f.read(shim_trace.HEADER.size))[-2]
    strings, ops, pending = {}, [], 0
    for kind, data, pos, length in shim_trace.raw_records(path):  # repeats undone
        payload = data[pos:pos + length]
        if pending:
            expect(kind == REC_ACCESS, "op %s: fewer ACCESS records than it announced" %
                   ops[-1][1])
        if kind == shim_trace.REC["STRING"]:
            strings[struct.unpack_from("<I", payload)[0]] = payload[4:].decode()
        elif kind == REC_OP:
            f = OP.unpack_from(payload)
            name_id, naccess, op_kind = f[8], f[9], f[10]
            ops.append((op_kind, strings.get(name_id, "?%d" % name_id), f[1], []))
            pending = naccess
        elif kind == REC_ACCESS:
            expect(pending, "an ACCESS record outside an op")
            ops[-1][3].append(ACCESS.unpack_from(payload))
            pending -= 1
    return ops, flags


def run(args, prog_argv, tmp, env=None):
    trace = os.path.join(tmp, "run.mst")
    e = dict(os.environ)
    e.update({"LD_PRELOAD": args.shim, "MEMSHIM_TRACE": trace})
    e.update(env or {})
    p = subprocess.run(prog_argv, env=e, capture_output=True, text=True, timeout=300)
    expect(p.returncode == 0, "%s exited %d:\n%s%s" % (prog_argv[0], p.returncode, p.stdout,
                                                       p.stderr))
    return trace


def expected(path):
    ops = []
    with open(path) as f:
        for ln in f:
            w = ln.split()
            if w[0] == "op":
                ops.append((int(w[1]), w[2], int(w[3]), []))
            else:
                ops[-1][3].append(tuple(int(x) for x in w[1:]))
    return ops


def show(op):
    kind, name, stream, acc = op
    rs = ", ".join("%#x+%d in %#x %s" % (a, s, al, {1: "R", 2: "W", 4: "?"}.get(m, m))
                   for a, s, al, m in acc)
    return "%s %s stream=%#x [%s]" % (OP_NAMES.get(kind, kind), name, stream, rs)


def s_prog(args, tmp):
    exp_path = os.path.join(tmp, "expect.txt")
    trace = run(args, [args.prog, exp_path], tmp)
    want = expected(exp_path)
    got, flags = read(trace)
    expect(flags & F_ACCESSES, "the header does not say accesses were tracked")
    expect(len(want) >= 28, "the program described only %d ops" % len(want))
    for i, (g, w) in enumerate(zip(got, want)):
        expect(g == w, "op %d:\n  trace:    %s\n  expected: %s" % (i, show(g), show(w)))
    expect(len(got) == len(want), "%d ops in the trace, %d expected; extra: %s" %
           (len(got), len(want), [show(o) for o in (got[len(want):] or want[len(got):])]))


def s_levels(args, tmp):
    for level in ("off", "gemm"):
        trace = run(args, [args.prog, os.path.join(tmp, "expect.txt")], tmp,
                    {"MEMSHIM_ACCESS": level})
        got, flags = read(trace)
        expect(not got, "MEMSHIM_ACCESS=%s recorded %d ops" % (level, len(got)))
        expect(bool(flags & F_ACCESSES) == (level == "gemm"),
               "MEMSHIM_ACCESS=%s: header flag %d" % (level, flags))
        expect(shim_trace.Trace(trace).allocs(), "allocations still recorded")


def s_mlp(args, tmp):
    trace = run(args, [args.prog, "--steps", "2"], tmp)
    got, _ = read(trace)
    allocs = {(a.addr, a.size) for a in shim_trace.Trace(trace).allocs()}
    kernels = [o for o in got if o[0] == 4]
    copies = [o for o in got if o[0] == 2]
    expect(len(kernels) > 10, "only %d kernel launches recorded" % len(kernels))
    expect(copies, "no copies recorded")
    expect(all(o[1] and o[1] != "kernel" for o in kernels), "a kernel without its name")
    # Every kernel of the trainer takes device buffers: each launch names some, all tracked.
    for o in kernels:
        expect(o[3], "%s: no allocation found in its parameters" % o[1])
        for a, s, al, m in o[3]:
            expect(m == 4 and (a, s) in allocs and al == a, "%s: %s" % (o[1], show(o)))
    for o in copies:
        for a, s, al, m in o[3]:
            expect(al and m in (1, 2), "copy range outside a tracked allocation: %s" % show(o))
    print("mlp: %d kernel launches (%d distinct kernels), %d copies" %
          (len(kernels), len({o[1] for o in kernels}), len(copies)))


def analyze(*argv):
    tool = os.path.join(os.environ["MEMSHIM_BUILD_DIR"], "bin", "memshim-analyze")
    p = subprocess.run([tool, *argv], capture_output=True, text=True, timeout=300)
    expect(p.returncode == 0, "memshim-analyze %s exited %d:\n%s" % (argv[0], p.returncode,
                                                                      p.stderr))
    return p.stdout


# What differs between two runs of the same program: times, the pid, the trace's name.
RUN_FIELDS = re.compile(r'(time|duration_ns|pid|tid|clock_base|wall_base)=[0-9]+|"(trace|pid|[a-z_]*'
                        r'(time|_ns|seconds)[a-z_]*)": [^,\n]*')


def s_compact(args, tmp):
    """The same run (no address randomisation: the same addresses) with MEMSHIM_TRACE_COMPACT on
    and off: the analyzer's dump, summary and whatif answer alike, but for times."""
    out = {}
    for mode in ("on", "off"):
        trace = run(args, ["setarch", "-R", args.prog, "--steps", "3"], tmp,
                    {"MEMSHIM_TRACE_COMPACT": mode})
        kinds = [k for k, _, _, _ in shim_trace.raw_records(trace)]
        with open(trace, "rb") as f:
            data = f.read()
        repeats = sum(data.count(struct.pack("<HHI", shim_trace.REC["OP_REPEAT"], 0, n))
                      for n in (8, 16))  # the short form, and the long one for steps over 4.3 s
        out[mode] = {"dump": analyze("dump", trace), "summary": analyze("summary", "--json", trace),
                     "whatif": analyze("whatif", "--sweep", "--json", trace), "bytes": len(data),
                     "repeats": repeats, "ops": kinds.count(REC_OP)}
    on, off = out["on"], out["off"]
    expect(on["repeats"] > 0, "MEMSHIM_TRACE_COMPACT=on wrote no OP_REPEAT record")
    expect(off["repeats"] == 0, "MEMSHIM_TRACE_COMPACT=off wrote OP_REPEAT records")
    expect(on["ops"] == off["ops"] > 0, "ops: %d compacted, %d in full" % (on["ops"], off["ops"]))
    for what in ("dump", "summary", "whatif"):
        a, b = (RUN_FIELDS.sub("", x[what]).splitlines() for x in (on, off))
        diff = [(x, y) for x, y in zip(a, b) if x != y]
        expect(len(a) == len(b) and not diff, "%s differs: %d lines against %d, first %s" %
               (what, len(a), len(b), diff[:1]))
    print("compact: %d ops, %d repeats, %d bytes against %d" % (on["ops"], on["repeats"],
                                                                on["bytes"], off["bytes"]))


SCENARIOS = {"prog": s_prog, "levels": s_levels, "mlp": s_mlp, "compact": s_compact}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    ap.add_argument("--shim", required=True)
    ap.add_argument("--prog", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="memshim-access-") as tmp:
        try:
            SCENARIOS[args.scenario](args, tmp)
        except Failure as f:
            print("FAIL %s: %s" % (args.scenario, f))
            return 1
    print("ok %s" % args.scenario)
    return 0


if __name__ == "__main__":
    sys.exit(main())
