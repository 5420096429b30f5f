"""Weight quantization of a Decoder before export (`--quantize int8 | 8da4w` in examples/llm/export.py).

Every nn.Linear of the decoder (attention q/k/v/o, the MLP's gate/up/down, and the output head) is replaced by a
module that calls one of Ember's LLM operators (kernels/portable/llm_ops.py, schemas in schema/operators.yaml):
  * int8:  ember_llm::linear_int8, int8 weights with one symmetric scale per output channel (max |w| / 127),
           activations stay float.
  * 8da4w: ember_llm::linear_8da4w, int4 weights with one symmetric scale per group of `group_size` input channels
           (max |w| / 7.5, as torchao's group-wise symmetric int4; w / scale rounded and clamped to -8 .. 7),
           activations quantized per token to int8 at run time (ExecuTorch's 8da4w scheme; its llama export's
           default group size is 128).
The token embedding stays float32 (its rows are gathered, not multiplied; quantizing it is future work).
"""
from __future__ import annotations

from typing import List

import torch
from torch import nn

from kernels.portable.llm_ops import linear_8da4w, linear_int8, pack_int4

SCHEMES = ("int8", "8da4w")
GROUP_SIZES = (32, 64, 128, 256)


class LinearInt8(nn.Module):
    def __init__(self, linear: nn.Linear):
        super().__init__()
        w = linear.weight.detach().to(torch.float32)
        scales = w.abs().amax(dim=1).clamp(min=1e-12) / 127.0
        self.register_buffer("weight", torch.clamp(torch.round(w / scales[:, None]), -127, 127).to(torch.int8))
        self.register_buffer("scales", scales.to(torch.float32))
        self.register_buffer("bias", None if linear.bias is None else linear.bias.detach().clone())

    def forward(self, x):
        return linear_int8(x, self.weight, self.scales, self.bias)


class Linear8da4w(nn.Module):
    def __init__(self, linear: nn.Linear, group_size: int):
        super().__init__()
        w = linear.weight.detach().to(torch.float32)
        N, K = w.shape
        g = w.reshape(N, K // group_size, group_size)
        scales = g.abs().amax(dim=2).clamp(min=1e-12) / 7.5
        q = torch.clamp(torch.round(g / scales[:, :, None]), -8, 7).reshape(N, K).to(torch.int8)
        self.group_size = group_size
        self.register_buffer("packed_weight", pack_int4(q))
        self.register_buffer("scales", scales.to(torch.float32))
        self.register_buffer("bias", None if linear.bias is None else linear.bias.detach().clone())

    def forward(self, x):
        return linear_8da4w(x, self.packed_weight, self.scales, self.group_size, self.bias)


def _linears(model: nn.Module):
    return [(name, m) for name, m in model.named_modules() if isinstance(m, nn.Linear)]


def check(model: nn.Module, scheme: str, group_size: int) -> None:
    """Raises ValueError saying what to change when `model` cannot be quantized with `scheme`."""
    if scheme not in SCHEMES:
        raise ValueError(f"--quantize {scheme!r}: choose one of {', '.join(SCHEMES)}")
    if scheme == "8da4w":
        if group_size not in GROUP_SIZES:
            raise ValueError(f"--group-size {group_size}: choose one of {', '.join(map(str, GROUP_SIZES))}")
        bad = sorted({m.in_features for _, m in _linears(model) if m.in_features % group_size})
        if bad:
            ok = [g for g in GROUP_SIZES if all(k % g == 0 for k in {m.in_features for _, m in _linears(model)})]
            raise ValueError(f"--group-size {group_size} does not divide the input sizes {bad} of this model's "
                             f"linear layers; group sizes that fit: {ok or 'none (use --quantize int8)'}")


def quantize(model: nn.Module, scheme: str, group_size: int = 128) -> List[str]:
    """Replaces the model's nn.Linear modules in place; returns their names."""
    check(model, scheme, group_size)
    names = []
    for name, lin in _linears(model):
        parent = model.get_submodule(name.rpartition(".")[0]) if "." in name else model
        q = LinearInt8(lin) if scheme == "int8" else Linear8da4w(lin, group_size)
        setattr(parent, name.rpartition(".")[2], q)
        names.append(name)
    return names
