"""Ember's own operator schemas, read from operators.yaml, with the out= overload of each derived.

from schema import operators
op = operators.find("ember::convolution_clamp.out")
op.functional     # "convolution_clamp(Tensor input, ...) -> Tensor"   (as torch.library.define takes it)
op.out            # "convolution_clamp.out(Tensor input, ..., *, Tensor(a!) out) -> Tensor(a!)"
"""

from __future__ import annotations

import dataclasses
import re
from typing import Dict, Optional, Tuple

from schema._yaml import ContractError, entry, load_list

_FILE = "operators.yaml"
_FUNC = re.compile(r"^(\w+)::(\w+)\((.*)\)\s*->\s*(\S.*)$")


@dataclasses.dataclass(frozen=True)
class OperatorSchema:
    namespace: str
    name: str
    arguments: str
    returns: str
    functional_by: str  # "ember": Ember registers the functional op too; "pytorch": PyTorch defines it
    doc: str

    @property
    def qualified_name(self) -> str:
        return f"{self.namespace}::{self.name}"

    @property
    def functional(self) -> str:
        return f"{self.name}({self.arguments}) -> {self.returns}"

    @property
    def out(self) -> str:
        # The out tensor is keyword-only: after the `*` when the schema has one.
        sep = ", " if re.search(r"(^|,\s*)\*(,|$)", self.arguments) else ", *, "
        return f"{self.name}.out({self.arguments}{sep}Tensor(a!) out) -> Tensor(a!)"

    @property
    def out_name(self) -> str:
        return f"{self.qualified_name}.out"


def _read() -> Tuple[OperatorSchema, ...]:
    out = []
    for i, raw in enumerate(load_list(_FILE)):
        where = f"schema/{_FILE} entry {i}"
        e = entry(raw, where, ("func", "functional"), ("doc",))
        m = _FUNC.match(" ".join(str(e["func"]).split()))
        if m is None:
            raise ContractError(f"{where}: func must read 'namespace::name(arguments) -> returns', got {e['func']!r}")
        if e["functional"] not in ("ember", "pytorch"):
            raise ContractError(f"{where}: functional must be 'ember' or 'pytorch', got {e['functional']!r}")
        if m.group(4) != "Tensor":
            raise ContractError(
                f"{where}: {m.group(1)}::{m.group(2)} returns {m.group(4)}; the derived out= overload "
                f"writes one tensor, so the functional op must return Tensor"
            )
        out.append(
            OperatorSchema(
                m.group(1), m.group(2), m.group(3), m.group(4), e["functional"], " ".join(str(e.get("doc", "")).split())
            )
        )
    seen: Dict[str, int] = {}
    for i, op in enumerate(out):
        if seen.setdefault(op.qualified_name, i) != i:
            raise ContractError(
                f"schema/{_FILE}: {op.qualified_name} is listed twice (entries {seen[op.qualified_name]} and {i})"
            )
    return tuple(out)


OPERATORS: Tuple[OperatorSchema, ...] = _read()


def find(op: str) -> Optional[OperatorSchema]:
    """The entry for "ns::name" or its out overload "ns::name.out"; None when the contract has no such operator."""
    base = op[: -len(".out")] if op.endswith(".out") else op
    return next((o for o in OPERATORS if o.qualified_name == base), None)


def in_namespace(namespace: str) -> Tuple[OperatorSchema, ...]:
    return tuple(o for o in OPERATORS if o.namespace == namespace)
