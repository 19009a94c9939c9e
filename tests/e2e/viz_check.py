#!/usr/bin/env python3
"""End-to-end checks of memshim-analyze timeline, export and diff (Python 3 stdlib only).

Generates traces (memshim-tracegen: a synthetic training run; memshim-viz-scenario: the
hand-made trace of tests/unit/viz_scenario.h), runs the commands and checks the outputs with
real parsers: xml.etree for SVG, json for Perfetto, pickle + pickletools for memory_viz (plus a
port of the viewer's own unpickler to prove it accepts the file), csv for CSV. Prints
'N passed, N failed' and exits non-zero on any failure.
"""
import argparse
import csv
import io
import json
import os
import pickle
import pickletools
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

MIB = 1 << 20
SVG = "{http://www.w3.org/2000/svg}"
CATEGORIES = ["unknown", "parameter", "gradient", "optimizer_state", "activation", "kv_cache",
              "workspace", "temporary", "communication", "input"]
DEFINITIONS = {"header", "end", "string", "module", "frame", "thread", "device"}

# Opcodes the unpickler of pytorch.org/memory_viz (torch/utils/viz/MemoryViz.js) handles.
VIEWER_OPCODES = {
    "PROTO", "FRAME", "MARK", "STOP", "EMPTY_DICT", "EMPTY_LIST", "EMPTY_TUPLE", "DICT", "LIST",
    "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "SETITEM", "SETITEMS", "APPEND", "APPENDS", "BININT",
    "BININT1", "BININT2", "LONG1", "BINUNICODE", "SHORT_BINUNICODE", "BINFLOAT", "NONE",
    "NEWTRUE", "NEWFALSE", "MEMOIZE", "BINPUT", "LONG_BINPUT", "BINGET", "LONG_BINGET",
}

# The scenario (tests/unit/viz_scenario.h): 6 allocations and a restore enter the device,
# 3 frees and a spill leave it, one OOM.
EXPECT_ACTIONS = {"scenario": {"segment_alloc": 7, "alloc": 7, "free_requested": 4,
                               "free_completed": 4, "segment_free": 4, "oom": 1,
                               "annotate": 3}}

results = {"passed": 0, "failed": 0}


def check(name, fn):
    try:
        fn()
    except Exception as e:  # report every check, keep going
        results["failed"] += 1
        print(f"FAIL {name}: {type(e).__name__}: {e}")
    else:
        results["passed"] += 1
        print(f"ok   {name}")


def run(*argv, expect=0):
    p = subprocess.run([str(a) for a in argv], capture_output=True, text=True)
    if p.returncode != expect:
        raise AssertionError(f"{argv} exited {p.returncode}: {p.stderr.strip()}")
    return p.stdout


def events_in(analyze, trace):
    """Event records of a trace by kind, from the analyzer's own dump."""
    kinds = {}
    for line in run(analyze, "dump", trace).splitlines():
        kind = line.split(" ", 1)[0]
        if kind not in DEFINITIONS:
            kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


# ---- SVG / HTML --------------------------------------------------------------------------

def check_svg_tree(root, categories, ceiling, ooms):
    assert root.tag == SVG + "svg", root.tag
    width, height = float(root.get("width")), float(root.get("height"))
    texts = ["".join(t.itertext()) for t in root.iter(SVG + "text")]
    bands = {g.get("data-category") for g in root.iter(SVG + "g") if g.get("class") == "layer"}
    assert bands == set(categories), (bands, categories)
    for c in categories:
        assert c in texts, f"legend lacks {c}"
    lines = [e for e in root.iter(SVG + "line") if e.get("class") == "ceiling"]
    assert bool(lines) == ceiling, f"ceiling lines: {len(lines)}"
    marks = [g for g in root.iter(SVG + "g") if g.get("class") == "oom"]
    assert bool(marks) == bool(ooms), f"oom markers: {len(marks)}"
    assert any("resident on device (" in t for t in texts), "y axis title"
    # every coordinate lies on the canvas
    for e in root.iter(SVG + "line"):
        for k in ("x1", "x2"):
            assert -1 <= float(e.get(k)) <= width + 1, (k, e.get(k))
        for k in ("y1", "y2"):
            assert -1 <= float(e.get(k)) <= height + 1, (k, e.get(k))
    for e in root.iter(SVG + "path"):
        nums = e.get("d").replace("M", " ").replace("L", " ").replace("Z", " ")
        nums = nums.replace("l", " ").replace("h", " ").replace("z", " ").split()
        assert nums and all(abs(float(v)) <= max(width, height) + 1 for v in nums)


