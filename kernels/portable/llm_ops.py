"""Ember's LLM operators for export, with their PyTorch references (the C++ kernels are tested against these).

Importing this module registers with torch.library (schemas: schema/operators.yaml, which kernels.yaml names):
  * ember_llm::sdpa_with_cache: causal attention of T new positions against a KV cache read in place (no mask
    tensor, no copy of the cache, only rows 0 .. input_pos + T - 1 read). Functional and out= overloads.
  * ember_llm::linear: a float linear reading its weight [N, K] in place (a tied embedding as the output head).
  * ember_llm::linear_int8: weight-only int8 linear (per-output-channel symmetric scales).
  * ember_llm::linear_8da4w: int4 group-wise weights, activations quantized per token to int8 at run time
    (ExecuTorch's 8da4w scheme); pack_int4 / unpack_int4 define the row layout and pack_int4_blocked /
    unpack_int4_blocked the blocked one the export uses (16 output channels interleaved, for vector kernels that
    compute 8 or 16 output channels at once), quantize_per_token the activations' int8 values, which the C++ kernels
    reproduce bit for bit.
  * ember_llm::embedding_int8 / embedding_4bit: token embeddings whose rows are stored as int8 (a scale per row)
    or as int4 in pack_int4's layout (a scale per group of the row); a gathered row is dequantized on the way out.
  * ember_llm::kv_row_scales / quantize_kv_rows / sdpa_with_int8_cache: the int8 KV cache (export's
    --quantize-kv-cache): a step's new key and value rows quantized symmetrically, one float32 scale per
    (position, KV head), written into int8 caches and a scale buffer each, and attention that dequantizes the
    rows it reads.
"""

from __future__ import annotations

import torch

from schema import operators

_OP = operators.find("ember_llm::sdpa_with_cache")
NAMESPACE = _OP.namespace

_lib = torch.library.Library(NAMESPACE, "DEF")
for _name in (
    "sdpa_with_cache",
    "linear",
    "linear_int8",
    "linear_8da4w",
    "embedding_int8",
    "embedding_4bit",
    "kv_row_scales",
    "quantize_kv_rows",
    "sdpa_with_int8_cache",
):
    _lib.define(operators.find(f"{NAMESPACE}::{_name}").functional)
    _lib.define(operators.find(f"{NAMESPACE}::{_name}").out)


def _sdpa_with_cache(query, key_cache, value_cache, input_pos, scale):
    """query [1, T, H, D], caches [1, S, KV, D], input_pos [1] (p): position t sees cache rows 0 .. p + t."""
    _, T, H, D = query.shape
    S, KV = key_cache.shape[1], key_cache.shape[2]
    group = H // KV
    p = input_pos.reshape(-1)[0]
    # The kernels' compute type: float64 for Double, float32 for the rest.
    c = torch.float64 if query.dtype == torch.float64 else torch.float32
    q = query[0].transpose(0, 1).to(c)  # [H, T, D]
    k = key_cache[0].transpose(0, 1).repeat_interleave(group, dim=0).to(c)  # [H, S, D]
    v = value_cache[0].transpose(0, 1).repeat_interleave(group, dim=0).to(c)
    scores = torch.matmul(q, k.transpose(1, 2)) * scale  # [H, T, S]
    visible = torch.arange(S)[None, :] <= (p + torch.arange(T))[:, None]  # [T, S]
    scores = scores.masked_fill(~visible, float("-inf"))
    out = torch.matmul(torch.softmax(scores, dim=-1), v)  # [H, T, D]
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


# ---- Quantized linears ------------------------------------------------------------------------------------------


def _compute_dtype(x):
    return torch.float64 if x.dtype == torch.float64 else torch.float32


CHANNEL_BLOCK = 16  # output channels per block of the float and int8 linears' blocked layout


