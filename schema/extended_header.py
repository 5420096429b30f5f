"""The extended header's layout, read from extended_header.yaml.

OFFSET, MAGIC        where the header starts (byte 8) and its first four bytes (b"eh00")
LENGTH               bytes of the fields Ember reads and writes (the smallest valid `length`)
FORMAT               their struct format, from OFFSET: magic, length, program_size, segment_base_offset,
                     segment_data_size
FIELD_OFFSETS        each field's byte offset in the file
HEAD_BYTES           how many head bytes a reader hands the parser
"""

from __future__ import annotations

import dataclasses
import struct
from typing import Dict, Tuple

from schema._yaml import ContractError, entry, load

_FILE = "extended_header.yaml"
# Field types the layout may use: struct code, C++ type (None: bytes compared, never read as a number).
TYPES: Dict[str, Tuple[str, str]] = {"char[4]": ("4s", ""), "uint32": ("I", "uint32_t"), "uint64": ("Q", "uint64_t")}
# The fields the readers and writers use, in this order.
_EXPECTED = ("magic", "length", "program_size", "segment_base_offset", "segment_data_size")


@dataclasses.dataclass(frozen=True)
class Field:
    name: str
    type: str
    offset: int  # in the file
    doc: str


def _read():
    doc = entry(load(_FILE), f"schema/{_FILE}", ("offset", "magic", "head_bytes", "fields"))
    magic = str(doc["magic"]).encode("ascii")
    if len(magic) != 4:
        raise ContractError(f"schema/{_FILE}: magic '{doc['magic']}' must be 4 ASCII characters")
    fields, offset = [], doc["offset"]
    for i, raw in enumerate(doc["fields"]):
        e = entry(raw, f"schema/{_FILE} field {i}", ("name", "type"), ("doc",))
        if e["type"] not in TYPES:
            raise ContractError(f"schema/{_FILE} field {e['name']}: type {e['type']} is not one of {sorted(TYPES)}")
        fields.append(Field(e["name"], e["type"], offset, e.get("doc", "")))
        offset += struct.calcsize("<" + TYPES[e["type"]][0])
    if tuple(f.name for f in fields) != _EXPECTED:
        raise ContractError(
            f"schema/{_FILE}: fields must be {', '.join(_EXPECTED)} in that order (readers in C++ "
            f"and Python use them by name); new fields go after them"
        )
    return doc["offset"], magic, doc["head_bytes"], tuple(fields)


OFFSET, MAGIC, HEAD_BYTES, FIELDS = _read()
FORMAT = "<" + "".join(TYPES[f.type][0] for f in FIELDS)
LENGTH = struct.calcsize(FORMAT)
FIELD_OFFSETS: Dict[str, int] = {f.name: f.offset for f in FIELDS}
