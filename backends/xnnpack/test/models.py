"""The models backends/xnnpack/test exports with ExecuTorch's XnnpackPartitioner: made here, seeded, nothing downloaded.

Each entry: name -> (module, example inputs). MobileNetV2 and ResNet18 are torchvision's definitions (through
zoo/public/torchvision_cpu), with random weights and batch-norm statistics, so the folded convolutions
are not near-identity.
"""

import torch
from torch import nn


def _randomize_batch_norms(model: nn.Module, seed: int) -> nn.Module:
    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(m.weight.shape, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(m.bias.shape, generator=g) * 0.1)
    return model


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.Hardtanh(0.0, 6.0), nn.Linear(64, 10), nn.Sigmoid()
        )

    def forward(self, x):
        return self.net(x)


class TransformerBlock(nn.Module):
    """Pre-norm attention and MLP with residuals: LayerNorm, fused QKV, 4 heads, softmax attention, GELU MLP."""

    def __init__(self, dim=64, heads=4, hidden=128):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        b, t, d = x.shape
        h = self.heads
        qkv = self.qkv(self.ln1(x)).reshape(b, t, 3, h, d // h).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        att = torch.softmax((q @ k.transpose(-2, -1)) * (d // h) ** -0.5, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


class HeadSplit(nn.Module):
    """A linear whose output is viewed as heads with a -1 (BERT's and ViT's head split): ExecuTorch writes that
    dimension of the static reshape as 0, to be inferred from the element count."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(64, 64)

    def forward(self, x):
        b, t, _ = x.shape
        return torch.relu(self.proj(x).view(b, t, -1, 16)) * 2.0


class NewerNodes(nn.Module):
    """Every element-wise and slicing node ExecuTorch 1.5.1 writes that Debian's 2022 XNNPACK lacks, as a Llama or
    GPT-2 block has them: a fused QKV projection sliced in three (XNNStaticSlice), rotary-style sin and cos
    (XNNSin, XNNCos), a tanh gate (XNNTanh), exp, an RMS-norm-style reciprocal square root
    (XNNReciprocalSquareRoot) and log (XNNLog), between linears and arithmetic XNNPACK runs."""

    def __init__(self, dim=32):
        super().__init__()
        self.dim = dim
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        d = self.dim
        h = self.qkv(x)
        q, k, v = h[..., :d], h[..., d : 2 * d], h[..., 2 * d :]
        rotated = torch.cos(q * 0.5) * k + torch.sin(q * 0.5) * v
        gated = torch.tanh(rotated) + torch.exp(-torch.abs(rotated))
        normed = gated * torch.rsqrt(gated * gated + 1.0)
        return self.out(torch.log(normed + 2.0))


class ArgumentOrder(nn.Module):
    """Three values made outside the delegate (cumsum: not XNNPACK's) and read inside it in another order than
    made: ExecuTorch numbers the blob's arguments in the order they are made (external ids) but lists input_ids
    in the order its graph reads them, as MobileViTv2's attention blocks do. All three have one shape, so
    arguments taken in input_ids order would run, on the wrong tensors."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 1)

    def forward(self, x):
        a, b, c = torch.cumsum(x, dim=2), torch.cumsum(x, dim=3), torch.cumsum(x, dim=1)
        return self.conv(torch.relu(c) * b) + a


def make(name: str):
    torch.manual_seed(0)
    if name == "mlp":
        return Mlp().eval(), (torch.randn(4, 32),)
    if name == "transformer_block":
        return TransformerBlock().eval(), (torch.randn(1, 16, 64),)
    if name == "head_split":
        return HeadSplit().eval(), (torch.randn(2, 8, 64),)
    if name == "argument_order":
        return ArgumentOrder().eval(), (torch.randn(1, 8, 4, 4),)
    if name == "newer_nodes":
        return NewerNodes().eval(), (torch.randn(2, 8, 32),)
    from zoo.public import torchvision_cpu

    tv = torchvision_cpu.ensure()
    if name == "mobilenet_v2":
        model = tv.models.mobilenet_v2(weights=None)
    elif name == "resnet18":
        model = tv.models.resnet18(weights=None)
    else:
        raise KeyError(name)
    return _randomize_batch_norms(model, 1).eval(), (torch.randn(1, 3, 224, 224),)


NAMES = ["mlp", "mobilenet_v2", "resnet18", "transformer_block", "head_split", "newer_nodes", "argument_order"]
