"""Reader of memshim trace files for the shim's end-to-end tests (Python 3 stdlib only).

The layout comes from mst_layout.py, which the build generates from include/memshim/trace_format.h
(tests/e2e/gen_trace_layout.c) into $MEMSHIM_BUILD_DIR/tests: a file header, then records of
(kind u16, reserved u16, length u32) + payload. Unknown kinds are kept raw; a truncated tail
ends the read cleanly and is reported in Trace.truncated.
"""

import os
import struct
import subprocess
import sys

_build = os.environ.get("MEMSHIM_BUILD_DIR")
if not _build or not os.path.exists(os.path.join(_build, "tests", "mst_layout.py")):
    sys.exit("shim_trace: MEMSHIM_BUILD_DIR/tests/mst_layout.py not found (built with the tests; "
             "ctest sets MEMSHIM_BUILD_DIR)")
sys.path.insert(0, os.path.join(_build, "tests"))
import mst_layout  # noqa: E402

MAGIC = mst_layout.MAGIC
HEADER = struct.Struct(mst_layout.HEADER[0])
RECORD = struct.Struct(mst_layout.RECORD[0])
REC = mst_layout.REC
KIND = {name: value for name, value in mst_layout.KIND.items()}
KIND_NAME = {v: k for k, v in KIND.items()}
CATEGORIES = mst_layout.CATEGORIES
F_HANDLE, F_HOST, F_CAT_TAGGED, F_CAT_RULE = (mst_layout.F_HANDLE, mst_layout.F_HOST,
                                              mst_layout.F_CAT_TAGGED, mst_layout.F_CAT_RULE)

# kind -> (struct format, field names); variable-length tails are kept in "tail"
PAYLOAD = dict(mst_layout.PAYLOAD)


FREE_SHORT = struct.Struct(mst_layout.FREE_SHORT[0])
FREE_SHORT_FIELDS = list(mst_layout.FREE_SHORT[1])
ALLOC_SHORT = struct.Struct(mst_layout.ALLOC_SHORT[0])
ALLOC_SHORT_FIELDS = list(mst_layout.ALLOC_SHORT[1])


def layout(name):
    """The struct.Struct of record `name`'s fixed part ("ALLOC", "OP", ...)."""
    return struct.Struct(PAYLOAD[REC[name]][0])


OP_LAYOUT, OP_FIELDS = layout("OP"), list(PAYLOAD[REC["OP"]][1])


class Shapes:
    """OP_DEFINE and OP_REPEAT undone, as memshim-analyze's reader does: feed() takes each record
    (kind, payload bytes) in file order and returns the records it stands for: itself, nothing
    for a definition, and for a repeat its shape's OP (at the repeat's time) and ACCESS records."""

    def __init__(self):
        self.shapes, self.pending, self.filling = {}, None, None

    def feed(self, kind, payload):
        if kind == REC["OP_DEFINE"]:
            self.pending, self.filling = struct.unpack_from("<I", payload)[0], None
            return []
        if kind == REC["OP_REPEAT"]:
            shape, delta = struct.unpack_from("<II", payload)
            if len(payload) >= 16:  # the long form: a 64-bit delta after the short one
                delta += struct.unpack_from("<Q", payload, 8)[0]
            op, accesses, _ = self.shapes[shape]
            op = struct.pack("<Q", struct.unpack_from("<Q", op)[0] + delta) + op[8:]
            self.shapes[shape][0] = op
            self.filling = None
            return [(REC["OP"], op)] + [(REC["ACCESS"], a) for a in accesses]
        if self.pending is not None and kind == REC["OP"]:
            naccess = OP_LAYOUT.unpack_from(payload)[OP_FIELDS.index("naccess")]
            self.filling = self.shapes[self.pending] = [payload, [], naccess]
            self.pending = None
        elif self.filling is not None and kind == REC["ACCESS"] and \
                len(self.filling[1]) < self.filling[2]:
            self.filling[1].append(payload)
        else:
            self.filling = None
        return [(kind, payload)]


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
        self._live = {}  # (device, addr) -> the ALLOC, for the short FREE's size and site
        pos = header_size
        shapes = Shapes()
        while pos < len(data):
            if pos + RECORD.size > len(data):
                self.truncated = True
                break
            kind, _, length = RECORD.unpack_from(data, pos)
            pos += RECORD.size
            if pos + length > len(data):
                self.truncated = True
                break
            for k, payload in shapes.feed(kind, data[pos:pos + length]):
                self.records.append(self._decode(k, payload))
            pos += length

    def _decode(self, kind, payload):
        rec = Record(rec=kind, tail=b"")
        if kind == REC["FREE"] and len(payload) < struct.calcsize(PAYLOAD[kind][0]):
            return self._free_short(rec, payload)
        if kind == REC["ALLOC"] and len(payload) < struct.calcsize(PAYLOAD[kind][0]):
            rec.update(alloc_short(payload))
            rec["tail"] = payload[ALLOC_SHORT.size:]
            self._live[(rec["device"], rec["addr"])] = rec
            return rec
        if kind in PAYLOAD:
            fmt, names = PAYLOAD[kind]
            size = struct.calcsize(fmt)
            if len(payload) >= size:
                rec.update(zip(names, struct.unpack_from(fmt, payload)))
                rec["tail"] = payload[size:]
        if kind == REC["STRING"]:
            self.strings[rec["id"]] = rec["tail"].decode("utf-8", "replace")
        elif kind == REC["ALLOC"] and "addr" in rec:
            self._live[(rec["device"], rec["addr"])] = rec
        elif kind == REC["FREE"] and "addr" in rec:
            self._live.pop((rec["device"], rec["addr"]), None)
        return rec

    def _free_short(self, rec, payload):
        """The short FREE as the long one, as memshim-analyze hands it out: stream 0, size and site
        of its ALLOC (0 when the trace has none)."""
        rec.update(zip(FREE_SHORT_FIELDS, FREE_SHORT.unpack_from(payload)))
        rec["tail"] = payload[FREE_SHORT.size:]
        alloc = self._live.pop((rec["device"], rec["addr"]), None)
        rec.update(stream=0, size=alloc["size"] if alloc else 0, site=alloc["site"] if alloc else 0)
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