def check_timeline(args, trace, categories, ceiling, ooms, tag):
    svg = os.path.join(args.workdir, f"{tag}.svg")
    run(args.analyze, "timeline", trace, "-o", svg)
    check_svg_tree(ET.parse(svg).getroot(), categories, ceiling, ooms)
    steps = os.path.join(args.workdir, f"{tag}-steps.svg")
    run(args.analyze, "timeline", "--x", "step", trace, "-o", steps)
    root = ET.parse(steps).getroot()
    check_svg_tree(root, categories, ceiling, ooms)
    assert "training step" in ["".join(t.itertext()) for t in root.iter(SVG + "text")]
    html = os.path.join(args.workdir, f"{tag}.html")
    run(args.analyze, "timeline", trace, "-o", html)
    text = open(html, encoding="utf-8").read()
    assert text.startswith("<!DOCTYPE html>")
    start, end = text.index("<svg "), text.index("</svg>") + len("</svg>")
    check_svg_tree(ET.fromstring(text[start:end]), categories, ceiling, ooms)
    assert text.count("<tr><td") >= 1 and "<script>" in text
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", ""), "external resource"


def check_peak_and_readout(args, trace, tag):
    """The peak marker sits on the peak: the ring's height is the peak's bytes on the y scale,
    and the column under it holds exactly the peak in the readout's data. The HTML's zoom and
    readout script parses (node --check, when node is installed) and names its controls."""
    peak = json.loads(run(args.analyze, "summary", "--json", trace))["peak_bytes"]
    html = os.path.join(args.workdir, f"{tag}-zoom.html")
    run(args.analyze, "timeline", trace, "-o", html)
    text = open(html, encoding="utf-8").read()
    start, end = text.index("<svg "), text.index("</svg>") + len("</svg>")
    root = ET.fromstring(text[start:end])
    chart = next(g for g in root.iter(SVG + "g") if g.get("class") == "chart")
    d = {k[5:]: float(v) for k, v in chart.attrib.items()
         if k.startswith("data-") and k != "data-cols"}
    cols = [int(v) for v in chart.get("data-cols").split(",")]
    assert len(cols) == int(d["pw"]) and max(cols) == peak, (len(cols), max(cols), peak)
    ring = next(g for g in chart.iter(SVG + "g") if g.get("class") == "peak").find(SVG + "circle")
    cx, cy = float(ring.get("cx")), float(ring.get("cy"))
    want_y = d["top"] + d["ph"] - peak / d["ymax"] * d["ph"]
    assert abs(cy - want_y) < 0.11, (cy, want_y)
    assert cols[min(len(cols) - 1, int(cx - d["left"]))] == peak, (cx, d["left"])
    for control in ('id="zoom-in"', 'id="zoom-out"', 'id="zoom-reset"', 'id="readout"'):
        assert control in text, control
    node = shutil.which("node")
    if node:
        scripts = [s.split(">", 1)[1] for s in text.split("<script")[1:]]
        for i, body in enumerate(scripts):
            js = os.path.join(args.workdir, f"{tag}-script{i}.js")
            open(js, "w").write(body.split("</script>")[0])
            run(node, "--check", js)


# ---- Perfetto ----------------------------------------------------------------------------

def check_perfetto(args, traces, kinds, categories, tag):
    out = os.path.join(args.workdir, f"{tag}.json")
    run(args.analyze, "export", "--format", "perfetto", "-o", out, *traces)
    doc = json.load(open(out))
    events = doc["traceEvents"]
    assert isinstance(events, list) and events
    for e in events:
        assert e["ph"] in {"M", "C", "i", "B", "E", "X"}, e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        if e["ph"] != "M":
            assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        if e["ph"] == "X":
            assert e["dur"] >= 0, e
    resident = [e for e in events if e["ph"] == "C" and e["name"] == "resident"]
    assert resident, "no resident counter"
    # every sample carries every category (the viewer draws the first sample's series only)
    everything = set(CATEGORIES)
    assert all(set(e["args"]) == everything for e in resident), resident[0]
    used = {k for e in resident for k, v in e["args"].items() if v}
    assert used == set(categories), (used, categories)
    for name, kind in (("OOM", "oom"), ("spill", "residency")):
        n = sum(1 for e in events if e["ph"] == "i" and e["name"] == name)
        if kind == "oom":
            assert n == kinds.get("oom", 0), (name, n)
        else:
            assert (n > 0) == (kinds.get("residency", 0) > 0), (name, n)
    for pid in {e["pid"] for e in events}:
        mine = [e for e in events if e["pid"] == pid]
        assert any(e["ph"] == "M" and e["name"] == "process_name" for e in mine)
        begins = sum(1 for e in mine if e["ph"] == "B")
        ends = sum(1 for e in mine if e["ph"] == "E")
        assert begins == ends == kinds.get("phase+", 0) // len(traces), (begins, ends)
        assert sum(1 for e in mine if e["ph"] == "X") == kinds.get("step", 0) // len(traces)
    assert len({e["pid"] for e in events}) == len(traces)


