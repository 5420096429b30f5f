"""Weight quantization of a Decoder before export (`--quantize int8 | 8da4w` in examples/llm/export.py).

Every nn.Linear of the decoder (attention q/k/v/o, the MLP's gate/up/down, and the output head) is replaced by a
module that calls one of Ember's LLM operators (kernels/portable/llm_ops.py, schemas in schema/operators.yaml):
  * int8:  ember_llm::linear_int8, int8 weights with one symmetric scale per output channel (max |w| / 127),
           activations stay float.
  * 8da4w: ember_llm::linear_8da4w, int4 weights with one symmetric scale per group of `group_size` input channels
           (max |w| / 7.5, as torchao's group-wise symmetric int4; w / scale rounded and clamped to -8 .. 7),
           activations quantized per token to int8 at run time (ExecuTorch's 8da4w scheme; its llama export's
           default group size is 128).
The token embedding can be quantized too (`embedding=`, export's --quantize-embedding), whatever the linears do:
  * int8: ember_llm::embedding_int8, int8 rows with one symmetric scale per row (max |w| / 127);
  * 4bit: ember_llm::embedding_4bit, int4 rows with one symmetric scale per group of `embedding_group_size` values
          (max |w| / 7.5, as the linears' int4), in the same packed layout. ExecuTorch's llama export offers the
          same two (its --embedding-quantize 8,0 and 4,32).
It is the largest tensor of a small LLM (vocab x dim), so it decides much of the file's size; a gathered row is
dequantized as it is read, so only the rows of the tokens in flight cost any arithmetic.
"""

from __future__ import annotations

from typing import List

import torch
from torch import nn

from kernels.portable.llm_ops import (
    CHANNEL_BLOCK,
    INT4_CHANNEL_BLOCK,
    embedding_4bit,
    embedding_int8,
    linear_8da4w,
    linear_int8,
    pack_blocked,
    pack_int4,
    pack_int4_blocked,
)

SCHEMES = ("int8", "8da4w")
EMBEDDING_SCHEMES = ("int8", "4bit")
GROUP_SIZES = (32, 64, 128, 256)


class LinearInt8(nn.Module):
    def __init__(self, linear: nn.Linear):
        super().__init__()
        w = linear.weight.detach().to(torch.float32)
        scales = w.abs().amax(dim=1).clamp(min=1e-12) / 127.0
        q = torch.clamp(torch.round(w / scales[:, None]), -127, 127).to(torch.int8)
        # The blocked layout where the output channels allow it: prefill's register tiles read it once per call
        # (kernels/optimized/blocked_linear.h).
        self.register_buffer("weight", pack_blocked(q) if q.shape[0] % CHANNEL_BLOCK == 0 else q)
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
        scales = scales.to(torch.float32)
        # The blocked layout where the output channels allow it: the optimized kernels compute 8 channels per
        # vector with int8 dot products on it (kernels/optimized/op_llm_linear.cc).
        if N % INT4_CHANNEL_BLOCK == 0:
            packed, scales = pack_int4_blocked(q, scales)
        else:
            packed = pack_int4(q)
        self.register_buffer("packed_weight", packed)
        self.register_buffer("scales", scales)
        self.register_buffer("bias", None if linear.bias is None else linear.bias.detach().clone())

    def forward(self, x):
        return linear_8da4w(x, self.packed_weight, self.scales, self.group_size, self.bias)


class EmbeddingInt8(nn.Module):
    def __init__(self, emb: nn.Embedding):
        super().__init__()
        w = emb.weight.detach().to(torch.float32)
        scales = w.abs().amax(dim=1).clamp(min=1e-12) / 127.0
        self.register_buffer("weight", torch.clamp(torch.round(w / scales[:, None]), -127, 127).to(torch.int8))
        self.register_buffer("scales", scales.to(emb.weight.dtype))

    def forward(self, tokens):
        return embedding_int8(self.weight, self.scales, tokens)


