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
REC_ALLOC, REC_RESIDENCY = 6, 18
RESIDENCY = struct.Struct("<QQQQQIBB2x")
RES_SPILL = 1


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def records(path):
    with open(path, "rb") as f:
        data = f.read()
    pos = shim_trace.HEADER.unpack_from(data)[2]
    while pos + 8 <= len(data):
        kind, _, length = shim_trace.RECORD.unpack_from(data, pos)
        pos += 8
        yield kind, data[pos:pos + length]
        pos += length


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
        first_big = None
        moves = []
        for kind, payload in records(trace):
            if kind == REC_ALLOC and first_big is None:
                fmt, names = shim_trace.PAYLOAD[REC_ALLOC]
                rec = dict(zip(names, struct.unpack_from(fmt, payload)))
                if rec["requested"] > MIB:
                    first_big = rec["addr"]
            elif kind == REC_RESIDENCY and len(payload) >= RESIDENCY.size:
                ev = RESIDENCY.unpack_from(payload)
                moves.append((ev[6], ev[1]))
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
