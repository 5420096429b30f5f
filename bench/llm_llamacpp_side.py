"""llama.cpp's side of the LLM benchmark; runs inside .venv-llamacpp (tools/setup_llamacpp_venv.sh: llama-cpp-python
built from its source distribution, and the gguf package).

    python -m bench.llm_llamacpp_side convert --config C.json --weights W.npz --tokenizer T.json --out-dir D
                                              --qtypes F32,Q8_0,Q4_0 --report R.json
        the benchmark's model as GGUF, one file per qtype (bench/llm_gguf.py: the gguf package's writer and
        quantizers), D/llamacpp_<qtype>.gguf; R.json says what each holds, with the versions.

    python -m bench.llm_llamacpp_side run --gguf M --prompt-file F --prompt-ids I.json --new-tokens N --threads K
                                          --max-seq-len S --out R.json [--kv-type f32|f16]
        one greedy generation through llama.cpp's C API (llama-cpp-python's ctypes bindings of libllama, no
        high-level wrapper): the model loaded as llama.cpp loads it by default (mmap), a context of S positions
        with n_threads = n_threads_batch = K, the prompt tokenized by llama.cpp from the GGUF's own vocabulary
        (recorded against the benchmark's ids), one llama_decode for the prompt, then one per new token, each
        token chosen by llama.cpp's greedy sampler; the last token is not fed back, as the other runners do.
        Writes R.json with the fields of bench/llm_measure.py plus llama.cpp's own timings (llama_perf_context).

The loop is Python, one ctypes call per step (llama_batch_get_one, llama_decode, llama_sampler_sample): a few
microseconds a token against milliseconds of decode. KV cache: F32 by default (llama.cpp's own default is F16), so
its precision matches Ember's and ExecuTorch's fp32 caches; --kv-type f16 gives llama.cpp's default.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.pymeasure import vm_hwm_kb  # noqa: E402

# llama.cpp log lines worth keeping in the result: how it laid the model out and what the context resolved to.
LOG_KEEP = ("flash_attn", "REPACK", "model buffer size", "n_ctx", "type_k", "KV buffer size", "n_threads")


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def convert(a) -> dict:
    from bench import llm_gguf

    with open(a.config) as f:
        config = json.load(f)
    sd = llm_gguf.load_state_dict(a.weights)
    os.makedirs(a.out_dir, exist_ok=True)
    report = {}
    for q in a.qtypes.split(","):
        path = os.path.join(os.path.abspath(a.out_dir), f"llamacpp_{q}.gguf")
        report[q] = llm_gguf.write_gguf(config, sd, a.tokenizer, path, q)
        print(f"llm_llamacpp_side: wrote {path} ({report[q]['bytes']:,} bytes)", file=sys.stderr, flush=True)
    report["_versions"] = versions()
    with open(a.report, "w") as f:
        json.dump(report, f, indent=1)
    return report


def versions() -> dict:
    from importlib.metadata import version

    return {p: version(p) for p in ("llama-cpp-python", "gguf", "numpy")}


class Log:
    """llama.cpp's log, collected instead of printed (kept lines go into the result)."""

    def __init__(self, llama_cpp):
        self.lines = []

        @llama_cpp.llama_log_callback
        def callback(level, text, user_data):
            self.lines.append(text.decode(errors="replace"))

        self._callback = callback  # must outlive every llama.cpp call
        llama_cpp.llama_log_set(callback, ctypes.c_void_p(0))

    def kept(self) -> list:
        text = "".join(self.lines)
        return [ln.strip() for ln in text.splitlines() if any(k in ln for k in LOG_KEEP)]


def tokenize(llama_cpp, vocab, text: str) -> list:
    raw = text.encode()
    cap = len(raw) + 8
    buf = (llama_cpp.llama_token * cap)()
    n = llama_cpp.llama_tokenize(vocab, raw, len(raw), buf, cap, False, False)
    if n < 0:
        raise RuntimeError(f"llama_tokenize needs {-n} tokens, more than {cap}")
    return list(buf[:n])


def decode(llama_cpp, ctx, tokens: list) -> None:
    arr = (llama_cpp.llama_token * len(tokens))(*tokens)
    rc = llama_cpp.llama_decode(ctx, llama_cpp.llama_batch_get_one(arr, len(tokens)))
    if rc != 0:
        raise RuntimeError(f"llama_decode of {len(tokens)} tokens returned {rc}")


def save_logits(llama_cpp, model, ctx, path: str) -> None:
    """The logits the first token was chosen from (after the prompt's last position), as a float32 .npy."""
    import numpy as np

    n_vocab = llama_cpp.llama_vocab_n_tokens(llama_cpp.llama_model_get_vocab(model))
    ptr = llama_cpp.llama_get_logits_ith(ctx, -1)
    np.save(path, np.ctypeslib.as_array(ptr, shape=(n_vocab,)).astype(np.float32))


