"""`ember::convolution_general`: aten::convolution's transposed (1-3 d) and 3-d calls, as their own operator.

Ember's portable convolution kernel computes 1-d and 2-d forward convolutions in a tight loop nest, which every
CNN runs. The other calls (decoders' transposed convolutions, video models' 3-d ones) need a general gather loop
that costs about 3 KB of code per runtime; as a separate operator it is selected, and linked, only into the
runtimes of programs that make such a call, as any other operator is. route_general_convolutions moves those
calls here; the arguments and result are aten::convolution's exactly. ExecuTorch has no such operator: its
programs call aten::convolution.out for these, which Ember's kernel refuses by name (re-export with Ember).

Importing this module registers the functional and `.out` overloads with torch.library, with PyTorch's own
convolution as the implementation: that is what the reference interpreter runs, and what the kernel is tested
against.
"""

from __future__ import annotations

import dataclasses

import torch

from exir.lowering.ir import Call, MethodGraph, TensorValue
from exir.lowering import ember_ops


def _convolution_general(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    return torch.ops.aten.convolution.default(
        input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
    )


convolution_general, convolution_general_out = ember_ops.define("ember::convolution_general", _convolution_general)


def is_general(call: Call) -> bool:
    """Whether an aten::convolution.out call is one the direct loops do not compute (transposed, or 3-d)."""
    x = call.args[0]
    return bool(call.args[6]) or (isinstance(x, TensorValue) and len(x.shape) == 5)


def route_general_convolutions(graph: MethodGraph) -> int:
    """Moves every transposed or 3-d aten::convolution.out call to ember::convolution_general.out, in place.
    Returns how many moved."""
    moved = 0
    for i, call in enumerate(graph.calls):
        if call.op == torch.ops.aten.convolution.out and is_general(call):
            graph.calls[i] = dataclasses.replace(call, op=convolution_general_out)
            moved += 1
    return moved
