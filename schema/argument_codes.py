"""Argument codes, read from argument_codes.yaml: the letters of a registration entry's arg_types.

from schema import argument_codes as ac
ac.for_schema_type("Tensor?").code      # "t"
ac.BY_CODE["t"].accepts                 # ("Tensor", "None"): EValue tags the runtime lets through
"""

from __future__ import annotations

import dataclasses
from typing import Dict, Optional, Tuple

from schema._yaml import ContractError, entry, load_list

_FILE = "argument_codes.yaml"


@dataclasses.dataclass(frozen=True)
class ArgumentCode:
    code: str
    meaning: str
    accepts: Optional[Tuple[str, ...]]  # EValue tag names; None: any value (not checked)
    schema_types: Tuple[str, ...]
    unbox: Optional[str]  # EValue accessor; None: not passed to the kernel
    unbox_written: Optional[str]  # set on the code of written arguments (Tensor(a!)): their accessor


def _read() -> Tuple[ArgumentCode, ...]:
    out = []
    for i, raw in enumerate(load_list(_FILE)):
        where = f"schema/{_FILE} entry {i}"
        e = entry(raw, where, ("code", "meaning", "accepts", "schema_types"), ("unbox", "unbox_written"))
        code = str(e["code"])
        if len(code) != 1 or not code.isalpha():
            raise ContractError(f"{where}: code '{code}' must be one letter")
        accepts = e["accepts"]
        if accepts == "any":
            accepts = None
        elif not (isinstance(accepts, list) and accepts):
            raise ContractError(f"{where} ({code}): accepts must be a list of tags or 'any'")
        out.append(
            ArgumentCode(
                code=code,
                meaning=str(e["meaning"]),
                accepts=None if accepts is None else tuple(str(a) for a in accepts),
                schema_types=tuple(str(s) for s in e["schema_types"]),
                unbox=e.get("unbox"),
                unbox_written=e.get("unbox_written"),
            )
        )
    codes: Dict[str, int] = {}
    types: Dict[str, str] = {}
    for i, c in enumerate(out):
        if codes.setdefault(c.code, i) != i:
            raise ContractError(f"schema/{_FILE}: code {c.code} is listed twice (entries {codes[c.code]} and {i})")
        for t in c.schema_types:
            if types.setdefault(t, c.code) != c.code:
                raise ContractError(f"schema/{_FILE}: schema type {t} is given to codes {types[t]} and {c.code}")
    if len([c for c in out if c.unbox_written]) != 1:
        raise ContractError(f"schema/{_FILE}: exactly one code must say how written arguments unbox (unbox_written)")
    return tuple(out)


ARGUMENT_CODES: Tuple[ArgumentCode, ...] = _read()
BY_CODE: Dict[str, ArgumentCode] = {c.code: c for c in ARGUMENT_CODES}
BY_SCHEMA_TYPE: Dict[str, ArgumentCode] = {s: c for c in ARGUMENT_CODES for s in c.schema_types}
# The code of an argument the kernel writes (Tensor(a!)); its accessor is WRITTEN.unbox_written.
WRITTEN: ArgumentCode = next(c for c in ARGUMENT_CODES if c.unbox_written)


def for_schema_type(type_key: str) -> Optional[ArgumentCode]:
    """The code of a schema type ("int[]", "Tensor?"), or None when no code carries it."""
    return BY_SCHEMA_TYPE.get(type_key)
