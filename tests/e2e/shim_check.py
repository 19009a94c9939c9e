#!/usr/bin/env python3
"""End-to-end checks of libmemshim's interception layer on simcuda.

Each scenario runs tests/e2e/shim_paths.c (shim-paths) under LD_PRELOAD=libmemshim.so and
holds what the program says it did against the trace (read with shim_trace.py) and simcuda's
own statistics (SIMCUDA_STATS), the independent referee. Usage:

    shim_check.py SCENARIO --shim LIB --prog PROG [--realrt PROG] [--local PROG --local-lib LIB]
                  [--source DIR] [--build DIR] [--real]

With --real and the real CUDA libraries on the library path (no simcuda), the scenarios paths,
ceiling, meminfo, threads, fork, kill, errors, nvtx, api and rules check a real GPU.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenario  # noqa: E402
import shim_trace  # noqa: E402

MIB = 1024 * 1024


Failure, expect = scenario.Failure, scenario.expect


class Run:
    """One program run: its stdout lines, stderr, trace and simcuda statistics."""

    def __init__(self, tmp, returncode, out, err, trace_path, stats_path):
        self.rc, self.out, self.err = returncode, out, err
        self.lines = out.splitlines()
        self.trace_path = trace_path
        self.stats = None
        if stats_path and os.path.exists(stats_path):
            with open(stats_path) as f:
                self.stats = json.load(f)

    def trace(self):
        expect(os.path.exists(self.trace_path), "no trace written at %s" % self.trace_path)
        return shim_trace.Trace(self.trace_path)

    def said(self, word):
        return [ln.split() for ln in self.lines if ln.split()[:1] == [word]]


class Ctx:
    def __init__(self, args):
        self.shim, self.prog = os.path.abspath(args.shim), os.path.abspath(args.prog)
        self.realrt, self.local, self.local_lib = args.realrt, args.local, args.local_lib
        self.source, self.build = args.source, args.build
        self.real = args.real
        self.tmp = tempfile.mkdtemp(prefix="shim-e2e-")
        self.n = 0

    def run(self, argv, env=None, preload=True, trace=True, check=True, timeout=120):
        self.n += 1
        trace_path = os.path.join(self.tmp, "run%d.mst" % self.n)
        stats_path = os.path.join(self.tmp, "run%d.json" % self.n)
        e = dict(os.environ)
        e.pop("MEMSHIM_TRACE", None)
        e["SIMCUDA_STATS"] = stats_path
        if preload:
            e["LD_PRELOAD"] = self.shim
        if trace:
            e["MEMSHIM_TRACE"] = trace_path
        e.update(env or {})
        p = subprocess.run(argv, env=e, capture_output=True, text=True, timeout=timeout)
        if check and p.returncode != 0:
            raise Failure("%s exited %d\nstdout:\n%s\nstderr:\n%s" %
                          (" ".join(argv), p.returncode, p.stdout[-4000:], p.stderr[-4000:]))
        return Run(self.tmp, p.returncode, p.stdout, p.stderr, trace_path, stats_path)

    def paths(self, *args, **kw):
        return self.run([self.prog] + [str(a) for a in args], **kw)


def alloc_tuples(trace):
    return [(a.kind, a.size, a.addr) for a in trace.allocs()]


def said_allocs(run):
    return [(int(w[1]), int(w[2]), int(w[3], 16)) for w in run.said("alloc")]


def check_lookups(run):
    lookups = run.said("lookup")
    expect(lookups, "the program reported no lookups")
    bad = [" ".join(w) for w in lookups if w[2] != "ok"]
    expect(not bad, "lookups handed out the wrong function:\n  " + "\n  ".join(bad))


# --- scenarios ---------------------------------------------------------------------------------

def s_paths(ctx):
    """Every allocation path through every door is recorded once, with its size and kind."""
    bare = ctx.paths("paths", preload=False, trace=False)
    check_lookups(bare)
    run = ctx.paths("paths")
    check_lookups(run)
    t = run.trace()
    want, got = said_allocs(run), alloc_tuples(t)
    if want != got:
        lines = ["%-4s want %-40s got %s" % (i, want[i] if i < len(want) else "-",
                                             got[i] if i < len(got) else "-")
                 for i in range(max(len(want), len(got)))]
        raise Failure("allocations in the trace differ from the program's:\n" +
                      "\n".join(lines))
    host = [a for a in t.allocs() if a.kind == 12 and a.size == 0]
    expect(host and all(a.flags & shim_trace.F_HOST for a in host),
           "host-located cuMemCreate not flagged MST_ALLOC_F_HOST")
    freed = [int(w[1], 16) for w in run.said("free")]
    expect([f.addr for f in t.frees()] == freed, "frees in the trace differ from the program's")
    for a in t.allocs():
        expect(a.kind != 12 or a.flags & shim_trace.F_HANDLE, "cuMemCreate without F_HANDLE")
    maps = [(int(w[1], 16), int(w[2]), int(w[3], 16)) for w in run.said("map")]
    expect([(m.addr, m.size, m.handle) for m in t.of("MAP")] == maps,
           "cuMemMap records differ from the program's")
    expect(len(t.of("UNMAP")) == len(maps), "cuMemUnmap records missing")
    s = t.summary()
    expect(s is not None and s.allocations == len(want) and s.frees == len(freed),
           "summary counts differ: %s" % (dict(s) if s else None))
    expect(s.resident_at_exit == 0, "bytes left resident at exit: %d" % s.resident_at_exit)


def s_ceiling(ctx):
    """At MEMSHIM_LIMIT each path fails with its own OOM code, never reaching the real call."""
    limit, block = 64 * MIB, 16 * MIB
    run = ctx.paths("ceiling", block, env={"MEMSHIM_LIMIT": "64m"})
    paths = run.said("path")
    expect(len(paths) == 14, "expected 14 paths, got %d" % len(paths))
    bad = [" ".join(w) for w in paths if int(w[2]) != limit // block or int(w[3]) != 2]
    expect(not bad, "paths that did not stop at the ceiling with code 2 after %d blocks:\n  %s"
           % (limit // block, "\n  ".join(bad)))
    st = run.stats
    expect(st is not None or ctx.real, "no SIMCUDA_STATS written")
    if st is not None:
        expect(st["peak_device_bytes"] <= limit,
               "simcuda peak %d exceeds the ceiling %d" % (st["peak_device_bytes"], limit))
        expect(st["failed_allocations"] == 0,
               "%d refused allocations reached simcuda" % st["failed_allocations"])
    t = run.trace()
    expect(len(t.of("OOM")) == 14, "expected 14 OOM records, got %d" % len(t.of("OOM")))
    expect(all(o.ceiling == limit and o.request >= block for o in t.of("OOM")),
           "OOM records with a wrong ceiling or request")
    expect("64" in run.err and "MiB" in run.err or "67108864" in run.err,
           "no OOM screen naming the ceiling on stderr")


def s_meminfo(ctx):
    """cudaMemGetInfo and cuMemGetInfo_v2 report the ceiling, NULL out-arguments included."""
    held = 10 * MIB
    run = ctx.paths("meminfo", held, env={"MEMSHIM_LIMIT": "100m"})
    info = {w[1]: (int(w[2]), int(w[3])) for w in run.said("info")}
    for name in ("cudaMemGetInfo", "cuMemGetInfo_v2"):
        free, total = info[name]
        expect(total == 100 * MIB, "%s total %d, want the ceiling %d" % (name, total, 100 * MIB))
        expect(free == 100 * MIB - held, "%s free %d, want %d" % (name, free, 100 * MIB - held))
    bare = ctx.paths("meminfo", held, preload=False, trace=False)
    total = dict((w[1], int(w[3])) for w in bare.said("info"))["cudaMemGetInfo"]
    run = ctx.paths("meminfo", held, env={"MEMSHIM_LIMIT": "100t"})
    got = dict((w[1], int(w[3])) for w in run.said("info"))["cudaMemGetInfo"]
    expect(got == total, "a ceiling above the device must report the device (%d), got %d"
           % (total, got))
    # A percentage needs the device's size before the first allocation is reserved.
    run = ctx.paths("meminfo", held, env={"MEMSHIM_LIMIT": "25%"})
    for name, (free, total_q) in ((w[1], (int(w[2]), int(w[3]))) for w in run.said("info")):
        expect(total_q == total // 4 and free == total // 4 - held,
               "%s at 25%% of %d: free %d total %d" % (name, total, free, total_q))


def s_threads(ctx):
    """8 threads x 100k alloc/free pairs: no event lost or duplicated, bytes balanced."""
    nthreads, pairs = 8, 100000
    run = ctx.paths("threads", nthreads, pairs, env={"MEMSHIM_STACK_DEPTH": "0"}, timeout=600)
    _, _, _, want_bytes = run.said("threads")[0]
    events, s = shim_trace.scan_alloc_free(run.trace_path)
    alloc = shim_trace.REC["ALLOC"]
    n = nthreads * pairs
    nalloc = sum(1 for e in events if e[0] == alloc)
    expect(nalloc == n, "%d ALLOC records, want %d" % (nalloc, n))
    expect(len(events) - nalloc == n, "%d FREE records, want %d" % (len(events) - nalloc, n))
    live, allocated, freed = {}, 0, 0
    for kind, addr, size in events:
        if kind == alloc:
            expect(addr not in live, "address 0x%x allocated twice without a free" % addr)
            live[addr] = size
            allocated += size
        else:
            expect(live.pop(addr, None) == size, "free of 0x%x unmatched" % addr)
            freed += size
    expect(not live, "%d allocations never freed" % len(live))
    expect(allocated == int(want_bytes) and freed == allocated,
           "bytes: allocated %d, freed %d, want %s" % (allocated, freed, want_bytes))
    expect(s and s.events_lost == 0 and s.allocations == n and s.frees == n,
           "summary: %s" % (dict(s) if s else None))


def s_fork(ctx):
    """After fork the child writes its own trace, with its own pid and only its own events."""
    env = {"MEMSHIM_TRACE": os.path.join(ctx.tmp, "fork-%p.mst")}
    run = ctx.paths("fork", env=env)
    child = run.said("child")[0]
    parent = run.said("parent")[0]
    cpid, ppid = int(child[1]), int(parent[1])
    ct = shim_trace.Trace(os.path.join(ctx.tmp, "fork-%d.mst" % cpid))
    pt = shim_trace.Trace(os.path.join(ctx.tmp, "fork-%d.mst" % ppid))
    expect(ct.pid == cpid and pt.pid == ppid, "trace headers carry the wrong pids")
    expect([a.addr for a in ct.allocs()] == [int(child[3], 16)],
           "child trace allocations: %s" % [hex(a.addr) for a in ct.allocs()])
    expect([a.addr for a in pt.allocs()] ==
           [int(run.said("parent-alloc")[0][1], 16), int(parent[3], 16)],
           "parent trace allocations: %s" % [hex(a.addr) for a in pt.allocs()])
    expect(ct.summary() and pt.summary(), "a trace lacks its exit summary")


def s_kill(ctx):
    """SIGKILL after a flush: the trace reads cleanly and holds everything flushed."""
    run = ctx.paths("kill", 100, 50, check=False, env={"MEMSHIM_FLUSH_MS": "100000"})
    expect(run.rc == -9, "expected death by SIGKILL, got %d" % run.rc)
    t = run.trace()
    expect(len(t.allocs()) >= 100, "only %d allocations survived the kill" % len(t.allocs()))
    expect(t.summary() is None, "a killed process cannot have written its summary")


def s_errors(ctx):
    """Bad arguments and unknown pointers: same codes as without the shim, nothing recorded."""
    bare = ctx.paths("errors", preload=False, trace=False)
    run = ctx.paths("errors")
    expect(bare.said("rc") == run.said("rc"), "return codes changed under the shim:\n%s\n%s"
           % (bare.out, run.out))
    if os.path.exists(run.trace_path):
        t = run.trace()
        expect(not t.frees(), "a free of an unknown pointer was recorded")
        expect(not t.allocs(), "a failed allocation was recorded")


def categories_of(run):
    t = run.trace()
    want = [int(w[3], 16) for w in run.said("alloc")]
    by_addr = {}
    for a in t.allocs():
        by_addr.setdefault(a.addr, []).append(a)
    got = []
    for addr in want:
        a = by_addr[addr].pop(0)
        got.append((shim_trace.CATEGORIES[a.category], t.string(a.phase), a.flags))
    return t, got


def s_nvtx(ctx):
    """An unmodified program's NVTX ranges become phases, and phase rules give categories."""
    run = ctx.paths("nvtx")
    t, got = categories_of(run)
    phases = [g[1] for g in got]
    expect(phases == ["optimizer", "forward", "backward", ""], "phases: %s" % phases)
    cats = [g[0] for g in got]
    expect(cats == ["optimizer_state", "activation", "gradient", "unknown"],
           "categories: %s" % cats)
    names = [t.string(p.name_id) for p in t.of("PHASE_PUSH")]
    expect(names == ["optimizer", "forward", "backward"], "PHASE_PUSH records: %s" % names)
    expect(len(t.of("PHASE_POP")) == 3, "PHASE_POP records: %d" % len(t.of("PHASE_POP")))


