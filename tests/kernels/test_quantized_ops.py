"""The quantized kernels (kernels/quantized) against PyTorch's reference quantized computation.

One-op programs: tiny modules call torch.ops.ember_quantized.* / torch.ops.quantized_decomposed.* (registered for
export by kernels/quantized/ops.py) on int8 tensors, are exported with exir and run on the C++ runtime. The
reference is ops.py's: dequantize -> float op -> quantize_per_tensor (round half to even) -> clamp to the
activation range. Seeds are fixed, so every number below is reproducible.

quantize/dequantize (per tensor and per channel) follow PyTorch's arithmetic exactly and must match bit for bit,
ties and clamping included. The requantizing kernels compute in int32 with gemmlowp-style fixed-point
multipliers (util/requantize.h: final rounding ties away from zero, to even in the pooling kernels) where the
reference rounds a float32 result half to even, so they may differ by one int8 unit and must never differ by more. Measured over the cases below
(int8 outputs compared element by element; every differing output was checked against float64 arithmetic):
    conv2d                0 of 75,116 outputs differ (0.00%)
    linear                0 of  4,425 outputs differ (0.00%)
    adaptive_avg_pool2d   0 of  1,538 outputs differ (0.00%)
    avg_pool2d            0 of  1,394 outputs differ (0.00%)
    softmax               0 of 10,354 outputs differ (0.00%), and 0 of the 1,536 exact ties of its equal-value rows
                         of 512 (0.5 and 1.5 steps)
    add                  18 of 26,467 outputs differ (0.07%): all exact ties of the real arithmetic (scales with four
                         decimals make (731a + 659b) / 1102 land on .5 about once in 1,100), rounded away from
                         zero by the kernel and to even by the reference
    mul                   0 of  2,244 outputs differ (0.00%)
  tie stress cases (TIE_CASES: round scales chosen so that many results are exact ties):
    add                  42 of    200 outputs differ (21.0%)
    mul                   4 of    200 outputs differ (2.0%): a * b / 4 ties, most of the outputs saturate
    adaptive_avg_pool2d   3 of    136 outputs differ (2.2%)
    avg_pool2d            4 of     72 outputs differ (5.6%)
Before the kernels lifted accumulators into their spare bits (multiply_by_quantized_multiplier_lifted), the plain
two-rounding scheme differed in 16 of 12,396 conv outputs (0.13%), the kernel each time the one further from the
exact value, and in 25 of 258 pooling outputs of an earlier set of cases (7 after the lift, all exact ties). The
pooling kernels round exact ties to even, as the reference's quantize does (away from zero, the adaptive tie
cases differed in 9 of 136 outputs and avg_pool2d's in 5 of 72); those that still differ are ties the
reference's float32 arithmetic lands a hair to one side of.
The tests allow at most one unit of difference anywhere, and at most 2% of a case's outputs differing (30% in a
tie stress case). `pytest -s` prints the counts of a run.
"""

from typing import Dict, List, Tuple

import pytest
import torch
import torch.nn.functional as F

import exir
import kernels.quantized.ops  # noqa: F401  (registers ember_quantized::* and quantized_decomposed::*.out)

qd = torch.ops.quantized_decomposed
eq = torch.ops.ember_quantized

# Mismatch counts per op family, [differing, total], printed when the module's tests finish (pytest -s).
MISMATCHES: Dict[str, List[int]] = {}


@pytest.fixture(scope="module", autouse=True)
def report_mismatch_rates():
    yield
    for family, (differing, total) in sorted(MISMATCHES.items()):
        print(f"\n{family}: {differing} of {total} outputs differ ({100.0 * differing / max(total, 1):.2f}%)")


class Fn(torch.nn.Module):
    """forward(*inputs) = fn(*inputs, *buffers): constants (weights, scales, bias) live in buffers."""

    def __init__(self, fn, *constants):
        super().__init__()
        self.fn = fn
        for i, c in enumerate(constants):
            self.register_buffer(f"c{i}", c)
        self.n = len(constants)

    def forward(self, *inputs):
        return self.fn(*inputs, *[getattr(self, f"c{i}") for i in range(self.n)])


def run_on_runtime(runtime, module, inputs, check_kernels=True):
    # Fold nothing: a folded constant would hide the kernel under test behind the exporter.
    prog = exir.to_edge(torch.export.export(module, tuple(inputs))).to_executorch(
        exir.ExecutorchBackendConfig(fold_constants=False, alias_views=False, check_kernels=check_kernels)
    )
    return runtime.load(prog.buffer).run("forward", list(inputs))[0]


# Cases built so that many real results sit exactly on a rounding tie (equal or 2x scales; averages of an even
# count at the input's own scale). There the kernels' fixed point rounds away from zero and the reference's
# float32 rounds to even (or lands a hair to either side), so up to half of the ties may differ by one.
TIE_CASES = {
    "exact_ties_same_scales",
    "exact_ties_global_same_scale",
    "exact_ties_same_scale_windows",
    "exact_ties_2x2_same_scale",
}


def check_close(family: str, got: torch.Tensor, want: torch.Tensor, ties: bool = False) -> Tuple[int, int]:
    """got within one int8 unit of want everywhere, and equal in all but 2% of outputs (30% in a tie case)."""
    assert got.dtype == want.dtype == torch.int8 and got.shape == want.shape
    diff = (got.to(torch.int32) - want.to(torch.int32)).abs()
    differing = int((diff > 0).sum())
    max_fraction = 0.30 if ties else 0.02
    counts = MISMATCHES.setdefault(family + (" (tie cases)" if ties else ""), [0, 0])
    counts[0] += differing
    counts[1] += want.numel()
    assert int(diff.max()) <= 1, f"outputs differ by up to {int(diff.max())} units"
    assert differing <= max_fraction * want.numel(), f"{differing} of {want.numel()} outputs differ"
    return differing, want.numel()


