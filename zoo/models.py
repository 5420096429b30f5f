"""The example model zoo: small, seeded models that every stage of Ember is tested and measured on.

Each entry builds a fresh module with fixed random weights and example inputs, so that exports, runtimes and
benchmarks in one run all see the same numbers. Nothing is downloaded: MobileNetV2 is written out here.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Dict, Tuple

import torch
from torch import nn

from zoo.mlperf_tiny import DsCnnKws, FcAutoencoder, MobileNetV1, ResNet8


@dataclasses.dataclass(frozen=True)
class ZooEntry:
    name: str
    build: Callable[[], Tuple[nn.Module, Tuple[torch.Tensor, ...]]]
    # Extra methods beyond forward: method name -> example inputs (exported from the same module).
    description: str = ""


def _seeded(seed: int):
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    return g


class Add(nn.Module):
    def forward(self, x, y):
        return x + y


class Softmax(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


class Linear(nn.Module):
    def __init__(self, n_in=4, n_out=4):
        super().__init__()
        self.fc = nn.Linear(n_in, n_out)

    def forward(self, x):
        return self.fc(x)


class MLP(nn.Module):
    """784-256-256-10: the MLP that ExecuTorch's portable path plans 806,976 arena bytes for."""

    def __init__(self, sizes=(784, 256, 256, 10)):
        super().__init__()
        layers = []
        for i in range(len(sizes) - 1):
            layers.append(nn.Linear(sizes[i], sizes[i + 1]))
            if i < len(sizes) - 2:
                layers.append(nn.ReLU())
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


class SmallCNN(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.AvgPool2d(2),
        )
        self.head = nn.Linear(16 * 8 * 8, num_classes)

    def forward(self, x):
        x = self.features(x)
        return self.head(torch.flatten(x, 1))


