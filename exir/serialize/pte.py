"""A Program plus its constant data <-> the bytes of a .pte file.

Layout: the flatbuffer (with the 32-byte extended header inserted at byte 8), zero padding up to the segment
base (aligned so segments can be mmapped), then the segments. The constant segment holds every constant
tensor, each at `constant_tensor_alignment`, and `Program.constant_segment.offsets[i]` says where constant `i`
starts (entry 0 is reserved: data_buffer_idx 0 means "not a constant").
"""

from __future__ import annotations

import copy
import dataclasses
import struct
from typing import Optional, Sequence

from exir.serialize import extended_header as eh
from exir.serialize.flatc import FlatcError, binary_to_json, json_to_binary
from exir.serialize.json_codec import from_json, to_json
from schema import format_versions
from schema import program as S
from schema.fbs import FILE_IDENTIFIER


class PteFormatError(ValueError):
    """The bytes are not a well-formed .pte; the message says what is wrong and where."""


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def _layout_constants(blobs: Sequence[bytes], alignment: int):
    offsets, data = [0], bytearray()
    for blob in blobs:
        data.extend(b"\0" * (_align(len(data), alignment) - len(data)))
        offsets.append(len(data))
        data.extend(blob)
    return offsets, bytes(data)


def serialize_pte(
    program: S.Program,
    constant_blobs: Sequence[bytes] = (),
    *,
    mutable_blobs: Sequence[bytes] = (),
    delegate_blobs: Sequence[bytes] = (),
    segment_alignment: int = 4096,
    constant_tensor_alignment: int = 16,
    named_data: Sequence[tuple] = (),
    named_data_alignment: int = 64,
) -> bytes:
    """Encodes `program` with its data segments.

    `constant_blobs[i]` is the data of the constant tensor with data_buffer_idx i + 1. `mutable_blobs[i]` is the
    initial value of the planned tensor (a mutable buffer) with data_buffer_idx i + 1: those go to a segment of
    their own, referenced from `mutable_data_segments[0]`, so that the constant segment stays read-only.
    `delegate_blobs[k]` is the blob of every delegate whose processed reference says SEGMENT with index k: each
    becomes a segment of its own (aligned, so a backend can map it), and the reference its segment index, as
    ExecuTorch lays delegate segments out.
    `named_data` is (key, bytes) or (key, bytes, alignment) per entry of Program.named_data (weights a delegate's
    blob refers to by key): each becomes a segment of its own at `named_data_alignment` (or its own alignment when
    larger). Not the segment alignment: a program carries one per weight (ResNet18's XNNPACK delegate: 62), and a
    backend copies or packs them at init, so page alignment would only add padding.
    """
    for name, a in (("segment_alignment", segment_alignment), ("constant_tensor_alignment", constant_tensor_alignment)):
        if a < 1 or a & (a - 1):
            raise ValueError(f"{name} must be a power of two, got {a}")
    program = copy.copy(program)
    # Segment 0 is always the constant segment, even when empty: ExecuTorch's runtime reads an empty offsets table
    # as the deprecated inline constant_buffer path and refuses the program.
    offsets, constants = _layout_constants(constant_blobs, constant_tensor_alignment)
    program.segments = [S.DataSegment(offset=0, size=len(constants))]
    program.constant_segment = S.SubsegmentOffsets(segment_index=0, offsets=offsets)
    segment_data = constants
    if mutable_blobs:
        m_offsets, mutable = _layout_constants(mutable_blobs, constant_tensor_alignment)
        start = _align(len(segment_data), segment_alignment)
        segment_data += b"\0" * (start - len(segment_data)) + mutable
        program.segments.append(S.DataSegment(offset=start, size=len(mutable)))
        program.mutable_data_segments = [S.SubsegmentOffsets(segment_index=1, offsets=m_offsets)]
    if delegate_blobs:
        first = len(program.segments)
        for blob in delegate_blobs:
            start = _align(len(segment_data), segment_alignment)
            segment_data += b"\0" * (start - len(segment_data)) + bytes(blob)
            program.segments.append(S.DataSegment(offset=start, size=len(blob)))
        plans = []
        for plan in program.execution_plan:
            plan = copy.copy(plan)
            plan.delegates = [copy.deepcopy(d) for d in plan.delegates]
            for d in plan.delegates:
                if d.processed is not None and d.processed.location == S.DataLocation.SEGMENT:
                    if not 0 <= d.processed.index < len(delegate_blobs):
                        raise ValueError(
                            f"delegate '{d.id}' refers to delegate blob {d.processed.index}; there are "
                            f"{len(delegate_blobs)}"
                        )
                    d.processed.index += first
            plans.append(plan)
        program.execution_plan = plans
    if named_data:
        entries = []
        segment_data = bytearray(segment_data)  # appended to once per weight: no copy of what is there each time
        for item in named_data:
            key, blob = item[0], bytes(item[1])
            align = max(named_data_alignment, item[2] if len(item) > 2 else 1)
            if align & (align - 1):
                raise ValueError(f"named data '{key}': alignment {align} is not a power of two")
            start = _align(len(segment_data), align)
            segment_data.extend(b"\0" * (start - len(segment_data)))
            segment_data.extend(blob)
            entries.append(S.NamedData(key=key, segment_index=len(program.segments)))
            program.segments.append(S.DataSegment(offset=start, size=len(blob)))
        program.named_data = entries
        segment_data = bytes(segment_data)
    flatbuffer = json_to_binary(to_json(program))
    if flatbuffer[4:8] != FILE_IDENTIFIER:
        raise FlatcError(f"flatc wrote identifier {flatbuffer[4:8]!r}, expected {FILE_IDENTIFIER!r}")
    # The header goes between the identifier and the tables. Flatbuffer offsets are relative to where they are
    # stored, so only the root offset (stored before the insertion point) moves; 32 bytes keep every alignment.
    (root,) = struct.unpack_from("<I", flatbuffer, 0)
    program_size = len(flatbuffer) + eh.LENGTH
    base = _align(program_size, segment_alignment)
    header = eh.ExtendedHeader(program_size, base, len(segment_data)).encode()
    head = struct.pack("<I", root + eh.LENGTH) + flatbuffer[4:8] + header + flatbuffer[8:]
    return head + b"\0" * (base - program_size) + segment_data


