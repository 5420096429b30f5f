"""Attention's masked softmax: with fuse_activations exir rewrites core ATen's seven-pass _safe_softmax
decomposition as one ember::safe_softmax.out call, which both builds compute as eager does, including rows whose
every key is masked out (zeros, not NaN); without the option, and where the chain's pieces are used elsewhere, the
program keeps ATen's calls."""

import pytest
import torch
import torch.nn.functional as F

import exir
from exir.lowering.safe_softmax import fuse_safe_softmax  # noqa: F401 (registers the op)

SAFE = "ember::safe_softmax.out"
MASKING = {"aten::eq.Scalar_out", "aten::logical_not.out", "aten::any.out", "aten::full_like.out"}


class Attention(torch.nn.Module):
    """Unmasked SDPA, and SDPA under a boolean mask that hides every key from some queries."""

    def forward(self, q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v), F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


class SoftmaxAlsoReturned(torch.nn.Module):
    """The same chain written out, with softmax's result also returned: it must stay ATen's."""

    def forward(self, x):
        sm = torch.softmax(x, -1)
        masked = torch.logical_not(torch.any(torch.logical_not(x == float("-inf")), -1, keepdim=True))
        return torch.where(masked, torch.zeros_like(sm), sm), sm


def _inputs(dtype):
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, 3, 12, 8, generator=g).to(dtype) for _ in range(3))
    mask = torch.ones(12, 12, dtype=torch.bool).tril()
    mask[2] = False  # query 2 sees no key: its row of scores is -inf throughout
    mask[7, :5] = False
    return q, k, v, mask


def _program(module, args, fuse=True):
    ep = torch.export.export(module.eval(), args)
    return exir.to_edge(ep).to_executorch(exir.ExecutorchBackendConfig(fuse_activations=fuse))


def _ops(prog):
    return [c.op_name for c in prog.method_graphs["forward"].calls]


def test_chain_becomes_one_call_only_when_asked():
    args = _inputs(torch.float32)
    fused = _ops(_program(Attention(), args))
    assert fused.count(SAFE) == 2 and not MASKING & set(fused), fused
    # The masked attention's own where (applying the mask) stays; the masking of -inf rows is gone.
    assert fused.count("aten::where.self_out") == 1
    plain = _ops(_program(Attention(), args, fuse=False))
    assert SAFE not in plain and MASKING <= set(plain)


def test_chain_whose_softmax_is_returned_stays():
    x = torch.randn(4, 6)
    ops = _ops(_program(SoftmaxAlsoReturned(), (x,)))
    assert SAFE not in ops and "aten::_softmax.out" in ops and "aten::where.self_out" in ops


@pytest.mark.parametrize("kernels", ["default", "portable"])
@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
def test_both_builds_match_eager(runtime, kernels, dtype, tol):
    args = _inputs(dtype)
    prog = _program(Attention(), args)
    got = runtime.load(prog.buffer, kernels=kernels).run("forward", list(args))
    want = Attention()(*args)
    for g, w in zip(got, want):
        assert not torch.isnan(g).any()
        torch.testing.assert_close(g, w, atol=tol, rtol=tol)
    # The query that sees no key: zeros, as ATen's _safe_softmax gives.
    assert torch.equal(got[1][:, :, 2], torch.zeros_like(got[1][:, :, 2]))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_types_round_once_from_float(runtime, dtype):
    x = torch.randn(3, 5, 9).to(dtype)
    x[1, 2] = float("-inf")
    x[0, 0, :4] = float("-inf")
    prog = exir.to_edge(torch.export.export(_SafeSoftmax().eval(), (x,))).to_executorch(
        exir.ExecutorchBackendConfig(fuse_activations=True)
    )
    assert SAFE in _ops(prog)
    got = runtime.load(prog.buffer, kernels="portable").run("forward", [x])[0]
    # Computed in float and rounded once: within one ulp of the type of eager's float32 result.
    want = torch.ops.aten._safe_softmax(x.float(), -1).to(dtype)
    torch.testing.assert_close(got, want, atol=0, rtol=2**-7 if dtype == torch.bfloat16 else 2**-10)
    assert torch.equal(got[1, 2], torch.zeros(9, dtype=dtype))


class _SafeSoftmax(torch.nn.Module):
    def forward(self, x):
        return torch.ops.aten._safe_softmax(x, -1)
