"""`ember::convolution_clamp`: a convolution whose output is clamped to [min, max] in the same kernel call.

exir.lowering.fuse_activation emits it (only when ExecutorchBackendConfig.fuse_activations is on) for a
convolution followed by relu, hardtanh (ReLU6) or clamp. Its arguments are aten::convolution's, then the
bounds (+-inf for a side that does not clamp); its schema is in schema/operators.yaml, which kernels/portable's
and kernels/optimized's kernels.yaml name it from. ExecuTorch has no such operator, so a program that uses it
runs on Ember only.

Importing this module registers the functional and `.out` overloads with torch.library, with PyTorch's own
convolution and clamp as the implementation: that is what the reference interpreter (and constant folding)
runs, and what the C++ kernels are tested against.
"""

from __future__ import annotations

import torch

from exir.lowering import ember_ops


def _convolution_clamp(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, min, max):
    y = torch.ops.aten.convolution.default(
        input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
    )
    # clamp_ in place rather than torch.clamp: the same result (NaN stays NaN, min > max gives max) without a
    # second full-size tensor.
    return y.clamp_(min, max)


def _fake(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, min, max):
    return torch.ops.aten.convolution.default(
        input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
    )


convolution_clamp, convolution_clamp_out = ember_ops.define("ember::convolution_clamp", _convolution_clamp, _fake)
