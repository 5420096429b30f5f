"""Bounded dynamic dimensions: upper bounds of symbolic sizes, and the integer values computed at run time.

A dimension exported with `torch.export.Dim("seq", min=1, max=128)` is a sympy expression over the export's
symbols (`s0`, `2*s0`, `s0 - 1`). Ember plans every tensor at the upper bound of each such expression over the
export's range constraints, so the memory a method needs is still known before the device; the tensor is marked
DYNAMIC_BOUND and kernels resize it within that capacity at run time.

Sizes a program computes from its inputs' shapes (`x.shape[0]` passed to a view, `2 * s0`) become SymValues:
Int values written at run time by prim ops (`aten::sym_size.int`, `executorch_prim::mul.Scalar`, ...), which is
how ExecuTorch encodes them too, so programs with symbolic shapes run on both runtimes.
"""

from __future__ import annotations

import dataclasses
import operator
from typing import Dict, Optional

import torch


class DynamicShapeError(RuntimeError):
    """A dynamic dimension Ember cannot bound; the message says how to give it one."""


@dataclasses.dataclass(eq=False)
class SymValue:
    """An integer computed at run time (a size or an expression of sizes). `bound` is its upper bound, the value
    the program stores before the first execution."""

    name: str
    bound: int
    # "int", or "bool" for a run-time predicate (a prim comparison's result).
    kind: str = "int"
    # What the program stores before the first execution, when not the bound (a loop counter starts at 0).
    initial: Optional[int] = None

    def __repr__(self) -> str:
        return f"%{self.name}:SymBool" if self.kind == "bool" else f"%{self.name}:SymInt<={self.bound}"


class PrimOverload:
    """An ExecuTorch prim op (`executorch_prim::mul.Scalar`), shaped like a torch OpOverload for the emitter and
    the kernel check: there is no torch library for this namespace in a plain torch install."""

    def __init__(self, schema: str):
        self._schema = torch._C.parse_schema(schema)
        self._overloadname = self._schema.overload_name or "default"

    def name(self) -> str:
        overload = self._schema.overload_name
        return self._schema.name + (f".{overload}" if overload else "")

    def __repr__(self) -> str:
        return self.name()


def _prim(name: str, ret: str = "Scalar") -> PrimOverload:
    return PrimOverload(f"executorch_prim::{name}.Scalar(Scalar a, Scalar b) -> {ret}")


# Writes src into self[index] along dim 0, growing self's dim 0 to index + 1: how ExecuTorch's map and scan
# stack each iteration's result.
COPY_INDEX = PrimOverload("executorch_prim::et_copy_index.tensor(Tensor(a!) self, Tensor src, SymInt index) -> ()")

# Python's operators on SymInts, as export records them, and the prim op each becomes.
PRIM_OPS: Dict[object, PrimOverload] = {
    operator.add: _prim("add"),
    operator.sub: _prim("sub"),
    operator.mul: _prim("mul"),
    operator.floordiv: _prim("floordiv"),
    operator.truediv: _prim("truediv"),
    operator.mod: PrimOverload("executorch_prim::mod.Scalar(SymInt a, SymInt b) -> SymInt"),
    operator.eq: _prim("eq", "bool"),
    operator.gt: _prim("gt", "bool"),
    operator.lt: _prim("lt", "bool"),
    operator.ge: _prim("ge", "bool"),
    operator.le: _prim("le", "bool"),
}
NEG = PrimOverload("executorch_prim::neg.Scalar(Scalar a) -> Scalar")


class Bounds:
    """Upper bounds of a program's symbolic sizes, from its range constraints."""

    def __init__(self, ep: torch.export.ExportedProgram):
        self._ranges = dict(ep.range_constraints)

    def upper(self, value, what: str) -> int:
        """The largest value `value` (an int or a SymInt) takes within the export's ranges."""
        if isinstance(value, int):
            return value
        expr = value.node.expr
        if expr.is_number:
            return int(expr)
        from torch.utils._sympy.value_ranges import bound_sympy

        upper = _finite_int(bound_sympy(expr, self._ranges).upper)
        if upper is None:
            names = ", ".join(sorted(str(s) for s in expr.free_symbols))
            raise DynamicShapeError(
                f"{what} is {expr}, which has no upper bound ({names} unbounded); Ember plans memory at the upper "
                f"bound of every dynamic dimension: export with a maximum, e.g. torch.export.Dim('n', max=128)"
            )
        return upper

    def lower(self, value) -> int:
        if isinstance(value, int):
            return value
        from torch.utils._sympy.value_ranges import bound_sympy

        low = _finite_int(bound_sympy(value.node.expr, self._ranges).lower)
        return max(low, 0) if low is not None else 0


def _finite_int(bound) -> Optional[int]:
    """A range end as an int; None for sympy's and torch's infinities (int_oo has no int())."""
    try:
        return int(bound)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None


def is_symbolic(value) -> bool:
    return isinstance(value, (torch.SymInt, torch.SymBool)) and not isinstance(_maybe_int(value), int)


def _maybe_int(value) -> Optional[int]:
    try:
        expr = value.node.expr
        return int(expr) if expr.is_number else None
    except AttributeError:
        return None
