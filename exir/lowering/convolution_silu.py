"""`ember::convolution_silu`: a convolution whose output goes through SiLU in the same kernel call.

exir.lowering.fuse_activation emits it (only when ExecutorchBackendConfig.fuse_activations is on) for a
convolution whose only reader is a SiLU (EfficientNet: after nearly every convolution). Its arguments are
aten::convolution's; its schema is in schema/operators.yaml. kernels/optimized applies SiLU to each block of the
output while that block is still in cache, where a separate silu call reads and writes the whole tensor again
(EfficientNet-B0: 49 such calls, 5.5 ms of its 24.3 ms). ExecuTorch has no such operator, so a program that uses
it runs on Ember only.

Importing this module registers the functional and `.out` overloads with torch.library, with PyTorch's own
convolution and silu as the implementation (the reference interpreter, constant folding, the kernels' tests).
"""

from __future__ import annotations

import torch

from exir.lowering import ember_ops


def _convolution_silu(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    y = torch.ops.aten.convolution.default(
        input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
    )
    return torch.nn.functional.silu(y, inplace=True)


def _fake(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    return torch.ops.aten.convolution.default(
        input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
    )


convolution_silu, convolution_silu_out = ember_ops.define("ember::convolution_silu", _convolution_silu, _fake)
