#!/usr/bin/env python3
"""End-to-end checks of the example trainer (examples/mlp).

Every expectation is computed here from the model's shape, independently of the program, and
compared with what the program prints and with simcuda's SIMCUDA_STATS file, the referee.

  mlp_check.py train  EXE [trainer options]   losses fall, runs repeat bit for bit, stats agree
  mlp_check.py reference EXE                  losses of tiny models match a float64 reference
  mlp_check.py appapi EXE SPY                 memshim app API calls reach a preloaded library
  mlp_check.py errors EXE                     exit codes: usage 2, out of device memory 3
  mlp_check.py links  EXE|-                   the nvcc build links the real CUDA libraries only
  mlp_check.py accesses CUDA_EXE|- SIM_EXE SHIM ANALYZE
                                              the nvcc build on simcuda under the shim records
                                              the same operations with the same accesses, op by
                                              op, as the simcuda-kernel build: its kernels'
                                              parameter layouts come from nvcc's cubins (read by
                                              simcuda as the driver reads them), the other's from
                                              the sizes kernels_sim.c registers
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile

import mlp_reference

SKIP = 77  # ctest's SKIP_RETURN_CODE for these tests
STEP_LINE = re.compile(r"step (\d+) loss (\S+)")
EXIT_USAGE, EXIT_OOM = 2, 3
# simcuda charges every allocation in units of 256 bytes (tests/simcuda/driver/memalloc.h), and
# its cuBLAS allocates a 4 MiB default workspace at cublasCreate that lives until
# cublasSetWorkspace_v2 replaces it (tests/simcuda/cublas/cublas_handle.h).
SIM_ALLOC_UNIT = 256
SIM_CUBLAS_WORKSPACE = 4 << 20


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def expect(cond, msg):
    if not cond:
        fail(msg)


class Config:
    """The trainer's options, with what one run must do given them."""

    def __init__(self, argv):
        p = argparse.ArgumentParser(prog="trainer options")
        for name, default in (("steps", 12), ("batch", 64), ("input", 64), ("hidden", 512),
                              ("layers", 3), ("classes", 10), ("seed", 7)):
            p.add_argument(f"--{name}", type=int, default=default)
        p.add_argument("--lr", default="3e-3")
        p.add_argument("--act", default="relu", choices=("relu", "gelu"))
        p.add_argument("--gemm", default="sgemm", choices=("sgemm", "ex"))
        p.add_argument("--workspace", type=int, default=1 << 20)
        p.add_argument("--no-tags", action="store_true")
        self.__dict__.update(vars(p.parse_args(argv)))
        expect(self.steps >= 4, "need at least 4 steps to see the loss fall")

    def argv(self):
        args = []
        for name in ("steps", "batch", "input", "hidden", "layers", "classes", "seed", "lr",
                     "act", "gemm", "workspace"):
            args += [f"--{name}", str(getattr(self, name))]
        return args + (["--no-tags"] if self.no_tags else [])

    def layer_dims(self):
        widths = [self.input] + [self.hidden] * (self.layers - 1) + [self.classes]
        return list(zip(widths[:-1], widths[1:]))

    def parameters(self):
        return sum(o * (i + 1) for i, o in self.layer_dims())

    def allocations(self):
        """cudaMalloc calls: workspace, w and b per layer, their gradients and two Adam moments
        once; per step the batch (2), L GEMM outputs, L-1 activations, log-probabilities, row
        losses, the loss, the logits' gradient and two buffers per hidden layer backward."""
        L = self.layers
        once = (1 if self.workspace else 0) + 2 * L + 2 * L + 4 * L
        return once + self.steps * (2 + L + (L - 1) + 3 + 1 + 2 * (L - 1))

    def gemms(self):
        return self.steps * (3 * self.layers - 1)

    def kernel_launches(self):
        """Forward: L-1 bias+activation, softmax, mean; backward: softmax grad, L bias grads,
        L-1 activation grads; optimizer: Adam on w and on b per layer."""
        L = self.layers
        return self.steps * ((L - 1) + 2 + 1 + L + (L - 1) + 2 * L)

    def bytes_h2d(self):
        return 4 * self.parameters() + self.steps * 4 * self.batch * (self.input + 1)

    def peak_band(self):
        """Bounds on the device peak. Once the first step has made the gradients and Adam's
        moments, the end of each forward pass holds them, the parameters, the workspace, the
        batch and the saved activations: a lower bound. Backward adds at most two buffers of a
        hidden layer's size at once; each live buffer may be rounded up by a unit. Before
        training, cuBLAS's own workspace and ours are briefly live together."""
        B, H, C = self.batch, self.hidden, self.classes
        persistent = 4 * 4 * self.parameters() + self.workspace
        saved_per_hidden = 4 * B * H * (2 if self.act == "gelu" else 1)
        saved = 4 * B * (self.input + 1) + (self.layers - 1) * saved_per_hidden + 4 * B * C + 4
        low = persistent + saved
        # 8 per layer (w, b, their gradients and moments), 2 saved per hidden layer, the
        # workspace, the batch (2), log-probabilities, loss and 2 buffers in flight.
        live_buffers = 8 * self.layers + 2 * (self.layers - 1) + 7
        high = low + 4 * B * (2 * max(H, C) + 1) + SIM_ALLOC_UNIT * live_buffers
        return low, max(high, SIM_CUBLAS_WORKSPACE + self.workspace)


