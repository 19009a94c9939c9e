#!/usr/bin/env python3
"""The parsing half of tests/gpu/run.sh: each subcommand reads files a run left behind and
prints one `PASS|FAIL|SKIP name: detail` line per check (run.sh counts them), or a value.

    gpu_check.py probe NAME PROBE_OUT DUMP           every probe path is in the trace, charged
                                                     as the driver's free memory moved
    gpu_check.py ceiling NAME PROBE_OUT LIMIT CHUNK  each path refused at LIMIT/CHUNK chunks
    gpu_check.py same NAME A B                       the `step N loss X` lines of A and B agree
    gpu_check.py field JSON KEY[.KEY...]             print one value of a JSON file (or `final`
                                                     line of a train.py output)
    gpu_check.py mlp NAME SUMMARY_JSON LAYERS STEPS  allocation count of mlp-train's recipe
    gpu_check.py ceiling-run NAME SUMMARY_JSON RC LIMIT  an OOM run stopped at the ceiling
    gpu_check.py torch-reserved NAME SUMMARY_JSON TRAIN_OUT   trace peak vs. PyTorch's reserved
    gpu_check.py kinds NAME DUMP KIND[,KIND...] MIN  at least MIN allocations of these kinds
    gpu_check.py policy NAME SUMMARY_JSON RC LIMIT STDERR POLICY  spill/recompute run
    gpu_check.py host-use NAME SUMMARY_JSON RC LIMIT STDERR  a spill run below the granules'
                                                     bound completed by using host memory
"""
import json
import re
import sys

MIB = 1 << 20
# What the shim says when it accepts a policy it does not enforce (shim/track.c).
UNENFORCED = re.compile(r"only `fail` is enforced|not enforced|behaving as fail")


def say(status, name, detail):
    print(f"{status} {name}: {detail}")


def load_json(path):
    with open(path) as f:
        text = f.read()
    for line in reversed(text.splitlines()):
        if line.startswith("final "):
            return json.loads(line[len("final "):])
    return json.loads(text)


def dump_allocs(path):
    allocs = []
    with open(path) as f:
        for line in f:
            if line.startswith("alloc "):
                allocs.append(dict(re.findall(r"(\w+)=(\"[^\"]*\"|\S+)", line)))
    return allocs


def cmd_probe(name, probe_out, dump):
    paths = [l.split() for l in open(probe_out) if l.startswith("path ")]
    allocs = dump_allocs(dump)
    if not paths:
        say("FAIL", name, "the probe printed no path")
        return
    used = set()
    for _, pname, kind, req, delta in paths:
        req, delta = int(req), int(delta)
        hit = next((i for i, a in enumerate(allocs) if i not in used and a.get("kind") == kind
                    and int(a.get("requested", a.get("size", 0))) >= req), None)
        if hit is None:
            say("FAIL", f"{name} {pname}", f"no {kind} allocation of {req} bytes in the trace")
            continue
        used.add(hit)
        size = int(allocs[hit]["size"])
        detail = f"trace {size} bytes, cudaMemGetInfo moved {delta}"
        if size - 2 * MIB <= delta <= size + 32 * MIB:
            say("PASS", f"{name} {pname}", detail)
        elif "Managed" in kind and delta <= 0:
            say("SKIP", f"{name} {pname}", detail + " (managed pages not resident on the device)")
        else:
            say("FAIL", f"{name} {pname}", detail)


def cmd_ceiling(name, probe_out, limit, chunk):
    want = int(limit) // int(chunk)
    lines = [l.split() for l in open(probe_out)]
    for l in lines:
        if l[0] == "meminfo":
            total = int(l[2])
            ok = total == int(limit) and int(l[1]) <= int(limit)
            say("PASS" if ok else "FAIL", f"{name} cudaMemGetInfo",
                f"free {l[1]} total {total}, ceiling {limit}")
    for l in lines:
        if l[0] == "ceiling":
            n, code = int(l[2]), int(l[3])
            ok = n == want and code == 2  # cudaErrorMemoryAllocation == CUDA_ERROR_OUT_OF_MEMORY
            say("PASS" if ok else "FAIL", f"{name} {l[1]}",
                f"{n} chunks then error {code} (want {want} then 2)")


def losses(path):
    return [l.split() for l in open(path) if l.startswith("step ")]


def cmd_same(name, a, b):
    la, lb = losses(a), losses(b)
    if la and la == lb:
        say("PASS", name, f"{len(la)} step losses identical")
    else:
        first = next((i for i in range(min(len(la), len(lb))) if la[i] != lb[i]), None)
        say("FAIL", name, f"{len(la)} vs {len(lb)} steps; first difference at line {first}")


def field(obj, key):
    for k in key.split("."):
        obj = obj[int(k)] if isinstance(obj, list) else obj[k]
    return obj


def cmd_field(path, key):
    try:
        print(field(load_json(path), key))
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        print("")


