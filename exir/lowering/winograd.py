"""3x3 convolutions as Winograd's F(4x4, 3x3): `ember::winograd_conv2d`, its weight transform, and the pass that
emits it.

A dense 3x3 convolution at stride 1 does 9 multiply-adds per output and input channel; F(4x4, 3x3) does 36 per
4x4 tile of outputs, 2.25 per output, at the price of transforms on the way in and out and of a filter stored as
6x6 instead of 3x3 (four times the bytes). The filter's transform, U = G g G^T, is done here once at export, so the
runtime never holds both forms; the input and output transforms run in the kernels (kernels/portable/util/
winograd.h). Rounding: the transforms add and subtract values several times larger than the result, so outputs
differ from a direct convolution's by about 1e-5 of their magnitude instead of 1e-6.

Opt-in (ExecutorchBackendConfig.winograd): ExecuTorch's runtime has no such operator, and the .pte grows by three
times the rewritten filters' bytes. The pass rewrites a convolution (or ember::convolution_clamp) with a constant
float filter when it is 3x3, stride 1, dilation 1, one group, and its output has at least MIN_TILES tiles of 4x4:
below that, the transformed filter is read for too few outputs (ResNet18's 7x7 layers read 38 MB of it for 49
outputs per channel) and the direct kernel is faster.
"""

from __future__ import annotations

import math
import torch

from exir.lowering.convolution_clamp import convolution_clamp_out
from exir.lowering.ir import Call, MethodGraph, Role, TensorValue
from exir.lowering.lower import _constant
from schema import operators

aten = torch.ops.aten

_OP = operators.find("ember::winograd_conv2d")
NAMESPACE = _OP.namespace

_lib = torch.library.Library(NAMESPACE, "FRAGMENT")
_lib.define(_OP.functional)
_lib.define(_OP.out)

# The filter transform for the interpolation points 0, 1, -1, 2, -2 and infinity, which the kernels' input and
# output transforms (kernels/portable/util/winograd.h) assume.
G = torch.tensor(
    [
        [1 / 4, 0, 0],
        [-1 / 6, -1 / 6, -1 / 6],
        [-1 / 6, 1 / 6, -1 / 6],
        [1 / 24, 1 / 12, 1 / 6],
        [1 / 24, -1 / 12, 1 / 6],
        [0, 0, 1],
    ],
    dtype=torch.float64,
)
POINTS = 36
# Fewest 4x4 output tiles per plane worth the transformed filter (a 14x14 output has 16).
MIN_TILES = 16
# Fewest channels on either side: below it the transforms cost more than the products they save.
MIN_CHANNELS = 8


def transform_weight(weight: torch.Tensor) -> torch.Tensor:
    """[Cout, Cin, 3, 3] -> U [36, Cin, Cout]: U[a * 6 + b, i, o] = (G w[o, i] G^T)[a, b], in float64 then rounded
    once to the filter's dtype."""
    cout, cin = weight.shape[:2]
    u = torch.einsum("ak,oikl,bl->abio", G, weight.detach().double(), G)
    return u.reshape(POINTS, cin, cout).to(weight.dtype).contiguous()


def recover_weight(u: torch.Tensor) -> torch.Tensor:
    """The 3x3 filter [Cout, Cin, 3, 3] a transformed one came from: G has full column rank, so its pseudo-inverse
    undoes the transform exactly (up to the rounding of U)."""
    points, cin, cout = u.shape
    gp = torch.linalg.pinv(G)  # [3, 6]
    g = torch.einsum("ka,abio,lb->oikl", gp, u.double().reshape(6, 6, cin, cout), gp)
    return g


def _winograd_conv2d(input, weight, bias, padding, min, max):
    # The reference: the convolution this call stands for, in float64 (the kernels' Winograd rounding is checked
    # against it with a tolerance), then clamped.
    w = recover_weight(weight)
    b = bias.double() if bias is not None else None
    y = torch.nn.functional.conv2d(input.double(), w, b, 1, list(padding))
    return y.clamp_(min, max).to(input.dtype)


def _winograd_conv2d_out(input, weight, bias, padding, min, max, *, out):
    # copy_, never a resize: `out` is a view into the planned arena when the reference interpreter runs this.
    return out.copy_(_winograd_conv2d(input, weight, bias, padding, min, max))


def _fake(input, weight, bias, padding, min, max):
    n, _, h, w = input.shape
    return input.new_empty((n, weight.shape[2], h + 2 * padding[0] - 2, w + 2 * padding[1] - 2))


_lib.impl("winograd_conv2d", _winograd_conv2d, "CompositeExplicitAutograd")
_lib.impl("winograd_conv2d.out", _winograd_conv2d_out, "CompositeExplicitAutograd")
torch.library.register_fake(f"{NAMESPACE}::winograd_conv2d")(_fake)

winograd_conv2d = torch.ops.ember.winograd_conv2d.default
winograd_conv2d_out = torch.ops.ember.winograd_conv2d.out


def _constant_float(t) -> bool:
    return isinstance(t, TensorValue) and t.role is Role.CONSTANT and t.dtype == torch.float32


def _eligible(call: Call) -> bool:
    x, w, b, stride, padding, dilation, transposed, _output_padding, groups = call.args[:9]
    y = call.outs[0]
    if not (isinstance(x, TensorValue) and x.dtype == torch.float32 and len(x.shape) == 4):
        return False
    if x.dim_order != (0, 1, 2, 3) or y.dim_order != (0, 1, 2, 3) or y.dtype != torch.float32:
        return False
    if not _constant_float(w) or tuple(w.shape[2:]) != (3, 3) or not (b is None or _constant_float(b)):
        return False
    if transposed or groups != 1 or list(stride) != [1, 1] or list(dilation) != [1, 1]:
        return False
    if len(padding) != 2 or any(not isinstance(p, int) or p < 0 for p in padding):
        return False
    cout, cin = w.shape[:2]
    # The planned (largest) output plane decides: tiles of 4x4 outputs.
    tiles = math.ceil(y.shape[2] / 4) * math.ceil(y.shape[3] / 4)
    return cin >= MIN_CHANNELS and cout >= MIN_CHANNELS and tiles >= MIN_TILES


def use_winograd(graph: MethodGraph) -> int:
    """Rewrites each eligible convolution.out and ember::convolution_clamp.out as ember::winograd_conv2d.out, its
    filter transformed once however many calls share it. Returns the number rewritten."""
    transformed = {}  # id(filter) -> its transformed constant
    count = 0
    for i, call in enumerate(graph.calls):
        if call.op == aten.convolution.out:
            lo, hi = -math.inf, math.inf
        elif call.op == convolution_clamp_out:
            lo, hi = call.args[9], call.args[10]
        else:
            continue
        if not _eligible(call):
            continue
        w = call.args[1]
        if id(w) not in transformed:
            transformed[id(w)] = _constant(f"{w.name}_winograd", transform_weight(w.data))
        y = call.outs[0]
        graph.calls[i] = Call(
            op=winograd_conv2d_out,
            args=[call.args[0], transformed[id(w)], call.args[2], list(call.args[4]), float(lo), float(hi), y],
            outs=[y],
            source=call.source,
            module=call.module,
            node_name=call.node_name,
        )
        count += 1
    return count
