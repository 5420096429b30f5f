"""Decode against the memory roofline: a decode step reads every weight once, so one thread's tokens/s cannot pass
bandwidth / bytes read per token. The bandwidth is measured here (bench/membw.c, STREAM-style, one thread pinned
like the 1-thread runs); the bytes per token follow from the config and Ember's weight formats
(examples/llm/quantize.py, layout.py):

  fp32   4 bytes a weight (the blocked layout); a tied head reads the embedding's fp32 table
  int8   1 byte a weight, one fp32 scale per output channel
  8da4w  half a byte a weight, one fp32 scale per group of `group_size` inputs per output channel

plus one embedding row, the norms, the RoPE row and the KV cache rows attention reads and writes, at the decode's
average position (prompt + half the new tokens)."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Dict, List, Optional

from bench import harness as H

FLOAT = 4


def linear_bytes(k: int, n: int, variant: str, group_size: int) -> int:
    """Bytes of one [n, k] linear's weights and scales in Ember's format for `variant`."""
    if variant == "fp32":
        return k * n * FLOAT
    if variant == "int8":
        return k * n + n * FLOAT
    if variant == "8da4w":
        return k * n // 2 + (k // group_size) * n * FLOAT
    raise ValueError(f"unknown weight format {variant!r}")


def decode_bytes(config: dict, variant: str, group_size: int, position: float) -> Dict[str, float]:
    """Bytes one decode step reads at KV position `position`, by part (weights, head, cache, rest) and in total."""
    dim, hidden = config["hidden_size"], config["intermediate_size"]
    layers, heads, kv = config["num_hidden_layers"], config["num_attention_heads"], config["num_key_value_heads"]
    vocab = config["vocab_size"]
    head_dim = dim // heads
    per_layer = (
        linear_bytes(dim, heads * head_dim, variant, group_size)  # q
        + 2 * linear_bytes(dim, kv * head_dim, variant, group_size)  # k, v
        + linear_bytes(heads * head_dim, dim, variant, group_size)  # o
        + 2 * linear_bytes(dim, hidden, variant, group_size)  # gate, up
        + linear_bytes(hidden, dim, variant, group_size)  # down
    )
    head = linear_bytes(dim, vocab, variant, group_size)  # fp32 and tied: the embedding table itself
    cache = 2 * layers * (position + 1) * kv * head_dim * FLOAT + 2 * layers * kv * head_dim * FLOAT
    rest = dim * FLOAT + (2 * layers + 1) * dim * FLOAT + head_dim * FLOAT  # embedding row, norms, RoPE row
    parts = {"weights": layers * per_layer, "head": head, "kv_cache": cache, "rest": rest}
    parts["total"] = sum(parts.values())
    return parts


def build_membw(env: H.Env) -> str:
    out = os.path.join(env.work, "membw")
    src = os.path.join(H.ROOT, "bench", "membw.c")
    r = H.run(["gcc", "-O3", "-march=native", src, "-o", out], timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"bench: bench/membw.c did not build:\n{r.stderr[-2000:]}")
    return out


def measure_bandwidth(env: H.Env, cpus: Optional[List[int]], mib: int = 512, repeats: int = 5) -> dict:
    """One thread's read and copy bandwidth (GB/s, best of `repeats`) over buffers of `mib` MiB, on `cpus`."""
    exe = build_membw(env)
    cmd = (["taskset", "-c", ",".join(map(str, cpus))] if cpus else []) + [exe, str(mib), str(repeats)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        return {"error": (r.stderr or r.stdout)[-500:]}
    out = json.loads(r.stdout)
    out["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return out


def roofline(config: dict, variants, group_size: int, prompt_tokens: int, new_tokens: int, read_gbs: float) -> dict:
    """Per variant: bytes per decode token at the average position and the tokens/s the bandwidth allows."""
    position = prompt_tokens + new_tokens / 2.0
    out = {}
    for v in variants:
        b = decode_bytes(config, v, group_size, position)
        out[v] = {"bytes": b, "roofline_tps": read_gbs * 1e9 / b["total"] if read_gbs else None}
    return out
