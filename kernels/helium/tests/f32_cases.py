"""Float programs that take every path of kernels/helium's Float kernels on the Cortex-M55, and the calls they hand
to portable: tails of every block size, partial channel blocks, each convolution path (pointwise, depthwise lanes
and rows, patches with strides, dilation and groups, 1-d), the fused clamp, linear shapes, each element-wise
broadcast pattern and NaN/inf inputs. tests/platforms/test_cortex_m55_helium_f32.py runs them on the board's
firmware and compares with eager PyTorch and the host runtime.

    python -m kernels.helium.tests.f32_cases --out DIR [NAME ...]     # NAME.pte for each case (default: all)
"""

import argparse
import os
import sys
from typing import Callable, Dict, NamedTuple, Tuple

import torch
from torch import nn
import torch.nn.functional as F


class Case(NamedTuple):
    make: Callable[[], nn.Module]
    inputs: Callable[[], Tuple[torch.Tensor, ...]]
    fuse_activations: bool = False


def _randn(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _with_specials(x: torch.Tensor) -> torch.Tensor:
    """x with NaN, +inf and -inf at a few positions (kernels must pass them on as eager does)."""
    flat = x.clone().reshape(-1)
    flat[3], flat[11], flat[-2] = float("nan"), float("inf"), float("-inf")
    return flat.reshape(x.shape)


class ConvCases(nn.Module):
    """Each convolution path and its edges. x: [1, 8, 13, 11]; y: [1, 7, 5, 5]; z: [1, 8, 13] (1-d);
    big: [1, 4, 66, 66] (a plane too large for four interleaved copies); deep: [1, 160, 4, 4] (taps past a
    patch block's budget)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(20)
        self.pw_partial = nn.Conv2d(8, 6, 1)  # 6 channels: a partial block; 143 pixels
        self.pw_odd_k = nn.Conv2d(7, 9, 1, bias=False)  # odd K, no bias
        self.grouped = nn.Conv2d(8, 10, 3, padding=1, groups=2)  # patches per group, 5 channels each
        self.dense_s2 = nn.Conv2d(8, 5, 3, stride=2, padding=1)
        self.asym = nn.Conv2d(8, 4, (5, 3), padding=(2, 1), dilation=(1, 2))
        self.pw_s2 = nn.Conv2d(8, 8, 1, stride=2)  # 1x1 at stride 2: patches
        self.dw_s1 = nn.Conv2d(8, 8, 3, padding=1, groups=8)  # lanes
        self.dw_s2 = nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8)
        self.dw_rows_s2 = nn.Conv2d(8, 8, 3, stride=(2, 1), padding=1, groups=8)
        self.dw_mult = nn.Conv2d(6, 12, 3, padding=1, groups=6)  # two outputs per channel, a partial lane group
        self.dw_5x5 = nn.Conv2d(8, 8, 5, padding=2, groups=8)  # rows path
        self.dw_dilated = nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=8)
        self.dw_s3 = nn.Conv2d(8, 8, 3, stride=3, groups=8, bias=False)
        self.conv1d = nn.Conv1d(8, 6, 3, padding=1)
        self.big_dw = nn.Conv2d(4, 4, 3, padding=1, groups=4)
        self.deep = nn.Conv2d(160, 5, 3, padding=1)

    def forward(self, x, y, z, big, deep):
        six = self.pw_partial(x)
        return (
            six,
            self.pw_odd_k(y),
            self.grouped(x),
            self.dense_s2(x),
            self.asym(x),
            self.pw_s2(x),
            self.dw_s1(x),
            self.dw_s2(x),
            self.dw_rows_s2(x),
            self.dw_mult(six),
            self.dw_5x5(x),
            self.dw_dilated(x),
            self.dw_s3(x),
            self.conv1d(z),
            self.big_dw(big),
            self.deep(deep),
        )


def _conv_inputs():
    return (
        _with_specials(_randn(1, 8, 13, 11, seed=1)),
        _randn(1, 7, 5, 5, seed=2),
        _randn(1, 8, 13, seed=3),
        _randn(1, 4, 66, 66, seed=4),
        _randn(1, 160, 4, 4, seed=5),
    )


class FusedConvCases(nn.Module):
    """Convolution + relu / ReLU6 / clamp pairs, which exir fuses into ember::convolution_clamp (exported with
    fuse_activations): pointwise, depthwise lanes, depthwise rows and patches. x: [1, 6, 9, 7] with NaN/inf."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(21)
        self.pw = nn.Conv2d(6, 10, 1)
        self.dw = nn.Conv2d(6, 6, 3, padding=1, groups=6)
        self.dw5 = nn.Conv2d(6, 6, 5, padding=2, groups=6)
        self.dense = nn.Conv2d(6, 3, 3, stride=2, padding=1)

    def forward(self, x):
        return (
            F.relu(self.pw(x)),
            F.relu6(self.dw(x)),
            torch.clamp(self.dw5(x), -0.25, 0.5),
            F.hardtanh(self.dense(x), -0.3, 0.3),
        )


def _fused_inputs():
    return (_with_specials(_randn(1, 6, 9, 7, seed=6)),)


class LinearCases(nn.Module):
    """addmm (linear), mm (no bias), bmm, an addmm with beta (portable's), K = 1. x: [3, 37]; a: [2, 3, 5];
    b: [2, 5, 7]; one: [3, 1]."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(22)
        self.fc45 = nn.Linear(37, 45)
        self.fc64 = nn.Linear(37, 64)
        self.no_bias = nn.Linear(37, 3, bias=False)
        self.k1 = nn.Linear(1, 5)
        self.register_buffer("w", torch.randn(37, 6))
        self.register_buffer("c", torch.randn(6))

    def forward(self, x, a, b, one):
        return (
            self.fc45(x),
            self.fc64(x[:1]),
            self.no_bias(x),
            torch.bmm(a, b),
            self.k1(one),
            torch.addmm(self.c, x, self.w, beta=0.5),
        )


def _linear_inputs():
    return (_randn(3, 37, seed=7), _randn(2, 3, 5, seed=8), _randn(2, 5, 7, seed=9), _randn(3, 1, seed=10))


class ElementwiseCases(nn.Module):
    """Clamps and add/sub/mul in every broadcast pattern, NaN/inf included; pools, mean and softmax. x, y:
    [2, 3, 4, 5]; row: [5]; block: [4, 5]; one: [1]; chan: [1, 3, 1, 1]; odd: [2, 1, 4, 1] (a broadcast portable
    takes); img: [1, 3, 10, 9]; scores: [6, 11] (rows with NaN, +inf, all -inf, and large spreads)."""

    def forward(self, x, y, row, block, one, chan, odd, img, scores):
        return (
            torch.relu(x),
            F.hardtanh(x, -1.0, 1.0),
            torch.clamp(x, min=-0.5),
            torch.clamp(x, max=0.5),
            torch.clamp(x, -0.5, 0.5),
            x + y,
            x + row,
            block + x,
            x + one,
            one + x,
            x + chan,
            chan + x,
            torch.sub(x, y, alpha=2.0),
            torch.add(x, row, alpha=0.5),
            x - one,
            x * y,
            x * row,
            one * x,
            chan * x,
            x * odd,
            *F.max_pool2d(img, 2, return_indices=True),
            *F.max_pool2d(img, 3, stride=2, padding=1, return_indices=True),
            F.avg_pool2d(img, 2),
            F.avg_pool2d(img, 3, stride=2, padding=1, count_include_pad=False),
            img.mean((-1, -2), keepdim=True),
            img.mean(-1),
            torch.softmax(scores, -1),
            torch.softmax(scores, 0),
            torch.softmax(x, -1),
            # Element counts that are not a multiple of four (the loops' predicated last pass), NaN/inf in it.
            torch.relu(img),
            F.hardtanh(img, -0.5, 0.5),
            img + img,
            img * chan,
            img - one,
            *F.max_pool2d(img, 3, stride=2, ceil_mode=True, return_indices=True),
            *F.max_pool2d(img, 2, dilation=2, return_indices=True),
            F.avg_pool2d(img, 2, divisor_override=3),
            F.avg_pool2d(img, 3, stride=2, ceil_mode=True),
        )


def _elementwise_inputs():
    return (
        _with_specials(_randn(2, 3, 4, 5, seed=11)),
        _randn(2, 3, 4, 5, seed=12),
        _randn(5, seed=13),
        _randn(4, 5, seed=14),
        _randn(1, seed=15),
        _randn(1, 3, 1, 1, seed=16),
        _randn(2, 1, 4, 1, seed=17),
        _with_specials(_randn(1, 3, 10, 9, seed=18)),
        _scores(),
    )


def _scores():
    s = _randn(6, 11, seed=19) * 4.0
    s[1, 3] = float("nan")
    s[2, 7] = float("inf")
    s[3, :] = float("-inf")
    s[4, 2] = float("-inf")
    s[5, :] = s[5, :] * 30.0  # e^(x - max) down to underflow
    return s


CASES: Dict[str, Case] = {
    "helium_f32_conv": Case(ConvCases, _conv_inputs),
    "helium_f32_conv_fused": Case(FusedConvCases, _fused_inputs, fuse_activations=True),
    "helium_f32_linear": Case(LinearCases, _linear_inputs),
    "helium_f32_elementwise": Case(lambda: ElementwiseCases(), _elementwise_inputs),
}


def export(name: str, path: str) -> None:
    import exir

    case = CASES[name]
    module = case.make().eval()
    program = torch.export.export(module, case.inputs())
    config = exir.ExecutorchBackendConfig(fuse_activations=case.fuse_activations)
    exir.to_edge({"forward": program}).to_executorch(config).save(path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("names", nargs="*")
    args = ap.parse_args(argv)
    unknown = [n for n in args.names if n not in CASES]
    if unknown:
        print(f"f32_cases: unknown cases {unknown}; choose from {list(CASES)}", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    for name in args.names or list(CASES):
        export(name, os.path.join(args.out, f"{name}.pte"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
