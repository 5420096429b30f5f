"""Kernel manifests: which kernel function implements which operator schema, for which dtypes.

A manifest is a YAML list; each entry names an out-variant schema, the C++ kernel, its source file and the
dtypes it computes (see kernels/README.md). Schemas are parsed with torchgen, PyTorch's own schema parser, so
a manifest says exactly what PyTorch's operator says.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Dict, List, Optional, Sequence, Tuple

from torchgen.model import FunctionSchema

from codegen.yaml_input import dtype_list, read_yaml, type_name

# ExecuTorch's ScalarType numbering (it is PyTorch's c10 numbering), by the names manifests use.
SCALAR_TYPES: Dict[str, int] = {
    "Byte": 0, "Char": 1, "Short": 2, "Int": 3, "Long": 4, "Half": 5, "Float": 6, "Double": 7, "ComplexHalf": 8,
    "ComplexFloat": 9, "ComplexDouble": 10, "Bool": 11, "QInt8": 12, "QUInt8": 13, "QInt32": 14, "BFloat16": 15,
    "QUInt4x2": 16, "QUInt2x4": 17, "Bits16": 22, "Float8_e5m2": 23, "Float8_e4m3fn": 24, "UInt16": 27,
    "UInt32": 28, "UInt64": 29,
}
SCALAR_TYPE_NAMES = {v: k for k, v in SCALAR_TYPES.items()}


class ManifestError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class KernelDecl:
    op: str                  # "aten::add.out": the name a .pte's Operator table uses (name + "." + overload)
    schema: FunctionSchema
    kernel: str              # C++ function, unqualified ("add_out")
    namespace: str           # C++ namespace of the library ("ember::portable")
    file: str                # source file of the kernel family, relative to the library
    dtypes: Tuple[int, ...]  # ScalarType numbers the kernel computes
    library: str             # Bazel package of the library ("kernels/portable")

    @property
    def dtype_mask(self) -> int:
        m = 0
        for d in self.dtypes:
            m |= 1 << d
        return m


def op_name(schema: FunctionSchema, namespace: str = "aten") -> str:
    overload = schema.name.overload_name
    return f"{namespace}::{schema.name.name}" + (f".{overload}" if overload else "")


def _parse_entry(entry: dict, where: str, namespace: str, library: str) -> KernelDecl:
    keys = ("func", "kernel", "file", "dtypes")
    if not isinstance(entry, dict):
        raise ManifestError(f"{where}: each entry is a mapping with {', '.join(keys)}, got {type_name(entry)}")
    if isinstance(entry.get("func"), str):
        where += f" ({entry['func'].split('(')[0]})"
    for key in keys:
        if key not in entry:
            raise ManifestError(f"{where}: missing '{key}' (each entry needs func, kernel, file, dtypes)")
    unknown = sorted(set(map(str, entry)) - set(keys))
    if unknown:
        raise ManifestError(f"{where}: unknown key {unknown[0]!r}; each entry has exactly {', '.join(keys)}")
    for key in ("func", "kernel", "file"):
        if not isinstance(entry[key], str) or not entry[key].strip():
            raise ManifestError(f"{where}: '{key}' must be a non-empty string, got {type_name(entry[key])}")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", entry["kernel"]):
        raise ManifestError(f"{where}: kernel {entry['kernel']!r} is not a C++ function name (the kernel's "
                            f"unqualified name, e.g. add_out)")
    dtype_list(entry["dtypes"], where, ManifestError)
    func = entry["func"]
    op_ns = "aten"
    if "::" in func:
        op_ns, func = func.split("::", 1)
    try:
        schema = FunctionSchema.parse(func)
    except Exception as e:  # torchgen raises AssertionError/RuntimeError with its own text
        raise ManifestError(f"{where}: cannot parse schema '{entry['func']}': {e}") from None
    writes = [a for a in schema.arguments.flat_all if a.annotation is not None and a.annotation.is_write]
    # Prim ops (sym_size, scalar arithmetic) return a number: they write the method's return value instead.
    scalar_result = schema.returns and all(str(r.type) != "Tensor" for r in schema.returns)
    if not writes and not scalar_result:
        raise ManifestError(f"{where}: '{entry['func']}' is not an out variant; kernels write into out= tensors "
                            f"the planner placed (or, for in-place ops like copy_, into self)")
    return KernelDecl(op=op_name(schema, op_ns), schema=schema, kernel=entry["kernel"], namespace=namespace,
                      file=entry["file"], dtypes=tuple(sorted(SCALAR_TYPES[d] for d in entry["dtypes"])),
                      library=library)


def load_manifest(path: str, *, namespace: str, library: str) -> List[KernelDecl]:
    entries, lines = read_yaml(path, ManifestError)
    entries = entries or []
    if not isinstance(entries, list):
        raise ManifestError(f"{path}: expected a list of kernel entries (each '- func: ...'), got {type_name(entries)}")
    decls, seen = [], {}
    for i, entry in enumerate(entries):
        d = _parse_entry(entry, f"{path}:{lines.get(i, '?')} (entry {i})", namespace, library)
        if d.op in seen:
            j = seen[d.op]
            raise ManifestError(f"{path}: operator {d.op} declared twice (entries {j} and {i}, lines "
                                f"{lines.get(j, '?')} and {lines.get(i, '?')}); keep one")
        seen[d.op] = i
        decls.append(d)
    return decls


def merge(manifests: Sequence[Sequence[KernelDecl]]) -> List[KernelDecl]:
    """Several libraries into one table; the first library that declares an op wins (optimized before portable)."""
    return [chain[0] for chain in merge_chains(manifests)]


def merge_chains(manifests: Sequence[Sequence[KernelDecl]]) -> List[List[KernelDecl]]:
    """Per op, every library's kernel for it in priority order: the first is registered, and the dtypes it does not
    compute fall through to the next (an optimized kernel covers Float and hands other dtypes to portable)."""
    out: Dict[str, List[KernelDecl]] = {}
    for decls in manifests:
        for d in decls:
            out.setdefault(d.op, []).append(d)
    return [out[op] for op in sorted(out)]


def find(decls: Sequence[KernelDecl], op: str) -> Optional[KernelDecl]:
    return next((d for d in decls if d.op == op), None)
