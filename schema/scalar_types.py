"""ScalarType, read from scalar_types.yaml: numbers, names, sizes, torch dtypes and .pte enum names.

from schema import scalar_types as st
st.by_name("Float").number            # 6
st.pte_scalar_type(torch.float32)     # st.ScalarType.FLOAT (raises NotInFormat for complex dtypes)
st.ScalarType                         # program.fbs's enum, as an IntEnum of its names
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Dict, Optional, Tuple

from schema._yaml import ContractError, entry, load_list

_FILE = "scalar_types.yaml"


@dataclasses.dataclass(frozen=True)
class ScalarTypeInfo:
    number: int
    name: str  # c10's spelling: "Float"
    size: int  # bytes per element
    torch: str  # torch.dtype attribute: "float32"
    pte: Optional[str]  # program.fbs enum name ("FLOAT"); None: a .pte cannot hold the type
    cpp: Optional[str]  # C++ type of a stored element, dispatched on; None: kernels cannot compute on it
    storage: bool  # False: the runtime holds no tensor of this type

    @property
    def runtime_element_size(self) -> int:
        """What the C++ runtime's element_size() says: 0 for a type it has no storage for."""
        return self.size if self.storage else 0

    def torch_dtype(self):
        """The torch.dtype, or None when this torch build lacks it."""
        import torch

        return getattr(torch, self.torch, None)


class NotInFormat(ValueError):
    """A dtype that a .pte cannot carry; the message says why and what to do."""


def _read() -> Tuple[ScalarTypeInfo, ...]:
    out = []
    for i, raw in enumerate(load_list(_FILE)):
        e = entry(raw, f"schema/{_FILE} entry {i}", ("number", "name", "size", "torch"), ("pte", "cpp", "storage"))
        if e["number"] != i:
            raise ContractError(
                f"schema/{_FILE} entry {i} ({e['name']}): number {e['number']}, but ScalarTypes are "
                f"numbered densely from 0 in order (the runtime indexes tables by number)"
            )
        if not isinstance(e["size"], int) or e["size"] <= 0:
            raise ContractError(f"schema/{_FILE} entry {i} ({e['name']}): size must be a positive number of bytes")
        out.append(
            ScalarTypeInfo(
                number=i,
                name=str(e["name"]),
                size=e["size"],
                torch=str(e["torch"]),
                pte=e.get("pte"),
                cpp=e.get("cpp"),
                storage=bool(e.get("storage", True)),
            )
        )
    for attr in ("name", "torch", "pte"):
        seen: Dict[str, int] = {}
        for t in out:
            v = getattr(t, attr)
            if v is not None and seen.setdefault(v, t.number) != t.number:
                raise ContractError(f"schema/{_FILE}: {attr} '{v}' is used by ScalarTypes {seen[v]} and {t.number}")
    return tuple(out)


SCALAR_TYPES: Tuple[ScalarTypeInfo, ...] = _read()
BY_NAME: Dict[str, ScalarTypeInfo] = {t.name: t for t in SCALAR_TYPES}
BY_TORCH: Dict[str, ScalarTypeInfo] = {t.torch: t for t in SCALAR_TYPES}

# program.fbs's ScalarType enum (generated into scalar_type.fbs from the same list): its names on the wire.
ScalarType = enum.IntEnum("ScalarType", [(t.pte, t.number) for t in SCALAR_TYPES if t.pte], module=__name__)


def by_name(name: str) -> ScalarTypeInfo:
    if name not in BY_NAME:
        raise ContractError(f"unknown ScalarType '{name}'; the names are {', '.join(BY_NAME)} (schema/{_FILE})")
    return BY_NAME[name]


def by_number(number: int) -> Optional[ScalarTypeInfo]:
    """The type numbered `number`, or None when no ScalarType has that number."""
    return SCALAR_TYPES[number] if 0 <= number < len(SCALAR_TYPES) else None


def by_torch(dtype) -> Optional[ScalarTypeInfo]:
    """The type of a torch.dtype, or None when Ember's list lacks it."""
    return BY_TORCH.get(str(dtype).replace("torch.", "", 1))


def pte_scalar_type(dtype) -> ScalarType:
    """The .pte enum value of a torch.dtype; NotInFormat names the dtype and says what to do when there is none."""
    info = by_torch(dtype)
    if info is None:
        raise NotInFormat(
            f"dtype {dtype} is not a ScalarType Ember knows (schema/{_FILE}); convert the tensor to "
            f"one of {', '.join('torch.' + t.torch for t in SCALAR_TYPES if t.pte)} before export"
        )
    if not info.storage:
        raise NotInFormat(
            f"dtype {dtype} (ScalarType {info.name}) cannot be exported: the .pte format (ExecuTorch's "
            f"program.fbs) has no complex types and Ember's runtime stores none. Keep complex numbers "
            f"out of the exported model: compute on real and imaginary parts as real tensors (or a "
            f"last dimension of size 2) instead"
        )
    if info.pte is None:
        raise NotInFormat(
            f"dtype {dtype} (ScalarType {info.name}) has no .pte scalar type (program.fbs's ScalarType "
            f"enum lacks it, as ExecuTorch's does); convert the tensor to a supported dtype before "
            f"export"
        )
    return ScalarType[info.pte]


def mask(names) -> int:
    """The dtype mask of ScalarType names (bit n = ScalarType n)."""
    m = 0
    for name in names:
        m |= 1 << by_name(name).number
    return m
