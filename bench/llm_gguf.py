"""A Llama-architecture model in transformers' names (bench/llm_model.py configs) written as GGUF for llama.cpp, with
the gguf package's own writer and quantizers (F32, Q8_0, Q4_0), and the benchmark's tokenizer.json inside, so
llama.cpp tokenizes a prompt as the other runners do.

    write_gguf(config, state_dict, tokenizer_json, path, qtype)
        the converter: config is a transformers LlamaConfig dict, state_dict maps LlamaForCausalLM's parameter names
        to arrays (numpy, or torch tensors: anything np.asarray takes), qtype "F32", "Q8_0" or "Q4_0".
    save_state_dict(state_dict, path) / load_state_dict(path)
        the weights as one uncompressed .npz, the way from a process with torch (the project's .venv) to one with
        the gguf package (.venv-llamacpp, tools/setup_llamacpp_venv.sh); needs numpy only.

    python -m bench.llm_gguf --config config.json --weights weights.npz --tokenizer tokenizer.json \\
                             --out model-Q8_0.gguf --qtype Q8_0 [--report R.json]

What goes where:
  - q and k projections: transformers keeps each head's rows in two halves for its rotate_half rotary embedding;
    llama.cpp's Llama graph rotates adjacent pairs (ggml's "normal" rope), so each head's rows are interleaved
    (half i of row j -> row 2j + i), as llama.cpp's own converter does. Without that, greedy tokens differ from
    eager PyTorch's after the first one or two.
  - every linear, the LM head included, in qtype; the token embedding and the norms stay F32 (the benchmark keeps
    every framework's embedding in fp32; norms are 1-D, which GGUF never quantizes).
  - tied embeddings: the head is written as output.weight only when its type differs from the embedding's; with F32
    llama.cpp reads token_embd.weight for both, as its converter writes a tied model.
  - tokenizer: tokenizer.ggml.model "gpt2" (byte-level BPE) with pre-tokenizer "gpt-2" (GPT-2's split, which the
    benchmark's tokenizer.json also uses), the vocabulary in id order, the merges in rank order, special tokens as
    CONTROL, no BOS added.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Dict, Iterator, Tuple

import numpy as np

QTYPES = ("F32", "Q8_0", "Q4_0")
# The benchmark's weight formats and their llama.cpp counterparts.
VARIANT_QTYPE = {"fp32": "F32", "int8": "Q8_0", "8da4w": "Q4_0"}

# transformers' LlamaDecoderLayer parameter -> llama.cpp's per-block tensor name.
BLOCK_NAMES = {
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
    "input_layernorm": "attn_norm",
    "post_attention_layernorm": "ffn_norm",
}


def half_split_to_interleaved(w: np.ndarray, heads: int) -> np.ndarray:
    """Rows of a q or k projection from rotate_half's layout (per head: the first halves of the rotary pairs, then
    the second halves) to adjacent pairs (per head: first, second, first, second, ...)."""
    rows, cols = w.shape
    head_dim = rows // heads
    if head_dim * heads != rows or head_dim % 2:
        raise ValueError(f"q/k projection of {rows} rows does not split into {heads} heads of an even size")
    return w.reshape(heads, 2, head_dim // 2, cols).swapaxes(1, 2).reshape(rows, cols)


def _array(t) -> np.ndarray:
    if hasattr(t, "detach"):  # a torch tensor, without importing torch here
        t = t.detach().float().cpu().numpy()
    return np.ascontiguousarray(np.asarray(t, dtype=np.float32))


def gguf_tensors(config: dict, state_dict) -> Iterator[Tuple[str, np.ndarray, bool]]:
    """(llama.cpp name, float32 array in PyTorch's (out, in) layout, is a linear's weight) for every tensor, the
    head last. Refuses parameters it has no name for (biases, other architectures)."""
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    seen = set()
    for key in state_dict:
        if key.startswith("model.layers."):
            _, _, i, rest = key.split(".", 3)
            module, param = rest.rsplit(".", 1)
            if module not in BLOCK_NAMES or param != "weight":
                raise ValueError(f"{key}: no llama.cpp tensor for it (only bias-free Llama layers convert)")
            w = _array(state_dict[key])
            if module == "self_attn.q_proj":
                w = half_split_to_interleaved(w, heads)
            elif module == "self_attn.k_proj":
                w = half_split_to_interleaved(w, kv_heads)
            seen.add(key)
            yield f"blk.{i}.{BLOCK_NAMES[module]}.weight", w, w.ndim == 2
        elif key not in ("model.embed_tokens.weight", "model.norm.weight", "lm_head.weight") and "rotary" not in key:
            raise ValueError(f"{key}: no llama.cpp tensor for it")
    yield "token_embd.weight", _array(state_dict["model.embed_tokens.weight"]), False
    yield "output_norm.weight", _array(state_dict["model.norm.weight"]), False
    tied = config.get("tie_word_embeddings", False) or "lm_head.weight" not in state_dict
    head = state_dict["model.embed_tokens.weight"] if tied else state_dict["lm_head.weight"]
    yield "output.weight", _array(head), True
    want = 7 * config["num_hidden_layers"] + 2 * config["num_hidden_layers"]
    if len(seen) != want:
        raise ValueError(f"{len(seen)} layer parameters for {config['num_hidden_layers']} layers, expected {want}")


def tokenizer_fields(tokenizer_json: str) -> dict:
    """tokens (id order), token types and merges of a byte-level BPE tokenizer.json, as GGUF stores them."""
    with open(tokenizer_json, encoding="utf-8") as f:
        doc = json.load(f)
    model = doc["model"]
    if model.get("type") != "BPE":
        raise ValueError(f"{tokenizer_json}: a {model.get('type')} tokenizer; only byte-level BPE converts")
    vocab = dict(model["vocab"])
    special = set()
    for t in doc.get("added_tokens", []):
        vocab[t["content"]] = t["id"]
        if t.get("special"):
            special.add(t["id"])
    tokens = [None] * (max(vocab.values()) + 1)
    for text, i in vocab.items():
        tokens[i] = text
    if any(t is None for t in tokens):
        raise ValueError(f"{tokenizer_json}: ids without a token: {[i for i, t in enumerate(tokens) if t is None][:5]}")
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    return {"tokens": tokens, "types": [3 if i in special else 1 for i in range(len(tokens))], "merges": merges}


def _quantize(w: np.ndarray, qtype: str):
    """The gguf package's own quantizer (gguf.quants.quantize: blocks of 32, an fp16 scale each) for Q8_0 / Q4_0."""
    import gguf

    t = gguf.GGMLQuantizationType[qtype]
    return gguf.quants.quantize(w, t), t


