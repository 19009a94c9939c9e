#!/usr/bin/env python3
"""Runs examples/pytorch/train.py inside this process with PyTorch's own memory recorder on, and
writes what PyTorch saw to a JSON file: the referee of tests/e2e/torch_sim_check.py.

usage: torch_referee.py [--profile] OUT.json -- TRAIN_ARGS...

OUT.json: {"backend", "events": [[action, addr, size], ...] (the allocator's trace from
_record_memory_history/_snapshot; absent for cudaMallocAsync, which keeps none),
"alloc_frames": the Python frames of each "alloc" event, [[filename, line], ...] innermost
first, as PyTorch recorded them,
"max_memory_reserved", "memory_reserved", "stats": {memory_stats keys}, "status": train.py's
exit status}. The cache is emptied at the end so that frees (segment_free, segment_unmap) are
part of the record. cuDNN attention is off: simcuda has no cuDNN.
"""
import importlib.util
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "..", "..", "examples", "pytorch", "train.py")


def load_train(args):
    sys.argv = [TRAIN, *args]
    spec = importlib.util.spec_from_file_location("train", TRAIN)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def qualname_at(path, first_line, cache={}):
    """The qualified name (Class.method) of the function defined at first_line of path."""
    import ast
    if path not in cache:
        names = {}

        def visit(node, prefix):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    name = prefix + child.name
                    if not isinstance(child, ast.ClassDef):
                        lines = [child.lineno] + [d.lineno for d in child.decorator_list]
                        for line in lines:
                            names[line] = name
                    visit(child, name + "." if isinstance(child, ast.ClassDef)
                          else name + ".<locals>.")
        try:
            with open(path) as f:
                visit(ast.parse(f.read()), "")
        except (OSError, SyntaxError):
            pass
        cache[path] = names
    return cache[path].get(first_line)


def forward_lines(prof, torch, program):
    """PyTorch's profiler's answer to "which forward line does this backward allocation belong
    to": every tensor allocated under a backward node (an autograd::engine::evaluate_function
    event, which carries the node's sequence number) as [address, bytes, where], where is the
    program's innermost place in the forward operation that created the node: "file:line" when
    the operation was reached through a call the profiler records (its caller's line), or
    "file:Qual.name" when it ran straight from that program function's body (an operator such
    as `a + b` makes no Python call event, so the profiler has no line for it), None when no
    frame of `program` (a file path) is on its stack. The profiler gives every operation that
    passes autograd the number the next node will get, whether it creates one or not, so the
    node's creator is the last operation with that number."""
    from torch._C._profiler import _EventType
    evaluate = "autograd::engine::evaluate_function"
    name = os.path.basename(program)
    forward, backward = {}, []

    def ours(frame):
        return os.path.basename(frame.file_name) == name

    def program_place(e):
        for p in iter(lambda: e.parent, None):
            e = p
            if e.tag == _EventType.PyCall and ours(e.extra_fields.callsite):
                c = e.extra_fields.callsite
                return f"{name}:{qualname_at(program, c.line_number)}"
            if e.tag in (_EventType.PyCall, _EventType.PyCCall) and ours(e.extra_fields.caller):
                return f"{name}:{e.extra_fields.caller.line_number}"
        return None

    def walk(e, node):
        if e.tag == _EventType.TorchOp:
            seq = e.extra_fields.sequence_number
            if e.name.startswith(evaluate):
                node = seq
            elif node is None and seq >= 0 and e.start_time_ns >= forward.get(seq, (-1,))[0]:
                forward[seq] = (e.start_time_ns, program_place(e))
        elif e.tag == _EventType.Allocation and node is not None:
            a = e.extra_fields
            if a.alloc_size > 0 and a.device.type == "cuda":
                backward.append([a.ptr, a.alloc_size, node])
        for c in e.children:
            walk(c, node)

    for root in prof.profiler.kineto_results.experimental_event_tree():
        walk(root, None)
    return [[ptr, size, forward.get(seq, (0, None))[1]] for ptr, size, seq in backward]


def main():
    profile = len(sys.argv) > 1 and sys.argv[1] == "--profile"
    argv = sys.argv[2:] if profile else sys.argv[1:]
    out, sep, args = argv[0], argv[1], argv[2:]
    if sep != "--":
        raise SystemExit(__doc__)
    train = load_train(args)
    if profile:
        return profiled(train, out)
    torch = train.torch
    torch.backends.cuda.enable_cudnn_sdp(False)
    backend = torch.cuda.get_allocator_backend()
    recording = backend == "native"
    if recording:
        torch.cuda.memory._record_memory_history(max_entries=1 << 22, stacks="python")
    status = train.main(train.ARGS)
    torch.cuda.synchronize()
    result = {"backend": backend, "status": status,
              "max_memory_reserved": torch.cuda.max_memory_reserved(),
              "memory_reserved_before_empty": torch.cuda.memory_reserved()}
    torch.cuda.empty_cache()
    result["memory_reserved"] = torch.cuda.memory_reserved()
    result["stats"] = {k: v for k, v in torch.cuda.memory_stats().items()
                       if k.startswith(("active_bytes.all", "reserved_bytes.all",
                                        "allocated_bytes.all", "segment.all", "num_"))}
    if recording:
        snap = torch.cuda.memory._snapshot()
        result["events"] = [[e["action"], e["addr"], e["size"]]
                            for trace in snap["device_traces"] for e in trace]
        result["alloc_frames"] = [[[f["filename"], f["line"]] for f in e.get("frames", [])]
                                  for trace in snap["device_traces"] for e in trace
                                  if e["action"] == "alloc"]
    with open(out, "w") as f:
        json.dump(result, f)
    return status


def profiled(train, out):
    torch = train.torch
    from torch.profiler import ProfilerActivity, profile
    torch.backends.cuda.enable_cudnn_sdp(False)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, with_stack=True) as prof:
        status = train.main(train.ARGS)
    with open(out, "w") as f:
        json.dump({"status": status, "backward_allocs": forward_lines(prof, torch, TRAIN)}, f)
    return status


if __name__ == "__main__":
    sys.exit(main())
