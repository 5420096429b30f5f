"""`ember::safe_softmax`: attention's masked softmax put back together as one call.

torch.nn.functional.scaled_dot_product_attention decomposes (core ATen, torch 2.13) into two matmuls around
aten::_safe_softmax, whose own decomposition is seven passes over the [batch, heads, queries, keys] scores:

    sm = _softmax(x, dim); e = eq(x, -inf); n = logical_not(e); a = any(n, dim, keepdim=True)
    m = logical_not(a); z = full_like(sm, 0); y = where(m, z, sm)

so that a row with every key masked out becomes zeros rather than NaN. In the public zoo's transformers those six
extra passes, on portable's general broadcasting kernels, were 38% of ViT-Tiny's instructions and 26% of
BERT-mini's (callgrind, bench/results/2026-11-24-real.md). fuse_safe_softmax rewrites the chain as one
ember::safe_softmax.out(x, dim) call, which finds the masked rows in the pass that takes the maximum.

Opt-in with the other fusions (ExecutorchBackendConfig.fuse_activations): ExecuTorch has no such operator.
Best-effort: a chain whose intermediates are read elsewhere, returned, or shaped otherwise is left as it was.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Optional

import torch

from exir.lowering.ir import Call, MethodGraph, TensorValue
from exir.lowering import ember_ops


def _safe_softmax(self, dim):
    return torch.ops.aten._safe_softmax.default(self, dim)


safe_softmax, safe_softmax_out = ember_ops.define(
    "ember::safe_softmax", _safe_softmax, lambda self, dim: torch.empty_like(self)
)

aten = torch.ops.aten
_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _dim(d: Any, rank: int) -> Optional[int]:
    """d as a non-negative dim of a rank-`rank` tensor (a one-element list as any.dims gives it), else None."""
    if isinstance(d, (list, tuple)):
        if len(d) != 1:
            return None
        d = d[0]
    if not isinstance(d, int) or isinstance(d, bool) or not -rank <= d < rank:
        return None
    return d % rank


def fuse_safe_softmax(graph: MethodGraph) -> int:
    """Rewrites each qualifying safe-softmax chain (module docstring) as one ember::safe_softmax.out call, in
    place. Returns the number of chains rewritten."""
    readers = Counter(id(t) for c in graph.calls for t in c.input_tensors())
    outputs = {id(o) for o in graph.outputs if isinstance(o, TensorValue)}
    producer = {id(o): c for c in graph.calls for o in c.outs}

    def made_by(t, op) -> Optional[Call]:
        """The call of `op` that produced t, when t is a plain intermediate no one else reads and no one gets."""
        c = producer.get(id(t)) if isinstance(t, TensorValue) else None
        if c is None or c.op != op or id(t) in outputs or t.alias_of is not None:
            return None
        return c

    replace, dropped = {}, set()
    for where in graph.calls:
        if where.op != aten.where.self_out or len(where.args) < 3:
            continue
        m, z, sm = where.args[0], where.args[1], where.args[2]
        y = where.outs[0]
        if not isinstance(sm, TensorValue) or sm.dtype not in _FLOATS or y.dtype != sm.dtype or y.alias_of is not None:
            continue
        if tuple(y.shape) != tuple(sm.shape) or readers[id(sm)] != 2 or readers[id(z)] != 1 or readers[id(m)] != 1:
            continue
        softmax = made_by(sm, aten._softmax.out)
        full = made_by(z, aten.full_like.out)
        not2 = made_by(m, aten.logical_not.out)
        if softmax is None or full is None or not2 is None or softmax.args[2]:  # half_to_float
            continue
        if full.args[0] is not sm or not (isinstance(full.args[1], (int, float)) and full.args[1] == 0):
            continue
        x, rank = softmax.args[0], len(sm.shape)
        dim = _dim(softmax.args[1], rank)
        any_ = made_by(not2.args[0], aten.any.out)
        if any_ is None or readers[id(not2.args[0])] != 1 or dim is None:
            continue
        if _dim(any_.args[1], rank) != dim or any_.args[2] is not True:
            continue
        not1 = made_by(any_.args[0], aten.logical_not.out)
        if not1 is None or readers[id(any_.args[0])] != 1:
            continue
        eq = made_by(not1.args[0], aten.eq.Scalar_out)
        if eq is None or readers[id(not1.args[0])] != 1 or eq.args[0] is not x:
            continue
        if not (isinstance(eq.args[1], float) and math.isinf(eq.args[1]) and eq.args[1] < 0):
            continue
        chain = (softmax, eq, not1, any_, not2, full)
        if any(id(c) in dropped for c in chain):
            continue
        replace[id(where)] = Call(
            op=safe_softmax_out,
            args=[x, dim, y],
            outs=[y],
            source=softmax.source or where.source,
            module=softmax.module or where.module,
        )
        dropped.update(id(c) for c in chain)
    # The fused call takes where's place: x is alive until then (eq read it after softmax did), and y is first
    # written there, as before. The chain's intermediates are in no call any more, so they are never planned.
    graph.calls = [replace.get(id(c), c) for c in graph.calls if id(c) not in dropped]
    return len(replace)
