#!/usr/bin/env python3
"""examples/pytorch/train.py with PyTorch's own memory recorder on: the framework's answer to
what memshim records, measured beside it by torch_overhead.py --referee.

usage: torch_history.py STACKS [train.py's arguments]

STACKS is _record_memory_history's `stacks`: "python" (Python frames of each allocation and
free) or "all" (Python, TorchScript and C++ frames). The recorder keeps every event of the run
(max_entries above what a measured run makes), as a user taking a snapshot at the end would.
"""
import importlib.util
import os
import sys

TRAIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "pytorch",
                     "train.py")


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("python", "all"):
        raise SystemExit(__doc__)
    stacks = sys.argv[1]
    sys.argv = [TRAIN, *sys.argv[2:]]
    spec = importlib.util.spec_from_file_location("train", TRAIN)
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    train.torch.cuda.memory._record_memory_history(max_entries=1 << 22, stacks=stacks)
    return train.main(train.ARGS)


if __name__ == "__main__":
    sys.exit(main())