def run(exe, args, env_extra=None, check=True):
    env = dict(os.environ, **(env_extra or {}))
    p = subprocess.run([exe] + args, env=env, capture_output=True, text=True)
    if check and p.returncode != 0:
        fail(f"{exe} {' '.join(args)} exited {p.returncode}:\n{p.stderr}")
    return p


def parse_losses(stdout, steps):
    lines = stdout.splitlines()
    expect(len(lines) == steps, f"expected {steps} lines on stdout, got {len(lines)}")
    losses = []
    for n, line in enumerate(lines, 1):
        m = STEP_LINE.fullmatch(line)
        expect(m and int(m.group(1)) == n, f"line {n} is not 'step {n} loss X': {line!r}")
        loss = float(m.group(2))
        expect(math.isfinite(loss) and loss > 0, f"step {n}: loss {loss} is not a positive number")
        losses.append(loss)
    return losses


def check_losses(losses, classes):
    first, last = sum(losses[:3]) / 3, sum(losses[-3:]) / 3
    chance = math.log(classes)
    expect(abs(losses[0] - chance) < 0.5, f"first loss {losses[0]} far from chance ({chance:.4f})")
    expect(last < first - 0.05, f"loss did not fall: first three {first:.4f}, last three {last:.4f}")


def check_stats(cfg, s):
    def same(key, want):
        expect(s[key] == want, f"stats {key} = {s[key]}, expected {want}")

    same("device_bytes_at_exit", 0)
    same("failed_allocations", 0)
    # The program's own allocations, and at most one of cuBLAS (its default workspace).
    expect(cfg.allocations() <= s["allocations"] <= cfg.allocations() + 1,
           f"stats allocations {s['allocations']}, the program makes {cfg.allocations()}")
    same("frees", s["allocations"])
    same("gemm_calls", cfg.gemms())
    same("kernel_launches", cfg.kernel_launches())
    same("bytes_copied_h2d", cfg.bytes_h2d())
    same("bytes_copied_d2h", 4 * cfg.steps)
    low, high = cfg.peak_band()
    expect(low <= s["peak_device_bytes"] <= high,
           f"peak_device_bytes {s['peak_device_bytes']} outside [{low}, {high}]")


def cmd_train(exe, trainer_args):
    cfg = Config(trainer_args)
    with tempfile.TemporaryDirectory() as tmp:
        outs = []
        for i in range(2):
            stats = os.path.join(tmp, f"stats{i}.json")
            outs.append(run(exe, cfg.argv(), {"SIMCUDA_STATS": stats}).stdout)
            with open(stats) as f:
                check_stats(cfg, json.load(f))
    expect(outs[0] == outs[1], "two runs with the same arguments printed different losses")
    losses = parse_losses(outs[0], cfg.steps)
    check_losses(losses, cfg.classes)
    print(f"ok: {cfg.steps} steps, loss {losses[0]:.4f} -> {losses[-1]:.4f}, stats consistent")


def cmd_reference(exe):
    # Tiny shapes, a large learning rate so that six steps move far, both activations, and
    # three layers so that a hidden layer's backward is in the loop.
    shape = dict(seed=5, batch=4, input=5, hidden=6, layers=3, classes=3, steps=6, lr=0.05)
    argv = [a for k, v in shape.items() for a in (f"--{k}", str(v))] + ["--workspace", "0"]
    for act in ("relu", "gelu"):
        want = mlp_reference.train(act=act, **shape)
        got = parse_losses(run(exe, argv + ["--act", act]).stdout, shape["steps"])
        worst = max(abs(a - b) for a, b in zip(want, got))
        expect(worst < 1e-5, f"{act}: losses {got} differ from the reference {want} by {worst}")
        print(f"ok: {act}: {shape['steps']} steps within {worst:.2g} of the float64 reference")