def alloc_short(payload):
    """The fields of a short ALLOC as the long one has them: stream 0, requested bytes whole."""
    fields = dict(zip(ALLOC_SHORT_FIELDS, ALLOC_SHORT.unpack_from(payload)))
    fields["requested"] = fields["size"] - fields.pop("unrequested")
    fields["stream"] = 0
    return fields


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
    free_long = struct.calcsize(PAYLOAD[free][0])
    events, last, live = [], None, {}  # live: addr -> size, for the short FREE's
    end = len(data)
    while pos + 8 <= end:
        kind, _, length = unpack_hdr(data, pos)
        pos += 8
        if pos + length > end:
            break
        if kind == alloc:
            addr, size = unpack_qq(data, pos)
            live[addr] = size
            events.append((kind, addr, size))
        elif kind == free and length < free_long:
            addr = unpack_qq(data, pos)[0]
            events.append((kind, addr, live.pop(addr, 0)))
        elif kind == free:
            addr, size = unpack_qq(data, pos)
            live.pop(addr, None)
            events.append((kind, addr, size))
        elif kind == summary:
            fmt, names = PAYLOAD[summary]
            last = Record(rec=kind, tail=b"")
            last.update(zip(names, struct.unpack_from(fmt, data, pos)))
        pos += length
    return events, last


RESIDENCY_REC = REC["RESIDENCY"]
RESIDENCY = layout("RESIDENCY")


def raw_records(path):
    """(kind, data, offset of the payload, payload length) of every complete record, in file order, with
    nothing decoded: for checks that read a few kinds fast. A truncated tail ends the walk."""
    with open(path, "rb") as f:
        data = f.read()
    pos = HEADER.unpack_from(data)[2]
    shapes = Shapes()
    compact = (REC["OP_DEFINE"], REC["OP_REPEAT"], REC["OP"], REC["ACCESS"])
    while pos + 8 <= len(data):
        kind, _, length = RECORD.unpack_from(data, pos)
        pos += 8
        if pos + length > len(data):
            return
        if kind in compact:  # a repeat's records are yielded from their own bytes
            for k, payload in shapes.feed(kind, data[pos:pos + length]):
                yield k, payload, 0, len(payload)
        else:
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


def dump_lines(analyze, path):
    """`memshim-analyze dump` of a trace, line by line, as (kind, fields): the line's first word
    and its key=value words (values as printed, strings still quoted)."""
    p = subprocess.run([analyze, "dump", path], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"memshim-analyze dump {path}: {p.stderr}")
    for line in p.stdout.splitlines():
        yield line.split(" ", 1)[0], dict(f.split("=", 1) for f in line.split()[1:] if "=" in f)