def calibrate(y: torch.Tensor) -> Tuple[float, int]:
    """Per-tensor asymmetric int8 parameters covering y's range, as an observer would choose them."""
    lo, hi = min(float(y.min()), 0.0), max(float(y.max()), 0.0)
    scale = max((hi - lo) / 255.0, 1e-8)
    return scale, int(max(-128, min(127, round(-128 - lo / scale))))


def quantized_weights(g, oc: int, *shape, bias: bool = True, per_tensor: bool = False, input_scale: float = 0.02):
    """Symmetric per-output-channel int8 weights (scales float32 [oc]) and an int32 bias at input_scale * w_scale."""
    w = torch.randn(oc, *shape, generator=g) * (torch.rand(oc, *[1] * len(shape), generator=g) + 0.2)
    absmax = w.abs().reshape(oc, -1).amax(dim=1)
    scales = (absmax.max().expand(oc) if per_tensor else absmax) / 127.0
    scales = scales.to(torch.float32).contiguous()
    wq = torch.round(w / scales.reshape(oc, *[1] * len(shape))).clamp(-127, 127).to(torch.int8)
    b = None
    if bias:
        b = torch.round(torch.randn(oc, generator=g) * 0.5 / (input_scale * scales.to(torch.float64))).to(torch.int32)
    return wq, (scales[:1].contiguous() if per_tensor else scales), b


def int8(g, *shape):
    return torch.randint(-128, 128, shape, generator=g, dtype=torch.int8)


# --- conv2d ------------------------------------------------------------------------------------------------------

CONV_CASES = {
    # name: (input shape, out channels, kernel, stride, padding, dilation, groups, bias, activation)
    "3x3_s1_p1_bias": ((1, 3, 10, 10), 8, (3, 3), [1, 1], [1, 1], [1, 1], 1, True, None),
    "3x3_s2_p1_bias": ((2, 4, 11, 9), 6, (3, 3), [2, 2], [1, 1], [1, 1], 1, True, None),
    "3x3_s1_p1_nobias_relu": ((1, 3, 8, 8), 5, (3, 3), [1, 1], [1, 1], [1, 1], 1, False, "relu"),
    "3x3_s2_p1_relu6": ((1, 8, 12, 12), 8, (3, 3), [2, 2], [1, 1], [1, 1], 1, True, "relu6"),
    "depthwise_3x3": ((1, 8, 9, 9), 8, (3, 3), [1, 1], [1, 1], [1, 1], 8, True, "relu"),
    "depthwise_multiplier2_s2": ((2, 4, 10, 10), 8, (3, 3), [2, 2], [1, 1], [1, 1], 4, True, None),
    "depthwise_5x5_nobias": ((1, 6, 7, 7), 6, (5, 5), [1, 1], [2, 2], [1, 1], 6, False, None),
    "pointwise_1x1": ((1, 16, 13, 13), 12, (1, 1), [1, 1], [0, 0], [1, 1], 1, True, None),
    "pointwise_1x1_large_plane_relu": ((2, 8, 16, 20), 4, (1, 1), [1], [0], [1], 1, True, "relu"),
    "pointwise_1x1_nobias": ((1, 32, 4, 4), 16, (1, 1), [1, 1], [0, 0], [1, 1], 1, False, None),
    "1x1_stride2": ((1, 8, 9, 9), 8, (1, 1), [2, 2], [0, 0], [1, 1], 1, True, None),
    "grouped_2": ((1, 8, 7, 7), 6, (3, 3), [1, 1], [1, 1], [1, 1], 2, True, None),
    "dilated_3x3": ((1, 4, 12, 12), 4, (3, 3), [1, 1], [2, 2], [2, 2], 1, True, None),
    "rect_kernel_stride": ((1, 3, 9, 8), 4, (3, 1), [2, 1], [1, 0], [1, 1], 1, True, None),
    "wide_row_blocks": ((1, 2, 3, 300), 3, (3, 3), [1, 1], [1, 1], [1, 1], 1, True, None),
    "no_padding_5x5": ((1, 3, 12, 12), 4, (5, 5), [1, 1], [0, 0], [1, 1], 1, True, None),
    "per_tensor_weight_scale": ((1, 3, 8, 8), 4, (3, 3), [1, 1], [1, 1], [1, 1], 1, True, None),
    # Layer sizes from a small MobileNet, for a mismatch rate measured over many outputs.
    "mobilenet_like_3x3_relu6": ((1, 24, 28, 28), 32, (3, 3), [1, 1], [1, 1], [1, 1], 1, True, "relu6"),
    "mobilenet_like_depthwise_s2": ((1, 96, 28, 28), 96, (3, 3), [2, 2], [1, 1], [1, 1], 96, True, "relu6"),
    "mobilenet_like_pointwise": ((1, 64, 14, 14), 96, (1, 1), [1, 1], [0, 0], [1, 1], 1, True, None),
}


@pytest.mark.parametrize("name", sorted(CONV_CASES))
def test_conv2d(runtime, name):
    shape, oc, (kh, kw), stride, padding, dilation, groups, has_bias, act = CONV_CASES[name]
    g = torch.Generator().manual_seed(100 + sorted(CONV_CASES).index(name))
    x = int8(g, *shape)
    in_scale, in_zp = 0.02, -7
    w, ws, b = quantized_weights(
        g,
        oc,
        shape[1] // groups,
        kh,
        kw,
        bias=has_bias,
        per_tensor=name == "per_tensor_weight_scale",
        input_scale=in_scale,
    )
    # The output range from the float result, as calibration would find it.
    xf = qd.dequantize_per_tensor(x, in_scale, in_zp, -128, 127, torch.int8)
    wf = w.float() * ws.reshape(-1, 1, 1, 1)
    bf = None if b is None else b.double() * in_scale * ws.double()
    yf = F.conv2d(
        xf,
        wf,
        None if bf is None else bf.float(),
        stride * (3 - len(stride)),
        padding * (3 - len(padding)),
        dilation * (3 - len(dilation)),
        groups,
    )
    out_scale, out_zp = calibrate(yf)
    act_min, act_max = -128, 127
    if act == "relu":
        act_min = out_zp
    elif act == "relu6":
        act_min, act_max = out_zp, min(127, out_zp + round(6.0 / out_scale))

    def conv(x, w, ws, *bias):
        return eq.conv2d(
            x,
            in_scale,
            in_zp,
            w,
            ws,
            bias[0] if bias else None,
            stride,
            padding,
            dilation,
            groups,
            out_scale,
            out_zp,
            act_min,
            act_max,
        )

    constants = (w, ws) + ((b,) if b is not None else ())
    module = Fn(conv, *constants).eval()
    want = module(x)
    got = run_on_runtime(runtime, module, [x])
    check_close("conv2d", got, want)
    if act is not None:
        assert int(got.min()) >= act_min and int(got.max()) <= act_max
        assert int((got == act_min).sum()) > 0, "the case should exercise the activation clamp"


