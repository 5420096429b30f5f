"""Views that move no bytes become aliases: the result shares its base's storage, and the call disappears.

Core ATen has no views at runtime (every view became a *_copy op), but many of those copies reproduce the same
bytes in the same order: reshapes (view/squeeze/unsqueeze), same-shape expands and clones, and slices or selects
along a dimension that only size-1 dimensions precede (a contiguous block). For those the output is the input's
storage at a byte offset. Removing them saves the copy's time and its arena bytes; the planner then places one
allocation covering base and aliases. ExecuTorch can run the result too: two tensors whose allocation_info
points into the same bytes.

Mutable buffers are never aliased: their write-back at the end of the method would change an alias that a user
output may still hold.
"""

from __future__ import annotations

from typing import List, Optional

import torch

from exir.lowering.ir import Call, MethodGraph, Role, TensorValue

aten = torch.ops.aten

_RESHAPES = {
    aten.view_copy.out,
    aten.squeeze_copy.dims_out,
    aten.squeeze_copy.dim_out,
    aten.squeeze_copy.out,
    aten.unsqueeze_copy.out,
    aten.alias_copy.out,
}


def _contiguous(t: TensorValue) -> bool:
    return tuple(t.dim_order) == tuple(range(len(t.shape)))


def _elem_size(t: TensorValue) -> int:
    return torch.empty((), dtype=t.dtype).element_size()


def _block_offset(src: TensorValue, dim: int, start: int) -> Optional[int]:
    """Byte offset of index `start` along `dim` if that slice is one contiguous block of `src`, else None."""
    dim = dim % len(src.shape)
    if any(s != 1 for s in src.shape[:dim]):
        return None
    inner = 1
    for s in src.shape[dim + 1 :]:
        inner *= s
    return start * inner * _elem_size(src)


def _run_time(a) -> bool:
    from exir.lowering.symbolic import SymValue

    if isinstance(a, (list, tuple)):
        return any(_run_time(x) for x in a)
    return isinstance(a, SymValue)


def _alias_offset(call: Call) -> Optional[int]:
    """If `call` only re-labels bytes of its first argument, the byte offset of its output in them."""
    if len(call.outs) != 1:
        return None
    src, out = call.args[0], call.outs[0]
    if not isinstance(src, TensorValue) or src.dtype != out.dtype:
        return None
    if not (_contiguous(src) and _contiguous(out)):
        return None
    if any(_run_time(a) for a in call.args):
        return None  # an index or size known only at run time (a loop counter, a symbolic size)
    if src.dynamic or out.dynamic:
        return None  # an alias keeps the sizes it was emitted with; a bounded tensor's change at run time
    if call.op in _RESHAPES:
        return 0 if src.numel == out.numel else None
    if call.op in (aten.expand_copy.out, aten.clone.out):
        return 0 if tuple(src.shape) == tuple(out.shape) else None
    if call.op == aten.slice_copy.Tensor_out:
        _, dim, start, end, step = call.args[:5]
        size = src.shape[dim % len(src.shape)]
        start = 0 if start is None else (start + size if start < 0 else start)
        if step != 1 or start < 0 or start > size:
            return None
        return _block_offset(src, dim, min(start, size))
    if call.op == aten.select_copy.int_out:
        _, dim, index = call.args[:3]
        size = src.shape[dim % len(src.shape)]
        return _block_offset(src, dim, index + size if index < 0 else index)
    return None


def root_of(t: TensorValue):
    """(root tensor, byte offset) of the storage `t` lives in."""
    offset = 0
    while t.alias_of is not None:
        base, off = t.alias_of
        offset += off
        t = base
    return t, offset


def alias_views(graph: MethodGraph) -> int:
    """Turns byte-preserving copies into aliases in place. Returns how many calls were removed."""
    kept: List[Call] = []
    removed = 0
    # Copies into control-flow bindings (exir.lowering.control_flow) stay copies, and so do the tensors they
    # read: two carries that are views of each other's storage would swap wrongly.
    moved = {id(t) for c in graph.calls if c.pinned for t in c.input_tensors()}
    for call in graph.calls:
        offset = None if call.pinned or any(id(o) in moved for o in call.outs) else _alias_offset(call)
        if offset is not None:
            base, _ = root_of(call.args[0])
            if base.role not in (Role.BUFFER, Role.CONSTANT):
                call.outs[0].alias_of = (call.args[0], offset)
                removed += 1
                continue
        kept.append(call)
    graph.calls = kept
    return removed