def dynamic_weak_undefined(exe):
    out = subprocess.run(["readelf", "--dyn-syms", "-W", exe], capture_output=True, text=True,
                         check=True).stdout
    found = set()
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8 and f[4] == "WEAK" and f[6] == "UND":
            found.add(f[7].split("@")[0])
    return found


def cmd_appapi(exe, spy):
    api = {"memshim_tag_push", "memshim_tag_pop", "memshim_step_begin"}
    missing = api - dynamic_weak_undefined(exe)
    expect(not missing, f"not weak undefined dynamic symbols of {exe}: {sorted(missing)}")
    cfg = Config(["--steps", "4", "--hidden", "64"])
    plain = run(exe, cfg.argv()).stdout
    with tempfile.TemporaryDirectory() as tmp:
        for tags in (True, False):
            out = os.path.join(tmp, f"spy{tags}.json")
            argv = cfg.argv() + ([] if tags else ["--no-tags"])
            got = run(exe, argv, {"LD_PRELOAD": spy, "MLP_SPY_OUT": out}).stdout
            expect(got == plain, "losses changed when the app API was bound")
            with open(out) as f:
                check_spy(cfg, json.load(f), tags)
    print("ok: app API weak, dynamic, bound by a preloaded library, off with --no-tags")


def check_spy(cfg, spy, tags):
    pushes = sum(spy["push"].values())
    if not tags:
        expect(pushes == 0 and spy["pop"] == 0 and spy["step_begin"] == [],
               f"--no-tags still called the app API: {spy}")
        return
    L = cfg.layers
    # GEMM outputs backward reads (GELU's, hidden layers) are activations; the others temporaries
    saved_z = L - 1 if cfg.act == "gelu" else 0
    want = {"parameter": 2 * L, "gradient": 2 * L, "optimizer_state": 4 * L,
            "workspace": 1, "input": 2 * cfg.steps,
            "activation": cfg.steps * (saved_z + (L - 1) + 1),
            "temporary": cfg.steps * (2 + 1 + 2 * (L - 1) + L - saved_z)}
    got = {k: v for k, v in spy["push"].items() if v}
    expect(got == want, f"tags pushed {got}, expected {want}")
    expect(spy["pop"] == pushes and spy["depth_at_exit"] == 0 and spy["max_depth"] == 1,
           f"unbalanced tags: {spy}")
    expect(spy["refused"] == 0, f"{spy['refused']} tags were not category names")
    expect(spy["step_begin"] == list(range(1, cfg.steps + 1)), f"step marks {spy['step_begin']}")


def cmd_errors(exe):
    for args in (["--steps", "0"], ["--act", "tanh"], ["--bogus"], ["extra"]):
        p = run(exe, args, check=False)
        expect(p.returncode == EXIT_USAGE and p.stdout == "",
               f"{args}: exit {p.returncode}, expected {EXIT_USAGE} and nothing on stdout")
    p = run(exe, ["--help"], check=False)
    expect(p.returncode == 0 and "--steps" in p.stderr, "--help should print usage and exit 0")
    # 8 MiB holds cuBLAS's workspace and ours but not the 8.7 MB of parameters at width 1024;
    # 2 MiB does not even hold cuBLAS's workspace, so cublasCreate_v2 fails.
    for memory, names in (("8m", ["cudaErrorMemoryAllocation"]),
                          ("2m", ["cudaErrorMemoryAllocation", "CUBLAS_STATUS_ALLOC_FAILED"])):
        p = run(exe, ["--hidden", "1024", "--steps", "1"], {"SIMCUDA_DEVICE_MEMORY": memory},
                check=False)
        expect(p.returncode == EXIT_OOM and any(n in p.stderr for n in names),
               f"{memory} of device memory: exit {p.returncode}, expected {EXIT_OOM} and one of "
               f"{names}:\n{p.stderr}")
    print("ok: usage errors exit 2, out of device memory exits 3")