# --- linear ------------------------------------------------------------------------------------------------------

LINEAR_CASES = {
    # name: (input shape, out features, bias, activation, per-tensor weight scale)
    "2d_bias": ((4, 32), 10, True, None, False),
    "batch_dims": ((2, 3, 24), 7, True, None, False),
    "batch_dims_relu_nobias": ((3, 5, 16), 9, False, "relu", False),
    "wide_in_features": ((2, 1000), 16, True, None, False),
    "1d_input": ((40,), 8, True, None, False),
    "per_tensor_weight_scale": ((6, 20), 12, True, None, True),
    "classifier_sized": ((32, 256), 128, True, None, False),
}


@pytest.mark.parametrize("name", sorted(LINEAR_CASES))
def test_linear(runtime, name):
    shape, oc, has_bias, act, per_tensor = LINEAR_CASES[name]
    g = torch.Generator().manual_seed(200 + sorted(LINEAR_CASES).index(name))
    x = int8(g, *shape)
    in_scale, in_zp = 0.03, 5
    w, ws, b = quantized_weights(g, oc, shape[-1], bias=has_bias, per_tensor=per_tensor, input_scale=in_scale)
    xf = qd.dequantize_per_tensor(x, in_scale, in_zp, -128, 127, torch.int8)
    bf = None if b is None else (b.double() * in_scale * ws.double()).float()
    yf = F.linear(xf, w.float() * ws.reshape(-1, 1), bf)
    out_scale, out_zp = calibrate(yf)
    act_min = out_zp if act == "relu" else -128

    def linear(x, w, ws, *bias):
        return eq.linear(x, in_scale, in_zp, w, ws, bias[0] if bias else None, out_scale, out_zp, act_min, 127)

    module = Fn(linear, w, ws, *(() if b is None else (b,))).eval()
    want = module(x)
    got = run_on_runtime(runtime, module, [x])
    check_close("linear", got, want)


# --- add ---------------------------------------------------------------------------------------------------------

ADD_CASES = {
    # name: (shape, self scale/zp, other scale/zp, output scale/zp, activation range)
    "different_scales": ((2, 3, 8, 8), (0.0213, -3), (0.0517, 10), (0.0634, -2), (-128, 127)),
    "similar_scales": ((4, 50), (0.1037, 0), (0.0981, 1), (0.1893, 0), (-128, 127)),
    "saturating": ((3, 7, 11), (0.1021, 4), (0.0788, -9), (0.0197, 1), (-128, 127)),
    "relu_clamped": ((1, 16, 5, 5), (0.0412, -20), (0.0107, 30), (0.0493, -128), (-128, 127)),
    "relu_clamped_mid_zero_point": ((64,), (0.0391, 2), (0.0287, -2), (0.0512, 7), (7, 127)),
    "tiny_vs_large_scale": ((10, 10), (0.00113, 0), (0.4871, -5), (0.5017, 3), (-128, 127)),
    "residual_sized": ((1, 32, 28, 28), (0.0731, 3), (0.0659, -6), (0.1102, -1), (-128, 127)),
    # Round scales put many real results exactly on .5 (here (a + b) / 2): a tie stress test, see TIE_CASES.
    "exact_ties_same_scales": ((4, 50), (0.1, 0), (0.1, 0), (0.2, 0), (-128, 127)),
}


@pytest.mark.parametrize("name", sorted(ADD_CASES))
def test_add(runtime, name):
    shape, (sa, za), (sb, zb), (so, zo), (lo, hi) = ADD_CASES[name]
    g = torch.Generator().manual_seed(300 + sorted(ADD_CASES).index(name))
    a, b = int8(g, *shape), int8(g, *shape)
    module = Fn(lambda a, b: eq.add(a, sa, za, b, sb, zb, so, zo, lo, hi)).eval()
    want = module(a, b)
    got = run_on_runtime(runtime, module, [a, b])
    check_close("add", got, want, ties=name in TIE_CASES)
    if name == "saturating":
        assert int((got == 127).sum()) > 0 and int((got == -128).sum()) > 0


# --- mul ---------------------------------------------------------------------------------------------------------

