"""Reads ETDump traces (schema/etdump.fbs, ExecuTorch's "ED00", *.etdp): Ember's runner and Python bindings write
them, and so does ExecuTorch's runtime. Profile events (what devtools.profile tabulates) and allocation events (the
bytes a run used per allocator) and debug events (a kernel's output tensors, their bytes in a separate debug buffer:
the runtime's debug mode, or ExecuTorch's intermediate outputs).

    runs = devtools.etdump.read("trace.etdp")
    # [Run(name, events=[ProfileEvent(name, chain, instruction, start, end)],
    #      allocations=[Allocation(allocator, bytes)],
    #      outputs=[Output(name, chain, instruction, tensors=[TensorRef])])]
    devtools.etdump.outputs(etdump_bytes, debug_buffer)   # {instruction: [torch.Tensor, ...]}
"""

from __future__ import annotations

import dataclasses
import struct
from typing import Dict, List, Optional

from schema import format_versions, scalar_types


# schema/etdump.fbs's ValueType.
_TENSOR, _TENSOR_LIST = 5, 6


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
class Allocation:
    allocator: str  # the run's name for it ("method allocator", "planned pool 1"), or "allocator #N" unnamed
    bytes: int


@dataclasses.dataclass
class TensorRef:
    """A tensor a debug event describes: its bytes are at `offset` in the debug buffer."""

    scalar_type: int  # the .pte's ScalarType number
    sizes: List[int]
    strides: List[int]
    offset: int

    def tensor(self, debug_buffer: bytes):
        import torch

        info = scalar_types.by_number(self.scalar_type)
        dtype = info.torch_dtype() if info is not None else None
        if dtype is None:
            raise EtdumpError(f"a debug tensor of ScalarType {self.scalar_type}, which has no torch dtype here")
        if any(s < 0 for s in self.sizes):
            raise EtdumpError(f"a debug tensor with sizes {self.sizes}: a size is negative")
        numel = 1
        for s in self.sizes:
            numel *= s
        nbytes = numel * info.size
        if self.offset < 0 or self.offset + nbytes > len(debug_buffer):
            raise EtdumpError(
                f"a debug tensor's {nbytes} bytes at offset {self.offset} are past the end of the "
                f"{len(debug_buffer)}-byte debug buffer: is it this trace's buffer?"
            )
        flat = (
            torch.frombuffer(bytearray(debug_buffer[self.offset : self.offset + nbytes]), dtype=dtype)
            if nbytes
            else torch.empty(0, dtype=dtype)
        )
        # The bytes lie as the runtime held them (its dim order); the strides say where each element is.
        if numel and self.strides and len(self.strides) == len(self.sizes):
            return torch.as_strided(flat, self.sizes, self.strides).contiguous()
        return flat.reshape(self.sizes)


@dataclasses.dataclass
class Output:
    """A debug event: what kernel instruction `instruction` returned (several tensors for a multi-output kernel)."""

    name: str
    chain: int
    instruction: int
    tensors: List[TensorRef]
    is_list: bool = False

    def values(self, debug_buffer: bytes) -> list:
        return [t.tensor(debug_buffer) for t in self.tensors]


@dataclasses.dataclass
class Run:
    name: str
    events: List[ProfileEvent]
    other_events: int = 0  # debug events that are not tensors (scalars, program outputs)
    allocations: List[Allocation] = dataclasses.field(default_factory=list)
    outputs: List[Output] = dataclasses.field(default_factory=list)

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
        return self.d[at + 4 : at + 4 + n].decode("utf-8", "replace")

    def longs(self, table: int, index: int) -> List[int]:
        at = self.ref(table, index)
        if at is None:
            return []
        n = self.u32(at)
        if at + 4 + 8 * n > len(self.d):
            raise EtdumpError(f"a vector of {n} longs at {at} runs past the end of the trace")
        return list(struct.unpack_from(f"<{n}q", self.d, at + 4))

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
        for found in (data[8:12], data[4:8]):  # size-prefixed, then plain
            if format_versions.ETDUMP.is_other_version(found):
                raise EtdumpError(format_versions.ETDUMP.identifier_problem(found))
        raise EtdumpError(
            "not an ETDump: no 'ED00' file identifier at byte 4 or 8 (a .etdp from Ember's runner "
            "--profile, ember.runtime run(profile=True), or ExecuTorch's ETDumpGen)"
        )
    root = root_at + r.u32(root_at)
    problem = format_versions.ETDUMP.version_problem(r.scalar(root, 0, "I", 0))  # ETDump.version
    if problem:
        raise EtdumpError(problem)

    def tensor(t: int) -> TensorRef:
        return TensorRef(
            scalar_type=r.scalar(t, 0, "b", 0),
            sizes=r.longs(t, 1),
            strides=r.longs(t, 2),
            offset=r.scalar(t, 3, "q", 0),
        )

    runs = []
    for rd in r.vector(root, 1):
        events, other, allocations, outputs = [], 0, [], []
        allocators = [r.string(a, 0) for a in r.vector(rd, 2)]
        for ev in r.vector(rd, 3):
            pe = r.ref(ev, 0)
            if pe is None:
                ae = r.ref(ev, 1)
                de = r.ref(ev, 2)
                value = r.ref(de, 2) if de is not None else None
                kind = r.scalar(value, 0, "b", 0) if value is not None else 0
                flag = r.ref(value, 7) if value is not None else None  # Value.output: a program output
                is_output = flag is not None and r.scalar(flag, 0, "?", False)
                if de is not None and kind in (_TENSOR, _TENSOR_LIST) and not is_output:
                    if kind == _TENSOR:
                        refs = [tensor(t) for t in [r.ref(value, 1)] if t is not None]
                    else:
                        tl = r.ref(value, 2)
                        refs = [tensor(t) for t in r.vector(tl, 0)] if tl is not None else []
                    outputs.append(
                        Output(
                            name=r.string(de, 5),
                            chain=r.scalar(de, 0, "Q", 0),
                            instruction=r.scalar(de, 1, "i", -1),
                            tensors=refs,
                            is_list=kind == _TENSOR_LIST,
                        )
                    )
                    continue
                if ae is None:
                    other += 1
                    continue
                i = r.scalar(ae, 0, "i", 0)
                allocations.append(
                    Allocation(
                        allocators[i] if 0 <= i < len(allocators) else f"allocator #{i}", r.scalar(ae, 1, "Q", 0)
                    )
                )
                continue
            events.append(
                ProfileEvent(
                    name=r.string(pe, 0),
                    chain=r.scalar(pe, 1, "i", 0),
                    instruction=r.scalar(pe, 2, "i", -1),
                    start=r.scalar(pe, 6, "Q", 0),
                    end=r.scalar(pe, 7, "Q", 0),
                    delegate_debug_id=r.scalar(pe, 3, "i", -1),
                )
            )
        runs.append(
            Run(name=r.string(rd, 0), events=events, other_events=other, allocations=allocations, outputs=outputs)
        )
    return runs


def outputs(data: bytes, debug_buffer: bytes) -> Dict[int, list]:
    """Each kernel instruction's output tensors, from a trace taken in debug mode and its debug buffer
    (instruction index -> [tensor, ...]; the last run's, when the trace holds several)."""
    found: Dict[int, list] = {}
    for run in parse(data):
        for o in run.outputs:
            found[o.instruction] = o.values(debug_buffer)
    return found


def read(path: str) -> List[Run]:
    with open(path, "rb") as f:
        return parse(f.read())
