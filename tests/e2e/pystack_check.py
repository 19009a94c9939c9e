#!/usr/bin/env python3
"""Python frames in call sites (MEMSHIM_PY_STACKS), end to end on simcuda.

Runs pystack_workload.py under LD_PRELOAD=libmemshim.so and holds the trace against the
stacks the workload printed for each allocation:

  on   (default mode) an allocation made through ctypes.PyDLL (the GIL held) has the native
       frames up to the interpreter, then exactly the workload's Python frames, innermost
       first, as MODULEs flagged MST_MODULE_F_PYTHON (the file), the line and the function;
       one made through ctypes.CDLL (the GIL released around the call: its frames are read
       raw, CPython 3.11 to 3.13) has the same, on the main thread and on 80 threads at once
       (more than the shim keeps chain tables for), and native frames only elsewhere; a thread holding the GIL has its own Python frames; a recursion deeper than MEMSHIM_STACK_DEPTH keeps the
       innermost frames; 200 allocations from one line share one site; code objects compiled
       at run time keep their own file names; memshim-analyze summary names the frames
       `file:line in function`.
  off  MEMSHIM_PY_STACKS=off: no Python frame anywhere.
  released-first  as `on`, the workload's first allocation made with the GIL released: no
       thread holding it has checked the raw layout against the API yet, so the thread checks
       it on its own chain (process_vm_readv) and that allocation has its frames too.

Usage: pystack_check.py MODE --shim LIB --analyze BIN [--python EXE] [--preload-first LIBS]
"""

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shim_trace  # noqa: E402

MODULE_F_PYTHON = 1
DEPTH = 24
MAX_FRAMES = 64
HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "pystack_workload.py")