def pack_blocked(w: torch.Tensor) -> torch.Tensor:
    """[N, K] (N a multiple of 16) -> [N / 16, K, 16]: element [b, k, c] is w[16b + c, k], so a token's input k meets
    16 output channels' weights in one vector, and a block's K rows follow each other in memory."""
    N, K = w.shape
    if N % CHANNEL_BLOCK:
        raise ValueError(f"pack_blocked: {N} output channels are not a multiple of {CHANNEL_BLOCK}")
    return w.reshape(N // CHANNEL_BLOCK, CHANNEL_BLOCK, K).transpose(1, 2).contiguous()


def unpack_blocked(w: torch.Tensor) -> torch.Tensor:
    """pack_blocked's inverse: [N / 16, K, 16] -> [N, K]."""
    B, K, C = w.shape
    return w.transpose(1, 2).reshape(B * C, K)


def _rows(weight):
    return unpack_blocked(weight) if weight.dim() == 3 else weight


def _out_features(weight):
    return weight.shape[0] * weight.shape[2] if weight.dim() == 3 else weight.shape[0]


def _linear(x, weight, bias):
    """x [..., K], weight [N, K] (or pack_blocked's [N / 16, K, 16]) of x's dtype: x @ weight.T + bias, summed in
    float32 (float64 for Double)."""
    c = _compute_dtype(x)
    out = torch.matmul(x.to(c), _rows(weight).to(c).t())
    if bias is not None:
        out = out + bias.to(c)
    return out.to(x.dtype)


def _linear_out(x, weight, bias, *, out):
    return out.copy_(_linear(x, weight, bias))


def _linear_fake(x, weight, bias):
    return x.new_empty((*x.shape[:-1], _out_features(weight)))


def _linear_int8(x, weight, scales, bias):
    """x [..., K], weight int8 [N, K] (or pack_blocked's [N / 16, K, 16]), scales float32 [N]:
    x @ weight.T * scales + bias, summed in float32."""
    c = _compute_dtype(x)
    out = torch.matmul(x.to(c), _rows(weight).to(c).t()) * scales.to(c)
    if bias is not None:
        out = out + bias.to(c)
    return out.to(x.dtype)


def _linear_int8_out(x, weight, scales, bias, *, out):
    return out.copy_(_linear_int8(x, weight, scales, bias))


def _linear_int8_fake(x, weight, scales, bias):
    return x.new_empty((*x.shape[:-1], _out_features(weight)))


INT4_BLOCK = 32  # input channels per packed block: 16 bytes, low nibbles then high nibbles


def pack_int4(w: torch.Tensor) -> torch.Tensor:
    """int values in -8 .. 7, [N, K] (K a multiple of 32) -> uint8 [N, K / 2] in linear_8da4w's layout."""
    N, K = w.shape
    if K % INT4_BLOCK:
        raise ValueError(f"pack_int4: {K} input channels are not a multiple of {INT4_BLOCK}")
    if int(w.min()) < -8 or int(w.max()) > 7:
        raise ValueError("pack_int4: values must lie in -8 .. 7")
    u = (w.to(torch.int16) + 8).reshape(N, K // INT4_BLOCK, 2, INT4_BLOCK // 2)
    return (u[:, :, 0] | (u[:, :, 1] << 4)).to(torch.uint8).reshape(N, K // 2)


def unpack_int4(packed: torch.Tensor) -> torch.Tensor:
    """pack_int4's inverse: int8 [N, K] in -8 .. 7."""
    N, half = packed.shape
    b = packed.to(torch.int16).reshape(N, half // (INT4_BLOCK // 2), 1, INT4_BLOCK // 2)
    return (torch.cat([b & 15, b >> 4], dim=2) - 8).reshape(N, 2 * half).to(torch.int8)


INT4_CHANNEL_BLOCK = CHANNEL_BLOCK  # output channels per block of the blocked layout


def pack_int4_blocked(w: torch.Tensor, scales: torch.Tensor):
    """int values in -8 .. 7 [N, K] and their float32 scales [N, G] -> (uint8 [N / 16, K / 8, 64], float32
    [N / 16, G, 16]): linear_8da4w's blocked layout (N a multiple of 16, K of 32; schema/operators.yaml).

    Byte 32h + 4c + i of block b's octet j holds w[16b + 8h + c, 8j + i] + 8 in its low nibble and
    w[16b + 8h + c, 8j + 4 + i] + 8 in its high one: 8 channels' 4 consecutive inputs side by side, the operand
    of one int8 dot-product instruction per 32 bytes (x86's VPDPBUSD, Arm's SDOT), with no horizontal sums.
    """
    N, K = w.shape
    if N % INT4_CHANNEL_BLOCK or K % INT4_BLOCK:
        raise ValueError(
            f"pack_int4_blocked: [{N}, {K}] needs output channels a multiple of "
            f"{INT4_CHANNEL_BLOCK} and input channels a multiple of {INT4_BLOCK}"
        )
    if int(w.min()) < -8 or int(w.max()) > 7:
        raise ValueError("pack_int4_blocked: values must lie in -8 .. 7")
    if scales.dim() != 2 or scales.shape[0] != N:
        raise ValueError(f"pack_int4_blocked: scales must be [{N}, groups], got {list(scales.shape)}")
    u = (w.to(torch.int16) + 8).reshape(N // 16, 2, 8, K // 8, 2, 4)  # b, h, c, j, nibble, i
    u = u.permute(0, 3, 1, 2, 5, 4)  # b, j, h, c, i, nibble
    packed = (u[..., 0] | (u[..., 1] << 4)).to(torch.uint8).reshape(N // 16, K // 8, 64)
    G = scales.shape[1]
    blocked_scales = scales.reshape(N // 16, 16, G).transpose(1, 2).contiguous()
    return packed, blocked_scales


def unpack_int4_blocked(packed: torch.Tensor, scales: torch.Tensor):
    """pack_int4_blocked's inverse: (int8 [N, K] in -8 .. 7, scales [N, G])."""
    B, J, _ = packed.shape
    b = packed.to(torch.int16).reshape(B, J, 2, 8, 4)  # b, j, h, c, i
    u = torch.stack([b & 15, b >> 4], dim=-1)  # b, j, h, c, i, nibble
    w = (u.permute(0, 2, 3, 1, 5, 4).reshape(B * 16, J * 8) - 8).to(torch.int8)
    G = scales.shape[1]
    return w, scales.transpose(1, 2).reshape(B * 16, G)


def quantize_per_token(x2d: torch.Tensor):
    """Rows of float32 [M, K] -> (q int32 [M, K] in -128 .. 127, scale float32 [M], zero point int32 [M])."""
    x = x2d.to(torch.float32)
    lo = torch.clamp(x.amin(dim=1), max=0.0)
    hi = torch.clamp(x.amax(dim=1), min=0.0)
    s = (hi - lo) / 255.0
    s = torch.where(s == 0, torch.ones_like(s), s)
    z = torch.clamp(torch.round(-128.0 - lo / s), -128, 127)
    q = torch.clamp(torch.round(x / s[:, None]) + z[:, None], -128, 127)
    return q.to(torch.int32), s, z.to(torch.int32)


def _linear_8da4w(x, packed_weight, scales, group_size, bias):
    K = x.shape[-1]
    if packed_weight.dim() == 3:
        w, scales = unpack_int4_blocked(packed_weight, scales)
    else:
        w = unpack_int4(packed_weight)
    N = w.shape[0]
    G = K // group_size
    q, s, z = quantize_per_token(x.reshape(-1, K))
    M = q.shape[0]
    w = w.to(torch.int64).reshape(N, G, group_size)
    d = (q - z[:, None]).to(torch.int64).reshape(M, G, group_size)
    # Exact integer sums per (token, output channel, group).
    isum = torch.einsum("mgk,ngk->mng", d, w)  # [M, N, G] int64
    out = (isum.to(torch.float32) * scales.to(torch.float32)[None]).sum(dim=2) * s[:, None]
    if bias is not None:
        out = out + bias.to(torch.float32)
    return out.reshape(*x.shape[:-1], N).to(x.dtype)


def _linear_8da4w_out(x, packed_weight, scales, group_size, bias, *, out):
    return out.copy_(_linear_8da4w(x, packed_weight, scales, group_size, bias))


def _linear_8da4w_fake(x, packed_weight, scales, group_size, bias):
    N = packed_weight.shape[0] * (INT4_CHANNEL_BLOCK if packed_weight.dim() == 3 else 1)
    return x.new_empty((*x.shape[:-1], N))


_lib.impl("linear", _linear, "CompositeExplicitAutograd")
_lib.impl("linear.out", _linear_out, "CompositeExplicitAutograd")
torch.library.register_fake(f"{NAMESPACE}::linear")(_linear_fake)
_lib.impl("linear_int8", _linear_int8, "CompositeExplicitAutograd")
_lib.impl("linear_int8.out", _linear_int8_out, "CompositeExplicitAutograd")
torch.library.register_fake(f"{NAMESPACE}::linear_int8")(_linear_int8_fake)
_lib.impl("linear_8da4w", _linear_8da4w, "CompositeExplicitAutograd")
_lib.impl("linear_8da4w.out", _linear_8da4w_out, "CompositeExplicitAutograd")
torch.library.register_fake(f"{NAMESPACE}::linear_8da4w")(_linear_8da4w_fake)

linear = torch.ops.ember_llm.linear.default
linear_int8 = torch.ops.ember_llm.linear_int8.default
linear_8da4w = torch.ops.ember_llm.linear_8da4w.default


# ---- Quantized embeddings ---------------------------------------------------------------------------------------


def _check_indices(indices, V, name):
    if indices.numel() and (int(indices.min()) < 0 or int(indices.max()) >= V):
        raise IndexError(f"ember_llm::{name}: an index is outside 0 .. {V - 1}")


def _embedding_int8(weight, scales, indices):
    """weight int8 [V, D], scales [V]: rows weight[i] * scales[i] in float32, then scales' dtype."""
    _check_indices(indices, weight.shape[0], "embedding_int8")
    idx = indices.long()
    rows = weight[idx].to(torch.float32) * scales.to(torch.float32)[idx][..., None]
    return rows.to(scales.dtype)


def _embedding_int8_out(weight, scales, indices, *, out):
    return out.copy_(_embedding_int8(weight, scales, indices))


def _embedding_int8_fake(weight, scales, indices):
    return scales.new_empty((*indices.shape, weight.shape[1]))


def _embedding_4bit(packed_weight, scales, group_size, indices):
    """packed_weight uint8 [V, D / 2] (pack_int4's layout), scales [V, D / group_size]."""
    V, half = packed_weight.shape
    _check_indices(indices, V, "embedding_4bit")
    idx = indices.long().reshape(-1)
    w = unpack_int4(packed_weight[idx]).to(torch.float32)  # [n, D]
    s = scales[idx].to(torch.float32).repeat_interleave(group_size, dim=1)  # [n, D]
    return (w * s).reshape(*indices.shape, 2 * half).to(scales.dtype)


def _embedding_4bit_out(packed_weight, scales, group_size, indices, *, out):
    return out.copy_(_embedding_4bit(packed_weight, scales, group_size, indices))


def _embedding_4bit_fake(packed_weight, scales, group_size, indices):
    return scales.new_empty((*indices.shape, 2 * packed_weight.shape[1]))


_lib.impl("embedding_int8", _embedding_int8, "CompositeExplicitAutograd")
_lib.impl("embedding_int8.out", _embedding_int8_out, "CompositeExplicitAutograd")
torch.library.register_fake(f"{NAMESPACE}::embedding_int8")(_embedding_int8_fake)
_lib.impl("embedding_4bit", _embedding_4bit, "CompositeExplicitAutograd")
_lib.impl("embedding_4bit.out", _embedding_4bit_out, "CompositeExplicitAutograd")
torch.library.register_fake(f"{NAMESPACE}::embedding_4bit")(_embedding_4bit_fake)

embedding_int8 = torch.ops.ember_llm.embedding_int8.default
embedding_4bit = torch.ops.ember_llm.embedding_4bit.default


# ---- The int8 KV cache ------------------------------------------------------------------------------------------


def _kv_row_scales(x):
    """float32 [..., D] -> float32 [...]: max |x| over the row / 127 (0 for a row of zeros)."""
    return (x.to(torch.float32).abs().amax(dim=-1) / 127.0).to(torch.float32)


def _kv_row_scales_out(x, *, out):
    return out.copy_(_kv_row_scales(x))


def _kv_row_scales_fake(x):
    return x.new_empty(x.shape[:-1], dtype=torch.float32)


def _quantize_kv_rows(x, scales):
    """x / scale rounded half to even and clamped to -127 .. 127, as int8; a zero scale gives zeros. A division,
    not a multiplication by the reciprocal, so the kernels reproduce it bit for bit."""
    s = scales.to(torch.float32)[..., None]
    q = torch.where(s > 0, torch.round(x.to(torch.float32) / torch.where(s > 0, s, torch.ones_like(s))), 0.0)
    return torch.clamp(q, -127, 127).to(torch.int8)


def _quantize_kv_rows_out(x, scales, *, out):
    return out.copy_(_quantize_kv_rows(x, scales))


def _quantize_kv_rows_fake(x, scales):
    return x.new_empty(x.shape, dtype=torch.int8)


def dequantize_kv(cache, scales):
    """int8 [1, S, KV, D] and float32 [1, S, KV] -> the float32 rows they stand for."""
    return cache.to(torch.float32) * scales.to(torch.float32)[..., None]


def _sdpa_with_int8_cache(query, key_cache, key_scales, value_cache, value_scales, input_pos, scale):
    """sdpa_with_cache over the dequantized caches (the kernels dequantize only the rows they read)."""
    k = dequantize_kv(key_cache, key_scales)
    v = dequantize_kv(value_cache, value_scales)
    return _sdpa_with_cache(query.to(torch.float32), k, v, input_pos, scale).to(query.dtype)


def _sdpa_with_int8_cache_out(query, key_cache, key_scales, value_cache, value_scales, input_pos, scale, *, out):
    return out.copy_(_sdpa_with_int8_cache(query, key_cache, key_scales, value_cache, value_scales, input_pos, scale))


def _sdpa_with_int8_cache_fake(query, key_cache, key_scales, value_cache, value_scales, input_pos, scale):
    return query.new_empty(query.shape)


_lib.impl("kv_row_scales", _kv_row_scales, "CompositeExplicitAutograd")
_lib.impl("kv_row_scales.out", _kv_row_scales_out, "CompositeExplicitAutograd")
torch.library.register_fake(f"{NAMESPACE}::kv_row_scales")(_kv_row_scales_fake)
_lib.impl("quantize_kv_rows", _quantize_kv_rows, "CompositeExplicitAutograd")
_lib.impl("quantize_kv_rows.out", _quantize_kv_rows_out, "CompositeExplicitAutograd")
torch.library.register_fake(f"{NAMESPACE}::quantize_kv_rows")(_quantize_kv_rows_fake)
_lib.impl("sdpa_with_int8_cache", _sdpa_with_int8_cache, "CompositeExplicitAutograd")
_lib.impl("sdpa_with_int8_cache.out", _sdpa_with_int8_cache_out, "CompositeExplicitAutograd")
torch.library.register_fake(f"{NAMESPACE}::sdpa_with_int8_cache")(_sdpa_with_int8_cache_fake)

kv_row_scales = torch.ops.ember_llm.kv_row_scales.default
quantize_kv_rows = torch.ops.ember_llm.quantize_kv_rows.default
sdpa_with_int8_cache = torch.ops.ember_llm.sdpa_with_int8_cache.default
