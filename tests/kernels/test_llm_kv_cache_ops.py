"""The int8 KV cache's operators (kernels/portable/op_attention_int8_cache.cc, kernels/optimized's attention in
op_attention_int8_cache.cc) against their PyTorch references (kernels/portable/llm_ops.py), and the references
against float attention.

Tolerances: kv_row_scales and quantize_kv_rows are exact (one float32 division each, rounded half to even, as the
reference). The attention kernels sum in float32 in another order than the reference (the row's scale applied to
the dot product instead of to each element, vector lanes): 2e-5 of the output's largest magnitude, which a wrong
row, head or scale exceeds by orders of magnitude. The reference against float attention on the unquantized rows:
each value is off by at most half its row's scale (max |row| / 254), which moves the output by about 1% of its
magnitude on random rows; the bound asserted is 3%.
"""

import pytest
import torch

import exir
from kernels.portable.llm_ops import (
    dequantize_kv,
    kv_row_scales,
    quantize_kv_rows,
    sdpa_with_cache,
    sdpa_with_int8_cache,
)

g = torch.Generator().manual_seed(3504)


class Scales(torch.nn.Module):
    def forward(self, x):
        return kv_row_scales(x)


class Rows(torch.nn.Module):
    def forward(self, x, s):
        return quantize_kv_rows(x, s)


class Attend(torch.nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, q, k, ks, v, vs, pos):
        return sdpa_with_int8_cache(q, k, ks, v, vs, pos, self.scale)


def _run(runtime, module, inputs):
    """Outputs of the default (optimized) and portable builds, from one export."""
    prog = exir.to_edge(torch.export.export(module, tuple(inputs))).to_executorch()
    return [runtime.load(prog.buffer, kernels=k).run("forward", inputs)[0] for k in ("default", "portable")]


def _cache(S, KV, D):
    """An int8 cache and its scales as quantize_kv_rows makes them, from float rows with outliers per row."""
    x = torch.randn(1, S, KV, D, generator=g) * (torch.rand(1, S, KV, 1, generator=g) * 3 + 0.1)
    s = kv_row_scales(x)
    return x, quantize_kv_rows(x, s), s


# (T, heads, kv_heads, head_dim, max_seq_len, input_pos): decode late in the cache, a prompt from 0, grouped heads
# 3 to 1, head_dim off every vector width (20: a 16-lane vector and a 4-lane tail), multi-head attention, the cache
# exactly full.
SHAPES = {
    "decode": (1, 4, 2, 64, 40, 33),
    "prompt": (7, 6, 2, 32, 16, 0),
    "tails": (3, 3, 1, 20, 12, 4),
    "mha_full": (2, 2, 2, 24, 9, 7),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_kernels_match_the_reference(runtime, shape):
    T, H, KV, D, S, p = SHAPES[shape]
    rows = torch.randn(1, T, KV, D, generator=g) * 2
    rows[0, -1, -1, :] = 0  # a zero row: scale 0, values 0
    s = kv_row_scales(rows)
    for got in _run(runtime, Scales(), [rows]):
        assert torch.equal(got, s)
    for q8 in _run(runtime, Rows(), [rows, s]):
        assert q8.dtype == torch.int8 and torch.equal(q8, quantize_kv_rows(rows, s))

    _, k, ks = _cache(S, KV, D)
    _, v, vs = _cache(S, KV, D)
    q = torch.randn(1, T, H, D, generator=g)
    pos = torch.tensor([p])
    inputs = [q, k, ks, v, vs, pos]
    optimized, portable = _run(runtime, Attend(D**-0.5), inputs)
    want = sdpa_with_int8_cache(*inputs, D**-0.5)
    for got in (optimized, portable):
        torch.testing.assert_close(got, want, rtol=0, atol=2e-5 * float(want.abs().max()))
    torch.testing.assert_close(optimized, portable, rtol=0, atol=2e-5 * float(want.abs().max()))


def test_rounding_halves_to_even_and_clamps():
    x = torch.tensor([[127.0, 2.5, -2.5, 3.5, -127.0, 0.49]])
    s = kv_row_scales(x)
    assert float(s) == pytest.approx(1.0)
    assert quantize_kv_rows(x, s).tolist() == [[127, 2, -2, 4, -127, 0]]
    assert quantize_kv_rows(torch.zeros(1, 4), torch.zeros(1)).tolist() == [[0, 0, 0, 0]]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_reference_is_close_to_float_attention(shape):
    T, H, KV, D, S, p = SHAPES[shape]
    kf, k, ks = _cache(S, KV, D)
    vf, v, vs = _cache(S, KV, D)
    # Each dequantized value within half a step of its row's scale.
    assert float((dequantize_kv(k, ks) - kf).abs().div(ks[..., None]).max()) <= 0.5 + 1e-4
    q = torch.randn(1, T, H, D, generator=g)
    pos = torch.tensor([p])
    got = sdpa_with_int8_cache(q, k, ks, v, vs, pos, D**-0.5)
    want = sdpa_with_cache(q, kf, vf, pos, D**-0.5)
    assert float((got - want).abs().max()) <= 0.03 * float(want.abs().max())


@pytest.mark.parametrize("kernels", ["default", "portable"])
def test_hostile_shapes_are_refused_by_name(runtime, kernels, capfd, monkeypatch):
    monkeypatch.setenv("EMBER_LOG", "1")
    T, H, KV, D, S = 1, 4, 2, 16, 8
    _, k, ks = _cache(S, KV, D)
    _, v, vs = _cache(S, KV, D)
    q = torch.randn(1, T, H, D, generator=g)
    cases = {
        "scales of another cache length": (
            [q, k, ks[:, :5], v, vs, torch.tensor([2])],
            "key and value scales must be float32 [1, 8, 2]",
        ),
        "query heads not a multiple of the KV heads": (
            [torch.randn(1, T, 3, D, generator=g), k, ks, v, vs, torch.tensor([2])],
            "3 query heads are not a multiple of 2 KV heads",
        ),
        "head_dim unlike the cache's": (
            [torch.randn(1, T, H, 12, generator=g), k, ks, v, vs, torch.tensor([2])],
            "head_dim 12 in them; got query [1, 1, 4, 12], key cache [1, 8, 2, 16]",
        ),
        "a position past the cache": ([q, k, ks, v, vs, torch.tensor([8])], "positions 8 .. 8 do not fit a cache of 8"),
        "a float cache": ([q, k.float(), ks, v.float(), vs, torch.tensor([2])], "the caches int8, got Float"),
    }
    for what, (inputs, message) in cases.items():
        prog = exir.to_edge(torch.export.export(Attend(0.25), tuple(inputs))).to_executorch()
        method = runtime.load(prog.buffer, kernels=kernels)
        with pytest.raises(RuntimeError, match=r"ember_llm::sdpa_with_int8_cache.out\) failed"):
            method.run("forward", inputs)
        err = capfd.readouterr().err
        assert "ember_llm::sdpa_with_int8_cache.out: " in err and message in err, (what, err)
    # The quantizing op: scales that are not the rows' leading dims.
    rows = torch.randn(1, 3, KV, D, generator=g)
    inputs = [rows, torch.rand(1, 3, generator=g)]
    prog = exir.to_edge(torch.export.export(Rows(), tuple(inputs))).to_executorch()
    with pytest.raises(RuntimeError, match=r"ember_llm::quantize_kv_rows.out\) failed"):
        runtime.load(prog.buffer, kernels=kernels).run("forward", inputs)
    assert "ember_llm::quantize_kv_rows.out: scales must be contiguous float32" in capfd.readouterr().err
