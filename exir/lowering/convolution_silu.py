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

from schema import operators

_OP = operators.find("ember::convolution_silu")
NAMESPACE = _OP.namespace

_lib = torch.library.Library(NAMESPACE, "FRAGMENT")
_lib.define(_OP.functional)
_lib.define(_OP.out)


def _convolution_silu(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    y = torch.ops.aten.convolution.default(
        input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
    )
    return torch.nn.functional.silu(y, inplace=True)


def _convolution_silu_out(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, *, out):
    # copy_, never a resize: `out` is a view into the planned arena when the reference interpreter runs this.
    return out.copy_(
        _convolution_silu(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    )


def _fake(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    return torch.ops.aten.convolution.default(
        input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
    )


_lib.impl("convolution_silu", _convolution_silu, "CompositeExplicitAutograd")
_lib.impl("convolution_silu.out", _convolution_silu_out, "CompositeExplicitAutograd")
torch.library.register_fake(f"{NAMESPACE}::convolution_silu")(_fake)

convolution_silu = torch.ops.ember.convolution_silu.default
convolution_silu_out = torch.ops.ember.convolution_silu.out
