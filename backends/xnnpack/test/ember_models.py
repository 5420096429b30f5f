"""Models backends/xnnpack/test lowers with Ember's own XnnpackPartitioner (backends/xnnpack), beside the shared ones in
models.py (MLP, MobileNetV2, ResNet18). Made here and seeded; nothing downloaded.

  small_cnn   every node kind the partitioner takes, in one network: convolutions (plain, grouped, depthwise with
              a depth multiplier, transposed, without bias), batch norm folded and standalone, ReLU/ReLU6/clamp
              fused or not, hardswish and SiLU (as PyTorch decomposes them), max pooling in ceil mode, average
              pooling, constant padding, bilinear upsampling, an add of a number, global average pooling with and
              without keepdim, a fully connected layer and softmax.
  partial     a CNN with operators XNNPACK cannot take in the middle (GELU, a softmax over channels, an average
              pooling that counts padding, a max pooling whose indices are used): those run on Ember's kernels
              between several delegate calls.
"""

import torch
from torch import nn
import torch.nn.functional as F

from backends.xnnpack.test.models import _randomize_batch_norms


class SmallCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.grouped = nn.Conv2d(16, 16, 3, padding=1, groups=4, bias=False)
        self.dw = nn.Conv2d(16, 32, 3, stride=2, padding=1, groups=16)  # depth multiplier 2
        self.bn2 = nn.BatchNorm2d(32)
        self.up = nn.ConvTranspose2d(32, 8, 2, stride=2)
        self.c2 = nn.Conv2d(8, 8, 1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        y = F.relu(self.bn1(self.c1(x)))
        y = F.hardtanh(self.grouped(y), 0.0, 6.0)
        y = torch.clamp(self.dw(y), min=-1.0)
        y = self.bn2(y + 0.5)  # batch norm not after a convolution
        y = F.max_pool2d(y, 3, 2, ceil_mode=True)  # 8x8 -> 4x4 (ceil)
        y = F.hardswish(self.up(y))  # 4x4 -> 8x8
        y = F.silu(self.c2(F.pad(y, (1, 1, 1, 1), value=0.25)))  # 10x10
        y = F.avg_pool2d(y, 2)  # 5x5
        y = F.interpolate(y, scale_factor=2, mode="bilinear", align_corners=False)  # 10x10
        a = y.mean((2, 3))  # keepdim=False
        b = F.adaptive_avg_pool2d(y * 2.0 - 1.0, 1).flatten(1)
        logits = self.fc(a + b)
        return logits, torch.softmax(logits, -1)


class Partial(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1)
        self.c3 = nn.Conv2d(8, 8, 1)

    def forward(self, x):
        y = F.relu(self.c1(x))
        y = F.gelu(y)  # not in the 2022 library
        y = F.relu6(self.c2(y))
        y = torch.softmax(y, 1)  # over channels, not the last dim
        y = F.avg_pool2d(self.c3(y), 3, 1, padding=1)  # counts the padding
        v, i = F.max_pool2d(y, 2, return_indices=True)
        return v + 1.0, i


def make(name: str):
    torch.manual_seed(0)
    if name == "small_cnn":
        return _randomize_batch_norms(SmallCnn(), 2).eval(), (torch.randn(1, 3, 16, 16),)
    if name == "partial":
        return Partial().eval(), (torch.randn(1, 3, 12, 12),)
    from backends.xnnpack.test.models import make as shared

    return shared(name)
