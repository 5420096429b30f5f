"""The LLM benchmark's model: published Llama configurations (transformers' LlamaConfig fields, written out so
nothing is downloaded), their parameter count, and the same weights in ExecuTorch's Llama checkpoint format."""

from __future__ import annotations

import json
import os
from typing import Dict

# transformers LlamaConfig fields. SmolLM-135M's published config (HuggingFaceTB/SmolLM-135M), written out here so
# nothing is downloaded; "tiny" keeps its vocabulary (so the same tokenizer serves) with 2 small layers.
CONFIGS = {
    "smollm-135m": {
        "model_type": "llama",
        "hidden_size": 576,
        "intermediate_size": 1536,
        "num_hidden_layers": 30,
        "num_attention_heads": 9,
        "num_key_value_heads": 3,
        "vocab_size": 49152,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "tie_word_embeddings": True,
        "max_position_embeddings": 2048,
        "hidden_act": "silu",
        "bos_token_id": 0,
        "eos_token_id": 0,
        "attention_bias": False,
        "mlp_bias": False,
        "initializer_range": 0.02,
    },
    "tiny": {
        "model_type": "llama",
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 49152,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "tie_word_embeddings": True,
        "max_position_embeddings": 2048,
        "hidden_act": "silu",
        "bos_token_id": 0,
        "eos_token_id": 0,
        "attention_bias": False,
        "mlp_bias": False,
        "initializer_range": 0.02,
    },
}


def count_parameters(config: dict) -> int:
    d, f, v, L = config["hidden_size"], config["intermediate_size"], config["vocab_size"], config["num_hidden_layers"]
    kv = d // config["num_attention_heads"] * config["num_key_value_heads"]
    per_layer = 2 * d * d + 2 * d * kv + 3 * d * f + 2 * d
    head = 0 if config.get("tie_word_embeddings") else v * d
    return v * d + L * per_layer + d + head


def et_checkpoint(hf, config: dict, out_dir: str) -> Dict[str, str]:
    """The same weights for ExecuTorch's Llama definition: its parameter names, and q/k rows in its interleaved
    rotary layout (transformers stores them permuted for rotate_half; this is that permutation's inverse, as
    ExecuTorch's own checkpoint converters apply it). params.json is the config in ExecuTorch's ModelArgs names."""
    import torch

    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]

    def unpermute(w, n):
        rows, cols = w.shape
        return w.view(n, 2, rows // n // 2, cols).transpose(1, 2).reshape(rows, cols).contiguous()

    names = {
        "self_attn.v_proj": "attention.wv",
        "self_attn.o_proj": "attention.wo",
        "mlp.gate_proj": "feed_forward.w1",
        "mlp.down_proj": "feed_forward.w2",
        "mlp.up_proj": "feed_forward.w3",
        "input_layernorm": "attention_norm",
        "post_attention_layernorm": "ffn_norm",
    }
    sd = {}
    for k, v in hf.state_dict().items():
        v = v.detach().clone()
        if k == "model.embed_tokens.weight":
            sd["tok_embeddings.weight"] = v
        elif k == "model.norm.weight":
            sd["norm.weight"] = v
        elif k == "lm_head.weight":
            sd["output.weight"] = v
        elif k.startswith("model.layers."):
            _, _, i, rest = k.split(".", 3)
            module, param = rest.rsplit(".", 1)
            if module == "self_attn.q_proj":
                sd[f"layers.{i}.attention.wq.{param}"] = unpermute(v, heads)
            elif module == "self_attn.k_proj":
                sd[f"layers.{i}.attention.wk.{param}"] = unpermute(v, kv_heads)
            elif module in names:
                sd[f"layers.{i}.{names[module]}.{param}"] = v
            else:
                raise ValueError(f"{k}: no ExecuTorch name for it")
        elif "rotary_emb" not in k:
            raise ValueError(f"{k}: no ExecuTorch name for it")
    sd.setdefault("output.weight", sd["tok_embeddings.weight"])  # tied: the head reads the embedding's rows
    params = {
        "dim": config["hidden_size"],
        "n_layers": config["num_hidden_layers"],
        "n_heads": heads,
        "n_kv_heads": kv_heads,
        "vocab_size": config["vocab_size"],
        "hidden_dim": config["intermediate_size"],
        "norm_eps": config["rms_norm_eps"],
        "rope_theta": config.get("rope_theta", 10000.0),
        "use_scaled_rope": False,
        "use_hf_rope": False,
        "attention_qkv_bias": False,
    }
    # Not "int8"/"8da4w" in the file name: ExecuTorch's loader reads those as pre-quantized checkpoints.
    paths = {"checkpoint": os.path.join(out_dir, "weights.pth"), "params": os.path.join(out_dir, "params.json")}
    torch.save(sd, paths["checkpoint"])
    with open(paths["params"], "w") as f:
        json.dump(params, f, indent=1)
    return paths