# ---- memory_viz pickle -------------------------------------------------------------------

def viewer_unpickle(data):
    """The decoding of MemoryViz.js's unpickle(), op for op, for the opcodes we write."""
    stack, marks, memo, off = [], [], {}, 0

    def u4():
        nonlocal off
        v = struct.unpack_from("<I", data, off)[0]
        off += 4
        return v

    while True:
        op = data[off]
        off += 1
        if op == 0x80:
            assert 2 <= data[off] <= 4, "viewer: unhandled version"
            off += 1
        elif op == ord("e"):
            mark = marks.pop()
            stack[mark - 1].extend(stack[mark:])
            del stack[mark:]
        elif op == ord("u"):
            mark = marks.pop()
            d = stack[mark - 1]
            for i in range(mark, len(stack), 2):
                d[stack[i]] = stack[i + 1]
            del stack[mark:]
        elif op == ord("("):
            marks.append(len(stack))
        elif op == ord("}"):
            stack.append({})
        elif op == ord("]"):
            stack.append([])
        elif op == ord("N"):
            stack.append(None)
        elif op in (0x88, 0x89):
            stack.append(op == 0x88)
        elif op == ord("K"):
            stack.append(data[off])
            off += 1
        elif op == ord("M"):
            stack.append(data[off] | data[off + 1] << 8)
            off += 2
        elif op == ord("J"):
            stack.append(struct.unpack_from("<i", data, off)[0])
            off += 4
        elif op == 0x8A:
            n = data[off]
            off += 1
            assert 1 <= n <= 8, f"LONG1 of {n} bytes becomes a BigInt in the viewer"
            stack.append(int.from_bytes(data[off:off + n], "little", signed=True))
            off += n
        elif op == 0x8C:
            n = data[off]
            off += 1
            stack.append(data[off:off + n].decode("utf-8"))
            off += n
        elif op == ord("X"):
            n = u4()
            stack.append(data[off:off + n].decode("utf-8"))
            off += n
        elif op == ord("G"):
            stack.append(struct.unpack_from(">d", data, off)[0])
            off += 8
        elif op == ord("q"):
            memo[data[off]] = stack[-1]
            off += 1
        elif op == ord("r"):
            memo[u4()] = stack[-1]
        elif op == ord("h"):
            stack.append(memo[data[off]])
            off += 1
        elif op == ord("j"):
            stack.append(memo[u4()])
        elif op == ord("."):
            return stack.pop()
        else:
            raise AssertionError(f"UNKNOWN OPCODE: {op}")


def replay_segments(snapshot):
    """Live segments per device after the traces: must equal the snapshot's segments."""
    live = {}
    for device, trace in enumerate(snapshot["device_traces"]):
        for e in trace:
            key = (device, e.get("addr"))
            if e["action"] == "segment_alloc":
                assert key not in live, f"segment_alloc over a live segment {e}"
                live[key] = e["size"]
            elif e["action"] == "segment_free":
                assert live.pop(key) == e["size"], e
    return live