def s_api(ctx):
    """memshim_tag_push / memshim_step_begin reach the trace."""
    run = ctx.paths("api")
    expect([w[1] for w in run.said("tag")] == ["0", "-1"], "tag push results: %s" % run.out)
    t, got = categories_of(run)
    expect(got[0][0] == "kv_cache" and got[0][2] & shim_trace.F_CAT_TAGGED,
           "tagged allocation: %s" % (got[0],))
    expect(got[1][0] == "unknown", "untagged allocation: %s" % (got[1],))
    expect([s.step for s in t.of("STEP")] == [7], "STEP records: %s" % t.of("STEP"))


def s_rules(ctx):
    """A MEMSHIM_RULES file classifies by the call site's symbols."""
    rules = os.path.join(ctx.tmp, "rules.txt")
    with open(rules, "w") as f:
        f.write("# test rules\nactivation  symbol:shim_paths_rule_site\n")
    run = ctx.paths("rules", env={"MEMSHIM_RULES": rules})
    _, got = categories_of(run)
    expect(got[0][0] == "activation" and got[0][2] & shim_trace.F_CAT_RULE,
           "rule-matched allocation: %s" % (got[0],))
    expect(got[1][0] == "unknown", "unmatched allocation: %s" % (got[1],))


def s_builtin(ctx):
    """Built-in rules: cuBLAS's workspace, allocated inside libcublas, is `workspace`."""
    run = ctx.paths("cublas")
    t = run.trace()
    ws = [a for a in t.allocs() if a.category == shim_trace.CATEGORIES.index("workspace")]
    expect(ws, "no workspace allocation among %s" %
           [(shim_trace.KIND_NAME.get(a.kind), a.size, a.category) for a in t.allocs()])
    expect(all(a.flags & shim_trace.F_CAT_RULE for a in ws), "workspace not from a rule")


