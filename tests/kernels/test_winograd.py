"""ember::winograd_conv2d (a 3x3 stride-1 convolution as Winograd F(4x4, 3x3) or F(2x2, 3x3), exir's opt-in winograd)
against eager
F.conv2d with the untransformed filter, on the default build (kernels/optimized: three passes over chunks of tile
rows, on one thread and on a pool) and on the portable one (tile by tile).

The shapes reach every edge of the optimized kernel, for both tile sizes: output planes that are not whole tiles, tile rows shorter than
a vector (one by one) and longer (vectors, then quarter vectors, then single tiles), output channels fewer than a
vector and not a whole register tile (single vectors, then one by one), padding 0, 1 and 2, batches, several chunks
of tile rows (64 channels over a 64x64 plane), and a planned scratch smaller than one chunk wants (a program whose
plane is bounded-dynamic runs a smaller one).

Tolerance: F(4x4, 3x3)'s transforms add and subtract values several times larger than the result, so its float32
rounding is about ten times a direct convolution's: 1e-4 of the output's scale plus 1e-4 relative, as the other
convolution tests, measured against the float64 result of the same filter.
"""

import math

import pytest
import torch
import torch.nn.functional as F

import exir
from exir.lowering.winograd import transform_weight, winograd_conv2d_out

g = torch.Generator().manual_seed(20261128)


def rnd(*shape):
    return torch.rand(*shape, generator=g) * 2 - 1


class Direct(torch.nn.Module):
    """The op called directly on a constant transformed filter (so any plane size, however small, is tested)."""

    def __init__(self, weight, bias, padding, lo, hi, m=4):
        super().__init__()
        self.register_buffer("u", transform_weight(weight, m))
        self.register_buffer("b", bias) if bias is not None else setattr(self, "b", None)
        self.padding, self.lo, self.hi = padding, lo, hi

    def forward(self, x):
        return torch.ops.ember.winograd_conv2d(x, self.u, self.b, self.padding, self.lo, self.hi)


INF = math.inf
# name: (input shape, out channels, padding, bias, [lo, hi], tile size m of F(m x m, 3x3))
CASES = {
    "tiny": ((1, 5, 7, 9), 3, [1, 1], True, [-INF, INF], 4),
    "vectors": ((2, 16, 30, 70), 40, [1, 1], True, [0.0, INF], 4),
    "pad0": ((1, 8, 17, 18), 24, [0, 0], False, [-INF, INF], 4),
    "pad21": ((1, 12, 11, 13), 52, [2, 1], True, [0.0, 6.0], 4),
    "chunks": ((1, 64, 64, 64), 64, [1, 1], True, [0.0, INF], 4),
    "resnet_28": ((1, 128, 28, 28), 128, [1, 1], True, [0.0, INF], 4),
    "f2_tiny": ((1, 5, 5, 6), 3, [1, 1], True, [-INF, INF], 2),
    "f2_resnet_7": ((1, 96, 7, 7), 80, [1, 1], True, [0.0, INF], 2),
    "f2_pad02": ((2, 16, 19, 21), 33, [0, 2], False, [-1.0, 1.0], 2),
    "f2_chunks": ((1, 32, 80, 80), 48, [1, 1], True, [0.0, INF], 2),
}


def expected(x, weight, bias, padding, lo, hi):
    y = F.conv2d(x.double(), weight.double(), bias.double() if bias is not None else None, 1, padding)
    return y.clamp(lo, hi).float()


def tolerance(want):
    return {"atol": 1e-4 * max(1.0, want.abs().max().item()), "rtol": 1e-4}


@pytest.fixture(scope="module")
def programs():
    out = {}
    for name, (shape, cout, padding, with_bias, (lo, hi), m) in CASES.items():
        x = rnd(*shape)
        w = rnd(cout, shape[1], 3, 3) / math.sqrt(9 * shape[1])
        b = rnd(cout) if with_bias else None
        module = Direct(w, b, padding, lo, hi, m).eval()
        prog = exir.to_edge(torch.export.export(module, (x,))).to_executorch()
        assert [c.op for c in prog.method_graphs["forward"].calls] == [winograd_conv2d_out], name
        out[name] = (prog.buffer, x, expected(x, w, b, padding, lo, hi))
    return out


@pytest.mark.parametrize("kernels,threads", [("default", 1), ("default", 2), ("portable", 1)])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_eager(runtime, programs, name, kernels, threads):
    buffer, x, want = programs[name]
    got = runtime.load(buffer, kernels=kernels, threads=threads).run("forward", [x])[0]
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, **tolerance(want))


def test_threads_give_the_same_bits(runtime, programs):
    """Every value is computed the same way on whichever thread: a pool changes no bit."""
    buffer, x, _ = programs["chunks"]
    one = runtime.load(buffer, threads=1).run("forward", [x])[0]
    two = runtime.load(buffer, threads=2).run("forward", [x])[0]
    assert torch.equal(one, two)


@pytest.mark.parametrize("m", [2, 4])
def test_dynamic_plane_runs_smaller_inputs(runtime, m):
    """Planned for a 40x40 plane, run on smaller ones: the chunks follow the input, the scratch is the bound's."""
    w, b = rnd(16, 8, 3, 3) / math.sqrt(72), rnd(16)
    module = Direct(w, b, [1, 1], -INF, INF, m).eval()
    side = torch.export.Dim("side", min=4, max=40)
    ep = torch.export.export(module, (rnd(1, 8, 40, 40),), dynamic_shapes=({2: side, 3: side},))
    buffer = exir.to_edge(ep).to_executorch().buffer
    for kernels in ("default", "portable"):
        program = runtime.load(buffer, kernels=kernels)
        for s in (40, 21, 5):
            x = rnd(1, 8, s, s)
            want = expected(x, w, b, [1, 1], -INF, INF)
            got = program.run("forward", [x])[0]
            torch.testing.assert_close(got, want, **tolerance(want))


@pytest.mark.parametrize("kernels", ["default", "portable"])
def test_bad_weight_is_refused_by_name(runtime, kernels, capfd, monkeypatch):
    """A filter that is not [16 or 36, in, out] for the input is refused when the method runs, naming the op and
    shapes."""
    monkeypatch.setenv("EMBER_LOG", "1")

    class Bad(torch.nn.Module):
        def forward(self, x, u):
            return torch.ops.ember.winograd_conv2d(x, u, None, [1, 1], -INF, INF)

    x, u = rnd(1, 4, 8, 8), rnd(36, 5, 6)
    buffer = exir.to_edge(torch.export.export(Bad(), (x, u))).to_executorch().buffer
    with pytest.raises(RuntimeError, match=r"ember::winograd_conv2d.out\) failed"):
        runtime.load(buffer, kernels=kernels).run("forward", [x, u])
    assert "winograd_conv2d.out: weight must be [16 or 36, 4, out channels] for 4 input channels (got [36, 5, 6])" in (
        capfd.readouterr().err
    )
