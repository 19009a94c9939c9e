#!/usr/bin/env python3
"""End-to-end checks of memshim-analyze on synthetic traces (memshim-tracegen).

Runs the real binary: summary (text against a golden report, --json against numbers computed
by hand from the generator's schedule), dump, truncated and corrupt traces, a directory of
ranks. `--update-golden` rewrites the golden reports instead of comparing them.
"""
import json
import os
import subprocess
import sys
import tempfile

BUILD = os.environ["MEMSHIM_BUILD_DIR"]
SOURCE = os.environ["MEMSHIM_SOURCE_DIR"]
ANALYZE = os.path.join(BUILD, "bin", "memshim-analyze")
TRACEGEN = os.path.join(BUILD, "tests", "memshim-tracegen")
GOLDEN = os.path.join(SOURCE, "tests", "e2e", "golden")
UPDATE = "--update-golden" in sys.argv

# the generator's schedule (tests/unit/tracegen.c) with these sizes
P, A = 1 << 20, 1 << 19
T = A // 4 + 1
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args, expect=0):
    p = subprocess.run([ANALYZE, *args], capture_output=True, text=True)
    check(p.returncode == expect,
          f"{' '.join(args)}: exit {p.returncode}, expected {expect}\n{p.stderr}")
    return p


def gen(path, *args):
    subprocess.run([TRACEGEN, "--steps", "2", "--layers", "2", "--layer-bytes", str(P),
                    "--activation-bytes", str(A), *args, "-o", path], check=True)


def golden(name, text):
    path = os.path.join(GOLDEN, name)
    if UPDATE:
        with open(path, "w") as f:
            f.write(text)
        return
    with open(path) as f:
        want = f.read()
    check(text == want, f"{name} differs from the golden report:\n{text}")


def summary_json(tmp):
    trace = os.path.join(tmp, "run.mst")
    gen(trace, "--leak", "--oom-at", "1")
    d = json.loads(run("summary", "--json", trace).stdout)
    for key in ("peak_bytes", "peak_time_ns", "peak_step", "by_category_at_peak", "allocations",
                "frees", "leaked_bytes", "ooms", "steps", "top_sites"):
        check(key in d, f"summary --json lacks {key}")
    check(d["peak_bytes"] == 8 * P + 2 * A + T, f"peak_bytes {d['peak_bytes']}")
    check(d["peak_step"] == 1, "peak_step")
    check(d["peak_phase"] == "backward", "peak_phase")
    cat = d["by_category_at_peak"]
    check(cat["parameter"] == 2 * P and cat["optimizer_state"] == 4 * P, f"categories {cat}")
    check(cat["gradient"] == 2 * P and cat["activation"] == 2 * A and cat["temporary"] == T,
          f"categories {cat}")
    check(sum(cat.values()) == d["peak_bytes"], "categories add up to the peak")
    # 2 params, per step 2 activations + 2 grads + 4 temporaries, 4 Adam buffers in step 0
    check(d["allocations"] == 2 + 2 * 8 + 4, f"allocations {d['allocations']}")
    check(d["frees"] == d["allocations"] - 8, f"frees {d['frees']}")
    check(d["leaked_bytes"] == 6 * P + 2 * A, f"leaked_bytes {d['leaked_bytes']}")
    check(d["ooms"] == 1 and d["oom_events"][0]["request"] == 100 * A, "ooms")
    check([s["step"] for s in d["steps"]] == [0, 1], "steps")
    check(d["steps"][0]["peak_bytes"] == 8 * P + A, "step 0 peak")
    check(d["steps"][1]["peak_bytes"] == d["peak_bytes"], "step 1 peak")
    top = d["top_sites"][0]
    check(top["bytes"] == 4 * P and top["category"] == "optimizer_state", f"top site {top}")
    check(top["frames"][0] == "model::Adam::init() (libtrain.so)", f"frames {top['frames']}")
    check(d["status"] == "ok" and d["clean_end"], "status")

    text = run("summary", trace).stdout.replace(trace, "TRACE")
    golden("analyze_summary.txt", text)

    dump = run("dump", trace).stdout.splitlines()
    check(dump[0].startswith("header version=1 pid=1000"), "dump header line")
    check(sum(1 for line in dump if line.startswith("alloc ")) == d["allocations"],
          "dump: one alloc line per allocation")
    check(dump[-1] == f"end status=ok records={len(dump) - 2} skipped=0 clean=yes",
          f"dump end line: {dump[-1]}")


