"""exir's opt-in winograd pass (exir/lowering/winograd.py): which convolutions it rewrites as
ember::winograd_conv2d.out, what it stores, and that a rewritten network still matches eager.

Rewritten: dense 3x3, stride 1, dilation 1, one group, a constant Float filter, at least 8 channels each side and
16 output tiles of 4x4, alone or fused with its clamp. Left alone: strided, grouped, dilated, 1x1, small planes
(ResNet18's 7x7), few channels; and everything when the option is off. A filter two convolutions share is
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
    "module,x,rewritten",
    [
        (conv(), torch.randn(1, 16, 16, 16), True),
        (torch.nn.Sequential(conv(), torch.nn.ReLU6()), torch.randn(1, 16, 16, 16), True),
        (conv(bias=False), torch.randn(2, 16, 13, 13), True),  # 13x13: 16 tiles, the fewest rewritten
        (conv(stride=2), torch.randn(1, 16, 32, 32), False),
        (conv(groups=2), torch.randn(1, 16, 16, 16), False),
        (conv(dilation=2), torch.randn(1, 16, 16, 16), False),
        (conv(k=1), torch.randn(1, 16, 16, 16), False),
        (conv(), torch.randn(1, 16, 7, 7), False),  # 4 tiles: the transformed filter costs more than it saves
        (conv(cin=3), torch.randn(1, 3, 32, 32), False),
    ],
    ids=["plain", "relu6", "nobias_batch", "stride2", "groups", "dilated", "1x1", "7x7", "rgb"],
)
def test_which_convolutions_are_rewritten(module, x, rewritten):
    prog = export(module, x, fuse_activations=True, winograd=True)
    assert (winograd_conv2d_out in ops(prog)) == rewritten
    assert prog.reports["forward"].winograd_convolutions == int(rewritten)
    assert winograd_conv2d_out not in ops(export(module, x, fuse_activations=True))


def test_the_filter_is_stored_transformed_and_recovers():
    w = torch.randn(24, 16, 3, 3)
    u = transform_weight(w)
    assert u.shape == (36, 16, 24) and u.dtype == torch.float32
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
