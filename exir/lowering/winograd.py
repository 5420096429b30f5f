"""3x3 convolutions as Winograd's F(4x4, 3x3) or F(2x2, 3x3): `ember::winograd_conv2d`, its weight transform, and the
pass that emits it.

A dense 3x3 convolution at stride 1 does 9 multiply-adds per output and input channel; F(4x4, 3x3) does 36 per
4x4 tile of outputs, 2.25 per output, and F(2x2, 3x3) 16 per 2x2 tile, 4 per output, at the price of transforms on
the way in and out and of a filter stored as 6x6 (4x4) instead of 3x3. The filter's transform, U = G g G^T, is done
here once at export, so the runtime never holds both forms; the input and output transforms run in the kernels
(kernels/portable/util/winograd.h). Rounding: F(4x4, 3x3)'s transforms add and subtract values several times larger
than the result, so its outputs differ from a direct convolution's by about 1e-5 of their magnitude instead of
1e-6; F(2x2, 3x3)'s by about as much as the direct one's.

Opt-in (ExecutorchBackendConfig.winograd): ExecuTorch's runtime has no such operator, and the .pte grows by 3x
(F(4x4)) or 0.8x (F(2x2)) of the rewritten filters' bytes. The pass rewrites a convolution (or
ember::convolution_clamp) with a constant float filter when it is 3x3, stride 1, dilation 1, one group: as F(4x4,
3x3) when its output has at least MIN_TILES tiles of 4x4 (ResNet18's 56x56 and 28x28 layers), else as F(2x2, 3x3)
when it has that many tiles of 2x2 (its 14x14 ones), else not at all (its 7x7 ones).
"""

from __future__ import annotations

import math
import torch

from exir.lowering.convolution_clamp import convolution_clamp_out
from exir.lowering.ir import Call, MethodGraph, Role, TensorValue
from exir.lowering.lower import _constant
from exir.lowering import ember_ops

aten = torch.ops.aten

# The filter transforms for the interpolation points the kernels' input and output transforms assume
# (kernels/portable/util/winograd.h): 0, 1, -1, infinity for F(2x2, 3x3); 0, 1, -1, 2, -2, infinity for F(4x4, 3x3).
G = {
    2: torch.tensor([[1, 0, 0], [1 / 2, 1 / 2, 1 / 2], [1 / 2, -1 / 2, 1 / 2], [0, 0, 1]], dtype=torch.float64),
    4: torch.tensor(
        [
            [1 / 4, 0, 0],
            [-1 / 6, -1 / 6, -1 / 6],
            [-1 / 6, 1 / 6, -1 / 6],
            [1 / 24, 1 / 12, 1 / 6],
            [1 / 24, -1 / 12, 1 / 6],
            [0, 0, 1],
        ],
        dtype=torch.float64,
    ),
}
# Fewest output tiles per call worth a transformed filter. Each filter value is read once per call and used once
# per tile, and a network's filters do not stay in cache between runs, so with fewer tiles the filter's bytes take
# longer to arrive than the products they feed: in ResNet18, its 14x14 layers as F(4x4) (16 tiles, 9.4 MB of
# filter) ran 0.81 ms in the network against 0.45 ms alone, and its 7x7 ones as F(2x2) (16 tiles) were no faster
# than direct. 49 is a 28x28 output in F(4x4) tiles, a 14x14 one in F(2x2) tiles.
MIN_TILES = 49
# Fewest channels on either side: below it the transforms cost more than the products they save.
MIN_CHANNELS = 8


def transform_weight(weight: torch.Tensor, m: int = 4) -> torch.Tensor:
    """[Cout, Cin, 3, 3] -> U [(m + 2)^2, Cin, Cout] for F(m x m, 3x3): U[a * (m + 2) + b, i, o] = (G w[o, i]
    G^T)[a, b], in float64 then rounded once to the filter's dtype."""
    cout, cin = weight.shape[:2]
    g = G[m]
    u = torch.einsum("ak,oikl,bl->abio", g, weight.detach().double(), g)
    return u.reshape((m + 2) ** 2, cin, cout).to(weight.dtype).contiguous()


