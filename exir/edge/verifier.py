"""Op-set verification: every operator in an edge program is core ATen, or a custom op with an out= variant.

A program that passes this check has, for each operator, a kernel contract the runtime can implement. Failing
here, with the op and the line of the user's model that produced it, beats failing on the device (ExecuTorch
issues #4742, #20270, #15673 are all ops first found missing at runtime).
"""

from __future__ import annotations

import operator
from typing import Iterable, List

import torch

from exir.lowering.lower import source_of

# Namespaces whose ops are not core ATen but which Ember's kernel libraries define.
KNOWN_NAMESPACES = ("quantized_decomposed", "ember", "dim_order_ops")


class OpSetError(RuntimeError):
    pass


def _has_out_variant(op: torch._ops.OpOverload) -> bool:
    from exir.lowering.out_variants import OutVariantError, out_variant

    try:
        out_variant(op)
        return True
    except OutVariantError:
        return False


def _has_kernel(op: torch._ops.OpOverload) -> bool:
    """A non-core ATen op that Ember's default kernel libraries implement (x.max() is aten::max, not core, and
    has no decomposition; portable has max.unary_out, as ExecuTorch's does). to_executorch's kernel check still
    applies the build's own manifests."""
    from exir.kernel_check import provided

    try:
        key = out_variant_key(op)
    except Exception:  # noqa: BLE001 - no out variant: not runnable
        return False
    return key in provided().library_masks


def out_variant_key(op: torch._ops.OpOverload) -> str:
    from exir.lowering.out_variants import out_variant

    out = out_variant(op)
    overload = out._overloadname
    return out._schema.name + (f".{overload}" if overload and overload != "default" else "")


def verify_op_set(gm: torch.fx.GraphModule, allowed: Iterable[str] = ()) -> None:
    """Raises OpSetError listing every operator outside core ATen, each with its source line."""
    problems: List[str] = []
    _verify_graph(gm, set(allowed), problems)
    if problems:
        raise OpSetError(
            "the program uses operators Ember cannot run:\n"
            + "\n".join(problems)
            + "\nto_edge already applied PyTorch's core ATen decompositions and every torch._decomp one for the ops "
            "they left. Write the op differently, give a decomposition (EdgeCompileConfig(decompositions={op: fn})), "
            "define an out= variant for a custom op, or, when a kernel library has a kernel for it, list it in "
            "EdgeCompileConfig(allowed_ops=[...])."
        )


def _verify_graph(gm: torch.fx.GraphModule, allowed, problems: List[str]) -> None:
    from exir.lowering.control_flow import CONTROL_FLOW
    from exir.lowering.symbolic import PRIM_OPS

    for node in gm.graph.nodes:
        if node.op == "get_attr" and isinstance(getattr(gm, node.target, None), torch.fx.GraphModule):
            _verify_graph(getattr(gm, node.target), allowed, problems)  # a branch or loop body
            continue
        if node.op != "call_function" or node.target is operator.getitem:
            continue
        op = node.target
        where = source_of(node) or f"node '{node.name}'"
        if op in CONTROL_FLOW or op in PRIM_OPS or op is operator.neg:
            continue  # lowered to jumps and prim ops
        if not isinstance(op, torch._ops.OpOverload):
            name = getattr(op, "__name__", str(op))
            problems.append(f"  {name}: not an ATen operator (control flow or a Python call), at {where}")
            continue
        qualified = op.name()
        if qualified in allowed or str(op) in allowed:
            continue
        if op.namespace == "aten":
            if torch.Tag.core not in op.tags and not _has_kernel(op):
                problems.append(
                    f"  {qualified}: not in the core ATen op set, at {where} (and PyTorch has no decomposition for it)"
                )
        elif op.namespace in KNOWN_NAMESPACES or _has_out_variant(op):
            continue
        else:
            problems.append(f"  {qualified}: custom op without an out= variant, at {where}")