MUL_CASES = {
    # name: (self shape, other shape, self scale/zp, other scale/zp, output scale/zp, activation range)
    "same_shape": ((2, 3, 8, 8), (2, 3, 8, 8), (0.0213, -3), (0.0517, 10), (0.0411, -2), (-128, 127)),
    "per_channel_nchw": ((2, 6, 5, 7), (1, 6, 1, 1), (0.0731, 3), (0.0079, -128), (0.0583, 5), (-128, 127)),
    "last_dim_row": ((3, 4, 9), (9,), (0.0412, -20), (0.0321, 17), (0.0904, 0), (-128, 127)),
    "both_broadcast": ((4, 1, 5), (1, 3, 1), (0.0612, 1), (0.0544, -1), (0.1003, 2), (-128, 127)),
    "broadcast_self": ((1, 5, 1), (3, 5, 11), (0.0312, 8), (0.0688, -4), (0.0497, -9), (-128, 127)),
    "scalar_other": ((5, 13), (1,), (0.0391, 2), (0.7301, 0), (0.0287, -1), (-128, 127)),
    "rank0_other": ((4, 6), (), (0.0391, -7), (0.2113, 3), (0.0437, 2), (-128, 127)),
    "rank0_both": ((), (), (0.0391, -7), (0.2113, 3), (0.0437, 2), (-128, 127)),
    "odd_length_tail": ((37,), (37,), (0.0287, -2), (0.0391, 2), (0.0130, 7), (-128, 127)),
    # Output scale far below the products' range: most outputs clamp at -128 or 127.
    "saturating": ((3, 7, 11), (3, 7, 11), (0.1021, 4), (0.0788, -9), (0.0197, 1), (-128, 127)),
    "zero_points_at_extremes": ((6, 21), (6, 21), (0.0173, -128), (0.0241, 127), (0.0911, 127), (-128, 127)),
    "zero_points_at_other_extremes": ((6, 21), (1, 21), (0.0173, 127), (0.0241, -128), (0.0911, -128), (-128, 127)),
    "relu_clamped": ((1, 16, 5, 5), (1, 16, 5, 5), (0.0412, -20), (0.0107, 30), (0.0093, -128), (-128, 127)),
    "relu6_clamped_mid_zero_point": ((64,), (64,), (0.0391, 2), (0.0287, -2), (0.0071, -40), (-40, 45)),
    # A multiplier of 2^15: the requantization has no final shift, every nonzero product saturates.
    "no_final_shift": ((3, 11), (3, 11), (0.5, 3), (0.25, -2), (0.125 / 32768, 1), (-128, 127)),
    # Round scales put many real results exactly on .5 (here a * b / 4): a tie stress test, see TIE_CASES.
    "exact_ties_quarter": ((4, 50), (4, 50), (0.5, 0), (0.5, 0), (1.0, 0), (-128, 127)),
}
TIE_CASES.add("exact_ties_quarter")


@pytest.mark.parametrize("name", sorted(MUL_CASES))
def test_mul(runtime, name):
    """The fused kernel within one int8 unit of dequantize -> float mul -> quantize: the kernel's product of the
    centered inputs is exact and its multiplier carries 31 bits, so its one fixed-point rounding can only differ
    from the reference's where the real result lies within a rounding error of a .5 boundary (exact ties it
    rounds away from zero where the reference rounds to even, and the reference's own float32 rounding)."""
    self_shape, other_shape, (sa, za), (sb, zb), (so, zo), (lo, hi) = MUL_CASES[name]
    g = torch.Generator().manual_seed(700 + sorted(MUL_CASES).index(name))
    a, b = int8(g, *self_shape), int8(g, *other_shape)
    module = Fn(lambda a, b: eq.mul(a, sa, za, b, sb, zb, so, zo, lo, hi)).eval()
    want = module(a, b)
    assert want.shape == torch.broadcast_shapes(a.shape, b.shape)
    got = run_on_runtime(runtime, module, [a, b])
    check_close("mul", got, want, ties=name in TIE_CASES)
    if name == "saturating":
        assert int((got == 127).sum()) > 0 and int((got == -128).sum()) > 0
    if lo > -128 or hi < 127:
        assert int((got == lo).sum()) > 0 and int(got.min()) >= lo and int(got.max()) <= hi


# --- adaptive_avg_pool2d -----------------------------------------------------------------------------------------

POOL_CASES = {
    # name: (input shape, output size, input scale/zp, output scale/zp)
    "global_7x7": ((2, 16, 7, 7), [1, 1], (0.0513, -4), (0.0217, 3)),
    "global_8x8": ((1, 32, 8, 8), [1, 1], (0.0498, 6), (0.0311, -1)),
    "divisible_2x2": ((1, 4, 8, 6), [2, 2], (0.0407, 0), (0.0109, -5)),
    "overlapping_5_to_3": ((2, 3, 5, 5), [3, 3], (0.0312, 2), (0.0207, 0)),
    "uneven_7x9_to_2x4": ((1, 5, 7, 9), [2, 4], (0.0211, -10), (0.0153, 4)),
    "upsampling_2x3_to_3x5": ((1, 2, 2, 3), [3, 5], (0.1032, 1), (0.0716, -3)),
    "three_d_input": ((6, 10, 10), [3, 3], (0.0502, 0), (0.0389, 2)),
    "global_many_channels": ((4, 320, 3, 3), [1, 1], (0.0623, -9), (0.0241, 5)),
    "exact_ties_global_same_scale": ((1, 64, 4, 4), [1, 1], (0.05, 0), (0.05, 0)),
    "exact_ties_same_scale_windows": ((1, 8, 6, 6), [3, 3], (0.05, 0), (0.05, 0)),
}


@pytest.mark.parametrize("name", sorted(POOL_CASES))
def test_adaptive_avg_pool2d(runtime, name):
    shape, size, (si, zi), (so, zo) = POOL_CASES[name]
    g = torch.Generator().manual_seed(400 + sorted(POOL_CASES).index(name))
    x = int8(g, *shape)
    module = Fn(lambda x: eq.adaptive_avg_pool2d(x, si, zi, size, so, zo)).eval()
    want = module(x)
    got = run_on_runtime(runtime, module, [x])
    check_close("adaptive_avg_pool2d", got, want, ties=name in TIE_CASES)


# --- avg_pool2d ----------------------------------------------------------------------------------------------------

