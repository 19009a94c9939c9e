#!/usr/bin/env python3
"""memshim-analyze on real traces: the example trainer (mlp-train-sim) under the shim on simcuda.

Checks what the trainer's schedule fixes (examples/mlp/README.md): parameters, gradients and
Adam state in a 1:1:2 ratio, no leak, one step entry per training step, frames resolved to the
trainer's functions, and a two-process directory merged into a balanced job.
"""
import json
import os
import subprocess
import sys
import tempfile

BUILD = os.environ["MEMSHIM_BUILD_DIR"]
ANALYZE = os.path.join(BUILD, "bin", "memshim-analyze")
TRAINER = os.path.join(BUILD, "bin", "mlp-train-sim")
SHIM = os.path.join(BUILD, "lib", "libmemshim.so")
STEPS = 4
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def train(tmp, name, *args):
    env = dict(os.environ)
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
        check(any(f.startswith(fn + "+") for f in frames), f"a frame in {fn}: {frames[:6]}")
    dump = analyze("dump", trace).splitlines()
    check(sum(1 for line in dump if line.startswith("alloc ")) == d["allocations"], "dump")
    check(dump[-1].startswith("end status=ok"), dump[-1])
    text = analyze("summary", trace)
    check("Peak resident" in text and "optimizer_state" in text, "text report")


def two_processes(tmp):
    job = os.path.join(tmp, "job")
    os.mkdir(job)
    train(job, "a.mst")
    train(job, "b.mst")
    d = json.loads(analyze("summary", "--json", job))
    check(d["traces"] == 2 and not d["imbalanced"], f"two equal runs: {d.get('spread')}")
    check(d["ranks"][0]["peak_bytes"] == d["ranks"][1]["peak_bytes"], "same peak")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        one_process(tmp)
        two_processes(tmp)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all analyze checks on the example trainer passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
