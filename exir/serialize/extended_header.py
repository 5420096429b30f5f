"""The extended header: 32 bytes at offset 8 of a .pte, after the flatbuffer's root offset and identifier.

    [8..12)  magic "eh00"
    [12..16) header length (uint32; fields are added by growing it)
    [16..24) program_size: bytes of the flatbuffer part, this header included (uint64)
    [24..32) segment_base_offset: where segment data starts (uint64)
    [32..40) segment_data_size (uint64)
All little endian. A reader that loads only program_size bytes can leave the segments (constants) in flash or
an mmap.
"""
from __future__ import annotations

import dataclasses
import struct

MAGIC = b"eh00"
OFFSET = 8
LENGTH = 32
_FORMAT = "<4sIQQQ"


@dataclasses.dataclass(frozen=True)
class ExtendedHeader:
    program_size: int
    segment_base_offset: int
    segment_data_size: int

    def encode(self) -> bytes:
        return struct.pack(_FORMAT, MAGIC, LENGTH, self.program_size, self.segment_base_offset,
                           self.segment_data_size)


def decode(data: bytes):
    """The header of `data`, or None when it has none (then the whole file is the flatbuffer)."""
    if len(data) < OFFSET + 8 or data[OFFSET:OFFSET + 4] != MAGIC:
        return None
    (length,) = struct.unpack_from("<I", data, OFFSET + 4)
    if length < LENGTH:
        raise ValueError(f"extended header length {length} is shorter than the {LENGTH} bytes it must hold")
    if len(data) < OFFSET + LENGTH:
        raise ValueError(f"file of {len(data)} bytes ends inside the extended header (needs {OFFSET + LENGTH})")
    _, _, program_size, base, size = struct.unpack_from(_FORMAT, data, OFFSET)
    return ExtendedHeader(program_size, base, size)