AVG_POOL_CASES = {
    # name: (input shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override, in, out qparams)
    "2x2_s2": ((1, 16, 8, 8), [2, 2], [2, 2], [0, 0], False, True, None, (0.0431, -3), (0.0277, 5)),
    "3x3_s1_p1_counting_pad": ((2, 5, 7, 9), [3, 3], [1, 1], [1, 1], False, True, None, (0.0513, 2), (0.0391, -1)),
    "3x3_s2_p1_not_counting_pad": ((1, 6, 9, 8), [3, 3], [2, 2], [1, 1], False, False, None, (0.0389, -7), (0.0233, 0)),
    "ceil_mode_partial_windows": ((1, 4, 7, 7), [3, 2], [2, 2], [1, 0], True, True, None, (0.0299, 0), (0.0347, 4)),
    "ceil_mode_not_counting_pad": ((1, 3, 6, 5), [3, 3], [2, 2], [1, 1], True, False, None, (0.0602, 1), (0.0418, -2)),
    "divisor_override": ((1, 8, 6, 6), [2, 3], [2, 3], [0, 1], False, True, 5, (0.0217, -4), (0.0301, 3)),
    "global_25x5": ((1, 64, 25, 5), [25, 5], [25, 5], [0, 0], False, True, None, (0.0512, -11), (0.0089, 6)),
    "global_8x8_shared_scale": (
        (1, 64, 8, 8),
        [8, 8],
        [8, 8],
        [0, 0],
        False,
        True,
        None,
        (0.0417, -128),
        (0.0417, -128),
    ),
    "three_d_input": ((7, 10, 10), [4, 4], [3, 3], [2, 2], False, False, None, (0.0481, 0), (0.0263, 2)),
    "exact_ties_2x2_same_scale": ((1, 8, 6, 6), [2, 2], [2, 2], [0, 0], False, True, None, (0.05, 0), (0.05, 0)),
}


@pytest.mark.parametrize("name", sorted(AVG_POOL_CASES))
def test_avg_pool2d(runtime, name):
    shape, k, s, p, ceil, include_pad, divisor, (si, zi), (so, zo) = AVG_POOL_CASES[name]
    g = torch.Generator().manual_seed(450 + sorted(AVG_POOL_CASES).index(name))
    x = int8(g, *shape)
    module = Fn(lambda x: eq.avg_pool2d(x, si, zi, k, s, p, ceil, include_pad, divisor, so, zo)).eval()
    want = module(x)
    assert want.shape == F.avg_pool2d(x.float(), k, s, p, ceil, include_pad, divisor).shape
    got = run_on_runtime(runtime, module, [x])
    check_close("avg_pool2d", got, want, ties=name in TIE_CASES)


# --- softmax -------------------------------------------------------------------------------------------------------

SOFTMAX_CASES = {
    # name: (input shape, dim, input scale/zp, output scale/zp, input values: "random" or a constant)
    "keyword_spotting_1x12": ((1, 12), -1, (0.1172, 7), (1 / 256, -128), "random"),
    "rows_8x256": ((8, 256), -1, (0.0625, -3), (1 / 256, -128), "random"),
    "odd_rows_5x37": ((5, 37), -1, (0.0731, 10), (1 / 256, -128), "random"),
    "tail_3x17": ((3, 17), 1, (0.0413, -20), (1 / 256, -128), "random"),
    "large_range": ((4, 50), -1, (0.5, 0), (1 / 256, -128), "random"),
    "huge_input_scale": ((4, 19), -1, (9.5, 0), (1 / 256, -128), "random"),
    "small_range": ((3, 64), -1, (0.001, 0), (1 / 256, -128), "random"),
    "rows_of_length_1": ((6, 1), -1, (0.1, 0), (1 / 256, -128), "random"),
    "long_rows_2x1000": ((2, 1000), -1, (0.05, 0), (1 / 256, -128), "random"),
    "long_rows_small_scale_1x4096": ((1, 4096), -1, (0.003, 0), (1 / 256, -128), "random"),
    "equal_values_3x7": ((3, 7), -1, (0.1, 0), (1 / 256, -128), 42),
    # 256 / 512 is exactly half a step: the reference's quantize rounds it to even, and so must the kernel.
    "equal_values_2x512": ((2, 512), -1, (0.1, 0), (1 / 256, -128), -5),
    "equal_values_4x256": ((4, 256), -1, (0.1, 0), (1 / 256, -128), 127),
    # 768 / 512: 1.5 steps, to even (2).
    "equal_values_1x512_output_scale_1_768": ((1, 512), -1, (0.1, 0), (1 / 768, -128), 3),
    "dim_1_of_3d": ((2, 9, 5), 1, (0.0817, 3), (1 / 256, -128), "random"),
    "dim_0": ((7, 3), 0, (0.0291, -1), (1 / 256, -128), "random"),
    "general_output_params": ((4, 33), -1, (0.0519, 2), (0.0021, -50), "random"),
    "coarse_output_scale": ((4, 20), -1, (0.1003, 0), (0.0107, 3), "random"),
    "four_d": ((2, 3, 4, 5), -1, (0.0678, -7), (1 / 256, -128), "random"),
    "zero_d": ((), 0, (0.1, 0), (1 / 256, -128), "random"),
}
SOFTMAX_TIES = {"equal_values_2x512", "equal_values_1x512_output_scale_1_768"}


@pytest.mark.parametrize("name", sorted(SOFTMAX_CASES))
def test_softmax(runtime, name):
    shape, dim, (si, zi), (so, zo), values = SOFTMAX_CASES[name]
    g = torch.Generator().manual_seed(500 + sorted(SOFTMAX_CASES).index(name))
    x = int8(g, *shape) if values == "random" else torch.full(shape, values, dtype=torch.int8)
    module = Fn(lambda x: eq.softmax(x, si, zi, dim, so, zo)).eval()
    want = module(x)
    # The reference is PyTorch's float32 softmax between dequantize and quantize.
    assert torch.equal(
        want,
        qd.quantize_per_tensor(
            torch.softmax(qd.dequantize_per_tensor(x, si, zi, -128, 127, torch.int8), dim),
            so,
            zo,
            -128,
            127,
            torch.int8,
        ),
    )
    got = run_on_runtime(runtime, module, [x])
    check_close("softmax", got, want, ties=name in SOFTMAX_TIES)
    if values != "random":
        assert torch.equal(got, want)  # equal values: 1 / n of each row, exact ties rounded to even


