"""The float decoder's linear layers in the blocked weight layout (`examples/llm/export.py` without --quantize).

Each nn.Linear whose output features are a multiple of 16 becomes ember_llm::linear on llm_ops.pack_blocked's
[N / 16, K, 16] weights: 16 output channels of one input side by side, each block's rows contiguous. Prefill's
register tiles (kernels/optimized/blocked_linear.h) then read every weight once per call, in file order, where
aten::mm on the [K, N] transpose read a panel's rows N floats apart. The values are the same floats, reordered; a
tied output head keeps the embedding's own table instead (Decoder.tie_head).
"""

from __future__ import annotations

from typing import List

import torch
from torch import nn

from kernels.portable.llm_ops import CHANNEL_BLOCK, linear, pack_blocked


class LinearBlocked(nn.Module):
    def __init__(self, lin: nn.Linear):
        super().__init__()
        self.register_buffer("weight", pack_blocked(lin.weight.detach().to(torch.float32)))
        self.register_buffer("bias", None if lin.bias is None else lin.bias.detach().clone())

    def forward(self, x):
        return linear(x, self.weight, self.bias)


def block_linears(model: nn.Module) -> List[str]:
    """Replaces the float nn.Linear modules with 16-multiple output features in place; returns their names."""
    names = []
    for name, lin in [(n, m) for n, m in model.named_modules() if type(m) is nn.Linear]:
        if lin.out_features % CHANNEL_BLOCK or lin.weight.dtype != torch.float32:
            continue
        parent = model.get_submodule(name.rpartition(".")[0]) if "." in name else model
        setattr(parent, name.rpartition(".")[2], LinearBlocked(lin))
        names.append(name)
    return names