@dataclasses.dataclass
class PteFile:
    program: S.Program
    header: Optional[eh.ExtendedHeader]
    program_bytes: int
    segment_base: int
    data: bytes  # the whole file

    def segment(self, index: int) -> bytes:
        seg = self.program.segments[index]
        start = self.segment_base + seg.offset
        return self.data[start : start + seg.size]

    def constant(self, data_buffer_idx: int, nbytes: int) -> bytes:
        """The bytes of constant `data_buffer_idx` (1-based), `nbytes` long."""
        cs = self.program.constant_segment
        if cs is None or not 0 < data_buffer_idx < len(cs.offsets):
            raise PteFormatError(
                f"constant {data_buffer_idx} is not in the constant segment "
                f"({0 if cs is None else len(cs.offsets)} entries)"
            )
        seg = self.segment(cs.segment_index)
        start = cs.offsets[data_buffer_idx]
        if start + nbytes > len(seg):
            raise PteFormatError(
                f"constant {data_buffer_idx} needs bytes [{start}, {start + nbytes}) of a "
                f"{len(seg)}-byte constant segment"
            )
        return seg[start : start + nbytes]

    @property
    def constant_bytes(self) -> int:
        cs = self.program.constant_segment
        if cs is None or not self.program.segments or cs.segment_index >= len(self.program.segments):
            return 0
        return self.program.segments[cs.segment_index].size


def deserialize_pte(data: bytes) -> PteFile:
    """Parses and checks a .pte. Raises PteFormatError naming the first problem found."""
    data = bytes(data)
    if len(data) < 8:
        raise PteFormatError(
            f"file is {len(data)} bytes; a .pte starts with at least 8 (root offset, '{FILE_IDENTIFIER.decode()}')"
        )
    problem = format_versions.PTE.identifier_problem(data[4:8])
    if problem:
        raise PteFormatError(problem)
    try:
        header = eh.decode(data)
    except ValueError as e:
        raise PteFormatError(str(e)) from None
    if header is None:
        program_bytes, base, seg_size = len(data), len(data), 0
    else:
        program_bytes, base, seg_size = header.program_size, header.segment_base_offset, header.segment_data_size
        if program_bytes > len(data):
            raise PteFormatError(
                f"truncated: the header says the program is {program_bytes} bytes, the file has {len(data)}"
            )
        if base < program_bytes:
            raise PteFormatError(f"segment base {base} lies inside the program (which ends at {program_bytes})")
        if seg_size and base + seg_size > len(data):
            raise PteFormatError(
                f"truncated: segment data needs bytes [{base}, {base + seg_size}) but the file has {len(data)}"
            )
    (root,) = struct.unpack_from("<I", data, 0)
    if root >= program_bytes:
        raise PteFormatError(f"root offset {root} points past the program's {program_bytes} bytes")
    try:
        program = from_json(binary_to_json(data[:program_bytes]))
    except (FlatcError, ValueError, KeyError, TypeError) as e:
        raise PteFormatError(f"the program table is malformed: {e}") from None
    problem = format_versions.PTE.version_problem(program.version)
    if problem:
        raise PteFormatError(problem)
    for i, seg in enumerate(program.segments):
        if seg.offset + seg.size > seg_size:
            raise PteFormatError(
                f"segment {i} needs bytes [{base + seg.offset}, {base + seg.offset + seg.size}) "
                f"but segment data ends at {base + seg_size}"
            )
    cs = program.constant_segment
    if cs is not None and cs.offsets and cs.segment_index >= len(program.segments):
        raise PteFormatError(
            f"constant segment index {cs.segment_index} but the file has {len(program.segments)} segments"
        )
    return PteFile(program, header, program_bytes, base, data)
