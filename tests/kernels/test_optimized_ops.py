"""kernels/optimized against eager PyTorch, and the portable kernels on the same programs.

Shapes are picked to reach every path: GEMM tile edges (rows not a multiple of 6, columns not of 8 or 16, K over
several 256-blocks), addmm's fused bias row and column and its general broadcast, pointwise, depthwise (stride 1
and 2, a channel multiplier, 3x3 at unit stride, other sizes and stride 2 through the general sweep, stride 3 and
dilation through the bounds-checked taps) and im2col convolutions (several GEMM calls, row blocks, K blocks,
runs across output rows, groups), and
dtypes the optimized kernels hand to portable (double, half).

Tolerances: float32 1e-4 of the output's scale (the tiled GEMM sums in another order than ATen); float64 1e-10;
float16 1e-2.
"""

import os
import shutil
import subprocess

import pytest
import torch
import torch.nn.functional as F

import exir
from tests.conftest import ROOT
from tests.kernels.test_portable_ops import Fn  # a module around a function, for export

g = torch.Generator().manual_seed(20261123)


def rnd(*shape, dtype=torch.float32):
    return (torch.rand(*shape, generator=g) * 4 - 2).to(dtype)


CASES = {
    "mm_gemv": (torch.mm, [rnd(1, 784), rnd(784, 256)]),
    "mm_edges": (torch.mm, [rnd(7, 300), rnd(300, 17)]),
    "mm_small": (torch.mm, [rnd(13, 5), rnd(5, 9)]),
    "mm_k600": (torch.mm, [rnd(20, 600), rnd(600, 40)]),
    "addmm_bias_row": (lambda b, x, y: torch.addmm(b, x, y), [rnd(17), rnd(7, 33), rnd(33, 17)]),
    "addmm_bias_1xn": (lambda b, x, y: torch.addmm(b, x, y, alpha=0.5), [rnd(1, 17), rnd(7, 33), rnd(33, 17)]),
    "addmm_bias_col": (lambda b, x, y: torch.addmm(b, x, y), [rnd(7, 1), rnd(7, 33), rnd(33, 17)]),
    "addmm_full_beta": (
        lambda b, x, y: torch.addmm(b, x, y, beta=0.5, alpha=2.0),
        [rnd(7, 17), rnd(7, 33), rnd(33, 17)],
    ),
    "addmm_beta0": (lambda b, x, y: torch.addmm(b, x, y, beta=0.0), [rnd(17), rnd(3, 8), rnd(8, 17)]),
    "bmm": (torch.bmm, [rnd(3, 7, 33), rnd(3, 33, 20)]),
    "conv_pointwise": (lambda x, w, b: F.conv2d(x, w, b), [rnd(1, 32, 12, 12), rnd(24, 32, 1, 1), rnd(24)]),
    "conv_pointwise_grouped": (lambda x, w: F.conv2d(x, w, groups=2), [rnd(2, 8, 5, 7), rnd(6, 4, 1, 1)]),
    "conv_3x3_s1": (lambda x, w, b: F.conv2d(x, w, b, padding=1), [rnd(1, 16, 13, 11), rnd(8, 16, 3, 3), rnd(8)]),
    "conv_3x3_s2_tiles": (
        lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1),
        [rnd(1, 64, 33, 33), rnd(10, 64, 3, 3), rnd(10)],
    ),
    "conv_first_layer": (lambda x, w: F.conv2d(x, w, stride=2, padding=1), [rnd(1, 3, 32, 32), rnd(8, 3, 3, 3)]),
    "conv_5x5_dilated": (lambda x, w: F.conv2d(x, w, padding=3, dilation=2), [rnd(1, 4, 9, 10), rnd(5, 4, 5, 5)]),
    "conv_strided_1x1": (lambda x, w: F.conv2d(x, w, stride=2), [rnd(1, 6, 9, 9), rnd(4, 6, 1, 1)]),
    "depthwise_s1": (
        lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=12),
        [rnd(2, 12, 14, 14), rnd(12, 1, 3, 3), rnd(12)],
    ),
    "depthwise_s2_odd": (
        lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, groups=8),
        [rnd(1, 8, 13, 15), rnd(8, 1, 3, 3), rnd(8)],
    ),
    "depthwise_s2_even": (
        lambda x, w: F.conv2d(x, w, stride=2, padding=1, groups=4),
        [rnd(1, 4, 16, 16), rnd(4, 1, 3, 3)],
    ),
    "depthwise_no_pad": (lambda x, w: F.conv2d(x, w, groups=4), [rnd(1, 4, 6, 5), rnd(4, 1, 3, 3)]),
    "depthwise_tiny": (lambda x, w: F.conv2d(x, w, padding=1, groups=3), [rnd(1, 3, 2, 1), rnd(3, 1, 3, 3)]),
    "depthwise_multiplier": (lambda x, w: F.conv2d(x, w, padding=1, groups=4), [rnd(1, 4, 7, 7), rnd(8, 1, 3, 3)]),
    "depthwise_5x5": (lambda x, w: F.conv2d(x, w, padding=2, stride=2, groups=6), [rnd(1, 6, 11, 11), rnd(6, 1, 5, 5)]),
    # The general depthwise sweep (kernels other than 3x3, and stride 2 over a copy split by column parity):
    # rows of four vectors and more, a partial last vector, rows narrower than a vector, odd and even padding.
    "depthwise_5x5_s1_wide": (
        lambda x, w, b: F.conv2d(x, w, b, padding=2, groups=5),
        [rnd(1, 5, 9, 45), rnd(5, 1, 5, 5), rnd(5)],
    ),
    "depthwise_5x5_s2_wide": (
        lambda x, w, b: F.conv2d(x, w, b, padding=2, stride=2, groups=3),
        [rnd(2, 3, 21, 83), rnd(3, 1, 5, 5), rnd(3)],
    ),
    "depthwise_3x3_s2_wide": (
        lambda x, w: F.conv2d(x, w, padding=1, stride=2, groups=4),
        [rnd(1, 4, 17, 70), rnd(4, 1, 3, 3)],
    ),
    "depthwise_3x3_s2_nopad": (lambda x, w: F.conv2d(x, w, stride=2, groups=2), [rnd(1, 2, 9, 40), rnd(2, 1, 3, 3)]),
    "depthwise_5x5_s2_tiny": (
        lambda x, w: F.conv2d(x, w, padding=2, stride=2, groups=4),
        [rnd(1, 4, 3, 2), rnd(4, 1, 5, 5)],
    ),
    "depthwise_7x7_multiplier": (
        lambda x, w: F.conv2d(x, w, padding=3, groups=3),
        [rnd(1, 3, 10, 19), rnd(6, 1, 7, 7)],
    ),
    "depthwise_5x3_s2_rect": (
        lambda x, w: F.conv2d(x, w, padding=(2, 1), stride=(1, 2), groups=2),
        [rnd(1, 2, 8, 27), rnd(2, 1, 5, 3)],
    ),
    "depthwise_5x5_s3": (
        lambda x, w: F.conv2d(x, w, padding=2, stride=3, groups=2),
        [rnd(1, 2, 11, 14), rnd(2, 1, 5, 5)],
    ),
    "depthwise_5x5_dilated": (
        lambda x, w: F.conv2d(x, w, padding=4, dilation=2, groups=2),
        [rnd(1, 2, 9, 12), rnd(2, 1, 5, 5)],
    ),
    # Squeeze-excitation's scale and its relatives: one value per channel over the dims after it, either side,
    # planes not a multiple of a vector, a batch over a [1, C, 1, 1] or an [N, C, 1, 1] operand.
    "mul_per_channel": (torch.mul, [rnd(2, 6, 7, 7), rnd(1, 6, 1, 1)]),
    "mul_per_channel_batch_first": (torch.mul, [rnd(3, 5, 1, 1), rnd(3, 5, 4, 5)]),
    "add_per_channel_3d": (torch.add, [rnd(4, 19, 3), rnd(4, 1, 1)]),
    "sub_per_channel_block": (lambda a, b: torch.sub(a, b, alpha=0.5), [rnd(2, 3, 4, 9), rnd(3, 4, 1)]),
    "div_per_channel_first": (torch.div, [rnd(1, 8, 1, 1) + 3.0, rnd(1, 8, 6, 6) + 3.0]),
    # Smooth activations (vector exp): tails, and values past exp's range on both sides.
    "sigmoid": (torch.sigmoid, [torch.cat([rnd(2, 37) * 8, torch.tensor([[-100.0] * 37, [100.0] * 37])])]),
    "silu": (F.silu, [torch.cat([rnd(3, 29) * 8, torch.tensor([[-100.0] * 29, [100.0] * 29])])]),
    "hardswish": (F.hardswish, [rnd(5, 3, 7) * 3]),
    "sigmoid_double": (torch.sigmoid, [rnd(3, 5, dtype=torch.float64)]),
    # mean over trailing dims (squeeze-excitation's pool): runs of 4 vectors and more, a single vector, a tail
    # shorter than a vector, every dim; and dims the optimized kernel hands to portable (not trailing).
    "mean_pool_keepdim": (lambda x: x.mean((2, 3), keepdim=True), [rnd(2, 5, 13, 11)]),
    "mean_last_short": (lambda x: x.mean(-1), [rnd(7, 3)]),
    "mean_last_one_vector": (lambda x: x.mean(-1), [rnd(3, 9)]),
    "mean_all": (lambda x: x.mean(), [rnd(4, 33, 17)]),
    "mean_middle_dim": (lambda x: x.mean(1), [rnd(3, 4, 5)]),
    "mean_double": (lambda x: x.mean((2, 3)), [rnd(1, 3, 4, 4, dtype=torch.float64)]),
    "conv1d": (lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1), [rnd(2, 3, 21), rnd(5, 3, 3), rnd(5)]),
    # The implicit im2col (sgemm_packed): 300 output channels x K 360 is past one row block (96-row blocks, a
    # 12-row rest), K in two blocks, 23 x 23 = 529 positions in three calls of 192, 192 and 145 columns, with
    # padding on both sides of every output row.
    "conv_3x3_row_blocks": (
        lambda x, w, b: F.conv2d(x, w, b, padding=1),
        [rnd(1, 40, 23, 23), rnd(300, 40, 3, 3), rnd(300)],
    ),
    # ResNet's last stage in small: 7 x 7 outputs, so a 24-column panel spans four output rows, and 49 columns
    # end in a one-vector panel; stride 2 gathers every other input column.
    "conv_3x3_s2_small_plane": (
        lambda x, w: F.conv2d(x, w, stride=2, padding=1),
        [rnd(2, 24, 14, 13), rnd(40, 24, 3, 3)],
    ),
    "conv_grouped_3x3": (lambda x, w: F.conv2d(x, w, padding=(0, 2), groups=2), [rnd(1, 6, 9, 17), rnd(10, 3, 3, 3)]),
    "conv_double": (
        lambda x, w: F.conv2d(x, w, padding=1),
        [rnd(1, 3, 6, 6, dtype=torch.float64), rnd(4, 3, 3, 3, dtype=torch.float64)],
    ),
    "mm_double": (torch.mm, [rnd(5, 7, dtype=torch.float64), rnd(7, 3, dtype=torch.float64)]),
    "mm_half": (torch.mm, [rnd(4, 8, dtype=torch.float16), rnd(8, 3, dtype=torch.float16)]),
}


