#!/usr/bin/env python3
"""Pointer queries on shim-served memory (pointer-prog, see its header): the same answers as
cudaMalloc memory, for a resident range, a block of a shared chunk and a spilled range.

  plain      without the shim: the program's expectations hold on simcuda's own cudaMalloc
  host       MEMSHIM_POLICY=spill, spilled ranges keep host memory mapped (simcuda then
             reports host memory for them, as a GPU driver does: the shim must answer)
  unmapped   the same with SIMCUDA_HOST_VMM=0: the spilled range has no memory at all
  async      host mode with stream-ordered allocations (cudaMallocAsync, cuMemAllocAsync,
             cudaFreeAsync): served and spilled like cudaMalloc memory
The shim runs also check from the trace that the large buffer really was away while asked
about: spilled once, brought back once (by the final read), never before.
"""
import argparse
import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shim_trace  # noqa: E402

MIB = 1 << 20
CEILING = 24 * MIB
REC_ALLOC = shim_trace.REC["ALLOC"]
RES_SPILL = shim_trace.mst_layout.RES_SPILL


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def allocs(path):
    """ALLOC records in file order, as dicts."""
    fmt, names = shim_trace.PAYLOAD[REC_ALLOC]
    for kind, data, pos, _ in shim_trace.raw_records(path):
        if kind == REC_ALLOC:
            yield dict(zip(names, struct.unpack_from(fmt, data, pos)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("scenario", choices=["plain", "host", "unmapped", "async"])
    p.add_argument("--shim", required=True)
    p.add_argument("--prog", required=True)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "run.mst")
        env = dict(os.environ)
        if args.scenario != "plain":
            env.update({"LD_PRELOAD": args.shim, "MEMSHIM_POLICY": "spill",
                        "MEMSHIM_LIMIT": str(CEILING), "MEMSHIM_TRACE": trace,
                        "SIMCUDA_HOST_VMM": "0" if args.scenario == "unmapped" else "1"})
        argv = [args.prog, str(CEILING)] + (["async"] if args.scenario == "async" else [])
        r = subprocess.run(argv, env=env, capture_output=True, text=True,
                           timeout=300)
        sys.stdout.write(r.stdout)
        sys.stderr.write(r.stderr)
        if r.returncode != 0 or "pointer ok" not in r.stdout:
            fail(f"pointer-prog exited {r.returncode}")
        if args.scenario == "plain":
            return
        first_big = next((a["addr"] for a in allocs(trace) if a["requested"] > MIB), None)
        moves = [(m[0], m[1]) for m in shim_trace.residency_moves(trace)]
        if first_big is None:
            fail("no ALLOC record of the large buffer")
        mine = [ev for ev, addr in moves if addr == first_big]
        if not mine or mine[0] != RES_SPILL:
            fail(f"the large buffer was not spilled first: {mine}")
        if len(mine) != 2:
            fail(f"the large buffer moved {len(mine)} times, expected spill + one restore: {mine}")
        print(f"{args.scenario}: answers as for cudaMalloc memory while spilled ({mine})")


if __name__ == "__main__":
    main()