@pytest.mark.parametrize("shape", [(0, 5), (3, 0)])
def test_softmax_of_empty_rows(runtime, shape):
    """No rows, or rows of nothing: an empty output, as eager gives (a row's reciprocal is never taken)."""
    module = Fn(lambda x: eq.softmax(x, 0.1, 0, -1, 1 / 256, -128)).eval()
    x = torch.zeros(shape, dtype=torch.int8)
    got = run_on_runtime(runtime, module, [x])
    assert got.shape == module(x).shape == x.shape and got.dtype == torch.int8


def test_error_softmax_dim_out_of_range(runtime, capfd, monkeypatch):
    g = torch.Generator().manual_seed(1011)
    module = Fn(lambda x: eq.softmax(x, 0.1, 0, 2, 1 / 256, -128)).eval()
    monkeypatch.setenv("EMBER_LOG", "1")
    capfd.readouterr()
    with pytest.raises(RuntimeError) as e:
        run_on_runtime(runtime, module, [int8(g, 3, 4)])
    err = capfd.readouterr().err
    # Refused by the prepare step, at load: the table is built there.
    assert "ember_quantized::softmax.out" in str(e.value), str(e.value)
    assert "dim 2 is out of range for a 2-d input" in err, err


# --- quantize / dequantize: bit-exact --------------------------------------------------------------------------