def tolerance(want):
    if want.dtype == torch.float64:
        return {"atol": 1e-10, "rtol": 1e-10}
    if want.dtype == torch.float16:
        return {"atol": 1e-2, "rtol": 1e-2}
    return {"atol": 1e-4 * max(1.0, want.abs().max().item()), "rtol": 1e-4}


@pytest.fixture(scope="module")
def programs():
    out = {}
    for name, (fn, inputs) in CASES.items():
        module = Fn(fn).eval()
        # Weights stay inputs (no constant folding), so each case reaches the kernel exactly as written.
        prog = exir.to_edge(torch.export.export(module, tuple(inputs))).to_executorch(
            exir.ExecutorchBackendConfig(fold_constants=False, alias_views=False)
        )
        out[name] = (prog.buffer, inputs, module(*inputs))
    return out


@pytest.mark.parametrize("kernels", ["default", "portable"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_eager(runtime, programs, name, kernels):
    buffer, inputs, want = programs[name]
    got = runtime.load(buffer, kernels=kernels).run("forward", inputs)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got, want, **tolerance(want))


@pytest.mark.skipif(shutil.which("nm") is None, reason="binutils missing")
def test_default_build_registers_optimized_kernels(runtime):
    """The default runtime really holds kernels/optimized (and the portable one does not), so the parity above
    covers both libraries."""

    def defined(so):
        path = os.path.join(ROOT, "bazel-bin", "runtime", "python", so)
        return subprocess.run(["nm", "-C", "--defined-only", path], capture_output=True, text=True, check=True).stdout

    runtime.load(programs_of_one(), kernels="portable")  # builds the portable extension if needed
    assert "ember::optimized::convolution_out" in defined("_ember_runtime.so")
    assert "ember::optimized::" not in defined("_ember_runtime_portable.so")


def programs_of_one():
    return exir.to_edge(torch.export.export(Fn(torch.neg), (rnd(2),))).to_executorch().buffer


# SiLU and hardswish reach their own kernels only through exir's opt-in fusion (core ATen decomposes them).
FUSED_CASES = {
    "silu": (torch.nn.functional.silu, rnd(2, 3, 9, 7) * 4),
    "hardswish": (torch.nn.functional.hardswish, rnd(3, 37) * 4),
}


@pytest.mark.parametrize("kernels", ["default", "portable"])
@pytest.mark.parametrize("name", sorted(FUSED_CASES))
def test_fused_activation_kernels_match_eager(runtime, name, kernels):
    fn, x = FUSED_CASES[name]
    prog = exir.to_edge(torch.export.export(Fn(fn).eval(), (x,))).to_executorch(
        exir.ExecutorchBackendConfig(fuse_activations=True)
    )
    assert [c.op for c in prog.method_graphs["forward"].calls] == [getattr(torch.ops.aten, name).out]
    got = runtime.load(prog.buffer, kernels=kernels).run("forward", [x])[0]
    torch.testing.assert_close(got, fn(x), **tolerance(fn(x)))


# max_pool2d_with_indices: values and indices exactly as eager's (the optimized kernel visits windows in ATen's
# order). Planes wide enough for the 8- and 4-lane column chunks and the single windows after them; ties (small
# integers after a ReLU-like clamp), NaN and -inf; strides 1, 2, 3, dilation, ceil mode, a 3-d input, and
# channels-last inputs (both builds hand those to portable, which walks them through their strides).
def _ties(*shape):
    return torch.randint(0, 3, shape, generator=g).float()


def _specials(*shape):
    x = rnd(*shape)
    flat = x.view(-1)
    flat[::7] = float("nan")
    flat[3::11] = -float("inf")
    return x


POOL_CASES = {
    "stem_3x3_s2": ((3, 2, 1, 1, False), rnd(1, 3, 40, 57)),
    "ties_3x3_s2": ((3, 2, 1, 1, False), _ties(2, 2, 19, 64)),
    "nan_inf_3x3_s2": ((3, 2, 1, 1, False), _specials(1, 2, 11, 45)),
    "s1_2x2": ((2, 1, 0, 1, False), _ties(1, 3, 9, 37)),
    "s1_3x3_pad": ((3, 1, 1, 1, False), rnd(1, 2, 7, 30)),
    "s3_dilated": ((3, 3, 1, 2, False), rnd(1, 2, 17, 80)),
    "ceil_2x2": ((2, 2, 0, 1, True), _ties(1, 2, 9, 43)),
    "rect_3d": (((3, 2), (2, 1), (1, 0), 1, False), rnd(3, 12, 41)),
    "narrow": ((3, 2, 1, 1, False), rnd(1, 2, 5, 3)),
    "channels_last": ((3, 2, 1, 1, False), rnd(2, 3, 9, 21).contiguous(memory_format=torch.channels_last)),
}


@pytest.mark.parametrize("kernels", ["default", "portable"])
@pytest.mark.parametrize("name", sorted(POOL_CASES))
def test_max_pool_values_and_indices_match_eager(runtime, name, kernels):
    (k, s, p, d, ceil), x = POOL_CASES[name]
    fn = lambda t: F.max_pool2d(t, k, s, p, d, ceil_mode=ceil, return_indices=True)
    prog = exir.to_edge(torch.export.export(Fn(fn).eval(), (x,))).to_executorch()
    got = runtime.load(prog.buffer, kernels=kernels).run("forward", [x])
    want = fn(x)
    torch.testing.assert_close(got[0], want[0].contiguous(), rtol=0, atol=0, equal_nan=True)
    assert torch.equal(got[1], want[1].contiguous())


def test_avg_pool_of_a_channels_last_input(runtime):
    x = rnd(2, 3, 9, 10).contiguous(memory_format=torch.channels_last)
    fn = lambda t: F.avg_pool2d(t, 3, 2, 1)
    prog = exir.to_edge(torch.export.export(Fn(fn).eval(), (x,))).to_executorch()
    for kernels in ("default", "portable"):
        got = runtime.load(prog.buffer, kernels=kernels).run("forward", [x])[0]
        torch.testing.assert_close(got, fn(x).contiguous(), **tolerance(fn(x)))


@pytest.mark.parametrize("fused", [False, True], ids=["plain", "fused"])
def test_channels_last_model_runs(runtime, fused):
    """A model exported in channels-last memory format (weights too): its convolutions go to portable's strided
    loops on both builds, the clone before the flatten relays the activations out to contiguous, and the result is
    eager's."""
    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.dw = torch.nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8)
            self.fc = torch.nn.Linear(8 * 3 * 4, 5)

        def forward(self, x):
            y = F.silu(self.dw(F.relu(self.conv(x))))
            return self.fc(torch.flatten(y, 1))

    cl = torch.channels_last
    module = Net().eval().to(memory_format=cl)
    x = rnd(2, 3, 6, 7).contiguous(memory_format=cl)
    prog = exir.to_edge(torch.export.export(module, (x,))).to_executorch(
        exir.ExecutorchBackendConfig(fuse_activations=fused)
    )
    assert any(tuple(t.dim_order) == (0, 2, 3, 1) for c in prog.method_graphs["forward"].calls for t in c.outs)
    want = module(x)
    for kernels in ("default", "portable"):
        got = runtime.load(prog.buffer, kernels=kernels).run("forward", [x])[0]
        torch.testing.assert_close(got, want, **tolerance(want))
