#!/usr/bin/env python3
"""The real PyTorch wheel on simcuda under libmemshim, refereed by PyTorch itself.

usage: torch_sim_check.py native|expandable|async|limit|unsupported|kernels|backward|forward

A small GPT (examples/pytorch/train.py: embedding, SDPA attention, MLP, layer norm, AdamW, bf16
autocast, activation checkpointing) trains a few steps through build/bin/memshim --sim, inside
tests/e2e/torch_referee.py, which records PyTorch's own view (_record_memory_history/_snapshot,
max_memory_reserved). memshim's trace is read through memshim-analyze (export --format csv,
summary --json) and must agree exactly:
  native      every cudaMalloc/cudaFree is a segment_alloc/segment_free of PyTorch's, in order,
              address and bytes; the tensors of the main thread, by the program's Python line
              PyTorch recorded for each, are as many under that line in memshim's summary, and
              the main thread's tensors alive at the peak have PyTorch's line, one by one;
  expandable  every segment_map/segment_unmap of PyTorch's is a run of memshim's cuMemMap/
              cuMemUnmap records covering exactly its range (PyTorch reports a contiguous run of
              handles as one event), in order;
  async       backend:cudaMallocAsync keeps no history in PyTorch, so the referee is the same
              program under the native allocator: its tensor allocations (the bytes PyTorch asked
              for, in the driver's 256-byte units), in order, and as many frees; the peak of the
              tensors' bytes is PyTorch's max_memory_reserved;
and in the three modes the memory PyTorch reserved at its most is what memshim saw from
PyTorch's allocator at its most, and memshim's peak is that plus the memory PyTorch does not own
(cuBLAS's own workspaces), which the check names.
  limit       MEMSHIM_LIMIT: mem_get_info reports the ceiling, the crossing allocation raises
              torch.OutOfMemoryError, and memshim's report names what was resident.
  unsupported a cuDNN convolution and an NCCL all-reduce fail with one line naming what is
              missing, then PyTorch's own error, without hanging.
  kernels     backend:cudaMallocAsync (one allocation per tensor): for each of a few operations
              (add, mul, sum, layer_norm, softmax, gelu, an in-place add), inside an NVTX range of
              its own, the kernels launched there are recorded with accesses to every tensor
              PyTorch's data_ptr() names as its operands and result, and to nothing but those
              and what the operation allocated itself (simcuda gives each kernel the parameter
              layout of its cubin, as the driver does).
  backward    every tensor allocated on an autograd thread (no GIL; shim/core/pyborrow.h) is
              named by the summary's tensor view after the line of train.py that called
              backward(), found in the file, with activation checkpointing's recomputation
              (Python run again on that thread) among them.
  forward     the same tensors by the forward line of their autograd node (summary's
              tensors.forward_lines), against torch.profiler on the same run (the referee's
              --profile mode: each backward allocation's node number, the forward operation
              with that number, and the program's innermost frame above it): memshim links at
              least 90% of them, and the profiler agrees on at least 95% of those.

Environment: MEMSHIM_TORCH_PYTHON (an interpreter with torch; the test is skipped, exit 77,
when it is unset or missing), MEMSHIM_LAUNCHER, MEMSHIM_ANALYZE, OUT (a scratch directory).
MEMSHIM_TORCH_SIM=0 runs the same checks on a real GPU (tests/gpu/run.sh), where cuDNN works
(unsupported is skipped) and cuBLAS's own allocations are the real library's.
"""
import csv
import io
import json
import os
import re
import subprocess
import sys
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
REFEREE = os.path.join(HERE, "torch_referee.py")
PY = os.environ.get("MEMSHIM_TORCH_PYTHON", "")
LAUNCHER = os.environ.get("MEMSHIM_LAUNCHER", "")
ANALYZE = os.environ.get("MEMSHIM_ANALYZE", "")
OUT = os.environ.get("OUT", "/tmp")
SIM = os.environ.get("MEMSHIM_TORCH_SIM", "1") != "0"
DEVICE_OPTS = ["--sim"] if SIM else []
GPT = ["--layers", "2", "--hidden", "128", "--heads", "4", "--seq-len", "64", "--batch", "4",
       "--vocab", "512", "--steps", "3", "--amp", "bf16", "--checkpoint", "--attention", "sdpa"]
CONF = {"native": "", "expandable": "expandable_segments:True",
        "async": "backend:cudaMallocAsync"}
