"""End-to-end check of the cuBLAS/cuBLASLt access records (shim/intercept_cublas*.c).

  blas_access_check.py calls  --shim LIB --prog blas-access
      Every hooked GEMM entry point once or twice with known shapes: the trace holds exactly
      the expected OP and ACCESS records, in program order, and a RETAG for each workspace.
      Expectations are written here from the calls in blas_access.c, by hand.
  blas_access_check.py off    --shim LIB --prog blas-access
      MEMSHIM_ACCESS=off: the same program records no OP, ACCESS or RETAG; gemm records them.
  blas_access_check.py via_lt --shim LIB --prog blas-access
      libcublas routes its fp32 GEMMs through cublasLtMatmul: still one OP per call.
  blas_access_check.py local  --shim LIB --prog blas-local --lib blas_local_user.so
      cuBLAS opened RTLD_LOCAL and looked up by dlsym, or linked by an RTLD_LOCAL library:
      the GEMM is recorded all the same; a program without cuBLAS does not get it loaded.
  blas_access_check.py mlp    --shim LIB --prog mlp-train-sim
      The example trainer: per step exactly the GEMMs examples/mlp issues (model.c, device.c),
      with shapes, FLOPs and operand allocations (sizes, categories, the same h, dz and w
      across a layer's GEMMs), in program order.
  blas_access_check.py mlp_ex --shim LIB --prog mlp-train-sim
      The same with cublasGemmEx and no app tags: the workspace is retagged once.
"""

import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shim_trace  # noqa: E402

REC_RETAG, REC_OP, REC_ACCESS, REC_ALLOC = (shim_trace.REC[n] for n in ("RETAG", "OP", "ACCESS",
                                                                      "ALLOC"))
R, W = shim_trace.mst_layout.ACCESS_READ, shim_trace.mst_layout.ACCESS_WRITE
RW = R | W
F32, F64, F16 = 0, 1, 2
PARAMETER, GRADIENT, ACTIVATION, WORKSPACE, TEMPORARY, INPUT = (
    shim_trace.CATEGORIES.index(c)
    for c in ("parameter", "gradient", "activation", "workspace", "temporary", "input"))