def cmd_mlp(name, summary, layers, steps):
    s = load_json(summary)
    L, S = int(layers), int(steps)
    want = 8 * L + S * (4 * L + 3) + 1  # examples/mlp/README.md, plus the cuBLAS workspace
    # The program frees everything it allocates; cuBLAS may add allocations of its own and keep
    # some to the end, so those are reported, not judged.
    ok = s["allocations"] >= want and s["frees"] >= want and s.get("clean_end") is True
    say("PASS" if ok else "FAIL", name,
        f"{s['allocations']} allocations (the program makes {want}), {s['frees']} frees, "
        f"{s['leaked_bytes']} bytes alive at exit, clean end {s.get('clean_end')}")


def cmd_ceiling_run(name, summary, rc, limit):
    s = load_json(summary)
    rc, limit = int(rc), int(limit)
    ok = rc == 3 and s["ooms"] >= 1 and 0 < s["peak_bytes"] <= limit
    say("PASS" if ok else "FAIL", name,
        f"exit {rc} (want 3), {s['ooms']} OOMs, {s['allocations']} allocations before, "
        f"peak {s['peak_bytes']} <= ceiling {limit}")


def cmd_torch_reserved(name, summary, train_out):
    s, t = load_json(summary), load_json(train_out)
    peak, reserved = s["peak_bytes"], t.get("max_memory_reserved")
    if reserved is None:
        say("SKIP", name, "train.py reported no max_memory_reserved")
        return
    ok = reserved <= peak <= reserved + 256 * MIB
    say("PASS" if ok else "FAIL", name,
        f"trace peak {peak}, torch max_memory_reserved {reserved} (difference {peak - reserved}: "
        f"memory outside PyTorch's caching allocator)")


def cmd_kinds(name, dump, kinds, minimum):
    want = set(kinds.split(","))
    allocs = dump_allocs(dump)
    n = sum(1 for a in allocs if a.get("kind") in want)
    maps = 0
    with open(dump) as f:
        maps = sum(1 for line in f if line.startswith("map "))
    ok = n >= int(minimum)
    say("PASS" if ok else "FAIL", name,
        f"{n} allocations by {kinds} (want >= {minimum}) of {len(allocs)}, {maps} maps")


def unenforced(name, stderr_path, policy):
    """Whether the run's stderr says the shim does not enforce `policy` (then a SKIP line)."""
    with open(stderr_path, errors="replace") as f:
        skip = UNENFORCED.search(f.read()) is not None
    if skip:
        say("SKIP", name, f"MEMSHIM_POLICY={policy} not supported by this shim (it says so)")
    return skip


def cmd_policy(name, summary, rc, limit, stderr_path, policy):
    if unenforced(name, stderr_path, policy):
        return
    s = load_json(summary)
    rc, limit = int(rc), int(limit)
    res = s.get("residency", {})
    kinds = ("spill",) if policy == "spill" else ("spill", "drop")
    moved = sum(int(res.get(k, {}).get("count", 0)) for k in kinds)
    ok = rc == 0 and s["peak_bytes"] <= limit and moved > 0
    drops = int(res.get("drop", {}).get("count", 0))
    replays = int(res.get("recompute", {}).get("count", 0))
    say("PASS" if ok else "FAIL", name,
        f"exit {rc}, peak {s['peak_bytes']} <= ceiling {limit}, {moved} spills/drops "
        f"({drops} drops, {replays} replays; identical losses checked next)")


def cmd_host_use(name, summary, rc, limit, stderr_path):
    if unenforced(name, stderr_path, "spill"):
        return
    s = load_json(summary)
    rc, limit = int(rc), int(limit)
    uses = int(s.get("residency", {}).get("host_use", {}).get("count", 0))
    ok = rc == 0 and s["peak_bytes"] <= limit and uses > 0
    say("PASS" if ok else "FAIL", name,
        f"exit {rc}, peak {s['peak_bytes']} <= ceiling {limit}, {uses} host uses (want > 0; "
        f"a device without host VMM fails here out of memory)")


def main(argv):
    cmds = {"probe": cmd_probe, "ceiling": cmd_ceiling, "same": cmd_same, "field": cmd_field,
            "mlp": cmd_mlp, "ceiling-run": cmd_ceiling_run, "torch-reserved": cmd_torch_reserved,
            "kinds": cmd_kinds, "policy": cmd_policy, "host-use": cmd_host_use}
    if len(argv) < 2 or argv[1] not in cmds:
        print(__doc__, file=sys.stderr)
        return 2
    name = argv[2] if len(argv) > 2 else argv[1]
    try:
        cmds[argv[1]](*argv[2:])
    except (OSError, ValueError, KeyError, TypeError) as e:
        if argv[1] == "field":
            raise
        say("FAIL", name, f"could not read the run's output: {type(e).__name__}: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