def s_bad_env(ctx):
    """Bad option values: one clear line each, and the shim runs with the defaults."""
    env = {"MEMSHIM_LIMIT": "banana", "MEMSHIM_STACK_DEPTH": "-3", "MEMSHIM_FLUSH_MS": "soon"}
    run = ctx.paths("paths", env=env)
    check_lookups(run)
    for var in env:
        lines = [ln for ln in run.err.splitlines() if var in ln]
        expect(len(lines) == 1, "%s: want one line on stderr, got %d:\n%s"
               % (var, len(lines), run.err))
    expect(said_allocs(run) == alloc_tuples(run.trace()), "allocations not recorded")


def s_mlp(ctx):
    """The example trainer's losses are identical with and without the shim."""
    trainer = os.path.join(ctx.build, "bin", "mlp-train-sim")
    if not os.path.exists(trainer):
        print("SKIP: %s is not built" % trainer)
        return 77
    argv = [trainer, "--steps", "5", "--batch", "16", "--hidden", "32", "--layers", "3",
            "--seed", "7"]
    bare = ctx.run(argv, preload=False, trace=False)
    run = ctx.run(argv)
    losses = [ln for ln in bare.lines if ln.startswith("step ")]
    expect(losses, "the trainer printed no losses:\n" + bare.out)
    expect(losses == [ln for ln in run.lines if ln.startswith("step ")],
           "losses differ under the shim:\n%s\n---\n%s" % (bare.out, run.out))
    expect(len(run.trace().allocs()) > 0, "the trainer's allocations were not recorded")