class Failure(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Failure(what)


def run(args, argv, env):
    tmp = tempfile.mkdtemp(prefix="blas-access-")
    path = os.path.join(tmp, "t.mst")
    e = dict(os.environ)
    e.update({"LD_PRELOAD": args.shim, "MEMSHIM_TRACE": path})
    e.update(env)
    p = subprocess.run(argv, env=e, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise Failure("%s exited %d\n%s\n%s" % (argv, p.returncode, p.stdout[-3000:],
                                                 p.stderr[-3000:]))
    return p.stdout, shim_trace.Trace(path)


def ops(trace):
    """[(op record, [access records])] in file order, and the RETAG records."""
    out, retags, cur = [], [], None
    for r in trace.records:
        if r.rec == REC_OP:
            cur = (r, [])
            out.append(cur)
        elif r.rec == REC_ACCESS:
            expect(cur is not None and len(cur[1]) < cur[0].naccess,
                   "ACCESS record outside an OP's count")
            cur[1].append(r)
        elif r.rec == REC_RETAG:
            retags.append(r)
    for op, acc in out:
        expect(len(acc) == op.naccess, "OP %s says %d accesses, %d follow" %
               (trace.string(op.name_id), op.naccess, len(acc)))
    # copies, sets and kernel launches (MEMSHIM_ACCESS=all) are another module's to check
    return [(op, acc) for op, acc in out if op.kind == 1], retags


def gemm(name, m, n, k, batch, dt, ranges):
    if not isinstance(dt, tuple):
        dt = (dt, dt, dt)
    return {"name": name, "m": m, "n": n, "k": k, "batch": batch, "dt": dt,
            "flops": 2 * m * n * k * batch, "ranges": ranges}


def expected_calls(buf):
    A, B, C, Wk, P, H, S = (buf[x] for x in ("A", "B", "C", "W", "P", "H", "S"))
    bias, D, LW = buf["bias"], buf["D"], buf["LW"]
    ws = (Wk, 8192, RW)
    # (addr, size, mode); sizes from ld * (cols - 1) + rows elements of the stored matrix
    calls = [
        gemm("cublasSgemm_v2", 3, 2, 4, 1, F32,                       # A 3x4 ld 5, B 4x2, C 3x2
             [(A, 18 * 4, R), (B, 8 * 4, R), (C, 6 * 4, W), ws]),
        gemm("cublasSgemm_v2", 3, 2, 4, 1, F32,                       # A^T: 4x3 ld 6; beta 1
             [(A, 16 * 4, R), (B, 8 * 4, R), (C, 7 * 4, RW), ws]),
        gemm("cublasSgemm_v2_64", 2, 3, 2, 1, F32,                    # B^T: 3x2 ld 3
             [(A, 4 * 4, R), (B, 6 * 4, R), (C, 6 * 4, W), ws]),
        gemm("cublasDgemm_v2", 2, 2, 2, 1, F64,                       # beta 0.5
             [(A, 4 * 8, R), (B, 4 * 8, R), (C, 4 * 8, RW), ws]),
        gemm("cublasHgemm", 4, 2, 2, 1, F16,                          # beta -0.0
             [(A, 8 * 2, R), (B, 4 * 2, R), (C, 8 * 2, W), ws]),
        gemm("cublasDgemm_v2_64", 2, 3, 4, 1, F64,                    # A^T 4x2 ld 4, B^T 3x4 ld 3
             [(A, 8 * 8, R), (B, 12 * 8, R), (C, 6 * 8, RW), ws]),
        gemm("cublasGemmEx", 2, 2, 3, 1, (F16, F16, F32),
             [(A, 6 * 2, R), (B, 6 * 2, R), (C, 4 * 4, W), ws]),
        gemm("cublasGemmEx_64", 2, 2, 3, 1, F32,
             [(A, 6 * 4, R), (B, 6 * 4, R), (C, 4 * 4, RW), ws]),
        gemm("cublasSgemmStridedBatched", 2, 2, 2, 3, F32,           # strides 8, 0, 4
             [(A, (2 * 8 + 4) * 4, R), (B, 4 * 4, R), (C, (2 * 4 + 4) * 4, W), ws]),
        gemm("cublasSgemmStridedBatched_64", 2, 2, 2, 3, F32,        # lda 3, strides 6, 4, 4
             [(A, (2 * 6 + 5) * 4, R), (B, (2 * 4 + 4) * 4, R), (C, (2 * 4 + 4) * 4, RW), ws]),
        gemm("cublasGemmStridedBatchedEx", 2, 2, 3, 2, F32,          # A^T 3x2 ld 3, stride 6
             [(A, (6 + 6) * 4, R), (B, (6 + 6) * 4, R), (C, (4 + 4) * 4, W), ws]),
        gemm("cublasGemmStridedBatchedEx_64", 2, 2, 2, 2, F32,
             [(A, (4 + 4) * 4, R), (B, (4 + 4) * 4, R), (C, (4 + 4) * 4, RW), ws]),
        # arrays in a tracked allocation: arrays, then the members sorted by (mode, address),
        # overlapping (B thrice) and adjacent (C) members joined
        gemm("cublasGemmBatchedEx", 2, 2, 2, 3, F32,
             [(P, 24, R), (P + 24, 24, R), (P + 48, 24, R)] +
             sorted([(A, 16, R), (A + 64, 16, R), (A + 128, 16, R), (B, 16, R)]) +
             [(C, 48, W), ws]),
        # arrays in untracked memory: the arrays only
        gemm("cublasGemmBatchedEx_64", 2, 2, 2, 3, F32,
             [(H, 24, R), (H + 24, 24, R), (H + 48, 24, R), ws]),
        # 200 members: A's 200 ranges joined into their hull in QA, C's adjacent ones exactly
        gemm("cublasGemmBatchedEx", 2, 2, 2, 200, F32,
             [(buf["Q"], 1600, R), (buf["Q"] + 1600, 1600, R), (buf["Q"] + 3200, 1600, R)] +
             sorted([(buf["QA"], 199 * 32 + 16, R), (B, 16, R)]) + [(buf["QC"], 3200, W), ws]),
        # device pointer mode: C counts as read, alpha and beta are device reads
        gemm("cublasSgemm_v2", 2, 2, 2, 1, F32,
             [(A, 16, R), (B, 16, R), (C, 16, RW), (S, 4, R), (S + 4, 4, R), ws]),
        # cuBLASLt: A 4x3 ld 4, B 3x2 ld 3, D 4x2 ld 5, bias of 4 floats, workspace
        gemm("cublasLtMatmul", 4, 2, 3, 1, F32,
             [(A, 48, R), (B, 24, R), (D, 36, W), (bias, 16, R), (LW, 1024, RW)]),
        # A^T stored 3x4 ld 5, batch 2 with offsets 32, 8, 8, 16 elements; beta 1 reads C
        gemm("cublasLtMatmul", 4, 2, 3, 2, F32,
             [(A, (32 + 18) * 4, R), (B, (8 + 6) * 4, R), (C, (8 + 8) * 4, R),
              (D, (16 + 9) * 4, W)]),
        # descriptors made by Init; C NULL
        gemm("cublasLtMatmul", 4, 2, 3, 1, F32,
             [(A, 48, R), (B, 24, R), (D, 36, W), (LW, 512, RW)]),
        # the same descriptor in device pointer mode: beta unread, so C is read
        gemm("cublasLtMatmul", 4, 2, 3, 1, F32,
             [(A, 48, R), (B, 24, R), (C, 32, R), (D, 36, W), (S, 4, R), (S + 4, 4, R)]),
    ]
    return calls


def parse_bufs(out):
    buf = {}
    for ln in out.splitlines():
        w = ln.split()
        if w[:1] == ["buf"]:
            buf[w[1]] = int(w[2], 16)
    return buf


def check_calls(trace, out):
    buf = parse_bufs(out)
    allocs = {a.addr: a for a in trace.of("ALLOC")}
    got, retags = ops(trace)
    want = expected_calls(buf)
    expect(len(got) == len(want), "%d GEMM ops recorded, %d expected: %s" %
           (len(got), len(want), [trace.string(o.name_id) for o, _ in got]))
    for i, ((op, acc), w) in enumerate(zip(got, want)):
        name = trace.string(op.name_id)
        where = "op %d (%s)" % (i + 1, w["name"])
        expect(name == w["name"], "%s: recorded as %s" % (where, name))
        expect(op.kind == 1, "%s: kind %d, not GEMM" % (where, op.kind))
        for f in ("m", "n", "k", "batch", "flops"):
            expect(op[f] == w[f], "%s: %s = %d, expected %d" % (where, f, op[f], w[f]))
        expect((op.dtype_a, op.dtype_b, op.dtype_c) == w["dt"], "%s: dtypes %s, expected %s" %
               (where, (op.dtype_a, op.dtype_b, op.dtype_c), w["dt"]))
        expect(op.stream == 0, "%s: stream 0x%x" % (where, op.stream))
        got_r = [(a.addr, a.size, a.mode) for a in acc]
        expect(got_r == w["ranges"], "%s: accesses\n  got      %s\n  expected %s" %
               (where, [(hex(a), s, m) for a, s, m in got_r],
                [(hex(a), s, m) for a, s, m in w["ranges"]]))
        for a in acc:
            holder = [b for b in allocs.values() if b.addr <= a.addr < b.addr + b.size]
            want_alloc = holder[0].addr if holder and a.addr != buf["H"] else 0
            expect(a.alloc_addr == want_alloc, "%s: access 0x%x resolved to 0x%x, not 0x%x" %
                   (where, a.addr, a.alloc_addr, want_alloc))
    # Both workspaces retagged once each (the program tags nothing itself).
    tagged = sorted(r.addr for r in retags if r.category == WORKSPACE)
    expect(tagged == sorted([buf["W"], buf["LW"]]), "RETAG workspace of %s, expected W and LW" %
           [hex(a) for a in tagged])
    return len(got)


def s_calls(args):
    out, trace = run(args, [args.prog], {})
    n = check_calls(trace, out)
    print("%d GEMM ops with their accesses as expected" % n)


def s_off(args):
    out, trace = run(args, [args.prog], {"MEMSHIM_ACCESS": "off"})
    recs = [r for r in trace.records if r.rec in (REC_OP, REC_ACCESS, REC_RETAG)]
    expect(not recs, "MEMSHIM_ACCESS=off recorded %d OP/ACCESS/RETAG records" % len(recs))
    out, trace = run(args, [args.prog], {"MEMSHIM_ACCESS": "gemm"})
    check_calls(trace, out)


def s_via_lt(args):
    """libcublas routing its fp32 GEMMs through cublasLtMatmul (simcuda's SIMCUDA_CUBLAS_LT,
    as the real library does for many GEMMs): the inner call reaches the shim's cublasLtMatmul
    and descriptor hooks, yet each GEMM is recorded once, under the entry point the program
    called."""
    out, trace = run(args, [args.prog], {"SIMCUDA_CUBLAS_LT": "1"})
    check_calls(trace, out)
    e = dict(os.environ)
    e.update({"LD_PRELOAD": args.shim, "SIMCUDA_CUBLAS_LT": "1", "LD_DEBUG": "bindings"})
    p = subprocess.run([args.prog], env=e, capture_output=True, text=True, timeout=300)
    bound = [ln for ln in p.stderr.splitlines()
             if "libcublas.so" in ln and "libmemshim" in ln and "`cublasLtMatmul'" in ln]
    expect(bound, "libcublas's cublasLtMatmul did not bind to the shim: the test shows nothing")


def check_local_gemm(trace, out, where):
    buf = parse_bufs(out)
    got, _ = ops(trace)
    expect(len(got) == 1, "%s: %d GEMM ops recorded, 1 expected" % (where, len(got)))
    op, acc = got[0]
    expect((trace.string(op.name_id), op.m, op.n, op.k, op.flops) ==
           ("cublasSgemm_v2", 2, 3, 4, 48), "%s: op %s" % (where, dict(op)))
    want = [(buf["A"], 8 * 4, R, buf["A"]), (buf["B"], 12 * 4, R, buf["B"]),
            (buf["C"], 6 * 4, W, buf["C"])]
    # cuBLAS's own default workspace (not set by the program) is not a range of the call
    expect([(a.addr, a.size, a.mode, a.alloc_addr) for a in acc] == want,
           "%s: accesses %s" % (where, [dict(a) for a in acc]))


def s_local(args):
    """cuBLAS opened RTLD_LOCAL: found by dlsym on its handle, and found by name when a library
    that links it is itself loaded RTLD_LOCAL; the shim never loads cuBLAS by itself."""
    out, trace = run(args, [args.prog, "dlsym"], {})
    check_local_gemm(trace, out, "dlsym")
    out, trace = run(args, [args.prog, "lib", args.lib], {})
    check_local_gemm(trace, out, "RTLD_LOCAL library")
    out, _ = run(args, [args.prog, "none"], {})
    expect("libcublas loaded 0" in out, "libcublas is loaded in a program that never used it")


def mlp_expected(layers, batch, inp, hidden, classes, steps):
    """GEMMs of examples/mlp per step (model.c: forward layer by layer, backward from the last
    layer: dw = dz^T h, then da = dz w above the first layer). Column-major shapes of device.c."""
    dims = [inp] + [hidden] * (layers - 1) + [classes]
    per_step = []
    for l in range(layers):                         # forward: z^T (out x B) = w (out x in) x^T
        i, o = dims[l], dims[l + 1]
        per_step.append(("fwd", l, o, batch, i))
    for l in reversed(range(layers)):
        i, o = dims[l], dims[l + 1]
        per_step.append(("dw", l, i, o, batch))     # dw^T (in x out) = x^T (in x B) dy (B x out)
        if l > 0:
            per_step.append(("da", l, i, batch, o))  # dx^T (in x B) = w^T (in x out) dy^T
    return dims, per_step


def s_mlp(args, ex=False):
    layers, batch, inp, hidden, classes, steps = 3, 8, 12, 20, 5, 3
    argv = [args.prog, "--steps", str(steps), "--layers", str(layers), "--batch", str(batch),
            "--input", str(inp), "--hidden", str(hidden), "--classes", str(classes),
            "--workspace", "64k"] + (["--gemm", "ex", "--no-tags"] if ex else [])
    entry = "cublasGemmEx" if ex else "cublasSgemm_v2"
    out, trace = run(args, argv, {})
    got, retags = ops(trace)
    dims, per_step = mlp_expected(layers, batch, inp, hidden, classes, steps)
    expect(len(got) == steps * len(per_step), "%d GEMMs recorded, %d expected (%d per step)" %
           (len(got), steps * len(per_step), len(per_step)))
    # Steps: STEP records split the ops; each step holds its GEMMs in program order.
    order, step_of_op, step = [], [], 0
    for r in trace.records:
        if r.rec == 12:
            step += 1
        elif r.rec == REC_OP and r.kind == 1:
            step_of_op.append(step)
    live = {}
    weights, inputs, dz = {}, {}, {}
    ws_addr = None
    op_i = 0
    for r in trace.records:
        if r.rec == REC_ALLOC:
            live[r.addr] = r
        elif r.rec == 7:
            live.pop(r.addr, None)
        elif r.rec == REC_RETAG and r.addr in live:
            live[r.addr] = shim_trace.Record(live[r.addr], category=r.category)
        elif r.rec == REC_OP and r.kind == 1:
            s, (kind, l, m, n, k) = divmod(op_i, len(per_step))[0], per_step[op_i % len(per_step)]
            op_i += 1
            op, acc = got[op_i - 1]
            where = "step %d GEMM %d (%s layer %d)" % (s + 1, op_i, kind, l)
            expect(step_of_op[op_i - 1] == s + 1, "%s: recorded in step %d" %
                   (where, step_of_op[op_i - 1]))
            expect(trace.string(op.name_id) == entry, "%s: %s" %
                   (where, trace.string(op.name_id)))
            expect((op.m, op.n, op.k, op.batch, op.flops) == (m, n, k, 1, 2 * m * n * k),
                   "%s: m n k batch flops = %s, expected %s" %
                   (where, (op.m, op.n, op.k, op.batch, op.flops), (m, n, k, 1, 2 * m * n * k)))
            expect(len(acc) == 4, "%s: %d accesses" % (where, len(acc)))
            a, b, c, w = acc
            i, o = dims[l], dims[l + 1]
            # operands are whole tracked allocations of exactly the matrix's bytes
            for x, size, mode in ((a, None, 1), (b, None, 1), (c, m * n * 4, 2)):
                expect(x.mode == mode and x.alloc_addr == x.addr and x.addr in live,
                       "%s: access 0x%x mode %d alloc 0x%x" % (where, x.addr, x.mode,
                                                               x.alloc_addr))
                if size:
                    expect(x.size == size, "%s: C %d bytes, expected %d" % (where, x.size, size))
                expect(live[x.addr].requested == x.size, "%s: access of %d bytes in an allocation"
                       " of %d" % (where, x.size, live[x.addr].requested))
            wt = a if kind in ("fwd", "da") else None
            if wt is not None:
                expect(wt.size == i * o * 4, "%s: weight %d bytes" % (where, wt.size))
                prev = weights.setdefault(l, wt.addr)
                expect(prev == wt.addr, "%s: layer %d weight moved" % (where, l))
            # categories the program tags (model.c) and the operands' identity across GEMMs
            cat = [live[x.addr].category for x in (a, b, c)]
            h_cat = INPUT if l == 0 else ACTIVATION
            # ReLU (the default): forward frees every GEMM output itself, a temporary
            want_cat = {"fwd": [PARAMETER, h_cat, TEMPORARY], "dw": [h_cat, TEMPORARY, GRADIENT],
                        "da": [PARAMETER, TEMPORARY, TEMPORARY]}[kind]
            expect(ex or cat == want_cat, "%s: operand categories %s, expected %s" %
                   (where, cat, want_cat))
            if kind == "fwd":
                inputs[l] = b.addr          # h of layer l
            elif kind == "dw":
                expect(a.addr == inputs[l], "%s: reads h 0x%x, forward read 0x%x" %
                       (where, a.addr, inputs[l]))
                dz[l] = b.addr
            else:
                expect(b.addr == dz[l], "%s: reads dz 0x%x, dw read 0x%x" % (where, b.addr, dz[l]))
                expect(a.addr == weights[l], "%s: reads w 0x%x" % (where, a.addr))
            expect(w.mode == 3 and w.size == 65536, "%s: workspace access %s" % (where, dict(w)))
            ws_addr = ws_addr or w.addr
            expect(w.addr == ws_addr, "%s: workspace moved" % where)
            expect(live[w.addr].category == WORKSPACE, "%s: workspace allocation is %d" %
                   (where, live[w.addr].category))
    # Untagged (--no-tags), the workspace becomes one through cublasSetWorkspace_v2: RETAG.
    retagged = [r.addr for r in retags if r.category == WORKSPACE]
    expect(retagged == ([ws_addr] if ex else []), "RETAG workspace %s, workspace at 0x%x" %
           ([hex(a) for a in retagged], ws_addr))
    print("%d steps x %d GEMMs as examples/mlp issues them" % (steps, len(per_step)))


SCENARIOS = {"calls": s_calls, "off": s_off, "via_lt": s_via_lt, "local": s_local,
             "mlp": s_mlp,
             "mlp_ex": lambda args: s_mlp(args, ex=True)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    ap.add_argument("--shim", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--lib", help="blas_local_user, for the local scenario")
    args = ap.parse_args()
    try:
        SCENARIOS[args.scenario](args)
    except Failure as e:
        print("FAIL %s: %s" % (args.scenario, e))
        return 1
    print("PASS %s" % args.scenario)
    return 0


if __name__ == "__main__":
    sys.exit(main())