def write_gguf(
    config: dict, state_dict, tokenizer_json: str, path: str, qtype: str = "F32", name: str = "ember-bench-llama"
) -> dict:
    """Writes the model to path as GGUF (architecture "llama") with its linears in qtype. Returns what it wrote:
    {"path", "bytes", "qtype", "tensors": {name: type}, "convert_s"}."""
    import gguf

    if qtype not in QTYPES:
        raise ValueError(f"qtype {qtype}: one of {', '.join(QTYPES)}")
    t0 = time.perf_counter()
    heads = config["num_attention_heads"]
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    tok = tokenizer_fields(tokenizer_json)
    if len(tok["tokens"]) != config["vocab_size"]:
        raise ValueError(f"{tokenizer_json}: {len(tok['tokens'])} tokens for a vocabulary of {config['vocab_size']}")
    w = gguf.GGUFWriter(path, "llama")
    w.add_name(name)
    w.add_context_length(config.get("max_position_embeddings", 2048))
    w.add_embedding_length(config["hidden_size"])
    w.add_feed_forward_length(config["intermediate_size"])
    w.add_block_count(config["num_hidden_layers"])
    w.add_head_count(heads)
    w.add_head_count_kv(config["num_key_value_heads"])
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(float(config.get("rope_theta", 10000.0)))
    w.add_layer_norm_rms_eps(float(config["rms_norm_eps"]))
    w.add_vocab_size(config["vocab_size"])
    w.add_file_type(
        {
            "F32": gguf.LlamaFileType.ALL_F32,
            "Q8_0": gguf.LlamaFileType.MOSTLY_Q8_0,
            "Q4_0": gguf.LlamaFileType.MOSTLY_Q4_0,
        }[qtype]
    )
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tok["tokens"])
    w.add_token_types(tok["types"])
    w.add_token_merges(tok["merges"])
    w.add_bos_token_id(int(config.get("bos_token_id", 0)))
    w.add_eos_token_id(int(config.get("eos_token_id", 0)))
    w.add_add_bos_token(False)
    types: Dict[str, str] = {}
    for tname, arr, is_linear in gguf_tensors(config, state_dict):
        if tname == "output.weight" and qtype == "F32" and config.get("tie_word_embeddings", False):
            continue  # tied and of the embedding's type: llama.cpp reads token_embd.weight for the head
        if is_linear and qtype != "F32":
            data, t = _quantize(arr, qtype)
            w.add_tensor(tname, data, raw_dtype=t)
        else:
            w.add_tensor(tname, arr)
        types[tname] = qtype if is_linear else "F32"
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return {
        "path": path,
        "bytes": os.path.getsize(path),
        "qtype": qtype,
        "tensors": types,
        "convert_s": time.perf_counter() - t0,
    }


def save_state_dict(state_dict, path: str, tied: bool = False) -> str:
    """The weights as float32 arrays in one uncompressed .npz (lm_head left out when tied to the embedding)."""
    arrays = {k: _array(v) for k, v in state_dict.items() if not (tied and k == "lm_head.weight")}
    np.savez(path, **arrays)
    return path


def load_state_dict(path: str) -> Dict[str, np.ndarray]:
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True, help="transformers LlamaConfig as JSON")
    ap.add_argument("--weights", required=True, help=".npz of LlamaForCausalLM's state_dict (save_state_dict)")
    ap.add_argument("--tokenizer", required=True, help="byte-level BPE tokenizer.json")
    ap.add_argument("--out", required=True, help="the .gguf to write; with several --qtype, {qtype} in it is replaced")
    ap.add_argument("--qtype", default="F32", help=f"comma-separated, from {', '.join(QTYPES)}")
    ap.add_argument("--report", default=None, help="a JSON file for what was written")
    a = ap.parse_args(argv)
    with open(a.config) as f:
        config = json.load(f)
    sd = load_state_dict(a.weights)
    report = {}
    for q in [q for q in a.qtype.split(",") if q]:
        out = a.out.replace("{qtype}", q)
        report[q] = write_gguf(config, sd, a.tokenizer, out, q)
        print(f"llm_gguf: {out}: {report[q]['bytes']:,} bytes in {report[q]['convert_s']:.1f} s", file=sys.stderr)
    if a.report:
        import gguf  # noqa: F401  (its version, for the record)
        from importlib.metadata import version

        report["_versions"] = {"gguf": version("gguf"), "numpy": np.__version__}
        with open(a.report, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