class Failure(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Failure(what)


def run_workload(args, tmp, mode):
    trace = os.path.join(tmp, "py.mst")
    env = dict(os.environ)
    if args.mode == "released-first":
        env["PYSTACK_RELEASED_FIRST"] = "1"
    env.update({"MEMSHIM_TRACE": trace, "MEMSHIM_STACK_DEPTH": str(DEPTH),
                "MEMSHIM_PY_STACKS": mode})
    preload = [p for p in (args.preload_first or "").split(":") if p] + [args.shim]
    env["LD_PRELOAD"] = ":".join(preload)
    p = subprocess.run([args.python, WORKLOAD], env=env, capture_output=True, text=True,
                       timeout=300)
    expect(p.returncode == 0, "workload failed (%d):\n%s\n%s" % (p.returncode, p.stdout, p.stderr))
    expect("memshim:" not in p.stderr or mode != "on",
           "the shim complained:\n%s" % p.stderr)
    lines = [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")]
    allocs = [d for d in lines if "size" in d]
    expect(allocs, "the workload reported no allocation")
    check_frees(trace, [d["freed"] for d in lines if "freed" in d])
    return trace, allocs


def check_frees(trace, freed):
    """Every free a finalizer made, even while a stack was being captured, is in the trace."""
    expect(len(freed) >= 50, "only %d finalizer frees" % len(freed))
    t = shim_trace.Trace(trace)
    recorded = {}
    for f in t.frees():
        recorded[f.addr] = recorded.get(f.addr, 0) + 1
    wanted = {}
    for a in freed:
        wanted[a] = wanted.get(a, 0) + 1
    missing = [hex(a) for a, n in wanted.items() if recorded.get(a, 0) < n]
    expect(not missing, "frees made by finalizers are missing from the trace: %s" % missing)


class Sites:
    """Call sites of a trace: frame chains innermost first, Python frames decoded."""

    def __init__(self, path):
        self.t = shim_trace.Trace(path)
        expect(not self.t.truncated, "truncated trace")
        self.modules = {m.id: m for m in self.t.of("MODULE")}
        self.frames = {f.id: f for f in self.t.of("FRAME")}
        py_modules = [m for m in self.modules.values() if self.flags(m) & MODULE_F_PYTHON]
        paths = [m.tail.decode() for m in py_modules]
        expect(len(paths) == len(set(paths)), "a Python file has two MODULE records: %s" % paths)
        for m in py_modules:
            expect(m.base == 0 and m.size == 0, "Python MODULE %s has base/size" % m.tail)

    @staticmethod
    def flags(module):
        return module.get("flags", module.get("reserved", 0))

    def chain(self, site):
        """[(kind, value)] innermost first: ('py', (file, line, function)) or ('native', name)."""
        out = []
        while site:
            f = self.frames[site]
            m = self.modules.get(f.module_id)
            if m is not None and self.flags(m) & MODULE_F_PYTHON:
                out.append(("py", (m.tail.decode(), f.module_offset, self.t.string(f.symbol_id))))
            else:
                name = self.t.string(f.symbol_id) or "?"
                out.append(("native", name, m.tail.decode() if m is not None else "?"))
            site = f.parent
        return out

    def alloc_by_addr(self):
        return {a.addr: a for a in self.t.allocs()}


def py_part(chain):
    return [c[1] for c in chain if c[0] == "py"]


def raw_reads(python):
    """Whether the shim reads this interpreter's frames raw (shim/core/pyborrow.c has the
    layouts of CPython 3.11 to 3.13): elsewhere a thread without the GIL has none."""
    v = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                       capture_output=True, text=True, timeout=60).stdout.strip()
    return v in ("3.11", "3.12", "3.13")


def check_on(args, tmp):
    trace, reported = run_workload(args, tmp, "on")
    sites = Sites(trace)
    allocs = sites.alloc_by_addr()
    interp = os.path.realpath(args.python)
    raw = raw_reads(args.python)
    repeat_sites = set()
    for rep in reported:
        a = allocs.get(rep["ptr"])
        expect(a is not None, "no ALLOC at 0x%x (%d bytes)" % (rep["ptr"], rep["size"]))
        chain = sites.chain(a.site)
        got = py_part(chain)
        if rep["how"] == "gc":
            continue
        if rep["how"] == "cdll" and not raw:
            expect(not got, "a CDLL call (GIL released) has Python frames: %s" % got)
            expect(any(c[1] == "_PyEval_EvalFrameDefault" for c in chain if c[0] == "native"),
                   "a CDLL call lost the interpreter's native frames: %s" % chain)
            continue
        first_py = next(i for i, c in enumerate(chain) if c[0] == "py") if got else len(chain)
        expect(all(c[0] == "py" for c in chain[first_py:]),
               "native frames after the Python frames: %s" % chain)
        native = chain[:first_py]
        expect(native and len(native) <= DEPTH, "native part: %s" % native)
        expect(not any(c[1].startswith("_PyEval") or c[2] == interp or "libpython" in c[2]
                       for c in native), "interpreter frames kept: %s" % native)
        want = [tuple(s) for s in rep["stack"]][:min(DEPTH, MAX_FRAMES - len(native))]
        expect(got == want, "%d bytes: Python frames\n  got  %s\n  want %s"
               % (rep["size"], got, want))
        if rep["size"] == 5 << 20:
            repeat_sites.add(a.site)
    expect(len(repeat_sites) == 1, "200 allocations from one line made sites %s" % repeat_sites)
    by_size = {r["size"]: r for r in reported}
    deep = py_part(sites.chain(allocs[by_size[4 << 20]["ptr"]].site))
    expect(len(deep) == DEPTH, "recursion: %d Python frames, want %d" % (len(deep), DEPTH))
    worker = py_part(sites.chain(allocs[by_size[3 << 20]["ptr"]].site))
    expect([f[2] for f in worker[:3]] == ["malloc", "alloc_with", "worker"],
           "thread: %s" % worker)
    gen = py_part(sites.chain(allocs[by_size[(6 << 20) + 2]["ptr"]].site))
    expect(gen[2] == ("<generated-2>", 2, "gen"), "generated code: %s" % gen)
    check_analyzer(args, trace, by_size[1 << 20])
    print("on: %d allocations checked" % len(reported))


def check_analyzer(args, trace, rep):
    """summary --json names the Python frames `file:line in function`."""
    p = subprocess.run([args.analyze, "summary", "--json", "--top", "50", "--frames", "64", trace],
                       capture_output=True, text=True, timeout=120)
    expect(p.returncode == 0, "summary failed: %s" % p.stderr)
    doc = json.loads(p.stdout)
    want = ["%s:%d in %s" % tuple(s) for s in rep["stack"]]
    found = [s for s in doc["top_sites"] if s["bytes"] == rep["size"]]
    expect(found, "summary has no site of %d bytes" % rep["size"])
    frames = found[0]["frames"]
    expect(frames[-len(want):] == want, "summary frames\n  got  %s\n  want ...%s" % (frames, want))
    expect(want[0].endswith(" in malloc") and want[2].endswith(" in Model.forward"), str(want))
    check_memory_viz(args, trace, rep)
    for cmd in (["summary", trace], ["dump", trace]):
        p = subprocess.run([args.analyze] + cmd, capture_output=True, text=True, timeout=120)
        expect(p.returncode == 0, "%s failed: %s" % (cmd, p.stderr))
        if cmd[0] == "summary":
            # the default frame limit (6) still shows the Python frames behind the native ones
            expect(all(w in p.stdout for w in want[:6]),
                   "the text summary lacks %s:\n%s" % (want[:6], p.stdout))


def check_memory_viz(args, trace, rep):
    """export --format memory-viz gives Python frames as PyTorch's viewer has them."""
    out = trace + ".pickle"
    p = subprocess.run([args.analyze, "export", "--format", "memory-viz", "-o", out, trace],
                       capture_output=True, text=True, timeout=120)
    expect(p.returncode == 0, "export failed: %s" % p.stderr)
    with open(out, "rb") as f:
        doc = pickle.load(f)
    events = [e for dev in doc["device_traces"] for e in dev
              if e.get("action") == "alloc" and e.get("size") == rep["size"]]
    expect(events, "memory-viz has no alloc of %d bytes" % rep["size"])
    want = [{"filename": fn, "line": ln, "name": name} for fn, ln, name in rep["stack"]]
    got = events[0]["frames"][-len(want):]
    expect(got == want, "memory-viz frames\n  got  %s\n  want %s" % (got, want))


def check_off(args, tmp):
    trace, reported = run_workload(args, tmp, "off")
    sites = Sites(trace)
    allocs = sites.alloc_by_addr()
    for rep in reported:
        chain = sites.chain(allocs[rep["ptr"]].site)
        expect(not py_part(chain), "MEMSHIM_PY_STACKS=off recorded %s" % py_part(chain))
    print("off: %d allocations without Python frames" % len(reported))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["on", "off", "released-first"])
    ap.add_argument("--shim", required=True)
    ap.add_argument("--analyze", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--preload-first", default="",
                    help="libraries preloaded before the shim (a sanitizer runtime)")
    args = ap.parse_args()
    # the interpreter itself, not a wrapper script (pyenv's shims) that would run it
    args.python = subprocess.run([args.python, "-c", "import sys; print(sys.executable)"],
                                 capture_output=True, text=True, check=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="memshim-pystack-") as tmp:
        try:
            (check_off if args.mode == "off" else check_on)(args, tmp)
        except Failure as e:
            print("FAIL: %s" % e)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
