"""Export a Llama-family causal LM (Llama, Qwen2, Mistral, Phi-3, Gemma) to a .pte that Ember's LLM runner (and ExecuTorch's conventions) read.

    python -m examples.llm.export --model <hf dir, or a config.json> --max-seq-len 256 -o model.pte
    python -m examples.llm.export --model ... --quantize 8da4w --group-size 128 -o model_8da4w.pte
    python -m examples.llm.export --model ... --quantize 8da4w --quantize-embedding 4bit -o model_8da4w_e4.pte

`--quantize int8` stores every linear layer's weights (attention, MLP, output head) as int8 with per-channel
scales; `--quantize 8da4w` as int4 in groups of --group-size input channels, with activations quantized to int8
per token at run time (examples/llm/quantize.py). `--quantize-embedding int8 | 4bit` does the same for the token
embedding (int8 rows with a scale each, or int4 in groups of --embedding-group-size); without it the embedding
stays float32. A checkpoint with tied embeddings whose head stays float32 stores the table once: the head reads it
in place (ember_llm::linear). Float and int8 linears are stored in the blocked layout (16 output channels side by
side; examples/llm/layout.py) where their output features allow.

`--quantize-head 4bit` makes the output head alone linear_8da4w (int4 groups of --group-size, default 32) with fp32
or int8 linears (a tied embedding stays as it is and the head gets its own 4-bit copy). `--quantize-kv-cache`
stores each layer's KV cache as int8 with a float32 scale per (position, KV head), about a quarter of the float
cache's bytes (examples/llm/kv_cache.py).

`--model` is a local Hugging Face checkpoint directory (config.json + weights), or a config.json alone, which
builds the model with seeded random weights (for tests and speed measurements; nothing is downloaded). The
program has one method, `forward(tokens [1, T], input_pos [1]) -> logits [1, vocab]` with T bounded by
max_seq_len - 1, plus ExecuTorch's constant methods for the runner: get_max_seq_len, get_max_context_len,
get_vocab_size, get_bos_id, get_eos_ids, get_n_layers, use_kv_cache, use_sdpa_with_kv_cache,
enable_dynamic_shape, and Ember's get_session_memory_id: forward's KV cache is planned in a pool of its own (memory
id 2, activations in 1), so a session's state is that pool's bytes (examples/llm/session.h).

`--logits-rows K` (K > 1) makes forward return [1, R, vocab], the logits of the last R = ((T - 1) mod K) + 1
positions, and adds the constant method get_logits_rows = K: a call of up to K tokens gets all its positions' logits,
so one call of 1 + D tokens checks D drafted tokens (llm_runner --speculate D, D <= K - 1); decode (T = 1) still
runs the head on one row, prefill on at most K.
"""

from __future__ import annotations

import argparse
import dataclasses
import contextlib
import json
import os
import sys
from typing import Dict

import torch
from torch.export import Dim

import exir
from . import kv_cache, layout
from . import quantize as quant
from .model import Decoder
from exir.lowering.ir import Role
from exir.lowering.lifetimes import TensorInfo


def metadata(model: Decoder) -> Dict[str, object]:
    """The constant methods ExecuTorch's LLM runner reads (names and meanings as its runner uses them)."""
    cfg = model.cfg
    return {
        "get_max_seq_len": model.max_seq_len,
        "get_max_context_len": model.max_seq_len,
        "get_vocab_size": cfg.vocab_size,
        "get_bos_id": cfg.bos_id,
        "get_eos_ids": list(cfg.eos_ids),
        "get_n_layers": cfg.n_layers,
        "use_kv_cache": True,
        "use_sdpa_with_kv_cache": False,
        "enable_dynamic_shape": True,
        # Ember's own, only when forward returns more than the last position's logits (speculative decoding).
        **({"get_logits_rows": model.logits_rows} if model.logits_rows > 1 else {}),
        # Ember's own: the planned pool holding the KV cache and nothing else (a session's state; examples/llm/session.h).
        "get_session_memory_id": SESSION_MEMORY_ID,
    }


