"""A Llama-family decoder written for export: RMSNorm, rotary position embeddings, grouped-query attention, a
SiLU-gated MLP, and a static KV cache held in mutable buffers.

Weights come from a Hugging Face causal LM (Llama, Qwen2, Mistral, Phi-3 and Gemma layouts: `from_hf`), so greedy
generation can be checked against `transformers`' own `generate`. Phi-3's fused qkv and gate_up projections are
split into Llama's three and two at load (the same rows, so the same products); Gemma's differences are settings
of the same decoder: its embedding scaled by sqrt(hidden_size), its RMSNorm's (1 + weight) folded into the weight
at load, a GeGLU (tanh GELU) MLP, a head_dim of its own, tied embeddings. The definition is Ember's own rather than transformers' module
with its StaticCache wrapper: export needs the cache as plain buffers updated by one `index_copy_` per step, which
exir then writes in place (exir/lowering/in_place.py), and attention as one kernel that reads the cache where it
lies (ember_llm::sdpa_with_cache), without a mask tensor or a copy per head group.

One method does prefill and decode, as ExecuTorch's LLM runner expects: `forward(tokens [1, T], input_pos [1])`
writes the T new keys and values at positions input_pos .. input_pos + T - 1 and returns the last position's
logits [1, vocab] (or those of the last few positions after set_logits_rows, for speculative decoding). T is a
bounded dynamic dimension (1 .. max_seq_len - 1); the cache is planned once, at max_seq_len.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Optional

import torch
from torch import nn

from kernels.portable.llm_ops import linear, sdpa_with_cache


@dataclasses.dataclass(frozen=True)
class DecoderConfig:
    vocab_size: int
    dim: int
    hidden_dim: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    norm_eps: float = 1e-5
    attention_bias: bool = False  # Qwen2: q/k/v projections carry biases
    tie_embeddings: bool = False
    bos_id: int = 1
    eos_ids: tuple = (2,)
    activation: str = "silu"  # the MLP's gate: "silu" (SwiGLU) or "gelu_tanh" (Gemma's GeGLU)
    embed_scale: float = 1.0  # Gemma: the embedding's rows times sqrt(hidden_size)

    @staticmethod
    def from_hf(config) -> "DecoderConfig":
        """From a transformers LlamaConfig / Qwen2Config / MistralConfig / Phi3Config / GemmaConfig."""
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        bias = bool(getattr(config, "attention_bias", False)) or config.model_type == "qwen2"
        eos = config.eos_token_id if isinstance(config.eos_token_id, (list, tuple)) else [config.eos_token_id]
        act = ACTIVATIONS.get(getattr(config, "hidden_act", "silu"))
        if act is None:
            raise ValueError(
                f"{config.model_type}: hidden_act '{config.hidden_act}' is not supported; Ember's decoder has a "
                f"gated MLP with {' or '.join(sorted(ACTIVATIONS))}"
            )
        if getattr(config, "mlp_bias", False):
            raise ValueError(f"{config.model_type}: mlp_bias=True is not supported by Ember's decoder")
        rope = getattr(config, "rope_parameters", None) or {}
        if rope.get("partial_rotary_factor", getattr(config, "partial_rotary_factor", 1.0)) != 1.0:
            raise ValueError(f"{config.model_type}: partial rotary embeddings are not supported by Ember's decoder")
        gemma = config.model_type == "gemma"
        return DecoderConfig(
            vocab_size=config.vocab_size,
            dim=config.hidden_size,
            hidden_dim=config.intermediate_size,
            n_layers=config.num_hidden_layers,
            n_heads=config.num_attention_heads,
            n_kv_heads=getattr(config, "num_key_value_heads", None) or config.num_attention_heads,
            head_dim=head_dim,
            norm_eps=config.rms_norm_eps,
            attention_bias=bias,
            tie_embeddings=bool(getattr(config, "tie_word_embeddings", False)),
            bos_id=config.bos_token_id if config.bos_token_id is not None else -1,
            eos_ids=tuple(e for e in eos if e is not None),
            activation=act,
            embed_scale=config.hidden_size**0.5 if gemma else 1.0,
        )


# transformers' hidden_act names -> the decoder's gate. gelu_pytorch_tanh is Gemma's (its configs' legacy "gelu"
# means the same: transformers' GemmaConfig rewrites it).
ACTIVATIONS = {"silu": "silu", "gelu_pytorch_tanh": "gelu_tanh"}


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate(x, cos, sin):
    """Rotary embedding in the half-split convention (transformers' rotate_half) over x's last dim; cos and sin
    broadcast against x."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class Attention(nn.Module):
    def __init__(self, cfg: DecoderConfig, max_seq_len: int):
        super().__init__()
        self.cfg = cfg
        self.q_proj = nn.Linear(cfg.dim, cfg.n_heads * cfg.head_dim, bias=cfg.attention_bias)
        self.k_proj = nn.Linear(cfg.dim, cfg.n_kv_heads * cfg.head_dim, bias=cfg.attention_bias)
        self.v_proj = nn.Linear(cfg.dim, cfg.n_kv_heads * cfg.head_dim, bias=cfg.attention_bias)
        self.o_proj = nn.Linear(cfg.n_heads * cfg.head_dim, cfg.dim, bias=False)
        # Sequence-major ([1, max_seq_len, kv_heads, head_dim]): a step's keys are T whole rows, written as they
        # come out of the projection, and attention reads them in place.
        shape = (1, max_seq_len, cfg.n_kv_heads, cfg.head_dim)
        self.register_buffer("k_cache", torch.zeros(shape), persistent=False)
        self.register_buffer("v_cache", torch.zeros(shape), persistent=False)

    def forward(self, x, pos, input_pos, cos, sin):
        c = self.cfg
        T = x.shape[1]
        q = rotate(self.q_proj(x).view(1, T, c.n_heads, c.head_dim), cos, sin)
        k = rotate(self.k_proj(x).view(1, T, c.n_kv_heads, c.head_dim), cos, sin)
        v = self.v_proj(x).view(1, T, c.n_kv_heads, c.head_dim)
        self.k_cache.index_copy_(1, pos, k)
        self.v_cache.index_copy_(1, pos, v)
        # One fused kernel: causal attention over rows 0 .. input_pos + t of the caches, grouped-query heads
        # sharing their KV head, no mask and no copy of the cache (kernels/portable/op_attention.cc).
        out = sdpa_with_cache(q, self.k_cache, self.v_cache, input_pos, 1.0 / math.sqrt(c.head_dim))
        return self.o_proj(out.view(1, T, c.n_heads * c.head_dim))


class MLP(nn.Module):
    def __init__(self, cfg: DecoderConfig):
        super().__init__()
        self.activation = cfg.activation
        self.gate_proj = nn.Linear(cfg.dim, cfg.hidden_dim, bias=False)
        self.up_proj = nn.Linear(cfg.dim, cfg.hidden_dim, bias=False)
        self.down_proj = nn.Linear(cfg.hidden_dim, cfg.dim, bias=False)

    def forward(self, x):
        gate = self.gate_proj(x)
        gate = nn.functional.silu(gate) if self.activation == "silu" else nn.functional.gelu(gate, approximate="tanh")
        return self.down_proj(gate * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, cfg: DecoderConfig, max_seq_len: int):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.self_attn = Attention(cfg, max_seq_len)
        self.post_attention_layernorm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.mlp = MLP(cfg)

    def forward(self, x, pos, input_pos, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), pos, input_pos, cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class Decoder(nn.Module):
    def __init__(
        self,
        cfg: DecoderConfig,
        max_seq_len: int,
        inv_freq: Optional[torch.Tensor] = None,
        rope_scaling: float = 1.0,
        rope_theta: float = 10000.0,
    ):
        super().__init__()
        if cfg.n_heads % cfg.n_kv_heads:
            raise ValueError(f"{cfg.n_heads} attention heads are not a multiple of {cfg.n_kv_heads} KV heads")
        self.cfg = cfg
        self.max_seq_len = max_seq_len
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.layers = nn.ModuleList(Layer(cfg, max_seq_len) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.lm_head = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)
        if inv_freq is None:
            inv_freq = 1.0 / (rope_theta ** (torch.arange(0, cfg.head_dim, 2, dtype=torch.float) / cfg.head_dim))
        # cos/sin of every position up to max_seq_len, computed as transformers does (float32 products of
        # positions and inverse frequencies, then duplicated over the two halves), times its attention scaling.
        freqs = torch.arange(max_seq_len, dtype=torch.float)[:, None] * inv_freq.float()[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("rope_cos", emb.cos() * rope_scaling, persistent=False)
        self.register_buffer("rope_sin", emb.sin() * rope_scaling, persistent=False)

    def forward(self, tokens, input_pos):
        T = tokens.shape[1]
        pos = input_pos + torch.arange(T)
        x = self.embed_tokens(tokens)
        if self.cfg.embed_scale != 1.0:
            # As Gemma: the scale rounded to float32 first, then one float32 product per element.
            x = x * torch.tensor(self.cfg.embed_scale, dtype=torch.float32)
        # [T, 1, head_dim]: broadcast over the heads of [1, T, heads, head_dim].
        cos, sin = self.rope_cos[pos][:, None, :], self.rope_sin[pos][:, None, :]
        for layer in self.layers:
            x = layer(x, pos, input_pos, cos, sin)
        return self.head(x, T)

    # Positions whose logits forward returns at most: 1 (the last) unless set_logits_rows asked for more.
    logits_rows = 1

    def set_logits_rows(self, rows: int):
        """Makes forward return [1, R, vocab], the logits of the last R = ((T - 1) mod rows) + 1 positions: all of
        a call of up to `rows` tokens (one call of 1 + D tokens verifies D drafted tokens: speculative decoding),
        and at least the last position of a longer one (prefill). A call of one token still pays one row of the
        head."""
        if rows < 1:
            raise ValueError(f"logits rows must be at least 1, got {rows}")
        self.logits_rows = rows

    def head(self, x, T):
        """The final norm and output head over the rows whose logits forward returns (not over every prompt
        token: prefill would pay the head's vocab x dim product per token)."""
        K = self.logits_rows
        if K == 1:
            x = x[:, T - 1 :, :]
        else:
            # min(T, K) rows would be the plain choice, but export cannot bound that slice without guards it
            # cannot prove; a start that is a multiple of K gives the same rows for T <= K, and a size export
            # bounds by K (its memory is planned at K rows, not at max_seq_len).
            x = x[:, T - 1 - (T - 1) % K :, :]
            torch._check(x.shape[1] >= 1)
            torch._check(x.shape[1] <= K)
        x = self.norm(x)
        logits = self.lm_head(x) if self.lm_head is not None else linear(x, self.embed_tokens.weight, None)
        return logits.reshape(1, self.cfg.vocab_size) if K == 1 else logits.reshape(1, -1, self.cfg.vocab_size)

    def tie_head(self) -> bool:
        """For a checkpoint with tied embeddings whose head and embedding are both still float: the head reads the
        embedding's table in place (ember_llm::linear, weight [vocab, dim] as stored), so the program holds the
        table once instead of twice (mm would need it transposed). Returns whether it did; quantized heads or
        embeddings keep their own tensors."""
        head, emb = self.lm_head, self.embed_tokens
        if not (
            self.cfg.tie_embeddings
            and type(head) is nn.Linear
            and head.bias is None
            and type(emb) is nn.Embedding
            and torch.equal(head.weight, emb.weight)
        ):
            return False
        self.lm_head = None
        return True

    def reset_cache(self):
        for layer in self.layers:
            layer.self_attn.k_cache.zero_()
            layer.self_attn.v_cache.zero_()

    @staticmethod
    def from_hf(hf_model, max_seq_len: int) -> "Decoder":
        """Ember's decoder with a transformers causal LM's weights (Llama, Qwen2, Mistral, Phi-3, Gemma)."""
        config = hf_model.config
        cfg = DecoderConfig.from_hf(config)
        rotary = hf_model.model.rotary_emb
        model = Decoder(
            cfg,
            max_seq_len,
            inv_freq=rotary.inv_freq.detach().clone(),
            rope_scaling=float(getattr(rotary, "attention_scaling", 1.0)),
        )
        state = {k.removeprefix("model."): v for k, v in hf_model.state_dict().items() if "rotary_emb" not in k}
        if "lm_head.weight" not in state:  # tied embeddings
            state["lm_head.weight"] = state["embed_tokens.weight"]
        state = _split_fused_projections(state, cfg)
        if config.model_type == "gemma":
            # Gemma's RMSNorm multiplies by (1 + weight), computed in float32: the same sum stored once.
            state = {k: (v.float() + 1.0 if k.endswith("norm.weight") else v) for k, v in state.items()}
        missing, unexpected = model.load_state_dict(state, strict=False)
        missing = [m for m in missing if not m.endswith(("k_cache", "v_cache", "rope_cos", "rope_sin"))]
        if missing or unexpected:
            raise ValueError(
                f"{config.model_type}: weights do not map onto Ember's decoder (missing {missing[:5]}, "
                f"unexpected {unexpected[:5]}); supported: Llama, Qwen2, Mistral, Phi-3 and Gemma layouts"
            )
        return model.eval()


def _split_fused_projections(state, cfg: DecoderConfig):
    """Phi-3's fused projections as Llama's: qkv_proj's rows are q (n_heads x head_dim), k then v (n_kv_heads x
    head_dim each); gate_up_proj's are gate then up (hidden_dim each)."""
    out = {}
    q_rows, kv_rows = cfg.n_heads * cfg.head_dim, cfg.n_kv_heads * cfg.head_dim
    for key, value in state.items():
        if key.endswith("self_attn.qkv_proj.weight"):
            prefix = key[: -len("qkv_proj.weight")]
            q, k, v = torch.split(value, [q_rows, kv_rows, kv_rows], dim=0)
            out.update({prefix + "q_proj.weight": q, prefix + "k_proj.weight": k, prefix + "v_proj.weight": v})
        elif key.endswith("mlp.gate_up_proj.weight"):
            prefix = key[: -len("gate_up_proj.weight")]
            gate, up = torch.split(value, [cfg.hidden_dim, cfg.hidden_dim], dim=0)
            out.update({prefix + "gate_proj.weight": gate, prefix + "up_proj.weight": up})
        else:
            out[key] = value
    return out