def _ties(scale: float, n: int = 64) -> torch.Tensor:
    """Values exactly halfway between quantization steps (scale a power of two keeps them exact), both signs."""
    k = torch.arange(-n // 2, n // 2, dtype=torch.float32)
    return (k + 0.5) * scale


QPT_CASES = {
    # name: (input, scale, zero point, quant_min, quant_max, dtype)
    "int8_random": (lambda g: torch.randn(4, 33, generator=g) * 3, 0.023, -4, -128, 127, torch.int8),
    "int8_ties": (lambda g: _ties(0.25), 0.25, 0, -128, 127, torch.int8),
    "int8_ties_zero_point": (lambda g: _ties(0.5, 200), 0.5, 3, -128, 127, torch.int8),
    "int8_clamping": (lambda g: torch.linspace(-1000, 1000, 101), 0.5, 10, -128, 127, torch.int8),
    "int8_narrow_range": (lambda g: torch.randn(50, generator=g) * 10, 0.05, 0, -127, 127, torch.int8),
    "uint8": (lambda g: torch.randn(3, 4, 5, generator=g), 0.02, 128, 0, 255, torch.uint8),
    "uint8_ties_clamping": (lambda g: _ties(0.125, 600), 0.125, 100, 0, 255, torch.uint8),
    "int16": (lambda g: torch.randn(40, generator=g) * 100, 0.01, 7, -32768, 32767, torch.int16),
    "int32": (lambda g: torch.randn(40, generator=g) * 1e4, 0.001, -3, -(2**31), 2**31 - 1, torch.int32),
    "special_values": (
        lambda g: torch.tensor([float("inf"), float("-inf"), 0.0, -0.0, 1e30, -1e30]),
        0.1,
        0,
        -128,
        127,
        torch.int8,
    ),
}


@pytest.mark.parametrize("name", sorted(QPT_CASES))
def test_quantize_per_tensor_exact(runtime, name):
    make, scale, zp, qmin, qmax, dtype = QPT_CASES[name]
    x = make(torch.Generator().manual_seed(500 + sorted(QPT_CASES).index(name))).contiguous()
    module = Fn(lambda x: qd.quantize_per_tensor(x, scale, zp, qmin, qmax, dtype)).eval()
    want = module(x)
    got = run_on_runtime(runtime, module, [x])
    assert got.dtype == dtype and torch.equal(got, want)
    if "ties" in name:
        # Half to even really was exercised: some ties rounded down, some up.
        step = want.to(torch.float32) - zp
        assert bool((step < x / scale).any()) and bool((step > x / scale).any())


DQPT_CASES = {
    "int8": (torch.int8, -128, 127, 0.037, -5),
    "uint8": (torch.uint8, 0, 255, 0.02, 128),
    "int16": (torch.int16, -32768, 32767, 0.0003, 11),
    "int32": (torch.int32, -(2**31), 2**31 - 1, 1e-5, 0),
}


@pytest.mark.parametrize("name", sorted(DQPT_CASES))
def test_dequantize_per_tensor_exact(runtime, name):
    dtype, qmin, qmax, scale, zp = DQPT_CASES[name]
    g = torch.Generator().manual_seed(600 + sorted(DQPT_CASES).index(name))
    lo, hi = max(qmin, -100000), min(qmax, 100000)
    x = torch.randint(lo, hi + 1, (3, 17), generator=g, dtype=torch.int64).to(dtype)
    module = Fn(lambda x: qd.dequantize_per_tensor(x, scale, zp, qmin, qmax, dtype)).eval()
    want = module(x)
    got = run_on_runtime(runtime, module, [x])
    assert got.dtype == torch.float32 and torch.equal(got, want)


def test_dequantize_per_tensor_explicit_out_dtype(runtime):
    x = int8(torch.Generator().manual_seed(650), 5, 6)
    module = Fn(lambda x: qd.dequantize_per_tensor(x, 0.1, 3, -128, 127, torch.int8, out_dtype=torch.float32)).eval()
    assert torch.equal(run_on_runtime(runtime, module, [x]), module(x))


QPC_CASES = {
    # name: (input shape, axis, scales dtype, dtype, quant_min, quant_max, ties)
    "axis0_float_scales": ((6, 5, 3), 0, torch.float32, torch.int8, -128, 127, False),
    "axis1_float_scales": ((2, 4, 7), 1, torch.float32, torch.int8, -128, 127, False),
    "last_axis_negative": ((3, 9), -1, torch.float32, torch.int8, -127, 127, False),
    "double_scales": ((5, 8), 0, torch.float64, torch.int8, -128, 127, False),
    "uint8": ((4, 10), 0, torch.float32, torch.uint8, 0, 255, False),
    "ties_and_clamping": ((4, 80), 0, torch.float32, torch.int8, -128, 127, True),
}


@pytest.mark.parametrize("name", sorted(QPC_CASES))
def test_quantize_per_channel_exact(runtime, name):
    shape, axis, sdtype, dtype, qmin, qmax, ties = QPC_CASES[name]
    g = torch.Generator().manual_seed(700 + sorted(QPC_CASES).index(name))
    channels = shape[axis]
    if ties:
        scales = torch.tensor([0.25, 0.5, 0.125, 1.0], dtype=sdtype)
        x = torch.stack([_ties(float(s), shape[1]) * 4 for s in scales])  # wide enough to clamp too
    else:
        scales = (torch.rand(channels, generator=g) * 0.05 + 0.005).to(sdtype)
        x = torch.randn(*shape, generator=g) * 2
    zps = torch.randint(-10, 10, (channels,), generator=g, dtype=torch.int64)
    if dtype == torch.uint8:
        zps += 128
    module = Fn(lambda x, s, z: qd.quantize_per_channel(x, s, z, axis, qmin, qmax, dtype), scales, zps).eval()
    want = module(x)
    got = run_on_runtime(runtime, module, [x])
    assert got.dtype == dtype and torch.equal(got, want)
    if ties:
        assert int((want == qmin).sum()) > 0 and int((want == qmax).sum()) > 0


DQPC_CASES = {
    # name: (input shape, axis, scales dtype, with zero points, dtype)
    "weights_axis0_no_zero_points": ((8, 3, 3, 3), 0, torch.float32, False, torch.int8),
    "axis1_zero_points": ((2, 6, 5), 1, torch.float32, True, torch.int8),
    "double_scales": ((4, 7), 0, torch.float64, True, torch.int8),
    "uint8_last_axis": ((3, 5), -1, torch.float32, True, torch.uint8),
}


@pytest.mark.parametrize("name", sorted(DQPC_CASES))
def test_dequantize_per_channel_exact(runtime, name):
    shape, axis, sdtype, with_zp, dtype = DQPC_CASES[name]
    g = torch.Generator().manual_seed(800 + sorted(DQPC_CASES).index(name))
    channels = shape[axis]
    qmin, qmax = (0, 255) if dtype == torch.uint8 else (-128, 127)
    x = torch.randint(qmin, qmax + 1, shape, generator=g, dtype=torch.int64).to(dtype)
    scales = (torch.rand(channels, generator=g) * 0.05 + 0.001).to(sdtype)
    if with_zp:
        zps = torch.randint(-20, 20, (channels,), generator=g, dtype=torch.int64)
        module = Fn(lambda x, s, z: qd.dequantize_per_channel(x, s, z, axis, qmin, qmax, dtype), scales, zps)
    else:
        module = Fn(lambda x, s: qd.dequantize_per_channel(x, s, None, axis, qmin, qmax, dtype), scales)
    module.eval()
    want = module(x)
    got = run_on_runtime(runtime, module, [x])
    assert got.dtype == torch.float32 and torch.equal(got, want)


def test_quantize_dequantize_round_trip_in_one_program(runtime):
    """The graph the quantization lowering produces around a float op: q -> dq per tensor, then per channel."""
    g = torch.Generator().manual_seed(900)
    x = torch.randn(2, 4, 6, generator=g)
    scales = torch.tensor([0.01, 0.02, 0.03, 0.04])
    zps = torch.tensor([0, 1, -1, 2])

    def fn(x, s, z):
        q = qd.quantize_per_tensor(x, 0.02, -3, -128, 127, torch.int8)
        y = qd.dequantize_per_tensor(q, 0.02, -3, -128, 127, torch.int8) * 2.0
        qc = qd.quantize_per_channel(y, s, z, 1, -128, 127, torch.int8)
        return qd.dequantize_per_channel(qc, s, z, 1, -128, 127, torch.int8)

    module = Fn(fn, scales, zps).eval()
    got = run_on_runtime(runtime, module, [x])
    assert torch.equal(got, module(x))


# --- errors: clear messages from the runtime, never a crash ------------------------------------------------------


def _expect_kernel_error(runtime, capfd, monkeypatch, module, inputs, op: str, message: str):
    monkeypatch.setenv("EMBER_LOG", "1")  # the runtime's log (with the kernel's message) goes to stderr
    capfd.readouterr()
    with pytest.raises(RuntimeError) as e:
        run_on_runtime(runtime, module, inputs)
    err = capfd.readouterr().err
    assert f"{op}" in str(e.value) and "InvalidArgument" in str(e.value)
    assert message in err, err


def test_error_add_shapes_differ(runtime, capfd, monkeypatch):
    g = torch.Generator().manual_seed(1000)
    module = Fn(lambda a, b: eq.add(a, 0.1, 0, b, 0.1, 0, 0.2, 0, -128, 127)).eval()
    _expect_kernel_error(
        runtime,
        capfd,
        monkeypatch,
        module,
        [int8(g, 2, 3), int8(g, 3, 2)],
        "ember_quantized::add.out",
        "self [2, 3] and other [3, 2] must have the same shape (no broadcasting)",
    )


def test_error_conv_float_weight(runtime, capfd, monkeypatch):
    g = torch.Generator().manual_seed(1001)
    w = torch.randn(4, 3, 3, 3, generator=g)
    module = Fn(
        lambda x, w, ws: eq.conv2d(x, 0.1, 0, w, ws, None, [1, 1], [1, 1], [1, 1], 1, 0.1, 0, -128, 127),
        w,
        torch.full((4,), 0.01),
    ).eval()
    _expect_kernel_error(
        runtime,
        capfd,
        monkeypatch,
        module,
        [int8(g, 1, 3, 5, 5)],
        "ember_quantized::conv2d.out",
        "weight must be int8, got Float",
    )


def test_error_conv_float_bias(runtime, capfd, monkeypatch):
    g = torch.Generator().manual_seed(1002)
    w, ws, _ = quantized_weights(g, 4, 3, 3, 3)
    module = Fn(
        lambda x, w, ws, b: eq.conv2d(x, 0.1, 0, w, ws, b, [1, 1], [1, 1], [1, 1], 1, 0.1, 0, -128, 127),
        w,
        ws,
        torch.zeros(4),
    ).eval()
    _expect_kernel_error(
        runtime, capfd, monkeypatch, module, [int8(g, 1, 3, 5, 5)], "ember_quantized::conv2d.out", "bias must be int32"
    )


def test_error_conv_groups_do_not_fit(runtime, capfd, monkeypatch):
    g = torch.Generator().manual_seed(1003)
    w, ws, b = quantized_weights(g, 4, 2, 3, 3)  # 2 channels per group: wrong for 6 channels in 2 groups
    module = Fn(
        lambda x, w, ws, b: eq.conv2d(x, 0.1, 0, w, ws, b, [1, 1], [1, 1], [1, 1], 2, 0.1, 0, -128, 127), w, ws, b
    ).eval()
    _expect_kernel_error(
        runtime,
        capfd,
        monkeypatch,
        module,
        [int8(g, 1, 6, 5, 5)],
        "ember_quantized::conv2d.out",
        "6 input channels, 4 output channels and 2 groups do not fit a weight of 2 channels per group",
    )


def test_error_linear_features_differ(runtime, capfd, monkeypatch):
    g = torch.Generator().manual_seed(1004)
    w, ws, b = quantized_weights(g, 3, 4)
    module = Fn(lambda x, w, ws, b: eq.linear(x, 0.1, 0, w, ws, b, 0.1, 0, -128, 127), w, ws, b).eval()
    _expect_kernel_error(
        runtime,
        capfd,
        monkeypatch,
        module,
        [int8(g, 2, 5)],
        "ember_quantized::linear.out",
        "input has 5 features but weight expects 4",
    )


def test_error_linear_weight_scales_count(runtime, capfd, monkeypatch):
    g = torch.Generator().manual_seed(1005)
    w, _, b = quantized_weights(g, 3, 4)
    module = Fn(
        lambda x, w, ws, b: eq.linear(x, 0.1, 0, w, ws, b, 0.1, 0, -128, 127), w, torch.full((2,), 0.01), b
    ).eval()
    _expect_kernel_error(
        runtime,
        capfd,
        monkeypatch,
        module,
        [int8(g, 2, 4)],
        "ember_quantized::linear.out",
        "weight_scales must have 3 elements (one per output channel) or 1",
    )


def test_error_activation_range_outside_int8(runtime, capfd, monkeypatch):
    g = torch.Generator().manual_seed(1006)
    module = Fn(lambda a, b: eq.add(a, 0.1, 0, b, 0.1, 0, 0.2, 0, 0, 300)).eval()
    _expect_kernel_error(
        runtime,
        capfd,
        monkeypatch,
        module,
        [int8(g, 4), int8(g, 4)],
        "ember_quantized::add.out",
        "activation range [0, 300] must be int8 values",
    )


def test_error_avg_pool2d_divisor_not_positive(runtime, capfd, monkeypatch):
    # PyTorch refuses only a zero divisor; a negative one has no use in a quantized model and is refused too.
    g = torch.Generator().manual_seed(1010)
    module = Fn(lambda x: eq.avg_pool2d(x, 0.1, 0, [2, 2], [2, 2], [0, 0], False, True, -2, 0.1, 0)).eval()
    _expect_kernel_error(
        runtime,
        capfd,
        monkeypatch,
        module,
        [int8(g, 1, 2, 4, 4)],
        "ember_quantized::avg_pool2d.out",
        "divisor_override must be positive, got -2",
    )


def test_error_float_input_refused_at_load(runtime):
    """The first tensor's dtype is checked against the kernel's dtypes when the method loads, before running."""
    g = torch.Generator().manual_seed(1007)
    module = Fn(lambda a, b: eq.add(a, 0.1, 0, b, 0.1, 0, 0.2, 0, -128, 127)).eval()
    x = torch.randn(3, generator=g)
    # to_executorch refuses it first (tests/exir/test_kernel_check.py); exported anyway, the runtime does too.
    with pytest.raises(exir.KernelMissingError, match=r"ember_quantized::add\.out with Float"):
        run_on_runtime(runtime, module, [x, x])
    with pytest.raises(RuntimeError, match=r"ember_quantized::add\.out\): dtype Float is not compiled into this build"):
        run_on_runtime(runtime, module, [x, x], check_kernels=False)
    # The runtime survived and still runs a valid program.
    a = int8(g, 3)
    assert torch.equal(run_on_runtime(runtime, module, [a, a]), module(a, a))


def test_error_linear_weight_computed_at_run_time(runtime, capfd, monkeypatch):
    """linear's prepare step folds its weights into per-channel constants at load, so a weight that is not the
    program's constant data (here an input) is refused when the method loads, naming the operator, not misread."""
    g = torch.Generator().manual_seed(1008)
    w, ws, b = quantized_weights(g, 3, 4)
    module = Fn(lambda x, w, ws, b: eq.linear(x, 0.1, 0, w, ws, b, 0.1, 0, -128, 127), ws, b).eval()
    monkeypatch.setenv("EMBER_LOG", "1")
    capfd.readouterr()
    with pytest.raises(RuntimeError) as e:
        run_on_runtime(runtime, module, [int8(g, 2, 4), w])
    err = capfd.readouterr().err
    assert "ember_quantized::linear.out" in str(e.value) and "NotSupported" in str(e.value), str(e.value)
    assert "weight, weight_scales and bias must be constants of the program" in err, err
