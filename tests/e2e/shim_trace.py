"""Reader of memshim trace files for the shim's end-to-end tests (Python 3 stdlib only).

Mirrors include/memshim/trace_format.h: a file header, then records of
(kind u16, reserved u16, length u32) + payload. Unknown kinds are kept raw; a truncated tail
ends the read cleanly and is reported in Trace.truncated.
"""

import struct

MAGIC = b"MEMSHIM\x1a"
HEADER = struct.Struct("<8sHHIII QQ 64s II".replace(" ", ""))
RECORD = struct.Struct("<HHI")

REC = {
    "STRING": 1, "MODULE": 2, "FRAME": 3, "THREAD": 4, "DEVICE": 5, "ALLOC": 6, "FREE": 7,
    "MAP": 8, "UNMAP": 9, "PHASE_PUSH": 10, "PHASE_POP": 11, "STEP": 12, "CEILING": 13,
    "OOM": 14, "RETAG": 15, "SUMMARY": 20,
}

KIND = {
    "cudaMalloc": 1, "cudaMallocPitch": 2, "cudaMalloc3D": 3, "cudaMallocManaged": 4,
    "cudaMallocAsync": 5, "cudaMallocFromPoolAsync": 6, "cuMemAlloc": 7, "cuMemAllocPitch": 8,
    "cuMemAllocManaged": 9, "cuMemAllocAsync": 10, "cuMemAllocFromPoolAsync": 11,
    "cuMemCreate": 12,
}
KIND_NAME = {v: k for k, v in KIND.items()}

CATEGORIES = ["unknown", "parameter", "gradient", "optimizer_state", "activation", "kv_cache",
              "workspace", "temporary", "communication", "input"]

F_HANDLE, F_HOST, F_CAT_TAGGED, F_CAT_RULE = 1, 2, 4, 8

# name -> (struct format, field names); variable-length tails are kept in "tail"
PAYLOAD = {
    1: ("<I", ["id"]),
    2: ("<IIQQ", ["id", "reserved", "base", "size"]),
    3: ("<IIIIQQ", ["id", "parent", "module_id", "symbol_id", "ip", "module_offset"]),
    4: ("<II", ["id", "os_tid"]),
    5: ("<IIIIQQ", ["ordinal", "cc_major", "cc_minor", "reserved", "total_bytes",
                    "ceiling_bytes"]),
    6: ("<QQQQQIIIBBBB", ["time_ns", "addr", "size", "requested", "stream", "thread", "site",
                          "phase", "kind", "category", "device", "flags"]),
    7: ("<QQQQIIBBBB", ["time_ns", "addr", "size", "stream", "thread", "site", "kind", "device",
                        "flags", "reserved"]),
    8: ("<QQQQIB3x", ["time_ns", "addr", "size", "handle", "thread", "device"]),
    9: ("<QQQQIB3x", ["time_ns", "addr", "size", "handle", "thread", "device"]),
    10: ("<QII", ["time_ns", "thread", "name_id"]),
    11: ("<QII", ["time_ns", "thread", "name_id"]),
    12: ("<QQII", ["time_ns", "step", "thread", "reserved"]),
    13: ("<QQBB6x", ["time_ns", "ceiling_bytes", "device", "policy"]),
    14: ("<QQQQ10QIIIBB2x", ["time_ns", "request", "ceiling", "resident"] +
         ["cat%d" % i for i in range(10)] + ["thread", "site", "phase", "kind", "device"]),
    20: ("<QQQQQQ" + "Q" * 9 + "Q", ["time_ns", "allocations", "frees", "failed_allocations",
                                     "peak_resident", "resident_at_exit", "spills", "restores",
                                     "prefetches", "drops", "recomputes", "spilled_bytes",
                                     "restored_bytes", "dropped_bytes", "recompute_flops",
                                     "events_lost"]),
}


