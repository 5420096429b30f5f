"""ember_llm::linear, ember_llm::linear_int8 and ember_llm::linear_8da4w (kernels/portable/op_llm_linear.cc,
kernels/optimized/op_llm_linear{,_f32}.cc) against their PyTorch references (kernels/portable/llm_ops.py): decode (1 token), prefill tiles
(4 tokens and a remainder), with and without bias, every group size, Half/BFloat16 on portable, both builds.

Integer parts are exact: linear_8da4w's test scales make one unit of any group's int32 sum worth far more than
the float tolerance, so a single rounding difference in the activations' quantization, or a wrong nibble, fails.
Tolerances: float32 1e-5 relative + 1e-5 x the output's scale absolute (the kernels sum groups and lanes in
another order than the reference); float16/bfloat16: two units in the last place of the output."""

import pytest
import torch

import exir
from kernels.portable.llm_ops import (
    linear,
    linear_8da4w,
    linear_int8,
    pack_blocked,
    pack_int4,
    pack_int4_blocked,
)

g = torch.Generator().manual_seed(1819)


class Float(torch.nn.Module):
    def forward(self, x, w, b):
        return linear(x, w, b)


class FloatNoBias(torch.nn.Module):
    def forward(self, x, w):
        return linear(x, w, None)


class Int8(torch.nn.Module):
    def forward(self, x, w, s, b):
        return linear_int8(x, w, s, b)


class Int8NoBias(torch.nn.Module):
    def forward(self, x, w, s):
        return linear_int8(x, w, s, None)


class Da4w(torch.nn.Module):
    def __init__(self, group):
        super().__init__()
        self.group = group

    def forward(self, x, w, s, b):
        return linear_8da4w(x, w, s, self.group, b)


class Da4wNoBias(Da4w):
    def forward(self, x, w, s):
        return linear_8da4w(x, w, s, self.group, None)


TOL = {
    torch.float32: dict(rtol=1e-5, atol=1e-5),
    torch.float16: dict(rtol=2e-3, atol=2e-3),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1.6e-2),
}
# name -> (tokens, K, N)
SHAPES = {
    "decode": (1, 256, 40),
    "tile_and_rest": (7, 128, 24),
    "odd_k_int8": (3, 100, 9),
    # Output channels in whole blocks of 16, for the blocked layout.
    "decode_blocks": (1, 256, 48),
    "tile_and_rest_blocks": (7, 128, 32),
    # The float/int8 blocked layout's tiles: 8, 4 and 1 tokens over a pair of blocks and a single one (K not a
    # multiple of any vector); decode over four blocks and a single one.
    "prefill_dense_blocks": (13, 100, 48),
    "decode_dense_blocks": (1, 64, 80),
}


def _run(runtime, module, inputs, kernels):
    prog = exir.to_edge(torch.export.export(module, tuple(inputs))).to_executorch()
    return runtime.load(prog.buffer, kernels=kernels).run("forward", inputs)[0]


# (shape, bias, dtype, kernels): Float on both builds; Half/BFloat16 only on portable (the default build hands
# them to the same portable kernel).
INT8_CASES = [
    (shape, bias, torch.float32, kernels)
    for kernels in ("default", "portable")
    for shape, bias in (("decode", True), ("tile_and_rest", False), ("odd_k_int8", True))
]
INT8_CASES += [("tile_and_rest", True, dtype, "portable") for dtype in (torch.float16, torch.bfloat16)]


@pytest.mark.parametrize("shape,bias,dtype,kernels", INT8_CASES, ids=str)
def test_linear_int8_matches_the_reference(runtime, shape, bias, dtype, kernels):
    T, K, N = SHAPES[shape]
    x = torch.randn(1, T, K, generator=g).to(dtype)
    w = torch.randint(-127, 128, (N, K), generator=g, dtype=torch.int8)
    s = torch.rand(N, generator=g) * 0.02 + 0.001
    inputs = [x, w, s] + ([torch.randn(N, generator=g).to(dtype)] if bias else [])
    module = Int8() if bias else Int8NoBias()
    got = _run(runtime, module, inputs, kernels)
    want = module(*inputs)
    assert got.dtype == dtype and got.shape == (1, T, N)
    torch.testing.assert_close(got, want, **TOL[dtype])


