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

from schema import operators

# The schema is the format contract's (schema/operators.yaml), which the kernel manifests name too.
_OP = operators.find("ember::convolution_clamp")
NAMESPACE = _OP.namespace

_lib = torch.library.Library(NAMESPACE, "DEF")
_lib.define(_OP.functional)
_lib.define(_OP.out)


def _convolution_clamp(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, min, max):
    y = torch.ops.aten.convolution.default(
        input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
    )
    # clamp_ in place rather than torch.clamp: the same result (NaN stays NaN, min > max gives max) without a
    # second full-size tensor.
    return y.clamp_(min, max)


def _convolution_clamp_out(
    input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, min, max, *, out
):
    # copy_, never a resize: `out` is a view into the planned arena when the reference interpreter runs this.
    return out.copy_(
        _convolution_clamp(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, min, max)
    )


def _fake(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, min, max):
    return torch.ops.aten.convolution.default(
        input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
    )


_lib.impl("convolution_clamp", _convolution_clamp, "CompositeExplicitAutograd")
_lib.impl("convolution_clamp.out", _convolution_clamp_out, "CompositeExplicitAutograd")
torch.library.register_fake(f"{NAMESPACE}::convolution_clamp")(_fake)

convolution_clamp = torch.ops.ember.convolution_clamp.default
convolution_clamp_out = torch.ops.ember.convolution_clamp.out