def _make_divisible(v: float, divisor: int = 8) -> int:
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class _ConvBNReLU(nn.Sequential):
    def __init__(self, c_in, c_out, kernel=3, stride=1, groups=1):
        super().__init__(
            nn.Conv2d(c_in, c_out, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
            nn.BatchNorm2d(c_out),
            nn.ReLU6(inplace=False),
        )


class _InvertedResidual(nn.Module):
    def __init__(self, c_in, c_out, stride, expand):
        super().__init__()
        hidden = int(round(c_in * expand))
        self.use_res = stride == 1 and c_in == c_out
        layers = []
        if expand != 1:
            layers.append(_ConvBNReLU(c_in, hidden, kernel=1))
        layers += [
            _ConvBNReLU(hidden, hidden, stride=stride, groups=hidden),
            nn.Conv2d(hidden, c_out, 1, 1, 0, bias=False),
            nn.BatchNorm2d(c_out),
        ]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.use_res else self.conv(x)


class MobileNetV2(nn.Module):
    """MobileNetV2 (Sandler et al. 2018), written out so no model hub is needed; random weights."""

    SETTINGS = [
        (1, 16, 1, 1),
        (6, 24, 2, 2),
        (6, 32, 3, 2),
        (6, 64, 4, 2),
        (6, 96, 3, 1),
        (6, 160, 3, 2),
        (6, 320, 1, 1),
    ]

    def __init__(self, width: float = 1.0, num_classes: int = 1000):
        super().__init__()
        c_in = _make_divisible(32 * width)
        last = _make_divisible(1280 * max(1.0, width))
        layers = [_ConvBNReLU(3, c_in, stride=2)]
        for t, c, n, s in self.SETTINGS:
            c_out = _make_divisible(c * width)
            for i in range(n):
                layers.append(_InvertedResidual(c_in, c_out, s if i == 0 else 1, t))
                c_in = c_out
        layers.append(_ConvBNReLU(c_in, last, kernel=1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(last, num_classes))

    def forward(self, x):
        x = self.features(x)
        x = nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.classifier(x)


class TransformerBlock(nn.Module):
    """One pre-norm encoder block: self-attention + GELU MLP, on [1, seq, dim]."""

    def __init__(self, dim=64, heads=4, mlp=128):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, mlp)
        self.fc2 = nn.Linear(mlp, dim)

    def forward(self, x):
        b, s, d = x.shape
        h = self.norm1(x)
        q, k, v = self.qkv(h).reshape(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        att = torch.softmax(q @ k.transpose(-2, -1) * (d // self.heads) ** -0.5, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(y)
        return x + self.fc2(nn.functional.gelu(self.fc1(self.norm2(x))))


class RunningMean(nn.Module):
    """Has a mutable buffer: every call folds the input into a running mean kept on the device."""

    def __init__(self, n=4):
        super().__init__()
        self.register_buffer("mean", torch.full((n,), 0.5))
        self.register_buffer("count", torch.zeros(1))

    def forward(self, x):
        self.count.add_(1.0)
        self.mean.mul_(0.9).add_(x.mean(0) * 0.1)
        return self.mean * 2.0


class TwoMethods(nn.Module):
    """A model with an `encode` method beside `forward`, both exported into one program."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(8, 4)
        self.dec = nn.Linear(4, 8)

    def encode(self, x):
        return torch.tanh(self.enc(x))

    def forward(self, x):
        return self.dec(self.encode(x))


def _entry(name, ctor, shapes, seed, description=""):
    def build():
        g = _seeded(seed)
        m = ctor().eval()
        # Batch-norm statistics and affine terms away from identity, so folding bugs cannot hide.
        for mod in m.modules():
            if isinstance(mod, (nn.BatchNorm1d, nn.BatchNorm2d)):
                mod.running_mean.uniform_(-0.5, 0.5, generator=g)
                mod.running_var.uniform_(0.5, 1.5, generator=g)
                mod.weight.data.uniform_(0.5, 1.5, generator=g)
                mod.bias.data.uniform_(-0.2, 0.2, generator=g)
        args = tuple(torch.randn(*s, generator=g) for s in shapes)
        return m, args

    return ZooEntry(name, build, description)


ZOO: Dict[str, ZooEntry] = {
    e.name: e
    for e in [
        _entry("add", Add, [(1, 4), (1, 4)], 1, "x + y on [1,4]"),
        _entry("softmax", Softmax, [(1, 4)], 2, "softmax over [1,4]"),
        _entry("linear", Linear, [(1, 4)], 3, "nn.Linear(4, 4) on [1,4]"),
        _entry("mlp", MLP, [(1, 784)], 4, "784-256-256-10 MLP with ReLU"),
        _entry("small_cnn", SmallCNN, [(1, 3, 32, 32)], 5, "conv/bn/relu/pool x2 + linear on 32x32"),
        _entry("mobilenet_v2", MobileNetV2, [(1, 3, 224, 224)], 6, "MobileNetV2 1.0 at 224x224"),
        _entry(
            "mobilenet_v2_035_96",
            lambda: MobileNetV2(width=0.35),
            [(1, 3, 96, 96)],
            7,
            "MobileNetV2 width 0.35 at 96x96",
        ),
        _entry(
            "mobilenet_v2_005_96",
            lambda: MobileNetV2(width=0.05),
            [(1, 3, 96, 96)],
            11,
            "MobileNetV2 width 0.05 at 96x96 (the seed's Corstone-300 model)",
        ),
        # MLPerf Tiny's four reference architectures (zoo/mlperf_tiny.py).
        _entry("ds_cnn_kws", DsCnnKws, [(1, 1, 49, 10)], 12, "MLPerf Tiny keyword spotting: DS-CNN on 49x10 MFCCs"),
        _entry("resnet8_cifar10", ResNet8, [(1, 3, 32, 32)], 13, "MLPerf Tiny image classification: ResNet-8, 32x32"),
        _entry(
            "mobilenet_v1_025_vww",
            MobileNetV1,
            [(1, 3, 96, 96)],
            14,
            "MLPerf Tiny visual wake words: MobileNetV1 width 0.25 at 96x96",
        ),
        _entry(
            "autoencoder_ad",
            FcAutoencoder,
            [(1, 640)],
            15,
            "MLPerf Tiny anomaly detection: 640-128x4-8-128x4-640 autoencoder",
        ),
        _entry("transformer_block", TransformerBlock, [(1, 16, 64)], 8, "pre-norm encoder block, dim 64, 4 heads"),
        _entry("running_mean", RunningMean, [(3, 4)], 9, "mutable buffers updated in place"),
        _entry("two_methods", TwoMethods, [(1, 8)], 10, "forward and encode in one program"),
    ]
}

# Methods beyond `forward` for multi-method entries: entry name -> {method: example input shapes}.
EXTRA_METHODS = {"two_methods": {"encode": [(1, 8)]}}


class _MethodAsForward(nn.Module):
    """torch.export only exports `forward`; this exports another method of a module under that name."""

    def __init__(self, module: nn.Module, method: str):
        super().__init__()
        self.module = module
        self.method = method

    def forward(self, *args):
        return getattr(self.module, self.method)(*args)


def export_methods(name: str):
    """Builds zoo entry `name` and exports all its methods: ({method: ExportedProgram}, {method: inputs}, module)."""
    module, args = ZOO[name].build()
    programs = {"forward": torch.export.export(module, args)}
    inputs = {"forward": args}
    g = _seeded(1000 + len(name))
    for method, shapes in EXTRA_METHODS.get(name, {}).items():
        margs = tuple(torch.randn(*s, generator=g) for s in shapes)
        programs[method] = torch.export.export(_MethodAsForward(module, method), margs)
        inputs[method] = margs
    return programs, inputs, module