def s_exports(ctx):
    """The library exports exactly shim/exports.txt (HAMi-core: hidden by default)."""
    nm = subprocess.run(["nm", "-D", "--defined-only", ctx.shim], capture_output=True,
                        text=True, check=True).stdout
    got = sorted(ln.split()[-1] for ln in nm.splitlines() if ln.strip())
    # Linker- and sanitizer-made names (_init, _edata, __bss_start, __asan_*) are not ours.
    got = [g for g in got if not g.startswith("_")]
    with open(os.path.join(ctx.source, "shim", "exports.txt")) as f:
        want = sorted(ln.strip() for ln in f if ln.strip() and not ln.startswith("#"))
    extra, missing = sorted(set(got) - set(want)), sorted(set(want) - set(got))
    expect(not extra and not missing, "exports differ: extra %s, missing %s" % (extra, missing))


def s_real_cudart(ctx):
    """The toolkit's own libcudart.so.13 over its stub libcuda: its dlsym lookups of driver
    symbols get our wrappers for exactly the variants we wrap and the real symbol otherwise."""
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    cudart = os.path.join(cuda, "lib64", "libcudart.so.13")
    stub = os.path.join(cuda, "lib64", "stubs", "libcuda.so")
    if not (os.path.exists(cudart) and os.path.exists(stub)):
        print("SKIP: no toolkit libcudart.so.13 and stub libcuda.so under %s" % cuda)
        return 77
    libdir = os.path.join(ctx.tmp, "stublib")
    os.makedirs(libdir)
    os.symlink(stub, os.path.join(libdir, "libcuda.so.1"))
    os.symlink(cudart, os.path.join(libdir, "libcudart.so.13"))
    env = {"LD_LIBRARY_PATH": libdir, "MEMSHIM_LOG": "debug"}
    prog = [ctx.realrt]
    bare = ctx.run(prog, env=env, preload=False, trace=False)
    run = ctx.run(prog, env=env, trace=False)
    expect(bare.out == run.out, "the real runtime behaves differently under the shim:\n%s\n%s"
           % (bare.out, run.out))
    wrapped = set(re.findall(r"dlsym (\w+): memshim wrapper", run.err))
    passed = set(re.findall(r"dlsym (\w+): passed through", run.err))
    hooked = hooked_driver_symbols(ctx)
    expect(wrapped, "the real runtime looked up none of our driver symbols:\n" + run.err[-3000:])
    expect(wrapped <= hooked, "wrapped symbols we do not hook: %s" % (wrapped - hooked))
    expect(not (passed & hooked), "hooked symbols passed through: %s" % (passed & hooked))
    real = set(re.findall(r"dlsym (\w+): real", run.err))
    expect(not real, "hooked symbols answered with the real function: %s" % real)
    for sym in ("cuGetProcAddress_v2", "cuMemAlloc_v2", "cuMemFree_v2", "cuMemAllocAsync_ptsz",
                "cuMemAllocFromPoolAsync", "cuMemGetInfo_v2", "cuMemcpyHtoD_v2", "cuLaunchKernel"):
        expect(sym in wrapped, "%s was not handed our wrapper" % sym)
    for sym in ("cuDeviceGetCount", "cuStreamSynchronize", "cuInit"):
        expect(sym in passed, "%s did not pass through" % sym)