def check_memviz(args, trace, kinds, tag, expect=None):
    out = os.path.join(args.workdir, f"{tag}.pickle")
    run(args.analyze, "export", "--format", "memory-viz", "-o", out, trace)
    data = open(out, "rb").read()
    ops = {op.name for op, _, _ in pickletools.genops(data)}
    assert ops <= VIEWER_OPCODES, ops - VIEWER_OPCODES
    snap = pickle.loads(data)
    assert viewer_unpickle(data) == snap
    assert set(snap) == {"segments", "device_traces"}
    actions = {}
    categories = set()
    for trace_list in snap["device_traces"]:
        for e in trace_list:
            actions[e["action"]] = actions.get(e["action"], 0) + 1
            assert isinstance(e["time_us"], int) and isinstance(e["stream"], int)
            for f in e["frames"]:
                assert set(f) == {"filename", "line", "name"}, f
                module = os.path.basename(f["filename"])
                assert f["name"] and not f["name"].endswith(f" ({module})"), f
            if "category" in e:
                assert e["category"] in CATEGORIES, e
                categories.add(e["category"])
    allowed = {"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
               "oom", "snapshot", "annotate"}
    assert set(actions) <= allowed, actions
    assert actions.get("oom", 0) == kinds.get("oom", 0)
    # every spill/restore/drop/recompute and every ceiling is named by an 'annotate' note
    assert actions.get("annotate", 0) == kinds.get("residency", 0) + kinds.get("ceiling", 0), \
        (actions, kinds)
    if expect:
        assert actions == expect, actions
    assert actions["segment_alloc"] == actions["alloc"] >= kinds["alloc"]
    assert actions["free_requested"] == actions["free_completed"] == actions["segment_free"]
    if categories:  # the viewer throws unless 'unknown' is among them
        assert "unknown" in categories
    live = replay_segments(snap)
    segs = {(s["device"], s["address"]): s["total_size"] for s in snap["segments"]}
    assert live == segs, (len(live), len(segs))
    for s in snap["segments"]:
        assert len(s["blocks"]) == 1 and s["blocks"][0]["state"] == "active_allocated"
        assert s["blocks"][0]["size"] == s["total_size"] == s["allocated_size"]
    return snap


# ---- CSV ---------------------------------------------------------------------------------

def check_csv(args, trace, kinds, tag):
    out = os.path.join(args.workdir, f"{tag}.csv")
    run(args.analyze, "export", "--format", "csv", "-o", out, trace)
    rows = list(csv.DictReader(open(out, newline="")))
    assert len(rows) == sum(kinds.values()), (len(rows), sum(kinds.values()))
    assert list(rows[0]) == ["time_ns", "event", "addr", "size", "category", "kind", "step",
                             "phase", "site", "mode", "shape", "flops"]
    allocs = [r for r in rows if r["event"] == "alloc"]
    assert len(allocs) == kinds["alloc"]
    assert all(r["category"] in CATEGORIES and int(r["size"]) > 0 for r in allocs)
    times = [int(r["time_ns"]) for r in rows]
    assert times == sorted(times)
    return rows


# ---- diff --------------------------------------------------------------------------------

def check_diff(args, a, b):
    doc = json.loads(run(args.analyze, "diff", "--json", a, b))
    assert doc["peak"] == {"a": 48 * MIB, "b": 44 * MIB, "delta": -4 * MIB,
                           "ratio": round(44 / 48, 6)}, doc["peak"]
    cats = {c["category"]: c for c in doc["categories"]}
    assert (cats["activation"]["a"], cats["activation"]["b"]) == (16 * MIB, 0)
    assert (cats["activation"]["max_a"], cats["activation"]["max_b"]) == (16 * MIB, 8 * MIB)
    assert cats["optimizer_state"]["ratio"] is None and cats["optimizer_state"]["b"] == 8 * MIB
    assert cats["parameter"]["delta"] == 0 and cats["parameter"]["ratio"] == 1
    assert sum(c["delta"] for c in doc["categories"]) == doc["peak"]["delta"]
    first = doc["sites"][0]
    assert first["site"].startswith("forward") and first["delta"] == -16 * MIB, first
    assert first["stack"][-1].startswith("main"), first["stack"]
    text = run(args.analyze, "diff", a, b)
    assert "by call site" in text and "forward" in text
    run(args.analyze, "diff", a, expect=2)


def check_resolution(args, trace):
    """--resolution-us thins the resident counter but keeps its highest total."""
    totals = {}
    for res in ("0", "50"):
        out = os.path.join(args.workdir, f"res{res}.json")
        run(args.analyze, "export", "--format", "perfetto", "--resolution-us", res, "-o", out,
            trace)
        events = [e for e in json.load(open(out))["traceEvents"]
                  if e["ph"] == "C" and e["name"] == "resident"]
        totals[res] = (len(events), max(sum(e["args"].values()) for e in events))
    assert totals["50"][0] < totals["0"][0] / 4, totals
    assert totals["50"][1] == totals["0"][1], totals


