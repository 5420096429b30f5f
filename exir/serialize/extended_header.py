"""The extended header of a .pte, encoded and decoded with the contract's layout (schema/extended_header.yaml).

Its fields: magic "eh00", header length, program_size (bytes of the flatbuffer part, this header included),
segment_base_offset (where segment data starts) and segment_data_size. A reader that loads only program_size
bytes can leave the segments (constants) in flash or an mmap.
"""

from __future__ import annotations

import dataclasses
import struct

from schema.extended_header import FORMAT as _FORMAT
from schema.extended_header import FIELD_OFFSETS, LENGTH, MAGIC, OFFSET

_LENGTH_AT = FIELD_OFFSETS["length"]


@dataclasses.dataclass(frozen=True)
class ExtendedHeader:
    program_size: int
    segment_base_offset: int
    segment_data_size: int

    def encode(self) -> bytes:
        return struct.pack(_FORMAT, MAGIC, LENGTH, self.program_size, self.segment_base_offset, self.segment_data_size)


def decode(data: bytes):
    """The header of `data`, or None when it has none (then the whole file is the flatbuffer)."""
    if len(data) < _LENGTH_AT + 4 or data[OFFSET : OFFSET + len(MAGIC)] != MAGIC:
        return None
    (length,) = struct.unpack_from("<I", data, _LENGTH_AT)
    if length < LENGTH:
        raise ValueError(f"extended header length {length} is shorter than the {LENGTH} bytes it must hold")
    if len(data) < OFFSET + LENGTH:
        raise ValueError(f"file of {len(data)} bytes ends inside the extended header (needs {OFFSET + LENGTH})")
    _, _, program_size, base, size = struct.unpack_from(_FORMAT, data, OFFSET)
    return ExtendedHeader(program_size, base, size)
