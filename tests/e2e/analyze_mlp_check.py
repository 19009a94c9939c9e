#!/usr/bin/env python3
"""memshim-analyze on real traces: the example trainer (mlp-train-sim) under the shim on simcuda.

Checks what the trainer's schedule fixes (examples/mlp/README.md): parameters, gradients and
Adam state in a 1:1:2 ratio, no leak, one step entry per training step, frames resolved to the
trainer's functions, and a two-process directory merged into a balanced job.
"""
import json
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
STEPS = 4
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def train(tmp, name, *args, env=None):
    env = dict(env or os.environ)
    env["LD_PRELOAD"] = SHIM + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    env["MEMSHIM_TRACE"] = os.path.join(tmp, name)
    subprocess.run([TRAINER, "--steps", str(STEPS), *args], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return env["MEMSHIM_TRACE"]


def analyze(*args):
    p = subprocess.run([ANALYZE, *args], capture_output=True, text=True)
    check(p.returncode == 0, f"{' '.join(args)}: exit {p.returncode}\n{p.stderr}")
    return p.stdout


def one_process(tmp):
    trace = train(tmp, "mlp.mst")
    d = json.loads(analyze("summary", "--json", trace))
    cat = d["by_category_at_peak"]
    check(d["status"] == "ok" and d["clean_end"], "clean trace")
    check(sum(cat.values()) == d["peak_bytes"] > 0, f"categories add up: {cat}")
    params = 1238794 * 4  # the trainer's default model, fp32
    check(params <= cat["parameter"] <= params + 4096 * 8, f"parameter bytes {cat['parameter']}")
    check(cat["gradient"] == cat["parameter"], "a gradient per parameter")
    check(cat["optimizer_state"] == 2 * cat["parameter"], "Adam: two moments per parameter")
    check(cat["activation"] > 0 and cat["workspace"] >= 1 << 20, f"activations, workspace {cat}")
    check(cat["unknown"] == 0, "every allocation classified")
    check(d["allocations"] == d["frees"] and d["leaked_bytes"] == 0, "no leak")
    check(d["unknown_frees"] == 0 and d["ooms"] == 0, "no stray free, no OOM")
    check(len(d["steps"]) == STEPS, f"{len(d['steps'])} steps")
    check(d["peak_step"] is not None, "peak inside a step")
    frames = [f for s in d["top_sites"] for f in s["frames"]]
    for fn in ("model_init", "model_backward", "model_optimizer_step"):
        check(any(f.startswith(fn + "+") or f.startswith(fn + " at ") or f" inlined in {fn} at " in f
                  for f in frames), f"a frame in {fn}: {frames[:6]}")
    check_lines(d)
    dump = analyze("dump", trace).splitlines()
    check(sum(1 for line in dump if line.startswith("alloc ")) == d["allocations"], "dump")
    check(dump[-1].startswith("end status=ok"), dump[-1])
    text = analyze("summary", trace)
    check("Peak resident" in text and "optimizer_state" in text, "text report")


LOCATION = re.compile(r"(\S+) at ([\w.+-]+):(\d+)")
CALLEE = {"device_alloc": "cudaMalloc"}


def source_line(name, line):
    """Line `line` of the example's source file `name` (None when it is not ours)."""
    path = os.path.join(SOURCE, "examples", "mlp", name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        lines = f.read().splitlines()
    return lines[line - 1] if 0 < line <= len(lines) else ""


def check_lines(d):
    """Frames name file:line from DWARF, inlined calls included, and each location of the
    example's own code is the line that calls the next frame inward; sites are named past the
    allocation wrapper they all share."""
    labels = [s["label"] for s in d["top_sites"]]
    check(not any(label.startswith("device_alloc") for label in labels),
          f"labels skip the shared wrapper: {labels[:3]}")
    check(len(set(labels)) == len(labels), f"labels tell the sites apart: {labels}")
    if os.environ.get("MEMSHIM_ANALYZE_LINES") != "1":
        print("skip file:line checks: the analyzer was built without libdw")
        return
    located = 0
    for s in d["top_sites"]:
        inner = None
        for frame in s["frames"]:
            # innermost first: "f at a.c:1 inlined in g at b.c:2"; g's line calls f, and
            # the frame's first location calls the function of the frame inside it
            names = LOCATION.findall(frame)
            for j, (fn, name, line) in enumerate(names):
                want = names[j - 1][0] if j else inner
                want = CALLEE.get(fn) if want is None else want
                text = source_line(name, int(line))
                if text is None:
                    continue
                located += 1
                check(want is None or want + "(" in text, f"{name}:{line} calls {want}: {text!r}")
            inner = names[-1][0] if names else None
    check(located >= 10, f"{located} file:line locations in the example's sources")
    # inlined calls appear only in optimized builds (a Debug build inlines nothing); where
    # they do, the location checks above covered each of their call lines


def two_processes(tmp):
    job = os.path.join(tmp, "job")
    os.mkdir(job)
    train(job, "a.mst")
    train(job, "b.mst")
    d = json.loads(analyze("summary", "--json", job))
    # two processes without ranks are runs, not the ranks of one job: no imbalance verdict
    check(d["traces"] == 2 and "imbalanced" not in d and "ranks" not in d, f"runs: {list(d)}")
    check([r["label"] for r in d["runs"]] == ["a", "b"], "unlabelled runs named by file")
    check(d["runs"][0]["peak_bytes"] == d["runs"][1]["peak_bytes"], "same peak")
    text = analyze("summary", job)
    check("IMBALANCE" not in text and text.startswith("Runs: 2 traces"), text[:200])


def labelled_sweep(tmp):
    """MEMSHIM_LABEL: three runs at batch 64, 256 and 1024 are a table by label, in the labels'
    numeric order; the activations at the peak grow with the batch, the model states do not."""
    sweep = os.path.join(tmp, "sweep")
    os.mkdir(sweep)
    for batch in (1024, 64, 256):
        env = dict(os.environ, MEMSHIM_LABEL=f"batch={batch}")
        train(sweep, f"run-{batch}.mst", "--batch", str(batch), env=env)
    d = json.loads(analyze("summary", "--json", sweep))
    runs = d["runs"]
    check([r["label"] for r in runs] == ["batch=64", "batch=256", "batch=1024"],
          f"rows by label: {[r['label'] for r in runs]}")
    act = [r["by_category_at_peak"]["activation"] for r in runs]
    check(act[1] == 4 * act[0] and act[2] == 16 * act[0], f"activation x batch: {act}")
    states = {r["by_category_at_peak"]["parameter"] for r in runs}
    check(len(states) == 1, f"parameters do not depend on the batch: {states}")
    check(all(r["device"] == "simcuda" for r in runs), "device named")
    one = json.loads(analyze("summary", "--json", os.path.join(sweep, "run-256.mst")))
    check(one["label"] == "batch=256", f"one trace's label: {one.get('label')}")
    check("Label      batch=256" in analyze("summary", os.path.join(sweep, "run-256.mst")),
          "the text report shows the label")
    check("simulated on the host" in analyze("summary", sweep), "the output says simcuda")
    check('label="batch=64"' in analyze("dump", os.path.join(sweep, "run-64.mst")).split("\n")[0],
          "dump shows the label")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        one_process(tmp)
        two_processes(tmp)
        labelled_sweep(tmp)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all analyze checks on the example trainer passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