# ember_llm::linear: K of 16 and 8 multiples and not (the AVX-512 and AVX2/NEON steps' tails), the 4-token tile
# and a remainder; Half/BFloat16/Double on portable.
FLOAT_CASES = [
    (shape, bias, torch.float32, kernels)
    for kernels in ("default", "portable")
    for shape, bias in (("decode", True), ("tile_and_rest", False), ("odd_k_int8", True))
]
FLOAT_CASES += [("tile_and_rest", True, dtype, "portable") for dtype in (torch.float16, torch.bfloat16, torch.float64)]


@pytest.mark.parametrize("shape,bias,dtype,kernels", FLOAT_CASES, ids=str)
def test_linear_matches_the_reference(runtime, shape, bias, dtype, kernels):
    T, K, N = SHAPES[shape]
    x = torch.randn(1, T, K, generator=g).to(dtype)
    w = (torch.randn(N, K, generator=g) * 0.1).to(dtype)
    inputs = [x, w] + ([torch.randn(N, generator=g).to(dtype)] if bias else [])
    module = Float() if bias else FloatNoBias()
    got = _run(runtime, module, inputs, kernels)
    want = module(*inputs)
    assert got.dtype == dtype and got.shape == (1, T, N)
    torch.testing.assert_close(got, want, **TOL.get(dtype, dict(rtol=1e-12, atol=1e-12)))


# Both dense linears on pack_blocked's layout, Float on both builds and Half on portable.
BLOCKED_CASES = [
    (op, shape, bias, torch.float32, kernels)
    for op in ("linear", "linear_int8")
    for kernels in ("default", "portable")
    for shape, bias in (("prefill_dense_blocks", True), ("decode_dense_blocks", False))
] + [("linear", "prefill_dense_blocks", True, torch.float16, "portable")]


@pytest.mark.parametrize("op,shape,bias,dtype,kernels", BLOCKED_CASES, ids=str)
def test_blocked_layout_matches_the_reference(runtime, op, shape, bias, dtype, kernels):
    T, K, N = SHAPES[shape]
    x = torch.randn(1, T, K, generator=g).to(dtype)
    if op == "linear":
        w = pack_blocked((torch.randn(N, K, generator=g) * 0.1).to(dtype))
        inputs, module = [x, w], (Float() if bias else FloatNoBias())
    else:
        w = pack_blocked(torch.randint(-127, 128, (N, K), generator=g, dtype=torch.int8))
        inputs, module = [x, w, torch.rand(N, generator=g) * 0.02 + 0.001], (Int8() if bias else Int8NoBias())
    inputs += [torch.randn(N, generator=g).to(dtype)] if bias else []
    got = _run(runtime, module, inputs, kernels)
    want = module(*inputs)
    assert got.dtype == dtype and got.shape == (1, T, N)
    torch.testing.assert_close(got, want, **TOL[dtype])


# (shape, group, bias): every group size at decode, the 4-token tile plus a remainder at two.
DA4W_CASES = [
    ("decode", 32, True),
    ("decode", 64, False),
    ("decode", 128, True),
    ("decode", 256, False),
    ("tile_and_rest", 32, False),
    ("tile_and_rest", 128, True),
]


@pytest.mark.parametrize("kernels", ["default", "portable"])
@pytest.mark.parametrize("shape,group,bias", DA4W_CASES, ids=str)
def test_linear_8da4w_matches_the_reference_exactly_in_its_integers(runtime, shape, group, bias, kernels):
    _check_8da4w(runtime, shape, group, bias, kernels, blocked=False)


