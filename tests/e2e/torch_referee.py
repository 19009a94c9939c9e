#!/usr/bin/env python3
"""Runs examples/pytorch/train.py inside this process with PyTorch's own memory recorder on, and
writes what PyTorch saw to a JSON file: the referee of tests/e2e/torch_sim_check.py.

usage: torch_referee.py OUT.json -- TRAIN_ARGS...

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


def main():
    out, sep, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    if sep != "--":
        raise SystemExit(__doc__)
    train = load_train(args)
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


if __name__ == "__main__":
    sys.exit(main())