TORCH_KINDS = {"native": {"cudaMalloc"}, "expandable": {"cuMemCreate"},
               "async": {"cudaMallocAsync"}}
# The driver's unit of a stream-ordered allocation (simcuda charges requests rounded to it).
GRANULE = 256
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def run(cmd, env_extra=None, timeout=300):
    env = dict(os.environ, OMP_NUM_THREADS="1", **(env_extra or {}))
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def train(name, conf, shim=True):
    """Runs the GPT under the launcher; returns (referee JSON, trace path or None)."""
    js = os.path.join(OUT, name + ".json")
    trace = os.path.join(OUT, name + ".mst")
    for p in (js, trace):
        if os.path.exists(p):
            os.remove(p)
    opts = DEVICE_OPTS + (["--trace", trace] if shim else ["--no-shim"])
    r = run([LAUNCHER, *opts, "--", PY, REFEREE, js, "--", *GPT], {"PYTORCH_ALLOC_CONF": conf})
    if r.returncode != 0 or not os.path.exists(js):
        sys.stderr.write(r.stdout[-3000:] + r.stderr[-6000:])
        raise SystemExit(f"{name}: the training run failed (exit {r.returncode})")
    with open(js) as f:
        return json.load(f), trace if shim else None


def trace_rows(trace):
    r = run([ANALYZE, "export", "--format", "csv", trace])
    if r.returncode != 0:
        raise SystemExit(f"memshim-analyze export: {r.stderr}")
    return list(csv.DictReader(io.StringIO(r.stdout)))


def summary(trace):
    r = run([ANALYZE, "summary", "--json", trace])
    if r.returncode != 0:
        raise SystemExit(f"memshim-analyze summary: {r.stderr}")
    return json.loads(r.stdout)


def owned_peak(rows, torch_kinds):
    """Replays the allocations: memshim's peak, the bytes of PyTorch's allocator at it and at
    their own highest, the other allocations live at the peak (kind, site, bytes) and the most
    of those ever live together."""
    live, resident, torch_now = {}, 0, 0
    peak, torch_at_peak, torch_max, others_max, others_at_peak = 0, 0, 0, 0, []
    for r in rows:
        if r["event"] not in ("alloc", "free"):
            continue
        key, size, mine = (r["kind"], r["addr"]), int(r["size"]), r["kind"] in torch_kinds
        if r["event"] == "alloc":
            live[key] = r
            resident += size
            torch_now += size if mine else 0
        elif live.pop(key, None) is not None:
            resident -= size
            torch_now -= size if mine else 0
        torch_max = max(torch_max, torch_now)
        others_max = max(others_max, resident - torch_now)
        if resident > peak:
            peak, torch_at_peak = resident, torch_now
            others_at_peak = [(v["kind"], v["site"], int(v["size"])) for v in live.values()
                              if v["kind"] not in torch_kinds]
    return peak, torch_at_peak, torch_max, others_max, others_at_peak


def check_peak(mode, ref, rows, summ):
    """memshim's peak is PyTorch's reserved bytes plus what PyTorch does not own, at the moment
    of the peak; PyTorch's own highest is max_memory_reserved."""
    peak, torch_at_peak, torch_max, others_max, others = owned_peak(rows, TORCH_KINDS[mode])
    extra = sum(b for _, _, b in others)
    reserved = ref["max_memory_reserved"]
    print(f"     peak: memshim {summ['peak_bytes']} = PyTorch's allocator {torch_at_peak} + "
          f"not PyTorch's {extra}; max_memory_reserved {reserved}; "
          f"not PyTorch's at most {others_max}")
    for kind, site, size in others:
        print(f"       {size} bytes by {kind} in {site}")
    check(peak == summ["peak_bytes"], f"{mode}: the replayed trace peaks where the summary says")
    check(torch_max == reserved,
          f"{mode}: PyTorch's allocator held at most max_memory_reserved ({torch_max} == {reserved})")
    check(peak == torch_at_peak + extra and reserved <= peak <= reserved + others_max,
          f"{mode}: memshim's peak is PyTorch's reserved bytes plus what PyTorch does not own")
    names = [s for k, s, _ in others] + [summ_site for summ_site in summ_sites(summ)]
    own = "cublasCreate" if SIM else "libcublas"
    check(all(own in s for _, s, _ in others),
          f"{mode}: the memory PyTorch does not own is cuBLAS's workspace ({own})")
    check(not others or any(own in n for n in names),
          f"{mode}: the summary names the extra memory's call site")
    return peak, extra


