"""`ember::max_pool2d`: max pooling's values without its indices.

Core ATen has only `max_pool2d_with_indices`, so every max pool in an exported program computes an int64 index per
output, and the plan holds a tensor of them, even where nothing reads it (ResNet's stem pool: 200,704 indices,
1.6 MB, written every run). exir.lowering.fuse_activation's option (ExecutorchBackendConfig.fuse_activations) turns
such a call into this one. Its schema is in schema/operators.yaml; ExecuTorch has no such operator, so a program that
uses it runs on Ember only.

Importing this module registers the functional and `.out` overloads with torch.library, with PyTorch's own pooling as
the implementation (what the reference interpreter runs and the kernels are tested against).
"""

from __future__ import annotations

from collections import Counter

import torch

from exir.lowering.ir import Call, MethodGraph, TensorValue
from exir.lowering import ember_ops

aten = torch.ops.aten


def _max_pool2d(self, kernel_size, stride, padding, dilation, ceil_mode):
    return aten.max_pool2d_with_indices.default(self, kernel_size, stride, padding, dilation, ceil_mode)[0]


max_pool2d, max_pool2d_out = ember_ops.define("ember::max_pool2d", _max_pool2d)


def drop_unread_pool_indices(graph: MethodGraph) -> int:
    """Rewrites each Float max_pool2d_with_indices.out whose indices no call reads and the method does not return as
    ember::max_pool2d.out; the indices tensor is then in no call, so it is never planned. Returns the count."""
    readers = Counter(id(t) for c in graph.calls for t in c.input_tensors())
    outputs = {id(o) for o in graph.outputs if isinstance(o, TensorValue)}
    count = 0
    for i, call in enumerate(graph.calls):
        if call.op != aten.max_pool2d_with_indices.out:
            continue
        x, out, indices = call.args[0], call.outs[0], call.outs[1]
        if not (isinstance(x, TensorValue) and x.dtype == torch.float32 and out.dtype == torch.float32):
            continue
        if readers[id(indices)] or id(indices) in outputs or indices.alias_of is not None:
            continue
        graph.calls[i] = Call(
            op=max_pool2d_out,
            args=list(call.args[:6]) + [out],
            outs=[out],
            source=call.source,
            module=call.module,
            node_name=call.node_name,
        )
        count += 1
    return count
