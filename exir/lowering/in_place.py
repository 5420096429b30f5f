"""Mutable buffers updated in place: a KV cache written by one index_put per step, never copied.

torch.export functionalizes `buffer.index_copy_(...)` (or `buffer[idx] = x`) into a functional op that makes a new
tensor, plus a write-back of that tensor into the buffer at the end of the method (lower.py's copy_). Lowered
literally that is two copies of the whole buffer per call: for an LLM's KV cache, every layer's cache, every
token. When the buffer's old value has no reader after the updating op, nothing can tell the two apart, so the
op writes into the buffer itself (out = self; the kernels skip copying self onto itself) and the write-back goes.

Only ops that copy `self` to `out` and then write a region of `out` qualify (their kernels check `out` is not
`self` before that copy); anything else keeps its copy and write-back.
"""

from __future__ import annotations

from typing import Dict, List

import torch

from exir.lowering.ir import Call, MethodGraph, Role, TensorValue

aten = torch.ops.aten

# Out variants of "self with a region replaced": args[0] is self, outs[0] the result of self's shape.
_UPDATES = {aten.index_put.out, aten.slice_scatter.out, aten.select_scatter.out}


def _reads(call: Call, t: TensorValue) -> bool:
    return any(x is t for x in call.input_tensors())


def _replace(value, old: TensorValue, new: TensorValue):
    if value is old:
        return new
    if isinstance(value, list):
        return [_replace(v, old, new) for v in value]
    if isinstance(value, tuple):
        return tuple(_replace(v, old, new) for v in value)
    return value


def update_buffers_in_place(graph: MethodGraph) -> int:
    """Rewrites each qualifying buffer update to write the buffer itself. Returns how many write-backs went."""
    if graph.loops:
        return 0  # a loop's body runs again after the write-back; keep the plain form there
    producer: Dict[int, int] = {}
    for i, call in enumerate(graph.calls):
        for o in call.outs:
            producer[id(o)] = i
    removed: List[int] = []
    for k, back in enumerate(graph.calls):
        if back.op is not aten.copy_.default or not back.source.startswith("write-back of "):
            continue
        dest, value = back.args[0], back.args[1]
        if not (isinstance(dest, TensorValue) and dest.role is Role.BUFFER and isinstance(value, TensorValue)):
            continue
        i = producer.get(id(value))
        if i is None:
            continue
        update = graph.calls[i]
        if (
            update.op not in _UPDATES
            or update.args[0] is not dest
            or len(update.outs) != 1
            or update.outs[0] is not value
            or value.dynamic
            or dest.dynamic
            or value in graph.outputs
            or value.alias_of is not None
            or tuple(value.shape) != tuple(dest.shape)
            or value.dtype != dest.dtype
            or tuple(value.dim_order) != tuple(dest.dim_order)
        ):
            continue
        # The old value must be dead once the update runs: no later call reads it (the write-back aside), and
        # no other call writes the buffer.
        later = [c for j, c in enumerate(graph.calls) if j > i and j != k]
        if any(_reads(c, dest) for c in later) or any(dest in c.outs for j, c in enumerate(graph.calls) if j != k):
            continue
        update.outs[0] = dest
        update.args = [_replace(a, value, dest) for a in update.args]
        for c in later:
            c.args = [_replace(a, value, dest) for a in c.args]
        graph.outputs = [_replace(o, value, dest) for o in graph.outputs]
        removed.append(k)
    if removed:
        graph.calls = [c for j, c in enumerate(graph.calls) if j not in set(removed)]
    return len(removed)
