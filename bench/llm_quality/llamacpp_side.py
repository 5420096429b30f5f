"""llama.cpp's perplexity over the quality benchmark's windows; runs inside .venv-llamacpp (llama-cpp-python and
numpy, no torch):

    python -m bench.llm_quality.llamacpp_side --gguf M.gguf --tokens T.json --window W --stride S --out NLL.npy

Each window (bench/llm_quality/windows.py, the same cut as Ember's and eager's) is one llama_decode of its input
tokens at positions 0 .. from an emptied KV cache, with logits asked for from the first scored position on (as
llama.cpp's own perplexity tool asks for them); each target's loss is the float64 log-softmax of its row. The
context has exactly `window` positions, one thread (n_threads = n_threads_batch = 1), and an F32 KV cache, so the
weights' format is the only thing that differs from Ember's fp32 run. Writes the per-target losses (nats, float64)
in stream order, and a JSON next to them with the time and versions.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from bench.llm_quality.windows import windows  # noqa: E402

_quiet = None  # llama.cpp's log callback (its load messages are not this tool's output)


def open_model(llama_cpp, path: str, window: int, threads: int):
    model = llama_cpp.llama_model_load_from_file(path.encode(), llama_cpp.llama_model_default_params())
    if not model:
        raise RuntimeError(f"llama.cpp could not load {path}")
    p = llama_cpp.llama_context_default_params()
    p.n_ctx = window
    p.n_batch = window
    p.n_ubatch = window
    p.n_threads = threads
    p.n_threads_batch = threads
    p.type_k = llama_cpp.GGML_TYPE_F32
    p.type_v = llama_cpp.GGML_TYPE_F32
    ctx = llama_cpp.llama_init_from_model(model, p)
    if not ctx:
        raise RuntimeError(f"llama.cpp could not make a context of {window} positions for {path}")
    return model, ctx


def window_nll(llama_cpp, np, ctx, batch, n_vocab: int, inputs, first: int, targets):
    """One window: its inputs decoded at positions 0.., the losses of its targets from input index `first` on."""
    llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(ctx), True)  # a fresh context per window
    batch.n_tokens = len(inputs)
    for i, t in enumerate(inputs):
        batch.token[i] = t
        batch.pos[i] = i
        batch.n_seq_id[i] = 1
        batch.seq_id[i][0] = 0
        batch.logits[i] = 1 if i >= first else 0
    rc = llama_cpp.llama_decode(ctx, batch)
    if rc != 0:
        raise RuntimeError(f"llama_decode of a {len(inputs)}-token window returned {rc}")
    out = np.empty(len(targets))
    for k, i in enumerate(range(first, len(inputs))):
        row = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, i), shape=(n_vocab,)).astype(np.float64)
        top = row.max()
        out[k] = top + np.log(np.exp(row - top).sum()) - row[targets[k]]
    return out


def score(gguf: str, tokens, window: int, stride: int, threads: int = 1):
    import llama_cpp
    import numpy as np

    global _quiet
    _quiet = llama_cpp.llama_log_callback(lambda level, text, data: None)  # kept: llama.cpp holds the pointer
    llama_cpp.llama_log_set(_quiet, ctypes.c_void_p(0))
    llama_cpp.llama_backend_init()
    model, ctx = open_model(llama_cpp, gguf, window, threads)
    n_vocab = llama_cpp.llama_vocab_n_tokens(llama_cpp.llama_model_get_vocab(model))
    batch = llama_cpp.llama_batch_init(window, 0, 1)
    parts = []
    try:
        for begin, end, first in windows(len(tokens), window, stride):
            targets = tokens[begin + first + 1 : end + 1]
            parts.append(window_nll(llama_cpp, np, ctx, batch, n_vocab, tokens[begin:end], first, targets))
    finally:
        llama_cpp.llama_batch_free(batch)
        llama_cpp.llama_free(ctx)
        llama_cpp.llama_model_free(model)
    return np.concatenate(parts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--tokens", required=True, help="a JSON list of token ids")
    ap.add_argument("--window", type=int, required=True)
    ap.add_argument("--stride", type=int, required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", required=True, help=".npy of the per-target losses; a .json beside it says more")
    a = ap.parse_args(argv)
    import numpy as np
    from importlib.metadata import version

    with open(a.tokens) as f:
        tokens = [int(t) for t in json.load(f)]
    t0 = time.perf_counter()
    nll = score(a.gguf, tokens, a.window, a.stride, a.threads)
    seconds = time.perf_counter() - t0
    np.save(a.out, nll)
    info = {"seconds": seconds, "tokens": int(nll.size), "versions": {"llama-cpp-python": version("llama-cpp-python")}}
    with open(os.path.splitext(a.out)[0] + ".json", "w") as f:
        json.dump(info, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