def summ_sites(summ):
    return [f for site in summ.get("top_sites", []) for f in site.get("frames", [])[:1]]


def check_native():
    ref, trace = train("native", CONF["native"])
    rows, summ = trace_rows(trace), summary(trace)
    torch_seg = [(a.split("_")[1], int(addr), size) for a, addr, size in ref["events"]
                 if a in ("segment_alloc", "segment_free")]
    mine = [(r["event"], int(r["addr"], 16), int(r["size"])) for r in rows
            if r["event"] in ("alloc", "free") and r["kind"] == "cudaMalloc"]
    print(f"     segments: PyTorch {len(torch_seg)} events "
          f"({sum(s for e, _, s in torch_seg if e == 'alloc')} bytes allocated), "
          f"memshim {len(mine)} ({sum(s for e, _, s in mine if e == 'alloc')} bytes)")
    check(len(torch_seg) > 0 and any(e == "free" for e, _, _ in torch_seg),
          "native: PyTorch allocated and freed segments")
    check(mine == torch_seg, "native: every cudaMalloc/cudaFree is a segment_alloc/segment_free, "
          "in order, address and bytes")
    check_peak("native", ref, rows, summ)
    check_lines(ref, summ)
    check_peak_lines(ref, summ)


def program_line(frames):
    """memshim's rule for a tensor's line (pycaller_innermost), on PyTorch's frames: the
    innermost frame outside an installed package, as (real path, line)."""
    for file, line in frames:
        if "/site-packages/" not in file and "/dist-packages/" not in file:
            return os.path.realpath(file), int(line)
    return None


def memshim_frame(frame):
    """memshim's `file:line in function` (None: no Python frame) as (real path, line,
    function)."""
    m = re.match(r"^(.*):(\d+) in (.*)$", frame or "")
    return (os.path.realpath(m.group(1)), int(m.group(2)), m.group(3)) if m else None


def memshim_line(frame):
    """memshim's `file:line in function` (None: no Python frame) as (real path, line)."""
    f = memshim_frame(frame)
    return f[:2] if f else None


def check_lines(ref, summ):
    """The tensors allocated on the main thread (their Python stack, as PyTorch recorded it,
    starts in the referee), counted by the program's line PyTorch's frames give, are those
    memshim counts under the same line. The main thread runs most operators with the GIL
    released: its frames are read raw there (shim/core/pyborrow.h)."""
    referee = os.path.realpath(REFEREE)
    theirs = Counter(program_line(f) for f in ref["alloc_frames"]
                     if f and os.path.realpath(f[-1][0]) == referee)
    mine = Counter()
    for row in summ["tensors"]["program_lines"]:
        mine[memshim_line(row["frame"])] += row["tensors"]
    agree = sum(min(n, mine[k]) for k, n in theirs.items() if k)
    total = sum(theirs.values())
    print(f"     program lines: PyTorch {total} tensors on {len(theirs)} lines, memshim "
          f"{sum(mine.values())} on {len(mine)}; {agree} agree")
    for k in sorted(set(theirs) | set(mine), key=lambda k: (k is None, k or ("", 0))):
        if theirs[k] != mine[k]:
            print(f"       {k}: PyTorch {theirs[k]}, memshim {mine[k]}")
    check(total > 0 and theirs[None] == 0, "native: PyTorch names a program line for every "
          "tensor of the main thread")
    check(agree >= 0.99 * total, "native: memshim counts 99% of them under the same line")


def torch_live_at_peak(ref):
    """Replays PyTorch's own trace (alloc, free_completed): the blocks alive when the bytes in
    blocks first peaked, as {addr: (bytes, frames)}."""
    frames = iter(ref["alloc_frames"])
    live, total, best, at_best = {}, 0, -1, {}
    for action, addr, size in ref["events"]:
        if action == "alloc":
            live[addr] = (size, next(frames))
            total += size
        elif action == "free_completed" and addr in live:
            total -= live.pop(addr)[0]
        if total > best:
            best, at_best = total, dict(live)
    return at_best


