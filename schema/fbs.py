"""The flatbuffer schema files: program.fbs as written, scalar_type.fbs generated from scalar_types.yaml.

flatc needs both side by side; `write_fbs(directory)` puts them there (the Bazel build does the same with
generate.py), so the ScalarType enum on the wire is the contract's and is written nowhere else.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from typing import Dict, List, Tuple

from schema._yaml import SCHEMA_DIR, ContractError
from schema.scalar_types import SCALAR_TYPES

PROGRAM_FBS = os.path.join(SCHEMA_DIR, "program.fbs")


def _file_identifier() -> bytes:
    with open(PROGRAM_FBS) as f:
        m = re.search(r'^file_identifier\s+"(\w{4})"\s*;', f.read(), re.M)
    if m is None:
        raise ContractError(f"{PROGRAM_FBS} declares no 4-character file_identifier")
    return m.group(1).encode("ascii")


# b"ET12": bytes 4..8 of every .pte.
FILE_IDENTIFIER = _file_identifier()


def scalar_type_fbs() -> str:
    lines = [
        "// Generated from schema/scalar_types.yaml by schema/fbs.py. Do not edit.",
        "// Tensor element types, numbered as PyTorch's c10::ScalarType (and so as ExecuTorch's); a type this enum",
        "// lacks (complex, bits1x8..bits8) cannot be stored in a .pte.",
        "namespace ember_pte;",
        "",
        "enum ScalarType : byte {",
        *(f"  {t.pte} = {t.number}," for t in SCALAR_TYPES if t.pte),
        "}",
        "",
    ]
    return "\n".join(lines)


def write_fbs(directory: str) -> str:
    """Writes program.fbs and scalar_type.fbs into `directory`; returns the path of program.fbs there."""
    shutil.copyfile(PROGRAM_FBS, os.path.join(directory, "program.fbs"))
    with open(os.path.join(directory, "scalar_type.fbs"), "w") as f:
        f.write(scalar_type_fbs())
    return os.path.join(directory, "program.fbs")


# The flatbuffer schema as the runtime's verifier walks it (schema/flatbuffer_schema.h): every table's vtable
# slots in order, each with what it holds. Only what program.fbs uses is read; anything else is refused by name,
# so a schema change that needs a new kind of check cannot pass unverified.
SCALAR_BYTES = {
    "bool": 1,
    "byte": 1,
    "ubyte": 1,
    "int8": 1,
    "uint8": 1,
    "short": 2,
    "ushort": 2,
    "int16": 2,
    "uint16": 2,
    "int": 4,
    "uint": 4,
    "int32": 4,
    "uint32": 4,
    "float": 4,
    "float32": 4,
    "long": 8,
    "ulong": 8,
    "int64": 8,
    "uint64": 8,
    "double": 8,
    "float64": 8,
}
# Attributes that change nothing flatc's verifier checks (force_align: flatc 2.0.8 verifies a vector's length
# word, not the alignment of its elements).
_NEUTRAL_ATTRIBUTES = {"force_align"}


@dataclass(frozen=True)
class Slot:
    """One vtable slot. kind: scalar (`size` bytes), string, vector (of `size`-byte scalars), table, tables (a
    vector of them; `ref` names the table), union (the value; `ref` names the union; the slot before holds its
    type byte), deprecated (flatc does not verify it)."""

    field: str
    kind: str
    size: int = 0
    ref: str = ""
    type: str = ""  # as program.fbs writes it


@dataclass(frozen=True)
class Schema:
    tables: Dict[str, List[Slot]]  # in declaration order: a table's index is its id
    unions: Dict[str, List[str]]  # member tables in declaration order; member i has type i + 1
    root: str


_TOKEN = re.compile(r'\s*(?:(//[^\n]*)|("[^"]*")|([A-Za-z_][\w.]*|-?\d+)|(.))', re.S)


def _tokens(text: str) -> List[str]:
    out = []
    for comment, string, word, punct in _TOKEN.findall(text):
        if comment:
            continue
        out.append(string or word or punct)
    return [t for t in out if t.strip()]


def parse_schema(text: str, included: str = "") -> Schema:
    """The tables, unions and root type of `text` (program.fbs); `included` is the text of the files it
    includes (scalar_type.fbs), whose enums it may name."""
    enums: Dict[str, int] = {}
    raw_tables: Dict[str, List[Tuple[str, str, List[str]]]] = {}
    unions: Dict[str, List[str]] = {}
    root = ""
    toks = _tokens(included + "\n" + text)
    i = 0

    def expect(t: str) -> None:
        nonlocal i
        if toks[i] != t:
            raise ContractError(f"program.fbs: expected '{t}' near '{' '.join(toks[max(0, i - 3) : i + 3])}'")
        i += 1

    while i < len(toks):
        word = toks[i]
        if word in ("include", "namespace", "file_identifier", "file_extension", "attribute"):
            while toks[i] != ";":
                i += 1
            i += 1
        elif word == "root_type":
            root = toks[i + 1]
            i += 3
        elif word == "enum":
            name, underlying = toks[i + 1], toks[i + 3]
            if underlying not in SCALAR_BYTES:
                raise ContractError(f"program.fbs: enum {name} has no integer type")
            enums[name] = SCALAR_BYTES[underlying]
            i = toks.index("}", i) + 1
        elif word == "union":
            name = toks[i + 1]
            i += 2
            expect("{")
            members = []
            while toks[i] != "}":
                if toks[i] in (":", "="):
                    raise ContractError(f"program.fbs: union {name}: aliased or numbered members are not read here")
                if toks[i] != ",":
                    members.append(toks[i])
                i += 1
            i += 1
            unions[name] = members
        elif word == "table":
            name = toks[i + 1]
            i += 2
            expect("{")
            fields = []
            while toks[i] != "}":
                field = toks[i]
                i += 1
                expect(":")
                if toks[i] == "[":
                    type_ = "[" + toks[i + 1] + "]"
                    i += 3
                else:
                    type_ = toks[i]
                    i += 1
                if toks[i] == "=":
                    i += 2
                attrs = []
                if toks[i] == "(":
                    i += 1
                    while toks[i] != ")":
                        if toks[i] != "," and toks[i - 1] != ":" and toks[i] != ":":
                            attrs.append(toks[i])
                        i += 1
                    i += 1
                expect(";")
                fields.append((field, type_, attrs))
            i += 1
            raw_tables[name] = fields
        elif word == "struct":
            raise ContractError(f"program.fbs: struct {toks[i + 1]}: the runtime's verifier table has no structs")
        else:
            raise ContractError(f"program.fbs: cannot read '{' '.join(toks[i : i + 4])}'")

    def slots_of(table: str, field: str, type_: str, attrs: List[str]) -> List[Slot]:
        unknown = [a for a in attrs if a not in _NEUTRAL_ATTRIBUTES and a != "deprecated"]
        if unknown:
            raise ContractError(
                f"program.fbs: {table}.{field} has attribute {unknown[0]}, which the runtime's "
                f"verifier table does not describe"
            )
        if "deprecated" in attrs:
            return [Slot(field + "_type", "deprecated")] * (type_ in unions) + [Slot(field, "deprecated", type=type_)]
        inner = type_[1:-1] if type_.startswith("[") else ""
        if not inner:
            if type_ in SCALAR_BYTES or type_ in enums:
                return [Slot(field, "scalar", SCALAR_BYTES.get(type_) or enums[type_], type=type_)]
            if type_ == "string":
                return [Slot(field, "string", type=type_)]
            if type_ in raw_tables:
                return [Slot(field, "table", ref=type_, type=type_)]
            if type_ in unions:
                return [Slot(field + "_type", "scalar", 1, type="ubyte"), Slot(field, "union", ref=type_, type=type_)]
        else:
            if inner in SCALAR_BYTES or inner in enums:
                return [Slot(field, "vector", SCALAR_BYTES.get(inner) or enums[inner], type=type_)]
            if inner in raw_tables:
                return [Slot(field, "tables", ref=inner, type=type_)]
        raise ContractError(
            f"program.fbs: {table}.{field} has type {type_}, which the runtime's verifier table does not describe"
        )

    tables = {t: [s for f in fields for s in slots_of(t, *f)] for t, fields in raw_tables.items()}
    for u, members in unions.items():
        for m in members:
            if m not in tables:
                raise ContractError(f"program.fbs: union {u} member {m} is not a table")
    if root not in tables:
        raise ContractError("program.fbs: no root_type table")
    return Schema(tables, unions, root)


def program_schema() -> Schema:
    with open(PROGRAM_FBS) as f:
        return parse_schema(f.read(), scalar_type_fbs())
