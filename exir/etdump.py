"""Reads ETDump traces (schema/etdump.fbs, ExecuTorch's "ED00", *.etdp): Ember's runner and Python bindings write
them, and so does ExecuTorch's runtime. Profile events only (what exir.profile tabulates); allocation and debug
events are counted, not decoded.

    runs = exir.etdump.read("trace.etdp")   # [Run(name, events=[ProfileEvent(name, chain, instruction, start, end)])]
"""
from __future__ import annotations

import dataclasses
import struct
from typing import List, Optional


class EtdumpError(ValueError):
    """The file is not a well-formed ETDump; the message says where it stops making sense."""


@dataclasses.dataclass
class ProfileEvent:
    name: str
    chain: int
    instruction: int  # the debug handle; -1 for events outside an instruction (a whole run)
    start: int
    end: int
    delegate_debug_id: int = -1

    @property
    def duration(self) -> int:
        return self.end - self.start


@dataclasses.dataclass
class Run:
    name: str
    events: List[ProfileEvent]
    other_events: int = 0  # allocation and debug events

    @property
    def truncated(self) -> bool:
        return "truncated" in self.name


class _Reader:
    def __init__(self, data: bytes):
        self.d = data

    def u32(self, at: int) -> int:
        if at < 0 or at + 4 > len(self.d):
            raise EtdumpError(f"offset {at} is past the end of the {len(self.d)}-byte trace")
        return struct.unpack_from("<I", self.d, at)[0]

    def field(self, table: int, index: int) -> Optional[int]:
        """Absolute position of field `index` of the table at `table`, or None when absent."""
        vt = table - struct.unpack_from("<i", self.d, table)[0] if table + 4 <= len(self.d) else -1
        if vt < 0 or vt + 4 > len(self.d):
            raise EtdumpError(f"table at {table} has no vtable inside the trace")
        vt_size = struct.unpack_from("<H", self.d, vt)[0]
        slot = 4 + 2 * index
        if slot + 2 > vt_size:
            return None
        off = struct.unpack_from("<H", self.d, vt + slot)[0]
        return table + off if off else None

    def scalar(self, table: int, index: int, fmt: str, default):
        at = self.field(table, index)
        if at is None:
            return default
        if at + struct.calcsize(fmt) > len(self.d):
            raise EtdumpError(f"field {index} of the table at {table} is past the end of the trace")
        return struct.unpack_from("<" + fmt, self.d, at)[0]

    def ref(self, table: int, index: int) -> Optional[int]:
        at = self.field(table, index)
        return None if at is None else at + self.u32(at)

    def string(self, table: int, index: int) -> str:
        at = self.ref(table, index)
        if at is None:
            return ""
        n = self.u32(at)
        if at + 4 + n > len(self.d):
            raise EtdumpError(f"a string at {at} runs past the end of the trace")
        return self.d[at + 4:at + 4 + n].decode("utf-8", "replace")

    def vector(self, table: int, index: int) -> List[int]:
        """Positions of the tables a vector of tables points at."""
        at = self.ref(table, index)
        if at is None:
            return []
        n = self.u32(at)
        if at + 4 + 4 * n > len(self.d):
            raise EtdumpError(f"a vector of {n} entries at {at} runs past the end of the trace")
        return [at + 4 + 4 * i + self.u32(at + 4 + 4 * i) for i in range(n)]


def parse(data: bytes) -> List[Run]:
    """The runs of an ETDump (size-prefixed, as ExecuTorch and Ember write it; a plain one is accepted too)."""
    if len(data) >= 12 and data[8:12] == b"ED00":
        r, root_at = _Reader(data), 4
    elif len(data) >= 8 and data[4:8] == b"ED00":
        r, root_at = _Reader(data), 0
    else:
        raise EtdumpError("not an ETDump: no 'ED00' file identifier at byte 4 or 8 (a .etdp from Ember's runner "
                          "--profile, ember.runtime run(profile=True), or ExecuTorch's ETDumpGen)")
    root = root_at + r.u32(root_at)
    runs = []
    for rd in r.vector(root, 1):
        events, other = [], 0
        for ev in r.vector(rd, 3):
            pe = r.ref(ev, 0)
            if pe is None:
                other += 1
                continue
            events.append(ProfileEvent(name=r.string(pe, 0), chain=r.scalar(pe, 1, "i", 0),
                                       instruction=r.scalar(pe, 2, "i", -1), start=r.scalar(pe, 6, "Q", 0),
                                       end=r.scalar(pe, 7, "Q", 0), delegate_debug_id=r.scalar(pe, 3, "i", -1)))
        runs.append(Run(name=r.string(rd, 0), events=events, other_events=other))
    return runs


def read(path: str) -> List[Run]:
    with open(path, "rb") as f:
        return parse(f.read())
