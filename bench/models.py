"""The benchmark's model set: the zoo's models (examples/models.py) plus a chain of 200 tiny elementwise ops,
which measures what a runtime spends per operator when the operators themselves cost almost nothing.

Importable in every venv the benchmark uses (it needs torch only). Weights and inputs are seeded: every framework
in one run, and every run, sees the same numbers.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Tuple

import torch
from torch import nn

from examples.models import ZOO

CHAIN_OPS = 200


class ElementwiseChain(nn.Module):
    """CHAIN_OPS elementwise ops on a [1, 16] tensor, cycling x + 0.5, x * 0.75, x - 0.25, relu(x): each op is one
    kernel call on 16 floats, and the values settle near 0.5 (no overflow, no denormals) however long the chain."""

    def __init__(self, n: int = CHAIN_OPS):
        super().__init__()
        self.n = n

    def forward(self, x):
        for i in range(self.n):
            k = i % 4
            if k == 0:
                x = x + 0.5
            elif k == 1:
                x = x * 0.75
            elif k == 2:
                x = x - 0.25
            else:
                x = torch.relu(x)
        return x


def _chain():
    torch.manual_seed(11)
    g = torch.Generator().manual_seed(11)
    return ElementwiseChain().eval(), (torch.randn(1, 16, generator=g),)


@dataclasses.dataclass(frozen=True)
class BenchModel:
    name: str
    label: str            # for tables and plots
    build: Callable[[], Tuple[nn.Module, Tuple[torch.Tensor, ...]]]
    ops: int = 0          # operator count the per-op overhead divides by (the chain only)
    small: bool = False   # part of --quick


def _zoo(name: str, label: str, small: bool = False) -> BenchModel:
    return BenchModel(name, label, ZOO[name].build, small=small)


MODELS: Dict[str, BenchModel] = {m.name: m for m in [
    _zoo("add", "add [1,4]", small=True),
    _zoo("softmax", "softmax [1,4]"),
    _zoo("linear", "linear 4->4", small=True),
    BenchModel("chain200", f"{CHAIN_OPS} elementwise ops [1,16]", _chain, ops=CHAIN_OPS, small=True),
    _zoo("mlp", "MLP 784-256-256-10", small=True),
    _zoo("small_cnn", "small CNN 32x32"),
    _zoo("mobilenet_v2_035_96", "MobileNetV2 0.35 @96"),
    _zoo("mobilenet_v2", "MobileNetV2 1.0 @224"),
    _zoo("transformer_block", "transformer block 16x64"),
]}

QUICK_MODELS: List[str] = [m.name for m in MODELS.values() if m.small]