def refined(tmp):
    trace = os.path.join(tmp, "unknown.mst")
    gen(trace, "--unknown")
    d = json.loads(run("summary", "--json", trace).stdout)
    cat = d["by_category_at_peak"]
    check(cat["unknown"] == 0 and cat["optimizer_state"] == 4 * P and cat["gradient"] == 2 * P,
          f"refined categories {cat}")
    check(d["inferred_allocations"] == d["allocations"], "every allocation inferred")
    check(any(s["inferred"] for s in d["top_sites"]), "sites marked inferred")
    raw = json.loads(run("summary", "--json", "--no-refine", trace).stdout)
    check(raw["by_category_at_peak"]["unknown"] == raw["peak_bytes"], "--no-refine")
    check("given its category from its" in run("summary", trace).stdout, "text marks inference")
    check(sum(d["inferred_by_category_at_peak"].values()) == d["peak_bytes"], "inferred at peak")


def damaged(tmp):
    trace = os.path.join(tmp, "cut.mst")
    gen(trace)
    os.truncate(trace, os.path.getsize(trace) * 4 // 5)  # inside a record, past the first step
    p = run("summary", "--json", trace)
    d = json.loads(p.stdout)
    check(d["status"] == "truncated" and not d["clean_end"], "truncated status")
    check("warning" in p.stderr and "truncated trace at byte offset" in p.stderr, p.stderr)
    check(d["allocations"] > 0, "truncated: records before the cut are used")

    bad = os.path.join(tmp, "bad.mst")
    gen(bad)
    with open(bad, "r+b") as f:
        f.seek(2000)
        f.write(b"\xff" * 8)
    p = run("summary", bad, expect=1)
    check("corrupt record at byte offset" in p.stderr, f"corrupt: {p.stderr}")

    notrace = os.path.join(tmp, "text.mst")
    with open(notrace, "w") as f:
        f.write("hello")
    check("not a memshim trace" in run("summary", notrace, expect=1).stderr, "not a trace")
    run("summary", os.path.join(tmp, "missing.mst"), expect=2)


def ranks(tmp):
    job = os.path.join(tmp, "job")
    os.mkdir(job)
    for rank, layers in ((0, 2), (1, 2), (2, 3)):
        subprocess.run([TRACEGEN, "--rank", str(rank), "--pid", str(100 + rank), "--layers",
                        str(layers), "-o", os.path.join(job, f"run-{rank}.mst")], check=True)
    with open(os.path.join(job, "notes.txt"), "w") as f:
        f.write("not a trace, not named *.mst")
    d = json.loads(run("summary", "--json", job).stdout)
    check(d["traces"] == 3 and [r["rank"] for r in d["ranks"]] == [0, 1, 2], "ranks")
    check(d["peak_rank"] == 2 and d["imbalanced"], "imbalance flagged on rank 2")
    check(d["peak_bytes"] == max(r["peak_bytes"] for r in d["ranks"]), "job-wide maximum")
    check(sum(d["by_category_at_peak"].values()) == d["peak_bytes"], "job breakdown")
    text = run("summary", job).stdout
    check("IMBALANCE" in text and "Job-wide maximum" in text, "text merge report")


def commands():
    check("summary" in run("--help").stdout, "--help lists summary")
    run("no-such-command", expect=2)
    run(expect=2)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        summary_json(tmp)
        refined(tmp)
        damaged(tmp)
        ranks(tmp)
        commands()
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all analyze e2e checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
