"""Constant folding: a call whose tensor inputs are all constants is computed now, on the host.

This is what keeps weight-side work out of the arena. `linear` exports as permute(weight) + addmm; without
folding, the runtime would copy every transposed weight into planned memory on every run (ExecuTorch's portable
path plans 806,976 bytes for a 784-256-256-10 MLP for exactly that reason). Folded, the transposed weight is a
constant in the .pte and the arena holds only activations.

Folding trades flash for RAM and time. It is refused where it would grow the constants a lot (e.g. an `expand`
of a small constant to a large shape), since flash is finite too.
"""

from __future__ import annotations

from typing import Any, List, Optional

import torch

from exir.lowering.ir import Role, TensorValue

# A folded result may always take this many bytes; beyond it, at most `growth` times the constants it consumed.
DEFAULT_FOLD_FREE_BYTES = 4096
DEFAULT_FOLD_GROWTH = 2.0


def _is_const(x: Any) -> bool:
    return isinstance(x, TensorValue) and x.role is Role.CONSTANT


def tensors_in(x: Any) -> List[TensorValue]:
    if isinstance(x, TensorValue):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for t in x if isinstance(t, TensorValue)]
    return []


def _materialize(x: Any) -> Any:
    if isinstance(x, TensorValue):
        return x.data
    if isinstance(x, (list, tuple)):
        return type(x)(_materialize(t) for t in x)
    return x


def try_fold(
    op,
    args: List[Any],
    kwargs: dict,
    out_nbytes: int,
    *,
    free_bytes: int = DEFAULT_FOLD_FREE_BYTES,
    growth: float = DEFAULT_FOLD_GROWTH,
) -> Optional[Any]:
    """Evaluates `op` on constant inputs. Returns the eager result, or None when the call must stay a kernel."""
    if not isinstance(op, torch._ops.OpOverload):
        return None
    if torch.Tag.nondeterministic_seeded in op.tags or op._schema.is_mutable:
        return None
    tensors = [t for a in list(args) + list(kwargs.values()) for t in tensors_in(a)]
    if not all(_is_const(t) for t in tensors):
        return None
    in_bytes = sum(t.nbytes for t in tensors)
    if out_nbytes > max(free_bytes, growth * in_bytes):
        return None
    with torch.no_grad():
        return op(*_materialize(args), **_materialize(kwargs))
