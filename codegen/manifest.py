"""Kernel manifests: which kernel function implements which operator schema, for which dtypes.

A manifest is a YAML list; each entry names an out-variant schema, the C++ kernel, its source file and the
dtypes it computes (see kernels/README.md). Schemas are parsed with torchgen, PyTorch's own schema parser, so
a manifest says exactly what PyTorch's operator says. Ember's own operators are named (`op:`) rather than
written out: their schemas live in the format contract (schema/operators.yaml). Dtype names and numbers are
the contract's too (schema/scalar_types.yaml).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Dict, List, Optional, Sequence, Tuple

from torchgen.model import FunctionSchema

from codegen.yaml_input import dtype_list, read_yaml, type_name
from schema import operators, scalar_types


class ManifestError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class KernelDecl:
    op: str  # "aten::add.out": the name a .pte's Operator table uses (name + "." + overload)
    schema: FunctionSchema
    kernel: str  # C++ function, unqualified ("add_out")
    namespace: str  # C++ namespace of the library ("ember::portable")
    file: str  # source file of the kernel family, relative to the library
    dtypes: Tuple[int, ...]  # ScalarType numbers the kernel computes
    library: str  # Bazel package of the library ("kernels/portable")
    # The kernel's prepare step (runtime/kernel/kernel_args.h), C++ functions in the same namespace, or None.
    memory: Optional[str] = None
    prepare: Optional[str] = None
    # The kernel computes its dtypes only for some calls (a layout, a dim) and hands the others on: the next
    # library's kernel is then compiled for those dtypes too.
    partial: bool = False

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
    keys = ("kernel", "file", "dtypes")
    if not isinstance(entry, dict):
        raise ManifestError(
            f"{where}: each entry is a mapping with func (or op), {', '.join(keys)}, got {type_name(entry)}"
        )
    name_key = "op" if "op" in entry and "func" not in entry else "func"
    if isinstance(entry.get(name_key), str):
        where += f" ({entry[name_key].split('(')[0]})"
    if "func" in entry and "op" in entry:
        raise ManifestError(
            f"{where}: give either 'func' (the out-variant schema) or 'op' (an operator of "
            f"schema/operators.yaml, such as ember::convolution_clamp.out), not both"
        )
    for key in (name_key,) + keys:
        if key not in entry:
            raise ManifestError(f"{where}: missing '{key}' (each entry needs func or op, kernel, file, dtypes)")
    optional = ("memory", "prepare", "partial")
    unknown = sorted(set(map(str, entry)) - {name_key, *keys, *optional})
    if unknown:
        raise ManifestError(
            f"{where}: unknown key {unknown[0]!r}; each entry has {name_key}, {', '.join(keys)}, "
            f"and optionally {' and '.join(optional)} (a prepare step: kernels/README.md)"
        )
    if "partial" in entry and not isinstance(entry["partial"], bool):
        raise ManifestError(f"{where}: 'partial' is true or false, got {entry['partial']!r}")
    for key in ("memory", "prepare"):
        if key in entry and not (isinstance(entry[key], str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", entry[key])):
            raise ManifestError(
                f"{where}: '{key}' must name a C++ function of the library (e.g. conv2d_{key}), got {entry[key]!r}"
            )
    if "prepare" in entry and "memory" not in entry:
        raise ManifestError(
            f"{where}: 'prepare' needs 'memory' too: the memory function says how many bytes of "
            f"state prepare fills (return zeros if it keeps none)"
        )
    for key in (name_key, "kernel", "file"):
        if not isinstance(entry[key], str) or not entry[key].strip():
            raise ManifestError(f"{where}: '{key}' must be a non-empty string, got {type_name(entry[key])}")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", entry["kernel"]):
        raise ManifestError(
            f"{where}: kernel {entry['kernel']!r} is not a C++ function name (the kernel's "
            f"unqualified name, e.g. add_out)"
        )
    dtype_list(entry["dtypes"], where, ManifestError)
    if name_key == "op":
        contract = operators.find(entry["op"])
        if contract is None or not entry["op"].endswith(".out"):
            known = ", ".join(o.out_name for o in operators.OPERATORS)
            raise ManifestError(
                f"{where}: op '{entry['op']}' is not an out= operator of schema/operators.yaml "
                f"({known}); write its schema as func instead"
            )
        text = f"{contract.namespace}::{contract.out}"
    else:
        text = entry["func"]
    op_ns, func = text.split("::", 1) if "::" in text else ("aten", text)
    try:
        schema = FunctionSchema.parse(func)
    except Exception as e:  # torchgen raises AssertionError/RuntimeError with its own text
        raise ManifestError(f"{where}: cannot parse schema '{text}': {e}") from None
    writes = [a for a in schema.arguments.flat_all if a.annotation is not None and a.annotation.is_write]
    # Prim ops (sym_size, scalar arithmetic) return a number: they write the method's return value instead.
    scalar_result = schema.returns and all(str(r.type) != "Tensor" for r in schema.returns)
    if not writes and not scalar_result:
        raise ManifestError(
            f"{where}: '{text}' is not an out variant; kernels write into out= tensors "
            f"the planner placed (or, for in-place ops like copy_, into self)"
        )
    return KernelDecl(
        op=op_name(schema, op_ns),
        schema=schema,
        kernel=entry["kernel"],
        namespace=namespace,
        file=entry["file"],
        library=library,
        dtypes=tuple(sorted(scalar_types.BY_NAME[d].number for d in entry["dtypes"])),
        memory=entry.get("memory"),
        prepare=entry.get("prepare"),
        partial=bool(entry.get("partial", False)),
    )


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
            raise ManifestError(
                f"{path}: operator {d.op} declared twice (entries {j} and {i}, lines "
                f"{lines.get(j, '?')} and {lines.get(i, '?')}); keep one"
            )
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
    for chain in out.values():
        # Only the registered (first) kernel's prepare step runs; it must cover the dtypes it hands on.
        later = [d for d in chain[1:] if d.memory or d.prepare]
        if later and not chain[0].memory:
            raise ManifestError(
                f"{chain[0].op}: {later[0].library}'s kernel declares a prepare step, but "
                f"{chain[0].library}'s, registered ahead of it, does not; give "
                f"{chain[0].library}'s entry a 'memory' (and 'prepare') that forwards to "
                f"{later[0].namespace}::{later[0].memory} for the dtypes it falls through"
            )
    return [out[op] for op in sorted(out)]


def find(decls: Sequence[KernelDecl], op: str) -> Optional[KernelDecl]:
    return next((d for d in decls if d.op == op), None)
