"""ember::max_pool2d.out (max pooling's values without indices; exir's opt-in fuse_activations emits it where the
program reads no indices) against eager, on the default build (kernels/optimized: vector windows across output
columns, AVX-512, AVX2 or baseline) and on the portable one (window by window), and the pass that emits it.

Values match exactly (a max picks one of its inputs): ResNet's stem pool shape, unit stride, ceil_mode, dilation, a
plane narrower than a vector, NaN (which wins, as in ATen) and -inf.
"""

import pytest
import torch
import torch.nn.functional as F

import exir
from exir.lowering.max_pool import max_pool2d_out

aten = torch.ops.aten
g = torch.Generator().manual_seed(20261128)


def with_specials(x):
    x = x.clone()
    flat = x.view(-1)
    flat[7] = float("nan")
    flat[100] = float("-inf")
    return x


class Pool(torch.nn.Module):
    def __init__(self, **kw):
        super().__init__()
        self.kw = kw

    def forward(self, x):
        return F.max_pool2d(x, **self.kw)


CASES = {
    "resnet_stem": (Pool(kernel_size=3, stride=2, padding=1), (1, 8, 56, 57)),
    "unit_stride": (Pool(kernel_size=3, stride=1, padding=1), (2, 3, 20, 37)),
    "ceil": (Pool(kernel_size=2, stride=2, ceil_mode=True), (1, 4, 15, 33)),
    "dilated": (Pool(kernel_size=3, stride=2, padding=1, dilation=2), (1, 3, 19, 40)),
    "narrow": (Pool(kernel_size=3, stride=2, padding=1), (1, 5, 9, 7)),
}


@pytest.fixture(scope="module")
def programs():
    out = {}
    for name, (module, shape) in CASES.items():
        x = with_specials(torch.randn(*shape, generator=g))
        prog = exir.to_edge(torch.export.export(module, (x,))).to_executorch(
            exir.ExecutorchBackendConfig(fuse_activations=True)
        )
        ops = [c.op for c in prog.method_graphs["forward"].calls]
        assert ops == [max_pool2d_out], name
        out[name] = (prog.buffer, x, module(x))
    return out


@pytest.mark.parametrize("kernels,threads", [("default", 1), ("default", 2), ("portable", 1)])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_eager(runtime, programs, name, kernels, threads):
    buffer, x, want = programs[name]
    got = runtime.load(buffer, kernels=kernels, threads=threads).run("forward", [x])[0]
    torch.testing.assert_close(got, want, atol=0, rtol=0, equal_nan=True)


def test_indices_that_are_read_keep_the_aten_call():
    class WithIndices(torch.nn.Module):
        def forward(self, x):
            return F.max_pool2d(x, 3, 2, 1, return_indices=True)

    x = torch.randn(1, 2, 9, 9, generator=g)
    prog = exir.to_edge(torch.export.export(WithIndices(), (x,))).to_executorch(
        exir.ExecutorchBackendConfig(fuse_activations=True)
    )
    assert [c.op for c in prog.method_graphs["forward"].calls] == [aten.max_pool2d_with_indices.out]


def test_the_indices_leave_the_plan():
    module, x = Pool(kernel_size=3, stride=2, padding=1), torch.randn(1, 64, 112, 112, generator=g)
    sizes = {}
    for fuse in (False, True):
        prog = exir.to_edge(torch.export.export(module, (x,))).to_executorch(
            exir.ExecutorchBackendConfig(fuse_activations=fuse)
        )
        sizes[fuse] = sum(p.planned_bytes for p in prog.reports["forward"].pools)
    # The int64 indices (8 bytes per output) are gone; the float output (4 bytes) stays.
    assert sizes[False] - sizes[True] == 64 * 56 * 56 * 8