def check_peak_lines(ref, summ):
    """The tensors alive at the peak, tensor by tensor (same process, same addresses): each
    one PyTorch recorded a Python stack for (the main thread's, and those activation
    checkpointing recomputed on an autograd thread, Python running there) has in memshim's
    tensor view the program line that PyTorch's stack gives. The autograd threads' other
    tensors have no stack in PyTorch's record (memshim names the backward() line)."""
    theirs = torch_live_at_peak(ref)
    mine = {t["addr"]: t for t in summ["tensors"]["live_at_peak"]}
    both = sum(n for a, (n, _) in theirs.items() if a in mine)
    whole = sum(n for n, _ in theirs.values()) or 1
    named = same = 0
    for addr, (n, frames) in theirs.items():
        want = program_line(frames)
        if want is None or addr not in mine:
            continue
        named += n
        got = memshim_line(mine[addr]["frame"])
        same += n if got == want else 0
        if got != want:
            print(f"       {n} bytes at {addr:#x}: PyTorch {want}, memshim {got}")
    print(f"     at the peak: PyTorch {len(theirs)} blocks, {whole} bytes, "
          f"{100.0 * both / whole:.1f}% of them alive in memshim's view too; of the {named} "
          f"bytes PyTorch has a Python line for, {same} under the same line")
    check(both >= 0.99 * whole, "native: the tensors alive at PyTorch's peak are memshim's")
    check(named > 0 and same >= 0.99 * named,
          "native: each tensor alive at the peak has PyTorch's program line")


def runs_cover(events, records):
    """Each (action, addr, size) of PyTorch's is the next records of that action, contiguous
    from addr and adding up to size exactly; nothing is left over."""
    pos = {"map": 0, "unmap": 0}
    by = {a: [r for r in records if r[0] == a] for a in pos}
    for action, addr, size in events:
        lst, i, at = by[action], pos[action], addr
        while at < addr + size and i < len(lst) and lst[i][1] == at:
            at += lst[i][2]
            i += 1
        if at != addr + size:
            print(f"     no run of memshim {action} records covers {action} {addr:#x} +{size}")
            return False
        pos[action] = i
    return all(pos[a] == len(by[a]) for a in pos)


def check_expandable():
    ref, trace = train("expandable", CONF["expandable"])
    rows, summ = trace_rows(trace), summary(trace)
    torch_ev = [(a.split("_")[1], int(addr), size) for a, addr, size in ref["events"]
                if a in ("segment_map", "segment_unmap")]
    mine = [(r["event"], int(r["addr"], 16), int(r["size"])) for r in rows
            if r["event"] in ("map", "unmap")]
    for action in ("map", "unmap"):
        t = [s for a, _, s in torch_ev if a == action]
        m = [s for a, _, s in mine if a == action]
        print(f"     {action}: PyTorch {len(t)} events, {sum(t)} bytes; "
              f"memshim {len(m)} records, {sum(m)} bytes")
        check(sum(t) == sum(m) and len(t) > 0,
              f"expandable: as many bytes {action}ped on both sides")
    check(runs_cover(torch_ev, mine), "expandable: every segment_map/segment_unmap is exactly a "
          "run of memshim's cuMemMap/cuMemUnmap records, in order")
    creates = sum(int(r["size"]) for r in rows if r["event"] == "alloc" and
                  r["kind"] == "cuMemCreate")
    check(creates == sum(s for a, _, s in mine if a == "map"),
          "expandable: the handles created are the bytes mapped")
    check_peak("expandable", ref, rows, summ)


