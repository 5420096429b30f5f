"""The four MLPerf Tiny (v0.x) reference architectures, written in PyTorch from their published definitions; the
zoo (zoo/models.py) gives them seeded random weights. No trained weights: they exist to run the real
layer shapes end to end, float and int8, on the host and on the Cortex-M55.

  DsCnnKws       keyword spotting: DS-CNN (small) on a 49x10 MFCC map, 12 classes
  ResNet8        image classification: the EEMBC ResNet-8 (v1) on 32x32x3 CIFAR-10, 10 classes
  MobileNetV1    visual wake words: MobileNetV1 with width 0.25 on 96x96x3, 2 classes
  FcAutoencoder  anomaly detection: the fully connected autoencoder on 640 features (5 frames x 128 mel bins)

Where the Keras definitions and PyTorch differ by convention, these follow the benchmark's own PyTorch port of
ResNet-8: 3x3 convolutions pad 1 on every side (Keras' padding='same' with stride 2 pads only below and right,
which shifts a stride-2 window by one pixel without changing any shape or cost), and the classifiers end with
their logits (Keras ends with a softmax, which does not change the top class; Ember's int8 softmax is measured
apart, in bench/cortex_m).
The one place where symmetric padding cannot give Keras' shape is DS-CNN's first 10x4 convolution: there an
explicit zero pad reproduces 'same' exactly. Dropout layers are kept where the definitions have them (identity in
eval).
"""

from __future__ import annotations

from typing import List

import torch
from torch import nn


def _conv_bn_relu(c_in: int, c_out: int, kernel, stride=1, padding=0, groups: int = 1) -> List[nn.Module]:
    # Keras' Conv2D and DepthwiseConv2D keep their bias by default, BatchNormalization follows.
    return [nn.Conv2d(c_in, c_out, kernel, stride, padding, groups=groups, bias=True), nn.BatchNorm2d(c_out), nn.ReLU()]


def _same_padding(size: int, kernel: int, stride: int):
    """Keras/TensorFlow padding='same' along one dim: (before, after), the odd pixel after."""
    out = (size + stride - 1) // stride
    total = max((out - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


class DsCnnKws(nn.Module):
    """DS-CNN small (Zhang et al., Hello Edge, 2017) as MLPerf Tiny's KWS reference: a 10x4 stride-2 convolution
    to 64 channels, four depthwise-separable blocks (3x3 depthwise, 1x1 pointwise, 64 channels, each followed by
    batch norm and ReLU), average pooling over the whole 25x5 map, a 12-way fully connected layer. Input
    [1, 1, 49, 10]: 49 frames of 10 MFCCs, one channel."""

    def __init__(self, num_classes: int = 12, filters: int = 64, frames: int = 49, mfcc: int = 10):
        super().__init__()
        top, bottom = _same_padding(frames, 10, 2)
        left, right = _same_padding(mfcc, 4, 2)
        layers: List[nn.Module] = [nn.ZeroPad2d((left, right, top, bottom))]
        layers += _conv_bn_relu(1, filters, (10, 4), stride=2)
        layers.append(nn.Dropout(0.2))
        for _ in range(4):
            layers += _conv_bn_relu(filters, filters, 3, padding=1, groups=filters)
            layers += _conv_bn_relu(filters, filters, 1)
        layers.append(nn.Dropout(0.4))
        pooled = ((frames + 1) // 2, (mfcc + 1) // 2)
        layers.append(nn.AvgPool2d(pooled))
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(filters, num_classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.features(x), 1))


class _ResNetStack(nn.Module):
    """Two 3x3 convolutions with batch norm (ReLU between), added to the input (through a 1x1 strided
    convolution, without batch norm, where the stack changes shape), then ReLU."""

    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.body = nn.Sequential(
            *_conv_bn_relu(c_in, c_out, 3, stride, 1), nn.Conv2d(c_out, c_out, 3, 1, 1), nn.BatchNorm2d(c_out)
        )
        self.shortcut = nn.Identity() if stride == 1 and c_in == c_out else nn.Conv2d(c_in, c_out, 1, stride)

    def forward(self, x):
        return torch.relu(self.body(x) + self.shortcut(x))


class ResNet8(nn.Module):
    """The EEMBC ResNet-8 v1 of MLPerf Tiny's image classification: a 3x3 convolution to 16 channels, three
    residual stacks of 16, 32 (stride 2) and 64 (stride 2) channels, 8x8 average pooling, 10 classes."""

    def __init__(self, num_classes: int = 10, filters=(16, 32, 64)):
        super().__init__()
        self.stem = nn.Sequential(*_conv_bn_relu(3, filters[0], 3, 1, 1))
        stacks, c_in = [], filters[0]
        for i, c in enumerate(filters):
            stacks.append(_ResNetStack(c_in, c, 1 if i == 0 else 2))
            c_in = c
        self.stacks = nn.Sequential(*stacks)
        self.pool = nn.AvgPool2d(8)
        self.fc = nn.Linear(c_in, num_classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.stacks(self.stem(x))), 1))


class MobileNetV1(nn.Module):
    """MobileNetV1 (Howard et al. 2017) at width `alpha`, as MLPerf Tiny's visual wake words model (alpha 0.25 at
    96x96x3, ReLU rather than Keras' ReLU6, as the EEMBC definition has it): a 3x3 stride-2 convolution, thirteen
    depthwise-separable blocks, average pooling over the final 3x3 map, a fully connected classifier."""

    # (pointwise output channels at width 1.0, depthwise stride) of the thirteen blocks.
    BLOCKS = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + [(1024, 2), (1024, 1)]

    def __init__(self, alpha: float = 0.25, num_classes: int = 2, resolution: int = 96):
        super().__init__()
        c_in = int(32 * alpha)
        layers = _conv_bn_relu(3, c_in, 3, 2, 1)
        size = (resolution + 1) // 2
        for c, stride in self.BLOCKS:
            c_out = int(c * alpha)
            layers += _conv_bn_relu(c_in, c_in, 3, stride, 1, groups=c_in)
            layers += _conv_bn_relu(c_in, c_out, 1)
            c_in, size = c_out, (size + stride - 1) // stride
        layers.append(nn.AvgPool2d(size))
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(c_in, num_classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.features(x), 1))


class FcAutoencoder(nn.Module):
    """The DCASE 2020 baseline autoencoder of MLPerf Tiny's anomaly detection: 640 inputs, four 128-wide fully
    connected layers, an 8-wide bottleneck, four 128-wide layers (each with batch norm and ReLU), and a linear
    640-wide output that reconstructs the input."""

    def __init__(self, inputs: int = 640, hidden: int = 128, bottleneck: int = 8):
        super().__init__()
        widths = [inputs] + [hidden] * 4 + [bottleneck] + [hidden] * 4
        layers: List[nn.Module] = []
        for c_in, c_out in zip(widths, widths[1:]):
            layers += [nn.Linear(c_in, c_out), nn.BatchNorm1d(c_out), nn.ReLU()]
        layers.append(nn.Linear(hidden, inputs))
        self.layers = nn.Sequential(*layers)

    def forward(self, x):
        return self.layers(x)
