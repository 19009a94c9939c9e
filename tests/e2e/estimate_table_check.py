#!/usr/bin/env python3
"""memshim-analyze estimate --table read by pandas, its real consumer.

The interpreter is $MEMSHIM_TORCH_PYTHON when set (the CMake cache variable of the same name
passes it on), else this one; without pandas the test is skipped (exit 77).

Checks: the CSV and the JSON load into DataFrames with the same rows and numeric columns; every
row's total is the sum of its categories and `fits` says total <= gpu_bytes; activations grow
with tokens per micro-batch and shrink from none to selective to full recompute; ZeRO 1/2/3
shrink the model states in that order and offload moves them to host memory; recompute costs
FLOPs only where it is asked for and the host link carries bytes only under offload.
"""
import os
import subprocess
import sys

BUILD = os.environ["MEMSHIM_BUILD_DIR"]
SOURCE = os.environ["MEMSHIM_SOURCE_DIR"]
ANALYZE = os.path.join(BUILD, "bin", "memshim-analyze")
PY = os.environ.get("MEMSHIM_TORCH_PYTHON") or sys.executable

PROBE = "import pandas"
CHECK = r'''
import io, json, sys
import pandas as pd
csv_text, json_text = sys.stdin.read().split("\x00")
df = pd.read_csv(io.StringIO(csv_text))
doc = json.loads(json_text)
dj = pd.DataFrame(doc["rows"])
fail = []
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        fail.append(what)
cats = ["parameter", "gradient", "optimizer_state", "activation", "kv_cache", "temporary"]
check(len(df) == 16 * 6, "one CSV row per strategy and column: %d" % len(df))
check(list(df.columns) == list(dj.columns), "CSV and JSON have the same columns")
check((df[cats + ["total"]].values == dj[cats + ["total"]].values).all(), "same numbers")
for c in cats + ["total", "host_bytes", "micro_batch", "seq_len"]:
    check(str(df[c].dtype) == "int64", "%s is an integer column (%s)" % (c, df[c].dtype))
check(str(df["fits"].dtype) == "bool", "fits is boolean (%s)" % df["fits"].dtype)
check((df[cats].sum(axis=1) == df["total"]).all(), "total = sum of categories")
check((df["fits"] == (df["total"] <= df["gpu_bytes"])).all(), "fits = total <= gpu")
act = df.pivot_table(index="strategy", columns="tokens_per_microbatch", values="activation",
                     aggfunc="max")
check(all(act.loc[s].is_monotonic_increasing for s in act.index), "activation grows with tokens")
at = df[df["tokens_per_microbatch"] == 2048].set_index("strategy")
check(at.loc["none", "activation"] > at.loc["selective", "activation"] >
      at.loc["full", "activation"], "none > selective > full activation")
states = at[["parameter", "gradient", "optimizer_state"]].sum(axis=1)
check(states["none"] > states["zero1"] > states["zero2"] > states["zero3"], "ZeRO 1 > 2 > 3")
check(at.loc["zero2+offload", "optimizer_state"] == 0 and
      at.loc["zero2+offload", "host_bytes"] > 0, "offload: optimizer state on the host")
check(at.loc["zero3+offload-param", "parameter"] == 0, "offload-param: no parameter shard")
check((df[df["recompute"] == "none"]["recompute_flops"] == 0).all() and
      (df[df["recompute"] != "none"]["recompute_flops"] > 0).all(), "recompute FLOPs where asked")
check((df[df["offload"] == "none"]["host_link_bytes"] == 0).all() and
      (df[df["offload"] != "none"]["host_link_s"] > 0).all(), "host link only under offload")
sys.exit(1 if fail else 0)
'''


def analyze(*fmt):
    cmd = [ANALYZE, "estimate", "--table", "--config",
           os.path.join(SOURCE, "examples", "configs", "gpt3-175b.conf"), "--dp", "16",
           "--micro-batches", "1,2,4", "--seq-lens", "2048,4096", *fmt]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        print(r.stderr)
        sys.exit(1)
    return r.stdout


def main():
    if subprocess.run([PY, "-c", PROBE], capture_output=True).returncode != 0:
        print("skipped: no pandas in %s (set MEMSHIM_TORCH_PYTHON)" % PY)
        return 77
    data = analyze("--csv") + "\x00" + analyze("--json")
    return subprocess.run([PY, "-c", CHECK], input=data, text=True, timeout=300).returncode


if __name__ == "__main__":
    sys.exit(main())