# The pool of forward's mutable buffers (the KV cache: keys, values, and int8 caches' scales). Pool 1 keeps the
# activations, so a session's state is exactly pool 2's bytes and a runtime can bind each session its own copy.
SESSION_MEMORY_ID = 2


def session_mem_id(info: TensorInfo) -> int:
    return SESSION_MEMORY_ID if info.role is Role.BUFFER else 1


def backend_config() -> exir.ExecutorchBackendConfig:
    """The decoder's lowering settings: the default ones with the KV cache in a pool of its own."""
    return exir.ExecutorchBackendConfig(memory_planning=exir.MemoryPlanningConfig(mem_id=session_mem_id))


def export_decoder(
    model: Decoder, config: exir.ExecutorchBackendConfig = None, sessions: bool = True, keep_edge: bool = False
):
    """The decoder as a program: prefill and decode share `forward`, the KV cache is planned once, in a pool of its
    own. sessions=False writes the layout of programs exported before sessions (one pool, no
    get_session_memory_id), for the tests that check the runtime still runs them. keep_edge: returns
    (EdgeProgramManager, program), the edge program being devtools.debug.compare's eager side."""
    model = model.eval()
    model.reset_cache()
    tokens = torch.zeros(1, 2, dtype=torch.long)
    token_dim = Dim("token_dim", min=1, max=model.max_seq_len - 1)
    with torch.no_grad(), _row_slice_export(model.logits_rows > 1):
        ep = torch.export.export(
            model,
            (tokens, torch.tensor([0])),
            dynamic_shapes=({1: token_dim}, None),
            prefer_deferred_runtime_asserts_over_guards=model.logits_rows > 1,
        )
    methods = metadata(model)
    if not sessions:
        del methods["get_session_memory_id"]
        config = config or exir.ExecutorchBackendConfig()
    elif config is not None:
        # A caller's settings (external constants, pool limits, ...) keep the KV cache in its own pool: the program
        # states that pool (get_session_memory_id) and the runtime's sessions rely on it.
        planning = dataclasses.replace(config.memory_planning, mem_id=session_mem_id)
        config = dataclasses.replace(config, memory_planning=planning)
    edge = exir.to_edge(ep, constant_methods=methods)
    prog = edge.to_executorch(config or backend_config())
    return (edge, prog) if keep_edge else prog


def _row_slice_export(enabled: bool):
    """For a head over the last ((T - 1) mod K) + 1 rows (Decoder.set_logits_rows): export traces that slice's
    size as a size of its own, bounded by the head's checks, rather than specializing it on 1 or on T; the checks
    it cannot prove become run-time asserts, which to_edge drops (they hold for every T)."""
    if not enabled:
        return contextlib.nullcontext()
    from torch.fx.experimental import _config

    return _config.patch(backed_size_oblivious=True)


def load_hf(path: str, seed: int = 0):
    """A transformers causal LM from a checkpoint directory, or built from a config.json with seeded weights."""
    from zoo.public import torchvision_cpu

    torchvision_cpu.ensure()
    import transformers

    if os.path.isdir(path) and any(f.endswith((".safetensors", ".bin")) for f in os.listdir(path)):
        return transformers.AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float32).eval()
    config_path = os.path.join(path, "config.json") if os.path.isdir(path) else path
    if not os.path.exists(config_path):
        raise FileNotFoundError(f"{path}: neither a checkpoint directory (config.json and weights) nor a config.json")
    with open(config_path) as f:
        config = transformers.AutoConfig.for_model(**json.load(f))
    torch.manual_seed(seed)
    return transformers.AutoModelForCausalLM.from_config(config).eval()