def check_async():
    native, _ = train("async-referee", CONF["native"], shim=False)
    ref, trace = train("async", CONF["async"])
    rows, summ = trace_rows(trace), summary(trace)
    torch_allocs = [size for a, _, size in native["events"] if a == "alloc"]
    torch_frees = [size for a, _, size in native["events"] if a == "free_completed"]
    mine = [int(r["size"]) for r in rows if r["event"] == "alloc" and r["kind"] == "cudaMallocAsync"]
    freed = [int(r["size"]) for r in rows if r["event"] == "free" and r["kind"] == "cudaMallocAsync"]
    rounded = [-(-s // GRANULE) * GRANULE for s in torch_allocs]
    print(f"     tensors: PyTorch (native referee) {len(torch_allocs)} allocations "
          f"{sum(torch_allocs)} bytes ({sum(rounded)} in 256-byte units), {len(torch_frees)} "
          f"frees; memshim {len(mine)} allocations {sum(mine)} bytes, {len(freed)} frees")
    check(mine == rounded or (not SIM and mine == torch_allocs),
          "async: one cudaMallocAsync per tensor allocation of PyTorch's, in order and size")
    check(len(freed) == len(torch_frees) and sum(freed) == sum(mine),
          "async: every tensor freed, one cudaFreeAsync each")
    check_peak("async", ref, rows, summ)


def check_limit():
    report = os.path.join(OUT, "limit-report.txt")
    prog = ("import json, torch\n"
            "free, total = torch.cuda.mem_get_info()\n"
            "xs, out = [], {'total': total}\n"
            "try:\n"
            "    while len(xs) < 64:\n"
            "        xs.append(torch.empty(8 << 20, dtype=torch.uint8, device='cuda'))\n"
            "except torch.OutOfMemoryError as e:\n"
            "    out['oom'] = type(e).__name__\n"
            "    out['message'] = str(e).splitlines()[0]\n"
            "out['held'] = len(xs)\n"
            "print('RESULT ' + json.dumps(out))\n")
    r = run([LAUNCHER, *DEVICE_OPTS, "--limit", "64m", "--report", report, "--", PY, "-c", prog])
    lines = [l for l in r.stdout.splitlines() if l.startswith("RESULT ")]
    if r.returncode != 0 or not lines:
        sys.stderr.write(r.stdout[-2000:] + r.stderr[-4000:])
        raise SystemExit(f"limit: the program failed (exit {r.returncode})")
    res = json.loads(lines[-1][len("RESULT "):])
    print(f"     mem_get_info total {res['total']}, {res['held']} tensors of 8 MiB held, "
          f"then: {res.get('message', '')[:160]}")
    check(res["total"] == 64 << 20, "limit: mem_get_info reports the 64 MiB ceiling as the total")
    check(res.get("oom") == "OutOfMemoryError",
          "limit: the crossing allocation raises torch.OutOfMemoryError")
    check(0 < res["held"] < 8, "limit: the ceiling stops the program before 64 MiB of tensors")
    with open(report) as f:
        text = f.read()
    check("at the ceiling 2" in text and "resident at exit" in text,
          "limit: memshim's exit report counts the failures at the ceiling and what was resident")
    oom = r.stderr[r.stderr.find("memshim: out of memory under the ceiling"):]
    check("top call sites by resident bytes" in oom and "CachingAllocator" in oom,
          "limit: at the failure memshim names the resident call sites (PyTorch's allocator)")


def check_unsupported_one(what, prog, error_names):
    r = run([LAUNCHER, "--sim", "--", PY, "-c", prog], timeout=120)
    named = [l for l in r.stderr.splitlines() if l.startswith("simcuda:")]
    last = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
    print(f"     {what}: " + (named[0] if named else "(no simcuda line)"))
    print(f"     {what}: {last[:200]}")
    check(r.returncode != 0, f"unsupported: {what} fails")
    check(len(named) == 1 and what in named[0],
          f"unsupported: one line from simcuda names the missing piece ({what}'s static runtime)")
    check(error_names in last, f"unsupported: PyTorch's own error follows ({error_names})")


def check_unsupported():
    if not SIM:
        print("SKIP: cuDNN and NCCL run on a real GPU")
        return
    check_unsupported_one("cuDNN", "import torch\n"
                          "x = torch.randn(1, 3, 16, 16, device='cuda')\n"
                          "conv = torch.nn.Conv2d(3, 4, 3).cuda()\n"
                          "print(conv(x).sum().item())\n", "cuDNN")
    check_unsupported_one("NCCL", "import torch, torch.distributed as dist\n"
                          "dist.init_process_group('nccl', store=dist.HashStore(), rank=0,"
                          " world_size=1)\n"
                          "x = torch.ones(4, device='cuda')\n"
                          "dist.all_reduce(x)\n", "NCCL")


def autograd_tensors(trace):
    """TENSOR_ALLOC records on pt_autograd_* threads, from memshim-analyze dump."""
    import shim_trace  # beside this file
    names, born = {}, []
    for kind, fields in shim_trace.dump_lines(ANALYZE, trace):
        if kind == "thread":
            names[fields["id"]] = fields["name"].strip('"')
        elif kind == "tensor":
            born.append(fields["thread"])
    return sum(1 for t in born if names.get(t, "").startswith("pt_autograd_"))

KERNELS_PROG = r"""
import json, torch
nvtx = torch.cuda.nvtx
a = torch.randn(4096, device="cuda")
b = torch.randn(4096, device="cuda")
x = torch.randn(16, 256, device="cuda")
w = torch.randn(256, device="cuda")
bias = torch.randn(256, device="cuda")
torch.cuda.synchronize()
ops = []

def op(name, fn, *args):
    nvtx.range_push(name)
    out = fn(*args)
    torch.cuda.synchronize()
    nvtx.range_pop()
    ops.append([name, [t.data_ptr() for t in (*args, out)]])
    return out

keep = [op("add", torch.add, a, b), op("mul", torch.mul, a, b), op("sum", torch.sum, a),
        op("layer_norm", lambda t, g, c: torch.nn.functional.layer_norm(t, (256,), g, c),
           x, w, bias),
        op("softmax", lambda t: torch.softmax(t, dim=-1), x),
        op("gelu", torch.nn.functional.gelu, x),
        op("add_", lambda t, u: t.add_(u), a, b)]
print("OPS " + json.dumps(ops))
"""


def kernel_phases(trace):
    """Per NVTX range of the dump: its kernel launches (name, accessed addresses) and the
    addresses of the allocations made inside it."""
    import shim_trace  # beside this file: the trace constants generated from trace_format.h
    phases, cur, launch = {}, None, None
    for kind, fields in shim_trace.dump_lines(ANALYZE, trace):
        if kind == "phase+":
            cur = phases.setdefault(fields["phase_name"].strip('"'), {"kernels": [], "born": set()})
        elif kind == "phase-":
            cur = None
        elif cur is None:
            continue
        elif kind == "alloc":
            cur["born"].add(int(fields["addr"], 16))
        elif kind == "op":
            launch = None
            if int(fields["kind"]) == shim_trace.mst_layout.OP_KERNEL:
                launch = (fields.get("op_name", "").strip('"'), set())
                cur["kernels"].append(launch)
        elif kind == "access" and launch is not None:
            launch[1].add(int(fields["addr"], 16))
    return phases


def check_kernels():
    trace = os.path.join(OUT, "kernels.mst")
    if os.path.exists(trace):
        os.remove(trace)
    r = run([LAUNCHER, *DEVICE_OPTS, "--trace", trace, "--", PY, "-c", KERNELS_PROG],
            {"PYTORCH_ALLOC_CONF": CONF["async"]})
    lines = [l for l in r.stdout.splitlines() if l.startswith("OPS ")]
    if r.returncode != 0 or not lines:
        sys.stderr.write(r.stdout[-2000:] + r.stderr[-4000:])
        raise SystemExit(f"kernels: the program failed (exit {r.returncode})")
    ops = json.loads(lines[-1][4:])
    phases = kernel_phases(trace)
    for name, ptrs in ops:
        ph = phases.get(name, {"kernels": [], "born": set()})
        seen = set().union(*(acc for _, acc in ph["kernels"])) if ph["kernels"] else set()
        want = set(ptrs)
        extra = seen - want - ph["born"]
        print(f"     {name}: {len(ph['kernels'])} kernel(s) "
              f"{[k[:48] for k, _ in ph['kernels']]}, PyTorch's tensors {len(want)}, "
              f"memshim saw {len(seen & want)} of them and {len(extra)} other(s)")
        check(ph["kernels"] and all(acc for _, acc in ph["kernels"]),
              f"kernels: {name} launches kernels, each recorded with its tensors")
        check(want <= seen, f"kernels: {name}: every operand and the result PyTorch names "
                            "is an access of its kernels")
        check(not extra, f"kernels: {name}: nothing else but what it allocated itself")


def check_backward():
    """Not under the referee: with PyTorch's memory history recording Python stacks, memshim
    records no Python frame on any thread."""
    train_py = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "pytorch",
                            "train.py")
    trace = os.path.join(OUT, "backward.mst")
    if os.path.exists(trace):
        os.remove(trace)
    args = [a for a in GPT if a not in ("--attention", "sdpa")]  # SDPA's default needs cuDNN
    r = run([LAUNCHER, *DEVICE_OPTS, "--trace", trace, "--", PY, train_py, *args])
    if r.returncode != 0 or not os.path.exists(trace):
        sys.stderr.write(r.stdout[-3000:] + r.stderr[-6000:])
        raise SystemExit(f"backward: the training run failed (exit {r.returncode})")
    with open(train_py) as f:
        lines = [i for i, s in enumerate(f, 1) if ".backward()" in s]
    check(len(lines) == 1, f"train.py calls backward() on one line ({lines})")
    want = f"{os.path.realpath(train_py)}:{lines[0]} in main"
    calls = summary(trace)["tensors"]["backward_calls"]
    for c in calls:
        print(f"     {c['tensors']} tensors, {c['bytes']} bytes: {c['frame']}")
    n = autograd_tensors(trace)
    check(n > 0, f"backward: {n} tensors were allocated on autograd threads")
    check(sum(c["tensors"] for c in calls) == n,
          "backward: the tensor view counts every one of them")
    check(all(c["frame"] and os.path.realpath(c["frame"].split(":")[0]) + ":" +
              c["frame"].split(":", 1)[1] == want for c in calls),
          f"backward: every one is named after {want}")


def forward_matches(ref_allocs, rows):
    """How many of memshim's linked backward tensors (forward_lines rows) the profiler puts
    under the same forward place: a row's tensors count against the referee's tensors of the
    same file:line first, then of the same file:function (the profiler has no line for an
    operation run straight from a program function's body)."""
    left = Counter(place for _, _, place in ref_allocs)
    matched = 0
    for row in rows:
        f = memshim_frame(row["frame"])
        if not f:
            continue
        path, line, qual = f
        n = row["tensors"]
        for key in (f"{os.path.basename(path)}:{line}", f"{os.path.basename(path)}:{qual}"):
            k = min(n, left[key])
            left[key] -= k
            matched += k
            n -= k
    return matched


def check_forward():
    """A backward tensor's forward line, against PyTorch's profiler on the same run."""
    js, trace = os.path.join(OUT, "forward.json"), os.path.join(OUT, "forward.mst")
    for p in (js, trace):
        if os.path.exists(p):
            os.remove(p)
    r = run([LAUNCHER, *DEVICE_OPTS, "--trace", trace, "--", PY, REFEREE, "--profile", js, "--",
             *GPT])
    if r.returncode != 0 or not os.path.exists(js):
        sys.stderr.write(r.stdout[-3000:] + r.stderr[-6000:])
        raise SystemExit(f"forward: the training run failed (exit {r.returncode})")
    with open(js) as f:
        ref = json.load(f)["backward_allocs"]
    t = summary(trace)["tensors"]
    for place, n in sorted(Counter(p for _, _, p in ref).items(), key=str):
        print(f"     PyTorch's profiler: {n} backward tensors from {place}")
    for row in t["forward_lines"]:
        print(f"     memshim: {row['tensors']} backward tensors from {row['frame']}")
    linked, total = t["backward_linked"], t["backward_tensors"]
    check(total == len(ref) and total > 0,
          f"forward: as many backward tensors on both sides ({total}, PyTorch {len(ref)})")
    check(linked >= 0.9 * total, f"forward: memshim links {linked} of {total} to a forward line")
    matched = forward_matches(ref, t["forward_lines"])
    check(matched >= 0.95 * linked and linked > 0,
          f"forward: PyTorch's profiler puts {matched} of those {linked} under the same place")
    live = [x for x in t["live_at_peak"] if x["autograd"]]
    check(all(x["forward"] in {r["frame"] for r in t["forward_lines"]} or x["forward"] is None
              for x in live), "forward: the tensors alive at the peak name forward_lines rows")


def main():
    mode = sys.argv[1] if len(sys.argv) == 2 else ""
    checks = {"native": check_native, "expandable": check_expandable, "async": check_async,
              "limit": check_limit, "unsupported": check_unsupported,
              "kernels": check_kernels, "backward": check_backward, "forward": check_forward}
    if mode not in checks:
        raise SystemExit(__doc__)
    if not PY or not os.path.exists(PY):
        print(f"SKIP: no PyTorch interpreter (MEMSHIM_TORCH_PYTHON={PY!r}); "
              "scripts/torch-venv.sh makes one")
        return 77
    probe = run([PY, "-c", "import torch; assert torch.version.cuda"])
    if probe.returncode != 0:
        print(f"SKIP: {PY} has no CUDA build of torch")
        return 77
    os.makedirs(OUT, exist_ok=True)
    checks[mode]()
    print(f"{len(failures)} failure(s)" if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
