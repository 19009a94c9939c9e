#!/usr/bin/env python3
"""memshim's bytes per category at the peak against PyTorch's own categorisation of the same run.

usage: torch_categories.py [--check | --check-tensors] BUILD_DIR PYTHON [SCENARIO...]
       (scenarios: adamw checkpoint expandable finetune kvcache; default all)
With --check (the ctest torch_categories): exit 1 when a category is off by more than 5% of
PyTorch's peak in any scenario, a run fails, or a training run's autograd saved nothing; with --check-tensors (torch_categories_tensors):
when, tensor by tensor, memshim agrees on less than 95% of the bytes PyTorch categorised. Both
exit 77 when PYTHON is missing or has no torch.

Each scenario runs examples/pytorch/train.py unmodified (no --nvtx, no import of memshim) under
BUILD_DIR/bin/memshim --sim, inside this file's referee mode, which wraps train.main in
torch.profiler.profile(profile_memory=True, record_shapes=True, with_stack=True) and reads
torch.profiler._memory_profiler.MemoryProfileTimeline: the bytes of each of PyTorch's categories
at the moment its tensors' total peaked. memshim's side is `memshim-analyze summary --json`:
its tensor view (`tensors.by_category_at_peak`, the shim's records of the tensors PyTorch's
caching allocator hands out) when the trace has one, else by_category_at_peak of the
allocations. PyTorch leaves what it cannot name uncategorised (None), the cuBLAS workspaces it
allocates through its own allocator among them, and it has no KV-cache category; memshim names
those `workspace` (built-in rules) and `kv_cache` (lifetime), so PyTorch's None is compared
with memshim's unknown + workspace + kv_cache tensors (the row `unknown/workspace/kv_cache`;
memshim's own split of it is printed below the table).
PyTorch's profiler leaves train.py's forward activations None, on CPU and CUDA alike (a real GPU
too): zero-size `out` tensors (at::empty({0}), data pointer null) that aten::index_select and
aten::arange resize get one allocation id from the profiler's id assignment (it keys storages by
data pointer and device, and they all share the null pointer), so the token embedding's output,
the position ids and the position embedding's output share one tensor id; _memory_profiler's
data-flow parameter deduction then marks that id PARAMETER (the position embedding's output is a
non-input operand of the forward add that feeds a gradient) and the ACTIVATION flood, which needs
an INPUT or ACTIVATION operand, never starts. So the referee asks PyTorch a second question where
the profiler has no answer: autograd's own saved_tensors_hooks record every tensor it saves for
backward (its storage address, and when it was packed and released), and a None tensor whose
storage autograd held saved during its life is an activation, which is what the profiler calls
a forward tensor kept for backward. The hooks keep each tensor's storage as it is (an alias,
no copy), so the run's device memory is unchanged. The table prints the profiler's bytes, the
bytes with autograd's answer, memshim's, and the difference against both; the bar is checked
against the second.
The caching allocator's unused bytes (`cached`) and allocations outside it are printed below the
table; PyTorch does not count them. Prints one table per scenario, both sides in MiB and the
difference as a share of PyTorch's peak, and whether every category is within 5%. A measurement,
not a test: it prints what it finds, and exits 0 whenever both sides ran.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "..", "examples", "pytorch", "train.py")
GPT = ["--layers", "2", "--hidden", "128", "--heads", "4", "--seq-len", "64", "--batch", "4",
       "--vocab", "512", "--steps", "3", "--attention", "sdpa"]
SCENARIOS = {"adamw": ([], ""), "checkpoint": (["--checkpoint"], ""),
             "expandable": ([], "expandable_segments:True"),
             "finetune": (["--freeze", "1"], ""),
             "kvcache": (["--generate", "16"], "")}
# PyTorch's names (Category enum, None: a tensor it could not categorise) -> memshim's
TORCH_TO_MEMSHIM = {"PARAMETER": "parameter", "OPTIMIZER_STATE": "optimizer_state",
                    "INPUT": "input", "TEMPORARY": "temporary", "ACTIVATION": "activation",
                    "GRADIENT": "gradient", "AUTOGRAD_DETAIL": "activation",
                    None: "unknown/workspace/kv_cache"}
MEMSHIM_MERGED = {c: "unknown/workspace/kv_cache" for c in ("unknown", "workspace", "kv_cache")}


def referee(out, args):
    import importlib.util
    sys.argv = [TRAIN, *args]
    spec = importlib.util.spec_from_file_location("train", TRAIN)
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    torch = train.torch
    from torch.profiler import ProfilerActivity, profile
    from torch.profiler import _memory_profiler as mp
    torch.backends.cuda.enable_cudnn_sdp(False)
    saved = []
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
                 with_stack=True) as prof:
        with torch.autograd.graph.saved_tensors_hooks(*saved_tensor_hooks(saved)):
            status = train.main(train.ARGS)
    tl = mp.MemoryProfileTimeline(prof._memory_profile())
    times, sizes = tl._coalesce_timeline("cuda:0")
    names = [None] + [None] * len(mp._CATEGORY_TO_INDEX)
    for cat, i in mp._CATEGORY_TO_INDEX.items():
        names[i + 1] = cat.name if cat is not None else None
    peak = max(range(len(sizes)), key=lambda i: sum(sizes[i][1:])) if sizes else None
    by = {}
    if peak is not None:
        for i, v in enumerate(sizes[peak][1:], 1):
            key = TORCH_TO_MEMSHIM[names[i]]
            by[key] = by.get(key, 0) + v
    with open(out, "w") as f:
        json.dump({"status": status, "by_category_at_peak": by,
                   "peak": sum(by.values()), "tensors_at_peak": live_at_peak(tl, mp, torch),
                   "reserved_peak": torch.cuda.max_memory_reserved(), "saved": saved}, f)
    return status


def saved_tensor_hooks(saved):
    """Autograd's own record of what it saves for backward, the second PyTorch opinion on the
    bytes the profiler leaves None: a pair of saved_tensors_hooks that keep each saved CUDA
    tensor's storage as it is (in a box, no copy) and append [storage address, bytes, time
    packed, time released] to `saved`; released is when autograd drops the box (its graph freed
    after backward), None while it is held. Times are time.time_ns(), the profiler's clock
    (Unix ns). The box holds a detached alias (same storage, no grad_fn): PyTorch hands the pack
    hook a saved output itself, and keeping that would close a reference cycle through its own
    graph (output -> grad_fn -> box -> output) that only backward breaks."""
    import time
    import weakref

    class Box:
        __slots__ = ("tensor", "__weakref__")

    def released(rec):
        rec[3] = time.time_ns()

    def pack(t):
        if t.device.type != "cuda":
            return t
        storage = t.untyped_storage()
        rec = [storage.data_ptr(), storage.nbytes(), time.time_ns(), None]
        saved.append(rec)
        box = Box()
        box.tensor = t.detach()
        weakref.finalize(box, released, rec)
        return box

    def unpack(box):
        return box.tensor if isinstance(box, Box) else box

    return pack, unpack


def live_at_peak(tl, mp, torch):
    """PyTorch's tensors alive at its peak (the same moment _coalesce_timeline finds: the first
    microsecond with the highest total): [storage address or None, bytes, category name,
    time created, time destroyed or None]."""
    device, live, total, best, best_live = torch.device("cuda:0"), {}, 0, -1, {}
    events = [e for e in tl.timeline if e[2][0].device == device]
    us = [int(t / 1000) if t != -1 else -1 for t, *_ in events]
    born, died = {}, {}
    for i, (t, action, (key, version), n) in enumerate(events):
        if action in (mp.Action.PREEXISTING, mp.Action.CREATE):
            live[(key, version)] = n
            total += n
            born.setdefault(key, t)
        elif action == mp.Action.INCREMENT_VERSION:
            live[(key, version + 1)] = live.pop((key, version), n)
        elif action == mp.Action.DESTROY:
            live.pop((key, version), None)
            total -= n
            died[key] = t
        if (i + 1 == len(events) or us[i + 1] != us[i]) and total > best:
            best, best_live = total, dict(live)
    rows = []
    for (key, version), n in best_live.items():
        cat = tl.categories.get(key, version) if isinstance(key, mp.TensorKey) else None
        ptr = key.storage.ptr if isinstance(key, mp.TensorKey) else None
        rows.append([ptr, n, cat.name if cat is not None else None, born.get(key),
                     died.get(key)])
    return rows


def run(build, py, name, tmp):
    args, conf = SCENARIOS[name]
    js, trace = os.path.join(tmp, name + ".json"), os.path.join(tmp, name + ".mst")
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTORCH_ALLOC_CONF=conf)
    r = subprocess.run([os.path.join(build, "bin", "memshim"), "--sim", "--trace", trace, "--",
                        py, os.path.abspath(__file__), "--referee", js, "--", *GPT, *args],
                       env=env, capture_output=True, text=True, timeout=900)
    if r.returncode != 0 or not os.path.exists(js):
        print(f"{name}: the run failed (exit {r.returncode}):\n{r.stderr[-3000:]}")
        return None
    s = subprocess.run([os.path.join(build, "bin", "memshim-analyze"), "summary", "--json",
                        trace], capture_output=True, text=True)
    return json.load(open(js)), json.loads(s.stdout)


def memshim_side(shim):
    """(bytes by compared category, peak, lines printed below the table)."""
    view = shim.get("tensors")
    src = view["by_category_at_peak"] if view else shim["by_category_at_peak"]
    by = {}
    for c, v in src.items():
        by[MEMSHIM_MERGED.get(c, c)] = by.get(MEMSHIM_MERGED.get(c, c), 0) + v
    if not view:
        return by, shim["peak_bytes"], ["memshim: no tensor records (segments only)"]
    outside = {c: v for c, v in view["outside_pool_at_peak"].items() if v}
    merged = ", ".join(f"{c} {src[c] / 2**20:.3f} MiB" for c in MEMSHIM_MERGED if src.get(c))
    return by, view["peak_bytes"], [
        f"memshim: unknown/workspace/kv_cache = {merged or 'nothing'}",
        f"memshim: {view['count']} tensors, {view['backward_passes']} backward passes; at the "
        f"tensor peak: cached (held by the allocator, no tensor) "
        f"{view['cached_at_peak'] / 2**20:.3f} MiB, outside the allocator "
        + (", ".join(f"{c} {v / 2**20:.3f} MiB" for c, v in outside.items()) or "none")]


def saved_for_backward(torch_side):
    """PyTorch's tensors at its peak as [address, bytes, category], with the profiler's None
    changed to ACTIVATION where autograd held the same storage saved for backward: a saved
    record of the same address and size whose hold overlaps the tensor's life (two allocations
    at one address cannot overlap, so that is the same storage)."""
    held = {}
    for ptr, nbytes, packed, released in torch_side.get("saved", []):
        held.setdefault((ptr, nbytes), []).append((packed, released))
    rows = []
    for ptr, n, cat, born, died in torch_side.get("tensors_at_peak", []):
        if cat is None and ptr is not None and any(
                (died is None or packed < died) and (released is None or released > born)
                for packed, released in held.get((ptr, n), ())):
            cat = "ACTIVATION"
        rows.append([ptr, n, cat])
    return rows


def referee_categories(torch_side, rows):
    """(the profiler's bytes by compared category, the same with autograd's saved tensors;
    rows: saved_for_backward's)."""
    profiler = torch_side["by_category_at_peak"]
    refereed = dict(profiler)
    for (_, n, raw, *_), (_, _, cat) in zip(torch_side.get("tensors_at_peak", []), rows):
        if cat != raw:
            refereed[TORCH_TO_MEMSHIM[raw]] -= n
            refereed[TORCH_TO_MEMSHIM[cat]] = refereed.get(TORCH_TO_MEMSHIM[cat], 0) + n
    return profiler, refereed


def agreement(rows, shim):
    """Tensor by tensor (same process, same addresses; rows: saved_for_backward's): of the
    bytes PyTorch categorised at its peak (the profiler, or autograd's saved tensors where the
    profiler says None), the share memshim put in the same category; and where the rest of
    PyTorch's None went."""
    view = shim.get("tensors") or {}
    ours = {t["addr"]: t["category"] for t in view.get("live_at_peak", [])}
    named = same = 0
    none_to = {}
    for ptr, n, cat in rows:
        mine = ours.get(ptr, "not found") if ptr is not None else "no address"
        if cat is None:
            none_to[mine] = none_to.get(mine, 0) + n
            continue
        named += n
        same += n if TORCH_TO_MEMSHIM[cat] == mine else 0
        if TORCH_TO_MEMSHIM[cat] != mine:
            print(f"    disagree: {n} bytes PyTorch {cat}, memshim {mine}")
    share = 100.0 * same / named if named else 100.0
    print(f"  tensor by tensor: memshim agrees on {share:.1f}% of the {named / 2**20:.3f} MiB "
          "PyTorch categorised; PyTorch's None (MiB) is, for memshim: "
          + (", ".join(f"{k} {v / 2**20:.3f}" for k, v in sorted(none_to.items())) or "nothing"))
    return share


def table(name, torch_side, shim):
    rows = saved_for_backward(torch_side)
    profiler, t = referee_categories(torch_side, rows)
    m, shim_peak, notes = memshim_side(shim)
    peak = torch_side["peak"] or 1
    print(f"\n{name}: PyTorch tensors peak {peak / 2**20:.2f} MiB (reserved "
          f"{torch_side['reserved_peak'] / 2**20:.2f} MiB); memshim peak "
          f"{shim_peak / 2**20:.2f} MiB")
    print(f"  {'category':28} {'profiler MiB':>12} {'+autograd MiB':>13} {'memshim MiB':>12} "
          f"{'diff % of peak':>15} {'vs profiler':>12}")
    worst = worst_profiler = 0.0
    for c in sorted(set(t) | set(m) | set(profiler)):
        p, a, b = profiler.get(c, 0), t.get(c, 0), m.get(c, 0)
        if not p and not a and not b:
            continue
        d, dp = 100.0 * (b - a) / peak, 100.0 * (b - p) / peak
        worst, worst_profiler = max(worst, abs(d)), max(worst_profiler, abs(dp))
        print(f"  {c:28} {p / 2**20:12.3f} {a / 2**20:13.3f} {b / 2**20:12.3f} {d:15.1f} "
              f"{dp:12.1f}")
    print(f"  within 5% for every category: {'yes' if worst <= 5 else 'no'} "
          f"(worst {worst:.1f}%; against the profiler alone {worst_profiler:.1f}%); autograd "
          f"saved {len(torch_side.get('saved', []))} CUDA tensors in the run")
    for line in notes:
        print("  " + line)
    return worst, agreement(rows, shim)


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--referee":
        return referee(sys.argv[2], sys.argv[4:])
    argv = sys.argv[1:]
    check = argv[0] if argv and argv[0] in ("--check", "--check-tensors") else None
    argv = argv[1:] if check else argv
    if len(argv) < 2:
        raise SystemExit(__doc__)
    build, py, names = argv[0], argv[1], argv[2:] or list(SCENARIOS)
    if check and (not os.access(py, os.X_OK) or subprocess.run(
            [py, "-c", "import torch"], capture_output=True).returncode != 0):
        print(f"skipped: {py} has no torch")
        return 77
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            got = run(build, py, name, tmp)
            worst, agree = table(name, *got) if got else (None, None)
            if got and name != "kvcache" and not got[0]["saved"]:
                print(f"  {name}: autograd's saved-tensor hooks recorded nothing")
                worst = None
            failed = (failed or worst is None or (check == "--check" and worst > 5)
                      or (check == "--check-tensors" and agree < 95))
    return 1 if check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
