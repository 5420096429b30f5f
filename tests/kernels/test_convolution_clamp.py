"""ember::convolution_clamp.out (conv + relu/hardtanh/clamp, exir's opt-in fuse_activations) and
ember::convolution_silu.out (conv + SiLU, the same option) against eager, on the default build (kernels/optimized:
the clamp rides in the GEMM epilogue and the depthwise row sweeps, SiLU follows each block of output while it is in
cache) and on the portable one (the convolution, then one pass of the activation).

Every path of the optimized convolution is reached (pointwise GEMM, grouped pointwise, 3x3 depthwise at stride 1
over the flat plane, at stride 2 and dilated row by row, other depthwise sizes tap by tap, im2col in one and in
several column tiles, 1-d; not the direct loops, which need a column taller than 16 KB and no temp memory), each
with bounds [0, 6] (ReLU6), [0, inf) (ReLU) and [-1, 1] (clamp), and with SiLU; for SiLU also a pointwise layer
wide enough for several column chunks. Tolerances as the
optimized convolution tests: 1e-4 of the output's scale.
"""

import pytest
import torch
import torch.nn.functional as F

import exir
from exir.lowering.convolution_clamp import convolution_clamp_out
from exir.lowering.convolution_silu import convolution_silu_out
from tests.kernels.test_optimized_ops import tolerance
from tests.kernels.test_portable_ops import Fn

g = torch.Generator().manual_seed(20261124)


def rnd(*shape):
    return torch.rand(*shape, generator=g) * 4 - 2


CONVS = {
    "pointwise": (lambda x, w, b: F.conv2d(x, w, b), [rnd(1, 32, 12, 12), rnd(24, 32, 1, 1), rnd(24)]),
    "pointwise_grouped": (lambda x, w: F.conv2d(x, w, groups=2), [rnd(2, 8, 5, 7), rnd(6, 4, 1, 1)]),
    "depthwise_s1": (
        lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=12),
        [rnd(2, 12, 14, 14), rnd(12, 1, 3, 3), rnd(12)],
    ),
    "depthwise_s2": (
        lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, groups=8),
        [rnd(1, 8, 13, 15), rnd(8, 1, 3, 3), rnd(8)],
    ),
    "depthwise_dilated": (
        lambda x, w: F.conv2d(x, w, padding=2, dilation=2, groups=4),
        [rnd(1, 4, 9, 10), rnd(4, 1, 3, 3)],
    ),
    "depthwise_5x5": (lambda x, w: F.conv2d(x, w, padding=2, stride=2, groups=6), [rnd(1, 6, 11, 11), rnd(6, 1, 5, 5)]),
    "im2col_3x3": (lambda x, w, b: F.conv2d(x, w, b, padding=1), [rnd(1, 16, 13, 11), rnd(8, 16, 3, 3), rnd(8)]),
    "im2col_tiles": (
        lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1),
        [rnd(1, 64, 33, 33), rnd(10, 64, 3, 3), rnd(10)],
    ),
    "conv1d": (lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1), [rnd(2, 3, 21), rnd(5, 3, 3), rnd(5)]),
}
ACTIVATIONS = {
    "relu6": F.relu6,  # hardtanh.out [0, 6]
    "relu": F.relu,  # relu.out [0, inf)
    "clamp": lambda y: torch.clamp(y, -1, 1),  # clamp.out [-1, 1]
    "silu": F.silu,  # sigmoid.out + mul.out, put back together as silu.out
}
CASES = {f"{c}-{a}": (CONVS[c], ACTIVATIONS[a]) for c in CONVS for a in ACTIVATIONS}
# 640 output channels over a 12x12 plane: the SiLU chunks of the pointwise GEMM (64 K floats of C) are 96 columns
# wide here, so one image takes two chunks, of 96 and 48 columns.
CASES["pointwise_chunks-silu"] = (
    (lambda x, w, b: F.conv2d(x, w, b), [rnd(1, 24, 12, 12), rnd(640, 24, 1, 1), rnd(640)]),
    F.silu,
)


@pytest.fixture(scope="module")
def programs():
    out = {}
    for name, ((conv, inputs), act) in CASES.items():
        module = Fn(lambda *xs, conv=conv, act=act: act(conv(*xs))).eval()
        # Weights stay inputs (no folding), as in the other kernel tests; the fusion is asked for.
        prog = exir.to_edge(torch.export.export(module, tuple(inputs))).to_executorch(
            exir.ExecutorchBackendConfig(fold_constants=False, alias_views=False, fuse_activations=True)
        )
        fused = convolution_silu_out if name.endswith("-silu") else convolution_clamp_out
        assert [c.op for c in prog.method_graphs["forward"].calls] == [fused], name
        out[name] = (prog.buffer, inputs, module(*inputs), conv(*inputs))
    return out


@pytest.mark.parametrize("kernels", ["default", "portable"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_eager(runtime, programs, name, kernels):
    buffer, inputs, want, unclamped = programs[name]
    assert not torch.equal(want, unclamped)  # the bounds really clip something here
    got = runtime.load(buffer, kernels=kernels).run("forward", inputs)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got, want, **tolerance(want))


def test_double_is_refused_by_name(runtime):
    """The fused kernels compute Float only: export refuses another dtype naming the op, and a program exported
    without that check is refused when the method loads, again by name."""

    class Direct(torch.nn.Module):
        def forward(self, x, w):
            return torch.ops.ember.convolution_clamp(x, w, None, [1], [0], [1], False, [0], 1, 0.0, 6.0)

    x, w = rnd(1, 2, 5).double(), rnd(3, 2, 1).double()
    edge = exir.to_edge(torch.export.export(Direct(), (x, w)))
    with pytest.raises(exir.KernelMissingError, match=r"ember::convolution_clamp.*Double"):
        edge.to_executorch()
    buffer = edge.to_executorch(exir.ExecutorchBackendConfig(check_kernels=False)).buffer
    for kernels in ("default", "portable"):
        with pytest.raises(RuntimeError, match=r"ember::convolution_clamp.out\): dtype Double is not compiled"):
            runtime.load(buffer, kernels=kernels).run("forward", [x, w])