def recover_weight(u: torch.Tensor) -> torch.Tensor:
    """The 3x3 filter [Cout, Cin, 3, 3] a transformed one came from (its point count says which F): G has full
    column rank, so its pseudo-inverse undoes the transform exactly (up to the rounding of U)."""
    points, cin, cout = u.shape
    side = {16: 4, 36: 6}[points]
    gp = torch.linalg.pinv(G[side - 2])  # [3, side]
    return torch.einsum("ka,abio,lb->oikl", gp, u.double().reshape(side, side, cin, cout), gp)


def _winograd_conv2d(input, weight, bias, padding, min, max):
    # The reference: the convolution this call stands for, in float64 (the kernels' Winograd rounding is checked
    # against it with a tolerance), then clamped.
    w = recover_weight(weight)
    b = bias.double() if bias is not None else None
    y = torch.nn.functional.conv2d(input.double(), w, b, 1, list(padding))
    return y.clamp_(min, max).to(input.dtype)


def _fake(input, weight, bias, padding, min, max):
    n, _, h, w = input.shape
    return input.new_empty((n, weight.shape[2], h + 2 * padding[0] - 2, w + 2 * padding[1] - 2))


winograd_conv2d, winograd_conv2d_out = ember_ops.define("ember::winograd_conv2d", _winograd_conv2d, _fake)


def _constant_float(t) -> bool:
    return isinstance(t, TensorValue) and t.role is Role.CONSTANT and t.dtype == torch.float32


def _tile(call: Call) -> int:
    """F(m x m, 3x3)'s m for this call: 4, 2, or 0 when it is not rewritten."""
    x, w, b, stride, padding, dilation, transposed, _output_padding, groups = call.args[:9]
    y = call.outs[0]
    if not (isinstance(x, TensorValue) and x.dtype == torch.float32 and len(x.shape) == 4):
        return 0
    if x.dim_order != (0, 1, 2, 3) or y.dim_order != (0, 1, 2, 3) or y.dtype != torch.float32:
        return 0
    if not _constant_float(w) or tuple(w.shape[2:]) != (3, 3) or not (b is None or _constant_float(b)):
        return 0
    if transposed or groups != 1 or list(stride) != [1, 1] or list(dilation) != [1, 1]:
        return 0
    if len(padding) != 2 or any(not isinstance(p, int) or p < 0 for p in padding):
        return 0
    # The planned (largest) output plane decides.
    return choose_tile(y.shape[2], y.shape[3], w.shape[1], w.shape[0])


def choose_tile(out_h: int, out_w: int, cin: int, cout: int) -> int:
    """F(m x m, 3x3)'s m for a convolution of this output plane and channels: 4, 2, or 0 (direct)."""
    if cin < MIN_CHANNELS or cout < MIN_CHANNELS:
        return 0
    for m in (4, 2):
        if math.ceil(out_h / m) * math.ceil(out_w / m) >= MIN_TILES:
            return m
    return 0


def use_winograd(graph: MethodGraph) -> int:
    """Rewrites each eligible convolution.out and ember::convolution_clamp.out as ember::winograd_conv2d.out, its
    filter transformed once (per tile size) however many calls share it. Returns the number rewritten."""
    transformed = {}  # (id(filter), m) -> its transformed constant
    count = 0
    for i, call in enumerate(graph.calls):
        if call.op == aten.convolution.out:
            lo, hi = -math.inf, math.inf
        elif call.op == convolution_clamp_out:
            lo, hi = call.args[9], call.args[10]
        else:
            continue
        m = _tile(call)
        if m == 0:
            continue
        w = call.args[1]
        if (id(w), m) not in transformed:
            transformed[(id(w), m)] = _constant(f"{w.name}_winograd{m}", transform_weight(w.data, m))
        y = call.outs[0]
        graph.calls[i] = Call(
            op=winograd_conv2d_out,
            args=[call.args[0], transformed[(id(w), m)], call.args[2], list(call.args[4]), float(lo), float(hi), y],
            outs=[y],
            source=call.source,
            module=call.module,
            node_name=call.node_name,
        )
        count += 1
    return count