def check_rank_timeline(args, ranks):
    out = os.path.join(args.workdir, "ranks.svg")
    run(args.analyze, "timeline", *ranks, "-o", out)
    root = ET.parse(out).getroot()
    charts = [g for g in root.iter(SVG + "g") if g.get("class") == "chart"]
    assert len(charts) == len(ranks)
    titles = ["".join(t.itertext()) for t in root.iter(SVG + "text")]
    for r in range(len(ranks)):
        assert any(f"(rank {r}, pid {100 + r})" in t for t in titles), titles[:3]
    html = os.path.join(args.workdir, "ranks.html")
    run(args.analyze, "timeline", *ranks, "-o", html)
    assert open(html, encoding="utf-8").read().count('<table class="sites">') == len(ranks)


def check_truncated(args, trace):
    """A trace cut short (a crash) gives a warning and everything before the cut."""
    w = args.workdir
    p = subprocess.run([args.analyze, "timeline", trace, "-o", os.path.join(w, "cut.svg")],
                       capture_output=True, text=True)
    assert p.returncode == 0 and "truncated" in p.stderr, (p.returncode, p.stderr)
    ET.parse(os.path.join(w, "cut.svg"))
    run(args.analyze, "export", "--format", "perfetto", "-o", os.path.join(w, "cut.json"), trace)
    assert json.load(open(os.path.join(w, "cut.json")))["traceEvents"]
    run(args.analyze, "export", "--format", "memory-viz", "-o", os.path.join(w, "cut.pickle"),
        trace)
    snap = pickle.load(open(os.path.join(w, "cut.pickle"), "rb"))
    assert snap["device_traces"][0] and snap["segments"]
    assert replay_segments(snap) == {(s["device"], s["address"]): s["total_size"]
                                     for s in snap["segments"]}
    rows = check_csv(args, trace, events_in(args.analyze, trace), "cut")
    assert rows


def main():
    ap = argparse.ArgumentParser()
    for k in ("analyze", "tracegen", "scenario", "workdir"):
        ap.add_argument("--" + k, required=True)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    w = args.workdir

    train = os.path.join(w, "train.mst")
    run(args.tracegen, "--steps", "12", "--layers", "6", "--temporaries", "3", "--leak",
        "--oom-at", "5", "-o", train)
    ranks = []
    for r in range(2):
        ranks.append(os.path.join(w, f"rank{r}.mst"))
        run(args.tracegen, "--steps", "3", "--layers", "2", "--rank", str(r), "--pid",
            str(100 + r), "-o", ranks[-1])
    scen = os.path.join(w, "scenario.mst")
    run(args.scenario, "--ceiling", "--spill", "--oom", "-o", scen)
    small = os.path.join(w, "scenario4.mst")
    run(args.scenario, "--activation-mib", "4", "-o", small)

    for tag, trace, ceiling in (("train", train, False), ("scenario", scen, True)):
        kinds = events_in(args.analyze, trace)
        rows = []
        check(f"{tag}: csv", lambda: rows.extend(check_csv(args, trace, kinds, tag)))
        cats = sorted({r["category"] for r in rows if r["event"] == "alloc"})
        check(f"{tag}: timeline svg/html",
              lambda: check_timeline(args, trace, cats, ceiling, kinds.get("oom", 0), tag))
        check(f"{tag}: perfetto", lambda: check_perfetto(args, [trace], kinds, cats, tag))
        check(f"{tag}: peak marker and readout", lambda: check_peak_and_readout(args, trace, tag))
        check(f"{tag}: memory-viz", lambda: check_memviz(args, trace, kinds, tag,
                                                         EXPECT_ACTIONS.get(tag)))
    rank_kinds = {}
    for t in ranks:
        for k, v in events_in(args.analyze, t).items():
            rank_kinds[k] = rank_kinds.get(k, 0) + v
    rank_cats = sorted(c for c in CATEGORIES
                       if f"category={c} " in run(args.analyze, "dump", ranks[0]))
    check("ranks: perfetto", lambda: check_perfetto(args, ranks, rank_kinds, rank_cats, "ranks"))
    check("ranks: timeline", lambda: check_rank_timeline(args, ranks))
    check("diff: numbers by hand", lambda: check_diff(args, scen, small))
    check("perfetto resolution keeps the peak", lambda: check_resolution(args, train))
    cut = os.path.join(w, "truncated.mst")
    run(args.tracegen, "--steps", "6", "--layers", "3", "--truncate", "5000", "-o", cut)
    check("truncated trace: every output up to the cut", lambda: check_truncated(args, cut))
    check("usage errors", lambda: (run(args.analyze, "export", "--format", "nope", scen,
                                       expect=2),
                                   run(args.analyze, "timeline", scen, expect=2)))

    print(f"{results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
