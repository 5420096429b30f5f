"""ember_llm::sdpa_with_cache (kernels/portable/op_attention.cc, kernels/optimized/op_attention.cc) against its
PyTorch reference (kernels/portable/llm_ops.py): prefill and decode positions, grouped-query heads, head sizes
that are not a multiple of the vector width, prefills long enough for the optimized kernel's tiles of queries, every
dtype on both builds; positions past the cache refused.

Tolerances: float32 1e-5 absolute and relative (the kernels sum in another order than the reference's matmul);
float64 1e-10; float16/bfloat16 two units in the last place of the output (scores and sums in float32, rounded
once)."""

import pytest
import torch

import exir
from kernels.portable.llm_ops import sdpa_with_cache

g = torch.Generator().manual_seed(1818)


class Attend(torch.nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, q, k, v, pos):
        return sdpa_with_cache(q, k, v, pos, self.scale)


# name -> (T, heads, kv_heads, head_dim, max_seq_len, start position)
CASES = {
    "decode_mha": (1, 4, 4, 16, 32, 9),
    "decode_gqa_odd_dim": (1, 6, 2, 13, 20, 19),
    "prefill_from_0": (7, 4, 2, 8, 16, 0),
    "prefill_after_cache": (5, 8, 1, 24, 40, 30),
    # 32 query tokens or more: the optimized kernel's tiles of queries as matrix products (a whole and a partial tile)
    "prefill_tiles_gqa": (40, 6, 2, 16, 64, 0),
    "prefill_tiles_odd_dim_after_cache": (33, 4, 4, 13, 50, 10),
}
TOL = {
    torch.float32: dict(rtol=1e-5, atol=1e-5),
    torch.float64: dict(rtol=1e-10, atol=1e-10),
    torch.float16: dict(rtol=2e-3, atol=2e-3),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1.6e-2),
}


def _inputs(case, dtype):
    T, H, KV, D, S, p = CASES[case]
    q = torch.randn(1, T, H, D, generator=g).to(dtype)
    k = torch.randn(1, S, KV, D, generator=g).to(dtype)
    v = torch.randn(1, S, KV, D, generator=g).to(dtype)
    return [q, k, v, torch.tensor([p])], 1.0 / D**0.5


@pytest.mark.parametrize("kernels", ["default", "portable"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_the_reference(runtime, case, dtype, kernels):
    inputs, scale = _inputs(case, dtype)
    module = Attend(scale)
    prog = exir.to_edge(torch.export.export(module, tuple(inputs))).to_executorch()
    got = runtime.load(prog.buffer, kernels=kernels).run("forward", inputs)[0]
    want = module(*inputs)
    assert got.dtype == dtype and got.shape == want.shape
    torch.testing.assert_close(got, want, **TOL[dtype])


@pytest.mark.parametrize("kernels", ["default", "portable"])
def test_positions_past_the_cache_are_refused(runtime, kernels):
    inputs, scale = _inputs("prefill_from_0", torch.float32)
    prog = exir.to_edge(torch.export.export(Attend(scale), tuple(inputs))).to_executorch()
    method = runtime.load(prog.buffer, kernels=kernels)
    inputs[3] = torch.tensor([10])  # positions 10 .. 16 of a 16-row cache
    with pytest.raises(RuntimeError, match="sdpa_with_cache"):
        method.run("forward", inputs)
