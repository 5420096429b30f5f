"""What lowering reads off an fx node's metadata: the source line and module it came from (for messages), and
the planned tensor its value becomes (shape at the bound of each dynamic dimension, dim order). Shared by
exir.lowering.lower and exir.lowering.control_flow, below both."""

from __future__ import annotations

from typing import Tuple

import torch

from exir.lowering.ir import Role, TensorValue
from exir.lowering.symbolic import Bounds, DynamicShapeError, is_symbolic


class LoweringError(RuntimeError):
    """The program uses something Ember cannot run; the message names the node and its source line."""


def source_of(node: torch.fx.Node) -> str:
    """The innermost user frame of a node's stack trace, as 'file.py:12 (code)'."""
    trace = node.meta.get("stack_trace") or ""
    lines = [l.strip() for l in trace.strip().splitlines() if l.strip()]
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith("File "):
            parts = lines[i].split('"')
            fname = parts[1] if len(parts) > 1 else "?"
            lineno = lines[i].split("line ")[-1].split(",")[0]
            code = lines[i + 1] if i + 1 < len(lines) and not lines[i + 1].startswith("File ") else ""
            return f"{fname}:{lineno}" + (f" ({code})" if code else "")
    return ""


def module_of(node: torch.fx.Node) -> str:
    """The innermost nn.Module of a node (torch.export's nn_module_stack), as 'path (Type)'; '' at the top."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path, cls = list(stack.values())[-1]
    # torch.export writes paths like "L['self'].layers.0" or "layers.0"; keep the module path.
    path = str(path).replace("L['self'].", "").replace("L['self']", "")
    type_name = cls.__name__ if isinstance(cls, type) else str(cls).rsplit(".", 1)[-1].rstrip("'>")
    return f"{path} ({type_name})" if path else f"({type_name})"


def _bounded_shape(node: torch.fx.Node, val, bounds: Bounds) -> Tuple[Tuple[int, ...], bool]:
    """The tensor's shape at the upper bound of every dynamic dimension, and whether any dimension is dynamic."""
    shape, dynamic = [], False
    for d, s in enumerate(val.shape):
        if is_symbolic(s):
            dynamic = True
            try:
                shape.append(bounds.upper(s, f"dimension {d} of node '{node.name}'"))
            except DynamicShapeError as e:
                raise LoweringError(f"{e} {source_of(node)}") from None
        else:
            shape.append(int(s))
    return tuple(shape), dynamic


def _dim_order(val) -> Tuple[int, ...]:
    try:
        return tuple(int(d) for d in val.dim_order())
    except Exception:  # ambiguous strides (size-1 dims): the contiguous order is a valid one
        return tuple(range(val.dim()))


def _tensor_from_meta(node: torch.fx.Node, val, name: str, role: Role, bounds: Bounds) -> TensorValue:
    shape, dynamic = _bounded_shape(node, val, bounds)
    t = TensorValue(name=name, dtype=val.dtype, shape=shape, dim_order=_dim_order(val), role=role, dynamic=dynamic)
    if dynamic:
        t.lower_shape = tuple(bounds.lower(s) for s in val.shape)
    return t
