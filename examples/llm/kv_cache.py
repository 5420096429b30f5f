"""The int8 KV cache (`--quantize-kv-cache` in examples/llm/export.py): each layer's keys and values stored as int8,
one float32 scale per (position, KV head), instead of float32.

A decode step reads every cached row of every layer, so past a few hundred tokens the cache, not the weights,
decides the bytes a token costs; int8 rows cut them (and the cache's planned memory) to a quarter plus 4 bytes of
scale per head_dim values. The scales are symmetric (max |x| / 127 per row): keys after the rotary embedding and
values are centred near zero within a head's row, and without a zero point the kernel's dot product is a plain
int8-by-float sum times one scale. ExecuTorch's export_llama (quantize_kv_cache) stores the same int8 rows with
asymmetric per-(position, head) parameters: a float64 scale and an int64 zero point per row.

The step's new rows are quantized by ember_llm::kv_row_scales and quantize_kv_rows and written with index_copy_
(exir writes the buffers in place, as the float cache's), and ember_llm::sdpa_with_int8_cache reads the caches
where they lie, dequantizing each row as it reads it (kernels/portable/op_attention_int8_cache.cc).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .model import Attention, Decoder, rotate
from kernels.portable.llm_ops import kv_row_scales, quantize_kv_rows, sdpa_with_int8_cache


class Int8CacheAttention(nn.Module):
    """An Attention (examples/llm/model.py) with its projections, and an int8 cache in place of its float one."""

    def __init__(self, attn: Attention):
        super().__init__()
        self.cfg = attn.cfg
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = attn.q_proj, attn.k_proj, attn.v_proj, attn.o_proj
        _, S, KV, D = attn.k_cache.shape
        self.register_buffer("k_cache", torch.zeros((1, S, KV, D), dtype=torch.int8), persistent=False)
        self.register_buffer("v_cache", torch.zeros((1, S, KV, D), dtype=torch.int8), persistent=False)
        self.register_buffer("k_scales", torch.zeros((1, S, KV)), persistent=False)
        self.register_buffer("v_scales", torch.zeros((1, S, KV)), persistent=False)

    def forward(self, x, pos, input_pos, cos, sin):
        c = self.cfg
        T = x.shape[1]
        q = rotate(self.q_proj(x).view(1, T, c.n_heads, c.head_dim), cos, sin)
        k = rotate(self.k_proj(x).view(1, T, c.n_kv_heads, c.head_dim), cos, sin)
        v = self.v_proj(x).view(1, T, c.n_kv_heads, c.head_dim)
        ks, vs = kv_row_scales(k), kv_row_scales(v)
        self.k_cache.index_copy_(1, pos, quantize_kv_rows(k, ks))
        self.k_scales.index_copy_(1, pos, ks)
        self.v_cache.index_copy_(1, pos, quantize_kv_rows(v, vs))
        self.v_scales.index_copy_(1, pos, vs)
        out = sdpa_with_int8_cache(
            q, self.k_cache, self.k_scales, self.v_cache, self.v_scales, input_pos, 1.0 / math.sqrt(c.head_dim)
        )
        return self.o_proj(out.view(1, T, c.n_heads * c.head_dim))


def quantize_kv_cache(model: Decoder) -> int:
    """Replaces every layer's attention cache with the int8 one, in place (the projections are kept as they are,
    float or quantized). Returns the number of layers changed."""
    for layer in model.layers:
        if not isinstance(layer.self_attn, Int8CacheAttention):
            layer.self_attn = Int8CacheAttention(layer.self_attn)
    return len(model.layers)


def cache_bytes(model: Decoder) -> int:
    """Bytes of every layer's KV cache buffers (values and, for the int8 cache, scales)."""
    names = ("k_cache", "v_cache", "k_scales", "v_scales")
    return sum(
        getattr(layer.self_attn, n).numel() * getattr(layer.self_attn, n).element_size()
        for layer in model.layers
        for n in names
        if hasattr(layer.self_attn, n)
    )
