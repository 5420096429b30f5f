"""Lowering checked by execution: every zoo model, lowered and run by the reference interpreter, equals eager."""

import pytest
import torch

from zoo.models import ZOO, export_methods
from exir.edge import to_edge
from exir.lowering import Role, lower_method
from exir.lowering.alias import alias_views
from exir.lowering.fuse_batch_norm import fuse_batch_norm
from exir.lowering.interpreter import Interpreter
from exir.lowering.out_variants import OutVariantError, out_variant

aten = torch.ops.aten
# float32 through a different summation order (BN folded into conv weights): relative to output scale.
FP32_ATOL = 1e-5


def _lowered(name, method="forward", **kw):
    programs, inputs, module = export_methods(name)
    edge = to_edge(programs)
    g = lower_method(method, edge.exported_program(method), **kw)
    return g, inputs[method], module


def _eager(module, method, args):
    out = getattr(module, method)(*args)
    return list(out) if isinstance(out, (tuple, list)) else [out]


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_lowered_matches_eager(name):
    programs, inputs, module = export_methods(name)
    edge = to_edge(programs)
    for method in edge.methods:
        g = lower_method(method, edge.exported_program(method))
        fuse_batch_norm(g)
        alias_views(g)
        interp = Interpreter(g)
        for _ in range(2):  # twice: mutable buffers must carry over like eager's
            want = _eager(module, method, inputs[method])
            got = interp.run(inputs[method])
            assert len(got) == len(want)
            for a, b in zip(got, want):
                scale = max(1.0, b.abs().max().item())
                torch.testing.assert_close(a, b, atol=FP32_ATOL * scale, rtol=1e-5)


def test_linear_weight_transpose_is_folded():
    g, _, _ = _lowered("mlp")
    assert [c.op for c in g.calls].count(aten.permute_copy.out) == 0
    assert [c.op for c in g.calls] == [aten.addmm.out, aten.relu.out, aten.addmm.out, aten.relu.out, aten.addmm.out]
    # The transposed weights are constants now, e.g. the first layer's [784, 256].
    weights = [c.args[2] for c in g.calls if c.op == aten.addmm.out]
    assert all(w.role is Role.CONSTANT for w in weights)
    assert tuple(weights[0].shape) == (784, 256)


def test_folding_can_be_disabled():
    g, _, _ = _lowered("linear", fold_constants=False)
    assert aten.permute_copy.out in [c.op for c in g.calls]


def test_fold_refuses_large_growth():
    class Expand(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("c", torch.ones(1, 4))

        def forward(self, x):
            return x + self.c.expand(4096, 4)

    ep = to_edge(torch.export.export(Expand(), (torch.ones(4096, 4),))).exported_program()
    g = lower_method("forward", ep)
    # A 64 KiB expand of a 16-byte constant stays a kernel instead of a 64 KiB constant.
    assert aten.expand_copy.out in [c.op for c in g.calls]


def test_batch_norm_fused_into_conv():
    g, _, _ = _lowered("mobilenet_v2_035_96")
    before = len(g.calls)
    fused = fuse_batch_norm(g)
    assert fused == 52 and len(g.calls) == before - 52
    assert aten._native_batch_norm_legit_no_training.out not in [c.op for c in g.calls]


def test_transformer_views_become_aliases():
    g, _, _ = _lowered("transformer_block")
    removed = alias_views(g)
    ops = [c.op for c in g.calls]
    assert removed >= 20
    assert aten.view_copy.out not in ops and aten.squeeze_copy.dims_out not in ops
    assert aten.slice_copy.Tensor_out not in ops  # contiguous leading-dim slices are offsets now


def test_scalar_operand_uses_scalar_overload():
    g, _, _ = _lowered("running_mean")
    ops = [c.op for c in g.calls]
    assert aten.add.Scalar_out in ops and aten.mul.Scalar_out in ops
    # Buffers are written back at the end, as ExecuTorch encodes it.
    assert ops[-2:] == [aten.copy_.default, aten.copy_.default]
    assert {c.outs[0].fqn for c in g.calls[-2:]} == {"mean", "count"}


@pytest.mark.parametrize(
    "op,expected",
    [
        (aten.add.Tensor, aten.add.out),
        (aten.add.Scalar, aten.add.Scalar_out),
        (aten.view.default, aten.view_copy.out),
        (aten.squeeze.dims, aten.squeeze_copy.dims_out),
        (aten.max_pool2d_with_indices.default, aten.max_pool2d_with_indices.out),
        (aten._to_copy.default, aten._to_copy.out),
        (aten.full.default, aten.full.out),
        (aten.split_with_sizes.default, aten.split_with_sizes_copy.out),
    ],
)
def test_out_variant_resolution(op, expected):
    assert out_variant(op) == expected


def test_op_without_out_variant_is_named():
    with pytest.raises(OutVariantError, match="aten::_local_scalar_dense"):
        out_variant(aten._local_scalar_dense.default)
