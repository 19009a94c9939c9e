#!/usr/bin/env python3
"""memshim-analyze's exports read by their real consumers: pandas for the CSV, PyTorch's
torch.cuda._memory_viz for the memory-viz pickle.

The interpreter is $MEMSHIM_TORCH_PYTHON when set (the CMake cache variable of the same name
passes it on), else this one; without pandas and torch the test is skipped (exit 77).

CSV (the example trainer on simcuda, access tracking on): pandas reads it; every column and
every event is one docs/analyzer.md documents; op rows of GEMMs have a shape MxNxK[xB] whose
2·M·N·K·B is their flops; access rows have a mode. memory-viz (the hand-made scenario with a
ceiling, a spill, a restore and an OOM): torch's own trace() report names the spill, the
restore and the ceiling, and trace_plot/segment_plot build their pages from it.
"""
import os
import re
import subprocess
import sys
import tempfile

BUILD = os.environ["MEMSHIM_BUILD_DIR"]
SOURCE = os.environ["MEMSHIM_SOURCE_DIR"]
ANALYZE = os.path.join(BUILD, "bin", "memshim-analyze")
TRAINER = os.path.join(BUILD, "bin", "mlp-train-sim")
SHIM = os.path.join(BUILD, "lib", "libmemshim.so")
PY = os.environ.get("MEMSHIM_TORCH_PYTHON") or sys.executable

CONSUMER = r'''
import pickle, re, sys
import pandas as pd
from torch.cuda import _memory_viz as mv

csv_path, pickle_path, columns, events = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
fail = []
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        fail.append(what)

df = pd.read_csv(csv_path)
check(list(df.columns) == columns.split(","), "columns as documented: %s" % list(df.columns))
check(set(df["event"]) <= set(events.split(",")),
      "events documented: %s" % sorted(set(df["event"]) - set(events.split(","))))
check(str(df["time_ns"].dtype) == "int64", "time_ns is an integer column")
ops = df[df["event"] == "op"]
gemm = ops[ops["kind"] == "gemm"]
check(len(gemm) > 0, "%d GEMM rows" % len(gemm))
def flops(shape):
    n = 1
    for d in shape.split("x"):
        n *= int(d)
    return 2 * n
check(all(re.fullmatch(r"\d+x\d+x\d+(x\d+)?", s) for s in gemm["shape"]), "GEMM shapes")
check((gemm["shape"].map(flops) == gemm["flops"]).all(), "flops = 2*M*N*K*batch")
check(set(ops["kind"]) <= {"gemm", "memcpy", "memset", "kernel"}, "op kinds")
acc = df[df["event"] == "access"]
check(len(acc) > 0 and set(acc["mode"]) <= {"read", "write", "read+write", "maybe"},
      "access modes %s" % sorted(set(acc["mode"].dropna())))
check(acc["mode"].notna().all() and df[df["event"] != "access"]["mode"].isna().all(),
      "mode only on access rows")

snap = pickle.load(open(pickle_path, "rb"))
text = mv.trace(snap)
notes = [l for l in text.splitlines() if l.startswith("# annotate")]
for what in ("memshim spill", "memshim restore", "memshim ceiling"):
    check(any(what in l for l in notes), "torch trace() shows %r: %s" % (what, notes))
check("raise OutOfMemoryError" in text, "torch trace() shows the OOM")
for plot in (mv.trace_plot, mv.segment_plot):
    page = plot(snap)
    check(isinstance(page, str) and "<html" in page.lower(), plot.__name__ + " builds its page")
sys.exit(1 if fail else 0)
'''


def documented():
    """The CSV's columns and events as the analyzer's documentation's two tables list them."""
    text = open(os.path.join(SOURCE, "docs", "analyzer.md")).read()
    start = text.index("| column | meaning |")
    columns, events = [], []
    for line in text[start:].splitlines()[2:]:
        if not line.strip().startswith("|"):
            break
        columns.append(re.findall(r"`([^`]+)`", line.split("|")[1])[0])
    start = text.index("| event | record |")
    for line in text[start:].splitlines()[2:]:
        if not line.strip().startswith("|"):
            break
        events += re.findall(r"`([^`]+)`", line.split("|")[1])
    return ",".join(columns), ",".join(events)


def run(*argv, env=None):
    subprocess.run([str(a) for a in argv], check=True, env=env, stdout=subprocess.DEVNULL)


def main():
    if subprocess.run([PY, "-c", "import pandas, torch.cuda._memory_viz"],
                      capture_output=True).returncode != 0:
        print("skipped: no pandas/torch in %s (set MEMSHIM_TORCH_PYTHON)" % PY)
        return 77
    scenario = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, LD_PRELOAD=SHIM, MEMSHIM_TRACE=os.path.join(tmp, "mlp.mst"),
                   MEMSHIM_ACCESS="all")
        run(TRAINER, "--steps", "2", env=env)
        csv_path = os.path.join(tmp, "mlp.csv")
        run(ANALYZE, "export", "--format", "csv", "-o", csv_path, env["MEMSHIM_TRACE"])
        scen = os.path.join(tmp, "scenario.mst")
        run(scenario, "--ceiling", "--spill", "--oom", "-o", scen)
        pkl = os.path.join(tmp, "scenario.pickle")
        run(ANALYZE, "export", "--format", "memory-viz", "-o", pkl, scen)
        columns, events = documented()
        return subprocess.run([PY, "-c", CONSUMER, csv_path, pkl, columns, events],
                              timeout=300).returncode


if __name__ == "__main__":
    sys.exit(main())
