"""A clamping activation folded into the convolution before it: conv -> relu/hardtanh/clamp becomes one
`ember::convolution_clamp.out` call, which the optimized kernels apply in registers as each output row is
written instead of in a second pass over the whole tensor; the intermediate tensor leaves the memory plan too.
MobileNetV2 has 35 such pairs (a ReLU6 after every convolution but the linear bottlenecks).

Opt-in (ExecutorchBackendConfig.fuse_activations): ExecuTorch's runtime has no such operator, so a fused program
runs on Ember only. Best-effort: a pair that does not qualify is left as it was.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Any, Optional, Tuple

import torch

from exir.lowering.convolution_clamp import convolution_clamp_out
from exir.lowering.ir import Call, MethodGraph, TensorValue

aten = torch.ops.aten
_INF = math.inf


def _number(x: Any) -> bool:
    # NaN bounds are left alone: torch.clamp turns every element into NaN there, the kernels' compare-and-select
    # would not.
    return isinstance(x, (int, float)) and not isinstance(x, bool) and not math.isnan(x)


def clamp_bounds(call: Call) -> Optional[Tuple[float, float]]:
    """[lo, hi] of a relu/hardtanh/clamp call with constant numeric bounds (+-inf where it has none), else None."""
    if call.op == aten.relu.out:
        return 0.0, _INF
    if call.op == aten.hardtanh.out:
        lo, hi = call.args[1], call.args[2]
        return (float(lo), float(hi)) if _number(lo) and _number(hi) else None
    if call.op == aten.clamp.out:
        lo, hi = call.args[1], call.args[2]
        if (lo is None and hi is None) or not all(v is None or _number(v) for v in (lo, hi)):
            return None
        return (-_INF if lo is None else float(lo)), (_INF if hi is None else float(hi))
    return None


def fuse_activations(graph: MethodGraph) -> int:
    """Rewrites every qualifying conv + activation pair in place. Returns the number of pairs fused."""
    readers = Counter(id(t) for c in graph.calls for t in c.input_tensors())
    outputs = {id(o) for o in graph.outputs if isinstance(o, TensorValue)}
    producer = {id(c.outs[0]): c for c in graph.calls if c.op == aten.convolution.out}

    fused_at, dropped = {}, set()
    for call in graph.calls:
        bounds = clamp_bounds(call)
        if bounds is None:
            continue
        x, y = call.args[0], call.outs[0]
        conv = producer.get(id(x)) if isinstance(x, TensorValue) else None
        # The convolution's result must exist only to be clamped: read by this call alone, not returned, and a
        # plain tensor (not a view of another). Float32 only: that is what the fused kernels compute.
        ok = (conv is not None and id(conv) not in fused_at and readers[id(x)] == 1 and id(x) not in outputs
              and not conv.args[6]  # transposed
              and x.dtype == torch.float32 and y.dtype == torch.float32 and tuple(x.shape) == tuple(y.shape)
              and x.alias_of is None and y.alias_of is None)
        if not ok:
            continue
        lo, hi = bounds
        fused_at[id(conv)] = Call(op=convolution_clamp_out, args=list(conv.args[:9]) + [lo, hi, y], outs=[y],
                                  source=conv.source or call.source)
        dropped.add(id(call))
    # The fused call takes the convolution's place: its inputs are read exactly when they were, and the
    # activation's output, which nothing touched before the activation ran, now starts life one step earlier,
    # where the dropped intermediate did. The intermediate is in no call any more, so it is never planned.
    graph.calls = [fused_at.get(id(c), c) for c in graph.calls if id(c) not in dropped]
    return len(fused_at)