def s_local(ctx):
    """A libcudart outside the global scope (loaded RTLD_LOCAL by an extension): the shim's
    runtime hooks still find the real runtime, and record."""
    bare = ctx.run([ctx.local, ctx.local_lib], preload=False, trace=False)
    run = ctx.run([ctx.local, ctx.local_lib])
    expect(bare.said("rc") == run.said("rc"), "codes differ:\n%s\n%s" % (bare.out, run.out))
    expect(said_allocs(run) == alloc_tuples(run.trace()), "allocation not recorded as said")
    expect([f.addr for f in run.trace().frees()] == [int(w[1], 16) for w in run.said("free")],
           "free not recorded")


def s_no_cuda(ctx):
    """Preloaded into processes that never touch CUDA (shells, compilers, data-loader
    workers): they run as before, print nothing and leave no trace file behind."""
    for argv in (["/bin/sh", "-c", "ls / > /dev/null"],
                 [sys.executable, "-c", "import ctypes, ctypes.util; ctypes.CDLL(None).getpid()"]):
        run = ctx.run(argv)
        expect(run.err == "", "%s printed: %s" % (argv[0], run.err))
        expect(not os.path.exists(run.trace_path), "%s left a trace file" % argv[0])


def site_symbols(t, site):
    """The symbols of a site's frames, innermost first."""
    frames = {f.id: f for f in t.of("FRAME")}
    names = []
    while site in frames:
        names.append(t.string(frames[site].symbol_id))
        site = frames[site].parent
    return names