def run(a) -> dict:
    import llama_cpp

    log = Log(llama_cpp)
    llama_cpp.llama_backend_init()
    with open(a.prompt_file) as f:
        text = f.read()
    with open(a.prompt_ids) as f:
        want_ids = json.load(f)
    rss0 = vm_hwm_kb()
    t0 = time.perf_counter()
    mparams = llama_cpp.llama_model_default_params()
    model = llama_cpp.llama_model_load_from_file(a.gguf.encode(), mparams)
    if not model:
        raise RuntimeError(f"llama.cpp could not load {a.gguf}: {''.join(log.lines)[-1500:]}")
    cparams = llama_cpp.llama_context_default_params()
    cparams.n_ctx = a.max_seq_len
    cparams.n_threads = a.threads
    cparams.n_threads_batch = a.threads
    kv = {"f32": llama_cpp.GGML_TYPE_F32, "f16": llama_cpp.GGML_TYPE_F16}[a.kv_type]
    cparams.type_k = kv
    cparams.type_v = kv
    cparams.no_perf = False
    ctx = llama_cpp.llama_init_from_model(model, cparams)
    if not ctx:
        raise RuntimeError(f"llama.cpp could not make a context: {''.join(log.lines)[-1500:]}")
    sampler = llama_cpp.llama_sampler_init_greedy()
    load_ms = (time.perf_counter() - t0) * 1e3
    vocab = llama_cpp.llama_model_get_vocab(model)

    start = time.perf_counter()
    prompt = tokenize(llama_cpp, vocab, text)
    tokenized = time.perf_counter()
    decode(llama_cpp, ctx, prompt)
    llama_cpp.llama_synchronize(ctx)
    prefilled = time.perf_counter()
    token = llama_cpp.llama_sampler_sample(sampler, ctx, -1)
    first = time.perf_counter()
    if a.logits_out:
        save_logits(llama_cpp, model, ctx, a.logits_out)
    ids = [token]
    cpu0, decode0 = cpu_s(), time.perf_counter()
    while len(ids) < a.new_tokens:
        decode(llama_cpp, ctx, [token])
        token = llama_cpp.llama_sampler_sample(sampler, ctx, -1)
        ids.append(token)
    end = time.perf_counter()
    cpu1 = cpu_s()
    perf = llama_cpp.llama_perf_context(ctx)
    decode_s = end - decode0
    result = {
        "ids": ids,
        "prompt_tokens": len(prompt),
        "prompt_ids_equal": prompt == want_ids,
        "generated_tokens": len(ids),
        "ttft_ms": (first - start) * 1e3,
        "tokenize_ms": (tokenized - start) * 1e3,
        "prefill_tps": len(prompt) / (prefilled - tokenized),
        "decode_tps": (len(ids) - 1) / decode_s if decode_s > 0 else 0.0,
        "load_ms": load_ms,
        "cpu_over_wall": (cpu1 - cpu0) / decode_s if decode_s > 0 else None,
        "rss_before_load_kb": rss0,
        "vm_hwm_kb": vm_hwm_kb(),
        "threads": a.threads,
        "n_threads": llama_cpp.llama_n_threads(ctx),
        "n_threads_batch": llama_cpp.llama_n_threads_batch(ctx),
        "n_ctx": llama_cpp.llama_n_ctx(ctx),
        "kv_type": a.kv_type,
        # llama.cpp's own clock (llama_perf_context): prompt and per-token decode time inside llama_decode.
        "llama_perf": {
            "t_load_ms": perf.t_load_ms,
            "t_p_eval_ms": perf.t_p_eval_ms,
            "n_p_eval": perf.n_p_eval,
            "t_eval_ms": perf.t_eval_ms,
            "n_eval": perf.n_eval,
        },
        "system_info": llama_cpp.llama_print_system_info().decode().strip(),
        "log": log.kept(),
        "versions": versions(),
    }
    llama_cpp.llama_sampler_free(sampler)
    llama_cpp.llama_free(ctx)
    llama_cpp.llama_model_free(model)
    return result


def main(argv=None):
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("convert")
    c.add_argument("--config", required=True)
    c.add_argument("--weights", required=True, help=".npz of the state_dict (bench/llm_gguf.py save_state_dict)")
    c.add_argument("--tokenizer", required=True)
    c.add_argument("--out-dir", required=True)
    c.add_argument("--qtypes", default="F32,Q8_0,Q4_0")
    c.add_argument("--report", required=True)
    r = sub.add_parser("run")
    r.add_argument("--gguf", required=True)
    r.add_argument("--prompt-file", required=True, help="the prompt's text, tokenized by llama.cpp")
    r.add_argument("--prompt-ids", required=True, help="the benchmark's ids for it (JSON), to check llama.cpp's")
    r.add_argument("--new-tokens", type=int, required=True)
    r.add_argument("--threads", type=int, default=1)
    r.add_argument("--max-seq-len", type=int, required=True, help="the context's positions (prompt + new tokens)")
    r.add_argument("--kv-type", choices=("f32", "f16"), default="f32")
    r.add_argument("--logits-out", default=None, help="also save the logits after the prompt (.npy; a check)")
    r.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    if a.cmd == "convert":
        convert(a)
    else:
        result = run(a)
        with open(a.out, "w") as f:
            json.dump(result, f)


if __name__ == "__main__":
    main()
