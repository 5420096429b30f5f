"""exir's opt-in winograd pass (exir/lowering/winograd.py): which convolutions it rewrites as
ember::winograd_conv2d.out, what it stores, and that a rewritten network still matches eager.

Rewritten: dense 3x3, stride 1, dilation 1, one group, a constant Float filter, at least 8 channels each side, alone
or fused with its clamp: as F(4x4, 3x3) with at least 49 output tiles of 4x4, else as F(2x2, 3x3) with 49 of 2x2.
Left alone: strided, grouped, dilated, 1x1, smaller planes, few channels; and everything when the option is off. A filter two convolutions share is
transformed once.
"""

import pytest
import torch

import exir
from exir.lowering.winograd import recover_weight, transform_weight, winograd_conv2d_out

aten = torch.ops.aten


def export(module, x, **config):
    torch.manual_seed(0)
    return exir.to_edge(torch.export.export(module.eval(), (x,))).to_executorch(exir.ExecutorchBackendConfig(**config))


def ops(prog):
    return [c.op for c in prog.method_graphs["forward"].calls]


def conv(cin=16, cout=16, k=3, **kw):
    torch.manual_seed(1)
    return torch.nn.Conv2d(cin, cout, k, padding=k // 2, **kw)


@pytest.mark.parametrize(
    "module,x,m",
    [
        (conv(), torch.randn(1, 16, 28, 28), 4),
        (torch.nn.Sequential(conv(), torch.nn.ReLU6()), torch.randn(1, 16, 28, 28), 4),
        (conv(bias=False), torch.randn(2, 16, 25, 25), 4),  # 25x25: 49 tiles of 4x4, the fewest for F(4x4)
        (conv(), torch.randn(1, 16, 24, 24), 2),  # 36 tiles of 4x4, 144 of 2x2
        (conv(), torch.randn(1, 16, 13, 13), 2),  # 49 tiles of 2x2, the fewest for F(2x2)
        (conv(), torch.randn(1, 16, 12, 12), 0),  # 36 tiles of 2x2: the filter's bytes would outweigh the savings
        (conv(stride=2), torch.randn(1, 16, 56, 56), 0),
        (conv(groups=2), torch.randn(1, 16, 28, 28), 0),
        (conv(dilation=2), torch.randn(1, 16, 28, 28), 0),
        (conv(k=1), torch.randn(1, 16, 28, 28), 0),
        (conv(cin=3), torch.randn(1, 3, 32, 32), 0),
    ],
    ids=["plain", "relu6", "nobias_batch", "f2_24", "f2_13", "12x12", "stride2", "groups", "dilated", "1x1", "rgb"],
)
def test_which_convolutions_are_rewritten(module, x, m):
    """m: the F(m x m, 3x3) expected, 0 for none; the stored filter has (m + 2)^2 points."""
    prog = export(module, x, fuse_activations=True, winograd=True)
    calls = [c for c in prog.method_graphs["forward"].calls if c.op == winograd_conv2d_out]
    assert len(calls) == (m > 0)
    if m:
        assert calls[0].args[1].shape[0] == (m + 2) ** 2
    assert prog.reports["forward"].winograd_convolutions == int(m > 0)
    assert winograd_conv2d_out not in ops(export(module, x, fuse_activations=True))


@pytest.mark.parametrize("m", [2, 4])
def test_the_filter_is_stored_transformed_and_recovers(m):
    w = torch.randn(24, 16, 3, 3)
    u = transform_weight(w, m)
    assert u.shape == ((m + 2) ** 2, 16, 24) and u.dtype == torch.float32
    torch.testing.assert_close(recover_weight(u).float(), w, atol=1e-5, rtol=1e-5)


def test_a_shared_filter_is_transformed_once():
    class Twice(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c = conv()

        def forward(self, x):
            return self.c(torch.relu(self.c(x)))

    prog = export(Twice(), torch.randn(1, 16, 16, 16), winograd=True)
    calls = [c for c in prog.method_graphs["forward"].calls if c.op == winograd_conv2d_out]
    assert len(calls) == 2 and calls[0].args[1] is calls[1].args[1]


def test_a_residual_network_matches_eager(runtime):
    """Two residual blocks of ResNet's shape, 32 channels at 28x28, on both builds: within F(4x4, 3x3)'s float32
    rounding of eager (1e-4 of the output's scale)."""

    class Block(torch.nn.Module):
        def __init__(self, c):
            super().__init__()
            self.a, self.b = conv(c, c), conv(c, c)
            self.bn = torch.nn.BatchNorm2d(c)

        def forward(self, x):
            return torch.relu(x + self.bn(self.b(torch.relu(self.a(x)))))

    torch.manual_seed(3)
    model = torch.nn.Sequential(Block(32), Block(32)).eval()
    with torch.no_grad():
        model[0].bn.running_mean.uniform_(-0.5, 0.5)
        model[1].bn.running_var.uniform_(0.5, 2.0)
    x = torch.randn(1, 32, 28, 28)
    prog = export(model, x, fuse_activations=True, winograd=True)
    assert ops(prog).count(winograd_conv2d_out) == 4
    want = model(x)
    for kernels in ("default", "portable"):
        got = runtime.load(prog.buffer, kernels=kernels).run("forward", [x])[0]
        torch.testing.assert_close(got, want, atol=1e-4 * max(1.0, want.abs().max().item()), rtol=1e-4)