class Record(dict):
    """A record: its fields by name, plus "rec" (the kind) and "tail" (trailing bytes)."""

    __getattr__ = dict.__getitem__


class Trace:
    def __init__(self, path):
        with open(path, "rb") as f:
            data = f.read()
        if len(data) < HEADER.size or data[:8] != MAGIC:
            raise ValueError("%s: not a memshim trace" % path)
        fields = HEADER.unpack_from(data)
        self.pid, self.rank, self.stack_depth = fields[3], fields[4], fields[5]
        header_size = fields[2]
        self.records = []
        self.truncated = False
        self.strings = {}
        pos = header_size
        while pos < len(data):
            if pos + RECORD.size > len(data):
                self.truncated = True
                break
            kind, _, length = RECORD.unpack_from(data, pos)
            pos += RECORD.size
            if pos + length > len(data):
                self.truncated = True
                break
            self.records.append(self._decode(kind, data[pos:pos + length]))
            pos += length

    def _decode(self, kind, payload):
        rec = Record(rec=kind, tail=b"")
        if kind in PAYLOAD:
            fmt, names = PAYLOAD[kind]
            size = struct.calcsize(fmt)
            if len(payload) >= size:
                rec.update(zip(names, struct.unpack_from(fmt, payload)))
                rec["tail"] = payload[size:]
        if kind == REC["STRING"]:
            self.strings[rec["id"]] = rec["tail"].decode("utf-8", "replace")
        return rec

    def of(self, name):
        return [r for r in self.records if r.rec == REC[name]]

    def allocs(self):
        return self.of("ALLOC")

    def frees(self):
        return self.of("FREE")

    def summary(self):
        s = self.of("SUMMARY")
        return s[-1] if s else None

    def string(self, sid):
        return self.strings.get(sid, "")


def scan_alloc_free(path):
    """Fast pass for big traces: (record kind, addr, size) of every ALLOC and FREE, in order,
    without decoding anything else. Returns (events, summary record or None)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != MAGIC:
        raise ValueError("%s: not a memshim trace" % path)
    pos = HEADER.unpack_from(data)[2]
    alloc, free, summary = REC["ALLOC"], REC["FREE"], REC["SUMMARY"]
    unpack_hdr, unpack_qq = RECORD.unpack_from, struct.Struct("<8xQQ").unpack_from
    events, last = [], None
    end = len(data)
    while pos + 8 <= end:
        kind, _, length = unpack_hdr(data, pos)
        pos += 8
        if pos + length > end:
            break
        if kind == alloc or kind == free:
            addr, size = unpack_qq(data, pos)
            events.append((kind, addr, size))
        elif kind == summary:
            fmt, names = PAYLOAD[summary]
            last = Record(rec=kind, tail=b"")
            last.update(zip(names, struct.unpack_from(fmt, data, pos)))
        pos += length
    return events, last


RESIDENCY_REC = 18
RESIDENCY = struct.Struct("<QQQQQIBB2x")


def raw_records(path):
    """(kind, data, offset of the payload, payload length) of every complete record, in file order, with
    nothing decoded: for checks that read a few kinds fast. A truncated tail ends the walk."""
    with open(path, "rb") as f:
        data = f.read()
    pos = HEADER.unpack_from(data)[2]
    while pos + 8 <= len(data):
        kind, _, length = RECORD.unpack_from(data, pos)
        pos += 8
        if pos + length > len(data):
            return
        yield kind, data, pos, length
        pos += length


def residency_moves(path):
    """Every RESIDENCY record in file order, as (event, addr, bytes, duration_ns, flops);
    events are 1 spill, 2 restore, 3 prefetch, 4 drop, 5 recompute."""
    out = []
    for kind, data, pos, length in raw_records(path):
        if kind == RESIDENCY_REC and length >= RESIDENCY.size:
            _, addr, nbytes, dur, flops, _, event, _ = RESIDENCY.unpack_from(data, pos)
            out.append((event, addr, nbytes, dur, flops))
    return out