def cmd_links(exe):
    if exe == "-":
        print("skipped: mlp-train was not built (no nvcc at configure time)")
        sys.exit(SKIP)
    dyn = subprocess.run(["readelf", "-d", "-W", exe], capture_output=True, text=True,
                         check=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.*)\]", dyn)
    for lib in ("libcudart.so.13", "libcublas.so.13"):
        expect(lib in needed, f"{exe} does not need {lib}: {needed}")
    expect("libcuda.so.1" not in needed, "mlp-train links the driver directly")
    build = os.environ.get("MEMSHIM_BUILD_DIR", "")
    paths = re.findall(r"\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[(.*)\]", dyn)
    expect(not any("simcuda" in p or (build and build in p) for p in paths),
           f"mlp-train would find simcuda through its run path: {paths}")
    sections = subprocess.run(["readelf", "-S", "-W", exe], capture_output=True, text=True,
                              check=True).stdout
    expect(".nv_fatbin" in sections, "mlp-train holds no device code (.nv_fatbin)")
    missing = {"memshim_tag_push", "memshim_tag_pop", "memshim_step_begin"} - \
        dynamic_weak_undefined(exe)
    expect(not missing, f"not weak undefined dynamic symbols of mlp-train: {sorted(missing)}")
    print(f"ok: mlp-train needs {', '.join(needed)}; device code present")
    run_on_real_cuda(exe)


def run_on_real_cuda(exe):
    """Without simcuda on the library path the program loads the real libraries: on a machine
    with a GPU it must train; without one it must name the failing call and exit 1."""
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    argv = [exe, "--steps", "20"]
    p = subprocess.run(argv, env=env, capture_output=True, text=True)
    if p.returncode == 0:
        again = subprocess.run(argv, env=env, capture_output=True, text=True)
        expect(again.stdout == p.stdout, "two runs on the GPU printed different losses")
        check_losses(parse_losses(p.stdout, 20), 10)
        print("ok: trained on the real GPU")
        return
    expect(p.returncode == 1 and p.stdout == "" and " failed: " in p.stderr,
           f"without a GPU: exit {p.returncode}, expected 1 and a named error:\n{p.stderr}")
    print(f"ok: no GPU here, and mlp-train says so: {p.stderr.strip().splitlines()[-1]}")


def launch_records(exe, shim, analyze, tmp):
    """The trace's operations, each as its kind, entry point or kernel and accesses, with every
    address replaced by its order of first appearance (the two runs map memory at different
    addresses). The kernels' names differ between the builds (mangled by nvcc, plain in
    kernels_sim.c) and are left out; the order and operands say which kernel ran."""
    trace = os.path.join(tmp, os.path.basename(exe) + ".mst")
    run(exe, ["--steps", "2"], {"LD_PRELOAD": shim, "MEMSHIM_TRACE": trace})
    import shim_trace  # beside this file; needs the build's generated layout
    ids, ops = {}, []
    for kind, fields in shim_trace.dump_lines(analyze, trace):
        if kind in ("op", "op-repeat"):
            ops.append([kind, fields.get("kind", fields.get("shape"))])
        elif kind == "access" and ops:
            ops[-1].append((ids.setdefault(fields["addr"], len(ids)), fields["size"],
                            fields["mode"]))
    return ops


def cmd_accesses(exe, sim, shim, analyze):
    if exe == "-":
        print("skipped: mlp-train was not built (no nvcc at configure time)")
        sys.exit(SKIP)
    with tempfile.TemporaryDirectory() as tmp:
        cuda, ref = (launch_records(e, shim, analyze, tmp) for e in (exe, sim))
    kernels = sum(1 for op in cuda if len(op) > 2)
    expect(kernels > 0, "the nvcc build recorded no operation with accesses")
    for i, (a, b) in enumerate(zip(cuda, ref)):
        expect(a == b, f"operation {i}: nvcc build {a}, simcuda-kernel build {b}")
    expect(len(cuda) == len(ref), f"{len(cuda)} operations against {len(ref)}")
    print(f"ok: {len(cuda)} operations, {kernels} with accesses, the same in both builds")


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    mode, exe, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
    if mode == "train":
        cmd_train(exe, rest)
    elif mode == "reference":
        cmd_reference(exe)
    elif mode == "appapi" and len(rest) == 1:
        cmd_appapi(exe, rest[0])
    elif mode == "errors":
        cmd_errors(exe)
    elif mode == "links":
        cmd_links(exe)
    elif mode == "accesses" and len(rest) == 3:
        cmd_accesses(exe, *rest)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
