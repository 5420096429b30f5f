"""Named tensors <-> the bytes of a .ptd file (ExecuTorch's FlatTensor, "FT01"; schema/flat_tensor.fbs).

A program exported with external constants keeps, for each such tensor, only its description and a name
(Tensor.extra_tensor_info: fully_qualified_name, location EXTERNAL); the bytes live here, one segment per distinct
tensor, each aligned so the runtime can map the file and point tensors straight into it. The layout is the one
ExecuTorch 1.5.1's FlatTensorSerializer writes, so either side reads the other's files.

    data = serialize_ptd([PtdEntry("linear.weight", w_bytes, TensorLayout(ScalarType.FLOAT, [4, 8], [0, 1]))])
    ptd = deserialize_ptd(data)        # PtdFile: .entries by key, .tensor(key) as a torch tensor
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import struct
from typing import Dict, List, Optional, Sequence

from exir.serialize.flatc import FlatcError, decode, encode
from schema import format_versions, scalar_types
from schema._yaml import SCHEMA_DIR

FLAT_TENSOR_FBS = os.path.join(SCHEMA_DIR, "flat_tensor.fbs")
FILE_IDENTIFIER = format_versions.PTD.identifier
HEADER_MAGIC = b"FH01"
HEADER_LENGTH = 40  # magic, length, four uint64 fields
HEADER_OFFSET = 8  # after the root offset and the file identifier
FLATBUFFER_ALIGNMENT = 16  # the header is padded to this, so the tables after it keep their alignment
DEFAULT_SEGMENT_ALIGNMENT = 128  # ExecuTorch's FlatTensorConfig default
VERSION = format_versions.PTD.writes  # what the writer stamps; the window read is schema/format_versions.yaml


class PtdFormatError(ValueError):
    """The bytes are not a well-formed .ptd; the message says what is wrong and where."""


@dataclasses.dataclass
class TensorLayout:
    scalar_type: int  # ScalarType number (schema/scalar_types.yaml)
    sizes: List[int]
    dim_order: List[int]

    @property
    def nbytes(self) -> int:
        info = scalar_types.by_number(int(self.scalar_type))
        return math.prod(self.sizes) * (info.size if info else 0)


@dataclasses.dataclass
class PtdEntry:
    key: str
    data: bytes
    layout: Optional[TensorLayout] = None
    alignment: int = 1  # at least; the segment alignment applies as well


@dataclasses.dataclass
class PtdFile:
    version: int
    entries: Dict[str, PtdEntry]
    segment_base: int
    segments: List[tuple]  # (offset, size) per segment, relative to segment_base

    def tensor(self, key: str):
        """Entry `key` as a torch tensor of its layout (a copy)."""
        import torch

        e = self.entries[key]
        if e.layout is None:
            raise KeyError(f"'{key}' is an opaque blob with no tensor layout")
        info = scalar_types.by_number(int(e.layout.scalar_type))
        dtype = info.torch_dtype() if info else None
        if dtype is None:
            raise PtdFormatError(f"'{key}': ScalarType {e.layout.scalar_type} has no torch dtype")
        flat = torch.frombuffer(bytearray(e.data), dtype=dtype) if e.data else torch.empty(0, dtype=dtype)
        order = list(e.layout.dim_order)
        stored = flat.reshape([e.layout.sizes[d] for d in order])
        return stored.permute([order.index(d) for d in range(len(order))])


def layout_of(tensor) -> TensorLayout:
    """The layout of a contiguous torch tensor."""
    info = scalar_types.by_torch(tensor.dtype)
    if info is None or info.pte is None:
        raise PtdFormatError(f"dtype {tensor.dtype} cannot be stored in a .ptd")
    return TensorLayout(info.number, list(tensor.shape), list(range(tensor.dim())))


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def _layout_json(layout: TensorLayout) -> dict:
    return {"scalar_type": int(layout.scalar_type), "sizes": list(layout.sizes), "dim_order": list(layout.dim_order)}


def serialize_ptd(entries: Sequence[PtdEntry], segment_alignment: int = DEFAULT_SEGMENT_ALIGNMENT) -> bytes:
    """The .ptd holding `entries`. Entries with identical bytes share one segment; keys must be unique."""
    if segment_alignment < 1 or segment_alignment & (segment_alignment - 1):
        raise ValueError(f"segment_alignment must be a power of two, got {segment_alignment}")
    seen_keys = set()
    blobs: List[bytes] = []
    aligns: List[int] = []
    by_content: Dict[tuple, int] = {}
    named = []
    for e in entries:
        if e.key in seen_keys:
            raise ValueError(f"key '{e.key}' appears twice; each name in a .ptd is unique")
        seen_keys.add(e.key)
        if e.alignment < 1 or e.alignment & (e.alignment - 1):
            raise ValueError(f"'{e.key}': alignment {e.alignment} is not a power of two")
        if e.layout is not None and e.layout.nbytes != len(e.data):
            raise ValueError(f"'{e.key}': its layout describes {e.layout.nbytes} bytes but it has {len(e.data)}")
        content = (hashlib.sha256(e.data).digest(), len(e.data))
        if content not in by_content:
            by_content[content] = len(blobs)
            blobs.append(bytes(e.data))
            aligns.append(e.alignment)
        else:
            i = by_content[content]
            aligns[i] = math.lcm(aligns[i], e.alignment)
        item = {"key": e.key, "segment_index": by_content[content]}
        if e.layout is not None:
            item["tensor_layout"] = _layout_json(e.layout)
        named.append(item)
    segments, data = [], bytearray()
    for blob, a in zip(blobs, aligns):
        start = _align(len(data), math.lcm(segment_alignment, a))
        data.extend(b"\0" * (start - len(data)))
        segments.append({"offset": start, "size": len(blob)})
        data.extend(blob)
    flatbuffer = encode(
        json.dumps({"version": VERSION, "segments": segments, "named_data": named}), FLAT_TENSOR_FBS, "the .ptd"
    )
    if flatbuffer[4:8] != FILE_IDENTIFIER:
        raise FlatcError(f"flatc wrote identifier {flatbuffer[4:8]!r}, expected {FILE_IDENTIFIER!r}")
    # The header goes after the identifier, padded so the tables keep their alignment; only the root offset,
    # stored before it, moves (flatbuffer offsets are relative to where they are stored).
    padded = _align(HEADER_LENGTH, FLATBUFFER_ALIGNMENT)
    base = _align(len(flatbuffer) + padded, segment_alignment)
    header = struct.pack("<4sIQQQQ", HEADER_MAGIC, HEADER_LENGTH, padded, len(flatbuffer), base, len(data))
    header += b"\0" * (padded - len(header))
    (root,) = struct.unpack_from("<I", flatbuffer, 0)
    head = struct.pack("<I", root + padded) + flatbuffer[4:8] + header + flatbuffer[8:]
    return head + b"\0" * (base - len(head)) + bytes(data)


def read_header(data: bytes) -> dict:
    """The FH01 header's fields, checked against the file's size."""
    if len(data) < HEADER_OFFSET + HEADER_LENGTH:
        raise PtdFormatError(f"{len(data)} bytes is too short for a .ptd (its header ends at byte 48)")
    problem = format_versions.PTD.identifier_problem(data[4:8])
    if problem:
        raise PtdFormatError(problem)
    magic, length, fb_offset, fb_size, base, seg_size = struct.unpack_from("<4sIQQQQ", data, HEADER_OFFSET)
    if magic != HEADER_MAGIC:
        raise PtdFormatError(f"the header magic at byte 8 is {magic!r}, expected {HEADER_MAGIC!r}")
    if length < HEADER_LENGTH:
        raise PtdFormatError(f"the header says it is {length} bytes; its fields take {HEADER_LENGTH}")
    fb_end = fb_offset + fb_size
    if fb_offset < HEADER_LENGTH or fb_end > len(data):
        raise PtdFormatError(
            f"the flatbuffer (offset {fb_offset}, {fb_size} bytes) does not fit the {len(data)}-byte file"
        )
    if base < fb_end or base + seg_size > len(data):
        raise PtdFormatError(
            f"the segment data ({seg_size} bytes at {base}) does not fit between the flatbuffer's end ({fb_end}) "
            f"and the end of the {len(data)}-byte file"
        )
    return {"flatbuffer_size": fb_end, "segment_base": base, "segment_data_size": seg_size}


def deserialize_ptd(data: bytes) -> PtdFile:
    """The entries of a .ptd, every offset and size checked against the file."""
    h = read_header(data)
    # flatc reads the flatbuffer with the header still inside; it never looks at those bytes.
    text = decode(bytes(data[: h["flatbuffer_size"]]), FLAT_TENSOR_FBS, "a FlatTensor", PtdFormatError)
    ft = json.loads(text)
    version = int(ft.get("version", 0))
    problem = format_versions.PTD.version_problem(version)
    if problem:
        raise PtdFormatError(problem)
    segments = [(int(s.get("offset", 0)), int(s.get("size", 0))) for s in ft.get("segments", [])]
    for i, (off, size) in enumerate(segments):
        if off + size > h["segment_data_size"]:
            raise PtdFormatError(
                f"segment {i} ({size} bytes at {off}) runs past the {h['segment_data_size']} bytes of segment data"
            )
    entries: Dict[str, PtdEntry] = {}
    for item in ft.get("named_data", []):
        key, idx = item.get("key", ""), int(item.get("segment_index", 0))
        if key in entries:
            raise PtdFormatError(f"key '{key}' appears twice")
        if not 0 <= idx < len(segments):
            raise PtdFormatError(f"'{key}' refers to segment {idx}; there are {len(segments)}")
        off, size = segments[idx]
        start = h["segment_base"] + off
        layout = None
        if "tensor_layout" in item:
            tl = item["tensor_layout"]
            st = tl.get("scalar_type", 0)
            number = scalar_types.ScalarType[st].value if isinstance(st, str) else int(st)
            layout = TensorLayout(number, [int(s) for s in tl.get("sizes", [])], list(tl.get("dim_order", [])))
            if layout.nbytes > size:
                raise PtdFormatError(f"'{key}': its layout needs {layout.nbytes} bytes; its segment has {size}")
        entries[key] = PtdEntry(key, bytes(data[start : start + size]), layout)
    return PtdFile(version, entries, h["segment_base"], segments)
