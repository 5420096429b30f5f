"""Ember's LLM operators for export, with their PyTorch references (the C++ kernels are tested against these).

Importing this module registers with torch.library (schemas: schema/operators.yaml, which kernels.yaml names):
  * ember_llm::sdpa_with_cache: causal attention of T new positions against a KV cache read in place (no mask
    tensor, no copy of the cache, only rows 0 .. input_pos + T - 1 read). Functional and out= overloads.
"""
from __future__ import annotations

import torch

from schema import operators

_OP = operators.find("ember_llm::sdpa_with_cache")
NAMESPACE = _OP.namespace

_lib = torch.library.Library(NAMESPACE, "DEF")
_lib.define(_OP.functional)
_lib.define(_OP.out)


def _sdpa_with_cache(query, key_cache, value_cache, input_pos, scale):
    """query [1, T, H, D], caches [1, S, KV, D], input_pos [1] (p): position t sees cache rows 0 .. p + t."""
    _, T, H, D = query.shape
    S, KV = key_cache.shape[1], key_cache.shape[2]
    group = H // KV
    p = input_pos.reshape(-1)[0]
    # The kernels' compute type: float64 for Double, float32 for the rest.
    c = torch.float64 if query.dtype == torch.float64 else torch.float32
    q = query[0].transpose(0, 1).to(c)                                          # [H, T, D]
    k = key_cache[0].transpose(0, 1).repeat_interleave(group, dim=0).to(c)      # [H, S, D]
    v = value_cache[0].transpose(0, 1).repeat_interleave(group, dim=0).to(c)
    scores = torch.matmul(q, k.transpose(1, 2)) * scale                         # [H, T, S]
    visible = torch.arange(S)[None, :] <= (p + torch.arange(T))[:, None]        # [T, S]
    scores = scores.masked_fill(~visible, float("-inf"))
    out = torch.matmul(torch.softmax(scores, dim=-1), v)                        # [H, T, D]
    return out.transpose(0, 1).unsqueeze(0).to(query.dtype).contiguous()


def _sdpa_with_cache_out(query, key_cache, value_cache, input_pos, scale, *, out):
    # copy_, never a resize: `out` is a view into the planned arena when the reference interpreter runs this.
    return out.copy_(_sdpa_with_cache(query, key_cache, value_cache, input_pos, scale))


def _fake(query, key_cache, value_cache, input_pos, scale):
    return query.new_empty(query.shape)


_lib.impl("sdpa_with_cache", _sdpa_with_cache, "CompositeExplicitAutograd")
_lib.impl("sdpa_with_cache.out", _sdpa_with_cache_out, "CompositeExplicitAutograd")
torch.library.register_fake(f"{NAMESPACE}::sdpa_with_cache")(_fake)

sdpa_with_cache = torch.ops.ember_llm.sdpa_with_cache.default