class Embedding4bit(nn.Module):
    def __init__(self, emb: nn.Embedding, group_size: int):
        super().__init__()
        w = emb.weight.detach().to(torch.float32)
        V, D = w.shape
        g = w.reshape(V, D // group_size, group_size)
        scales = g.abs().amax(dim=2).clamp(min=1e-12) / 7.5
        q = torch.clamp(torch.round(g / scales[:, :, None]), -8, 7).reshape(V, D).to(torch.int8)
        self.group_size = group_size
        self.register_buffer("packed_weight", pack_int4(q))
        self.register_buffer("scales", scales.to(emb.weight.dtype))

    def forward(self, tokens):
        return embedding_4bit(self.packed_weight, self.scales, self.group_size, tokens)


def _linears(model: nn.Module):
    return [(name, m) for name, m in model.named_modules() if isinstance(m, nn.Linear)]


def _check_group_size(flag: str, group_size: int, sizes, what: str, fallback: str) -> None:
    """The int4 schemes' shared refusal: a group size off the list, or one that does not divide every size (what
    formats the offending ones), naming the sizes that would fit."""
    if group_size not in GROUP_SIZES:
        raise ValueError(f"{flag} {group_size}: choose one of {', '.join(map(str, GROUP_SIZES))}")
    bad = sorted(k for k in sizes if k % group_size)
    if bad:
        ok = [g for g in GROUP_SIZES if all(k % g == 0 for k in sizes)]
        raise ValueError(
            f"{flag} {group_size} does not divide {what.format(bad)}; group sizes that fit: "
            f"{ok or f'none (use {fallback})'}"
        )


def check(model: nn.Module, scheme: str, group_size: int) -> None:
    """Raises ValueError saying what to change when `model` cannot be quantized with `scheme`."""
    if scheme not in SCHEMES:
        raise ValueError(f"--quantize {scheme!r}: choose one of {', '.join(SCHEMES)}")
    if scheme == "8da4w":
        _check_group_size(
            "--group-size",
            group_size,
            {m.in_features for _, m in _linears(model)},
            "the input sizes {} of this model's linear layers",
            "--quantize int8",
        )


def _embeddings(model: nn.Module):
    return [(name, m) for name, m in model.named_modules() if isinstance(m, nn.Embedding)]


def check_embedding(model: nn.Module, scheme: str, group_size: int) -> None:
    """Raises ValueError saying what to change when `model`'s embeddings cannot be quantized with `scheme`."""
    if scheme not in EMBEDDING_SCHEMES:
        raise ValueError(f"--quantize-embedding {scheme!r}: choose one of {', '.join(EMBEDDING_SCHEMES)}")
    if scheme == "4bit":
        _check_group_size(
            "--embedding-group-size",
            group_size,
            {m.embedding_dim for _, m in _embeddings(model)},
            "the embedding width {}",
            "--quantize-embedding int8",
        )


def quantize_embeddings(model: nn.Module, scheme: str, group_size: int = 32) -> List[str]:
    """Replaces the model's nn.Embedding modules in place (int8 rows, or int4 in groups); returns their names.
    Weights tied to an output head stay shared with nothing: the head is a separate nn.Linear (or its quantized
    replacement) holding its own copy."""
    check_embedding(model, scheme, group_size)
    names = []
    for name, emb in _embeddings(model):
        parent = model.get_submodule(name.rpartition(".")[0]) if "." in name else model
        q = EmbeddingInt8(emb) if scheme == "int8" else Embedding4bit(emb, group_size)
        setattr(parent, name.rpartition(".")[2], q)
        names.append(name)
    return names


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


HEAD_SCHEMES = ("4bit",)


def quantize_head(model: nn.Module, scheme: str, group_size: int = 32) -> bool:
    """The output head alone as linear_8da4w (int4 groups of group_size, int8 activations per token), whatever the
    other linears are: the head is the largest linear of a small LLM (vocab x dim), so its bytes weigh most at
    decode. Call before quantize(), which leaves an already quantized head alone. Returns False when the head is
    already quantized (an 8da4w export's head is this already) or the model reads a tied embedding in its place."""
    if scheme not in HEAD_SCHEMES:
        raise ValueError(f"--quantize-head {scheme!r}: choose one of {', '.join(HEAD_SCHEMES)}")
    head = getattr(model, "lm_head", None)
    if type(head) is not nn.Linear:
        return False
    _check_group_size("--group-size", group_size, {head.in_features}, "the head's input size {}", "no --quantize-head")
    model.lm_head = Linear8da4w(head, group_size)
    return True
