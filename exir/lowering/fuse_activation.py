"""A clamping activation folded into the convolution before it: conv -> relu/hardtanh/clamp becomes one
`ember::convolution_clamp.out` call, which the optimized kernels apply in registers as each output row is
written instead of in a second pass over the whole tensor; the intermediate tensor leaves the memory plan too.
MobileNetV2 has 35 such pairs (a ReLU6 after every convolution but the linear bottlenecks).

Also, with the same option, the activations PyTorch's core ATen decomposition splits into several passes are put
back together as the one ATen operator they came from: SiLU (`x * sigmoid(x)`, EfficientNet: after nearly every
convolution) as `aten::silu.out`, hardswish (`x * clamp(x + 3, 0, 6) / 6`, MobileNetV3) as `aten::hardswish.out`:
one pass over the tensor instead of two or five, and fewer intermediates to plan.

A convolution whose only reader is such a SiLU becomes one `ember::convolution_silu.out` call the same way: the
optimized kernel applies SiLU to each block of the output while the block is still in cache.

Opt-in (ExecutorchBackendConfig.fuse_activations): ExecuTorch's runtime has no `ember::convolution_clamp`, so a
fused program runs on Ember only. Best-effort: a chain that does not qualify is left as it was.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Optional, Tuple

import torch

from exir.lowering.convolution_clamp import convolution_clamp_out
from exir.lowering.convolution_silu import convolution_silu_out
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


def _float_plain(t) -> bool:
    return isinstance(t, TensorValue) and t.dtype == torch.float32 and t.alias_of is None


def _is(x: Any, value: float) -> bool:
    return _number(x) and float(x) == value


def fuse_elementwise_activations(graph: MethodGraph) -> int:
    """x * sigmoid(x) -> silu(x) and x * clamp(x + 3, 0, 6) / 6 -> hardswish(x), in place, where every
    intermediate is a plain float tensor of x's shape read only by the next step of the chain and not returned.
    Returns the number of chains rewritten."""
    readers = Counter(id(t) for c in graph.calls for t in c.input_tensors())
    outputs = {id(o) for o in graph.outputs if isinstance(o, TensorValue)}
    by_input = {}  # id(tensor) -> the calls reading it
    for c in graph.calls:
        for t in c.input_tensors():
            by_input.setdefault(id(t), []).append(c)

    def only_reader(t):
        """The one call reading intermediate t, or None when t is read elsewhere too, returned, or not plain."""
        if not _float_plain(t) or id(t) in outputs or readers[id(t)] != 1:
            return None
        return by_input[id(t)][0]

    def mul_with(call, x, t):
        """call is mul.out(x, t) or mul.out(t, x)."""
        return call is not None and call.op == aten.mul.out and {id(call.args[0]), id(call.args[1])} == {id(x), id(t)}

    replace, dropped = {}, set()
    for call in graph.calls:
        if id(call) in dropped or id(call) in replace:
            continue
        x = call.args[0] if call.args else None
        if not _float_plain(x):
            continue
        if call.op == aten.sigmoid.out:
            s = call.outs[0]
            m = only_reader(s)
            if mul_with(m, x, s) and _float_plain(m.outs[0]) and tuple(m.outs[0].shape) == tuple(x.shape):
                y = m.outs[0]
                replace[id(m)] = Call(
                    op=aten.silu.out,
                    args=[x, y],
                    outs=[y],
                    source=m.source or call.source,
                    module=m.module or call.module,
                )
                dropped.add(id(call))
            continue
        if call.op != aten.add.Scalar_out or not (_is(call.args[1], 3.0) and _is(call.args[2], 1.0)):
            continue
        chain, t = [call], call.outs[0]
        lo, hi = -_INF, _INF
        nxt = only_reader(t)
        while nxt is not None and clamp_bounds(nxt) is not None and nxt.args[0] is t:
            b = clamp_bounds(nxt)
            lo, hi = max(lo, b[0]), min(hi, b[1])
            chain.append(nxt)
            t = nxt.outs[0]
            nxt = only_reader(t)
        if len(chain) < 2 or (lo, hi) != (0.0, 6.0) or not mul_with(nxt, x, t):
            continue
        chain.append(nxt)
        t = nxt.outs[0]
        last = only_reader(t)
        if last is None or last.op != aten.div.Scalar_out or last.args[0] is not t or not _is(last.args[1], 6.0):
            continue
        y = last.outs[0]
        if not _float_plain(y) or tuple(y.shape) != tuple(x.shape):
            continue
        replace[id(last)] = Call(
            op=aten.hardswish.out,
            args=[x, y],
            outs=[y],
            source=last.source or call.source,
            module=last.module or call.module,
        )
        dropped.update(id(c) for c in chain)
    # Each fused call takes the place of its chain's last step: x is alive there (the chain's mul reads it), and
    # the result is first written there, as before.
    graph.calls = [replace.get(id(c), c) for c in graph.calls if id(c) not in dropped]
    return len(replace)


def fuse_activations(graph: MethodGraph) -> int:
    """Rewrites SiLU and hardswish chains (fuse_elementwise_activations), then every qualifying conv + clamping
    activation or SiLU pair, in place. Returns the number of conv + activation pairs fused."""
    fuse_elementwise_activations(graph)
    readers = Counter(id(t) for c in graph.calls for t in c.input_tensors())
    outputs = {id(o) for o in graph.outputs if isinstance(o, TensorValue)}
    producer = {id(c.outs[0]): c for c in graph.calls if c.op == aten.convolution.out}

    fused_at, dropped = {}, set()
    for call in graph.calls:
        bounds = clamp_bounds(call)
        if bounds is None and call.op != aten.silu.out:
            continue
        x, y = call.args[0], call.outs[0]
        conv = producer.get(id(x)) if isinstance(x, TensorValue) else None
        # The convolution's result must exist only to be clamped: read by this call alone, not returned, and a
        # plain tensor (not a view of another). Float32 only: that is what the fused kernels compute.
        ok = (
            conv is not None
            and id(conv) not in fused_at
            and readers[id(x)] == 1
            and id(x) not in outputs
            and not conv.args[6]  # transposed
            and x.dtype == torch.float32
            and y.dtype == torch.float32
            and tuple(x.shape) == tuple(y.shape)
            and x.alias_of is None
            and y.alias_of is None
        )
        if not ok:
            continue
        if bounds is None:
            fused_at[id(conv)] = Call(
                op=convolution_silu_out,
                args=list(conv.args[:9]) + [y],
                outs=[y],
                source=conv.source or call.source,
                module=conv.module or call.module,
            )
        else:
            lo, hi = bounds
            fused_at[id(conv)] = Call(
                op=convolution_clamp_out,
                args=list(conv.args[:9]) + [lo, hi, y],
                outs=[y],
                source=conv.source or call.source,
                module=conv.module or call.module,
            )
        dropped.add(id(call))
    # The fused call takes the convolution's place: its inputs are read exactly when they were, and the
    # activation's output, which nothing touched before the activation ran, now starts life one step earlier,
    # where the dropped intermediate did. The intermediate is in no call any more, so it is never planned.
    graph.calls = [fused_at.get(id(c), c) for c in graph.calls if id(c) not in dropped]
    return len(fused_at)