def parser(prog="python -m examples.llm.export", output: bool = True) -> argparse.ArgumentParser:
    """The export's flags (without -o when not `output`: ember explore --llm takes the rest to re-export)."""
    ap = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="Hugging Face checkpoint directory, or a config.json")
    ap.add_argument("--max-seq-len", type=int, default=256, help="KV cache length: prompt plus generated tokens")
    ap.add_argument("--seed", type=int, default=0, help="weights' seed when --model is a config alone")
    ap.add_argument(
        "--quantize",
        choices=quant.SCHEMES,
        default=None,
        help="weights of the linear layers: int8 (per channel) or 8da4w (int4 groups, int8 activations)",
    )
    ap.add_argument(
        "--group-size",
        type=int,
        default=None,
        choices=quant.GROUP_SIZES,
        help="input channels per int4 scale: 8da4w's (default 128, as ExecuTorch's llama export) and the 4-bit "
        "head's (default 32)",
    )
    ap.add_argument(
        "--quantize-head",
        choices=quant.HEAD_SCHEMES,
        default=None,
        help="the output head alone as 4bit (linear_8da4w) with fp32 or int8 linears; 8da4w's head is already",
    )
    ap.add_argument(
        "--quantize-kv-cache",
        action="store_true",
        help="store the KV cache as int8 with a float32 scale per (position, KV head) (examples/llm/kv_cache.py)",
    )
    ap.add_argument(
        "--quantize-embedding",
        choices=quant.EMBEDDING_SCHEMES,
        default=None,
        help="the token embedding's rows: int8 (a scale per row) or 4bit (int4 groups)",
    )
    ap.add_argument(
        "--embedding-group-size",
        type=int,
        default=32,
        choices=quant.GROUP_SIZES,
        help="4bit embedding: values per scale (default 32, as ExecuTorch's --embedding-quantize 4,32)",
    )
    ap.add_argument(
        "--logits-rows",
        type=int,
        default=1,
        help="forward returns the logits of every position of a call of up to K tokens, [1, R, vocab] (default 1: "
        "the last position's, [1, vocab]); llm_runner --speculate D needs K >= D + 1",
    )
    if output:
        ap.add_argument("-o", "--output", required=True)
    return ap


def build(args, ap: argparse.ArgumentParser) -> Decoder:
    """The decoder `args` describe, quantized and laid out as the export writes it (export_decoder's input)."""
    if args.max_seq_len < 2:
        ap.error("--max-seq-len must be at least 2")
    if not 1 <= args.logits_rows < args.max_seq_len:
        ap.error(f"--logits-rows must be 1 to {args.max_seq_len - 1} (max_seq_len - 1)")
    hf = load_hf(args.model, args.seed)
    model = Decoder.from_hf(hf, args.max_seq_len)
    group_size = args.group_size or 128
    try:
        if args.quantize_head and args.quantize != "8da4w":
            quant.quantize_head(model, args.quantize_head, args.group_size or 32)
        if args.quantize:
            quant.quantize(model, args.quantize, group_size)
        if args.quantize_embedding:
            quant.quantize_embeddings(model, args.quantize_embedding, args.embedding_group_size)
    except ValueError as e:
        ap.error(str(e))
    model.set_logits_rows(args.logits_rows)
    if args.quantize_kv_cache:
        kv_cache.quantize_kv_cache(model)
    model.tie_head()
    if not args.quantize:
        layout.block_linears(model)
    return model


def main(argv=None, prog="python -m examples.llm.export") -> int:
    ap = parser(prog)
    args = ap.parse_args(argv)
    model = build(args, ap)
    group_size = args.group_size or 128
    prog = export_decoder(model)
    prog.save(args.output)
    cfg = model.cfg
    print(
        f"wrote {args.output}: {cfg.n_layers} layers, dim {cfg.dim}, {cfg.n_heads} heads ({cfg.n_kv_heads} KV), "
        f"vocab {cfg.vocab_size}, max_seq_len {args.max_seq_len}, "
        f"{'fp32' if not args.quantize else args.quantize}"
        f"{f' group {group_size}' if args.quantize == '8da4w' else ''}"
        f"{f', embedding {args.quantize_embedding}' if args.quantize_embedding else ''}"
        f"{f', logits of up to {args.logits_rows} positions' if args.logits_rows > 1 else ''}"
        f"{f', head {args.quantize_head}' if args.quantize_head else ''}"
        f", KV cache {'int8' if args.quantize_kv_cache else 'fp32'} ({kv_cache.cache_bytes(model):,} bytes)"
        f", {os.path.getsize(args.output):,} bytes"
    )
    print(prog.memory_report())
    return 0


if __name__ == "__main__":
    sys.exit(main())
