"""Schema dataclasses <-> the JSON form flatc reads and writes.

flatc's JSON spells a union field as two keys, `<field>_type` (the member's table name) and `<field>`; enums as
their names; [ubyte] vectors as lists of numbers. Non-finite doubles have no JSON spelling, so they travel as
marker strings that are swapped for flatc's `nan`/`inf` literals (and read back from them).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import re
import typing
from typing import Any, Dict

from schema import program as S

_UNIONS = {S.KernelTypes: S.KERNEL_TYPES, S.InstructionArguments: S.INSTRUCTION_TYPES}
_NONFINITE = {"__ember_nan__": "nan", "__ember_inf__": "inf", "__ember_-inf__": "-inf"}


def _encode_float(x: float):
    if math.isfinite(x):
        return x
    return "__ember_nan__" if math.isnan(x) else ("__ember_inf__" if x > 0 else "__ember_-inf__")


def _to_obj(x: Any) -> Any:
    if dataclasses.is_dataclass(x):
        out: Dict[str, Any] = {}
        hints = typing.get_type_hints(type(x))
        for f in dataclasses.fields(x):
            v = getattr(x, f.name)
            if v is None:
                continue
            if hints[f.name] in _UNIONS:
                out[f.name + "_type"] = type(v).__name__
            out[f.name] = _to_obj(v)
        return out
    if isinstance(x, enum.Enum):
        return x.name
    if isinstance(x, (bytes, bytearray)):
        return list(x)
    if isinstance(x, bool):
        return x
    if isinstance(x, float):
        return _encode_float(x)
    if isinstance(x, (list, tuple)):
        return [_to_obj(v) for v in x]
    return x


def to_json(program: S.Program) -> str:
    text = json.dumps(_to_obj(program), separators=(",", ":"))
    for marker, literal in _NONFINITE.items():
        text = text.replace(f'"{marker}"', literal)
    return text


def _from_obj(tp: Any, v: Any, key: str = "") -> Any:
    origin = typing.get_origin(tp)
    if origin is typing.Union and type(None) in typing.get_args(tp):
        inner = [a for a in typing.get_args(tp) if a is not type(None)][0]
        return None if v is None else _from_obj(inner, v, key)
    if origin in (list, typing.List):
        (inner,) = typing.get_args(tp)
        return [_from_obj(inner, x, key) for x in v]
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return tp[v] if isinstance(v, str) else tp(v)
    if tp is bytes:
        return bytes(v)
    if tp is float:
        return float(v)
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        kwargs = {}
        for f in dataclasses.fields(tp):
            ftp = hints[f.name]
            if ftp in _UNIONS:
                tag = v.get(f.name + "_type")
                if tag is None or tag == "NONE":
                    continue
                member = {m.__name__: m for m in _UNIONS[ftp]}.get(tag)
                if member is None:
                    raise ValueError(f"{tp.__name__}.{f.name}: unknown union member '{tag}'")
                kwargs[f.name] = _from_obj(member, v.get(f.name, {}), f.name)
            elif f.name in v:
                kwargs[f.name] = _from_obj(ftp, v[f.name], f.name)
        return tp(**kwargs)
    return v


# flatc writes non-finite doubles as bare `inf`, `-inf` and `nan` (e.g. the unbounded side of a fused relu's
# clamp), which JSON lacks; outside string literals they become the spellings Python's json module reads.
_STRING_OR_NONFINITE = re.compile(r'"(?:[^"\\]|\\.)*"|(?<![\w.])(-?(?:inf|nan))(?![\w.])')
_JSON_NONFINITE = {"inf": "Infinity", "-inf": "-Infinity", "nan": "NaN", "-nan": "NaN"}


def _read_nonfinite(text: str) -> str:
    return _STRING_OR_NONFINITE.sub(lambda m: _JSON_NONFINITE[m.group(1)] if m.group(1) else m.group(0), text)


def from_json(text: str) -> S.Program:
    return _from_obj(S.Program, json.loads(_read_nonfinite(text)))