@pytest.mark.parametrize("kernels", ["default", "portable"])
@pytest.mark.parametrize(
    "shape,group,bias",
    [
        ("decode_blocks", 32, True),
        ("decode_blocks", 256, False),
        ("tile_and_rest_blocks", 32, False),
        ("tile_and_rest_blocks", 64, True),
    ],
    ids=str,
)
def test_linear_8da4w_blocked_matches_the_reference_exactly_in_its_integers(runtime, shape, group, bias, kernels):
    _check_8da4w(runtime, shape, group, bias, kernels, blocked=True)


def _check_8da4w(runtime, shape, group, bias, kernels, blocked):
    T, K, N = SHAPES[shape]
    x = torch.randn(1, T, K, generator=g) * 3
    x[0, 0, :5] = 0.0
    w = torch.randint(-8, 8, (N, K), generator=g, dtype=torch.int8)
    # Scales of 2^-e: the float steps after each exact group sum lose nothing but the final additions' rounding.
    s = torch.pow(2.0, -torch.randint(4, 8, (N, K // group), generator=g).float())
    packed, packed_scales = pack_int4_blocked(w, s) if blocked else (pack_int4(w), s)
    inputs = [x, packed, packed_scales] + ([torch.randn(N, generator=g)] if bias else [])
    module = Da4w(group) if bias else Da4wNoBias(group)
    got = _run(runtime, module, inputs, kernels)
    want = module(*inputs)
    # One unit of any group's integer sum moves the output by at least scale_w * token scale.
    xr = x.reshape(T, K)
    token_scale = (xr.amax(1).clamp(min=0) - xr.amin(1).clamp(max=0)) / 255
    unit = (s.min() * token_scale.min()).item()
    err = (got - want).abs().max().item()
    assert err < 0.05 * unit, f"max error {err} vs one integer unit {unit}"
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_linear_8da4w_half_types_on_portable(runtime, dtype):
    x = torch.randn(1, 3, 64, generator=g).to(dtype)
    w = torch.randint(-8, 8, (16, 64), generator=g, dtype=torch.int8)
    s = torch.rand(16, 2, generator=g) * 0.05
    inputs = [x, pack_int4(w), s, torch.randn(16, generator=g).to(dtype)]
    got = _run(runtime, Da4w(32), inputs, "portable")
    torch.testing.assert_close(got, Da4w(32)(*inputs), **TOL[dtype])


@pytest.mark.parametrize("kernels", ["default", "portable"])
def test_mismatched_scales_are_refused(runtime, kernels):
    x = torch.randn(1, 1, 64, generator=g)
    w = torch.randint(-8, 8, (16, 64), generator=g, dtype=torch.int8)
    inputs = [x, pack_int4(w), torch.rand(16, 1, generator=g)]  # one group of scales where group 32 needs 2
    prog = exir.to_edge(torch.export.export(Da4wNoBias(32), tuple(inputs))).to_executorch()
    method = runtime.load(prog.buffer, kernels=kernels)
    with pytest.raises(RuntimeError, match="linear_8da4w"):
        method.run("forward", inputs)


@pytest.mark.parametrize("kernels", ["default", "portable"])
def test_linear_8da4w_rounds_activation_ties_to_even_as_the_reference(runtime, kernels):
    # hi = 15.9375 and lo = 0 make the token scale exactly 2^-4 and the zero point -128; x = k / 32 puts x / s on
    # every half-integer, where round half to even and round half away differ.
    K = 64
    x = (torch.arange(K, dtype=torch.float32) / 32).reshape(1, 1, K)
    x[0, 0, -1] = 15.9375
    w = torch.randint(-8, 8, (8, K), generator=g, dtype=torch.int8)
    inputs = [x, pack_int4(w), torch.full((8, 2), 0.25)]
    got = _run(runtime, Da4wNoBias(32), inputs, kernels)
    want = Da4wNoBias(32)(*inputs)
    assert torch.equal(got, want)  # every step exact: integer sums, scales of 2^-k
