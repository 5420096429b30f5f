"""The flatbuffer schema files: program.fbs as written, scalar_type.fbs generated from scalar_types.yaml.

flatc needs both side by side; `write_fbs(directory)` puts them there (the Bazel build does the same with
generate.py), so the ScalarType enum on the wire is the contract's and is written nowhere else.
"""
from __future__ import annotations

import os
import re
import shutil

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