def s_stacks(ctx):
    """Stacks the shim knows are told apart from new ones that start the same way: two callers
    reach one allocation at the same depth, alternately, and each keeps its own site."""
    run = ctx.paths("stacks", "50")
    leaves = set(w[2] for w in run.said("leaf"))
    expect(len(leaves) == 1, "the callers' leaf frames are at %s: nothing shared to mistake" %
           sorted(leaves))
    t = run.trace()
    allocs = [a for a in t.allocs() if a.size in (1 << 20, 2 << 20)]
    expect(len(allocs) == 100, "%d allocations of the 100" % len(allocs))
    for a in allocs:
        names = site_symbols(t, a.site)
        mine, other = (("shim_paths_stack_a", "shim_paths_stack_b") if a.size == 1 << 20 else
                       ("shim_paths_stack_b", "shim_paths_stack_a"))
        expect(mine in names and other not in names and "shim_paths_stack_mid" in names,
               "%d bytes at site %d: %s" % (a.size, a.site, names))
    expect(len(set(a.site for a in allocs)) == 2, "sites: %s" % sorted(set(a.site for a in allocs)))


def hooked_driver_symbols(ctx):
    with open(os.path.join(ctx.source, "shim", "real", "hooks.def")) as f:
        text = f.read()
    return set(re.findall(r'DRV_HOOK\(\w+,\s*"(\w+)"', text))


SCENARIOS = {
    "paths": s_paths, "ceiling": s_ceiling, "meminfo": s_meminfo, "threads": s_threads,
    "fork": s_fork, "kill": s_kill, "errors": s_errors, "nvtx": s_nvtx, "api": s_api,
    "rules": s_rules, "builtin": s_builtin, "bad_env": s_bad_env, "mlp": s_mlp,
    "exports": s_exports, "real_cudart": s_real_cudart, "local": s_local,
    "no_cuda": s_no_cuda, "stacks": s_stacks,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    ap.add_argument("--shim", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--realrt", help="shim-realrt, for the real_cudart scenario")
    ap.add_argument("--local", help="shim-local, for the local scenario")
    ap.add_argument("--local-lib", help="the library shim-local loads RTLD_LOCAL")
    ap.add_argument("--source", default=os.environ.get("MEMSHIM_SOURCE_DIR", "."))
    ap.add_argument("--build", default=os.environ.get("MEMSHIM_BUILD_DIR", "build"))
    ap.add_argument("--real", action="store_true",
                    help="the CUDA libraries on the library path are a real GPU's: checks that "
                         "need simcuda's statistics are left out (tests/gpu)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()
    return scenario.run(SCENARIOS, args.scenario, Ctx(args), args.keep)


if __name__ == "__main__":
    sys.exit(main())
