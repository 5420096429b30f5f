"""The LLM benchmark's Python-hosted measurements in the project's .venv, one generation per process (so the
launcher's ru_maxrss is this run's own):

    python -m bench.llm_measure ember --pte M.pte --prompt-ids F.json --new-tokens N --threads K --out R.json
        Ember's Python path: ember.runtime.load(M, threads=K), then ember.llm.generate (greedy, no EOS stop)
    python -m bench.llm_measure eager --model-dir D --prompt-ids F.json --new-tokens N --threads K --out R.json
        eager PyTorch: transformers' LlamaForCausalLM (D/config.json, seeded weights as bench/llm.py builds them)
        with its own KV cache (DynamicCache), torch.set_num_threads(K), greedy, a forward per token

Each writes one JSON object to --out: the generated ids, time to first token, prefill and decode tokens/s, and the
process's peak resident set before the model was loaded (`rss_before_load_kb`: interpreter, torch and the runtime's
imports) and at the end (`vm_hwm_kb`), from /proc/self/status, plus CPU time over wall time during generation
(about K when K threads really work).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "runtime", "python")]

from bench.pymeasure import vm_hwm_kb  # noqa: E402


def cpu_s() -> float:
    """This process's CPU time, every thread included."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def measure_ember(pte: str, prompt: list, new_tokens: int, threads: int) -> dict:
    import torch  # noqa: F401  (ember.llm's tensors; imported before the baseline, as ExecuTorch's side does)
    from ember import llm, runtime

    rss0 = vm_hwm_kb()
    t0 = time.perf_counter()
    program = runtime.load(pte, threads=threads)
    load_s = time.perf_counter() - t0
    cpu0, wall0 = cpu_s(), time.perf_counter()
    # eos_ids=[]: a random-weight model may produce its EOS id; every run generates exactly new_tokens.
    r = llm.generate(program, prompt_ids=prompt, max_new_tokens=new_tokens, eos_ids=[])
    wall = time.perf_counter() - wall0
    return {
        "ids": r.ids,
        "prompt_tokens": r.prompt_tokens,
        "generated_tokens": len(r.ids),
        "ttft_ms": r.time_to_first_token_s * 1e3,
        "prefill_tps": r.prefill_tokens_per_s,
        "decode_tps": r.decode_tokens_per_s,
        "load_ms": load_s * 1e3,
        "cpu_over_wall": (cpu_s() - cpu0) / wall,
        "rss_before_load_kb": rss0,
        "vm_hwm_kb": vm_hwm_kb(),
        "threads": threads,
    }


def import_transformers():
    """transformers, after torchvision's import has been made safe on CPU torch (zoo/public)."""
    from zoo.public import torchvision_cpu

    torchvision_cpu.ensure()
    import transformers

    return transformers


def build_hf(model_dir: str, seed: int = 0):
    """The benchmark's model: transformers' LlamaForCausalLM from model_dir/config.json with weights seeded as
    examples/llm/export.py seeds them (torch.manual_seed, then the model's own initialization)."""
    import torch

    transformers = import_transformers()
    with open(os.path.join(model_dir, "config.json")) as f:
        config = transformers.AutoConfig.for_model(**json.load(f))
    torch.manual_seed(seed)
    return transformers.AutoModelForCausalLM.from_config(config).eval()


def greedy_hf(model, prompt: list, new_tokens: int, clock=time.perf_counter):
    """Greedy generation with the model's KV cache, one forward for the prompt and one per new token (the last new
    token is not fed back, as both runners do). Returns (ids, prefill seconds, first-token seconds, decode seconds)."""
    import torch

    with torch.inference_mode():
        t0 = clock()
        out = model(torch.tensor([prompt]), use_cache=True)
        prefill_s = clock() - t0
        token = int(torch.argmax(out.logits[0, -1]))
        first_s = clock() - t0
        ids, past = [token], out.past_key_values
        t1 = clock()
        while len(ids) < new_tokens:
            out = model(torch.tensor([[token]]), past_key_values=past, use_cache=True)
            past = out.past_key_values
            token = int(torch.argmax(out.logits[0, -1]))
            ids.append(token)
        decode_s = clock() - t1
    return ids, prefill_s, first_s, decode_s


def measure_eager(model_dir: str, prompt: list, new_tokens: int, threads: int) -> dict:
    import torch

    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    import_transformers()  # before the baseline: it is the framework, not the model
    rss0 = vm_hwm_kb()
    t0 = time.perf_counter()
    model = build_hf(model_dir)
    load_s = time.perf_counter() - t0
    cpu0, wall0 = cpu_s(), time.perf_counter()
    ids, prefill_s, first_s, decode_s = greedy_hf(model, prompt, new_tokens)
    wall = time.perf_counter() - wall0
    return {
        "ids": ids,
        "prompt_tokens": len(prompt),
        "generated_tokens": len(ids),
        "ttft_ms": first_s * 1e3,
        "prefill_tps": len(prompt) / prefill_s,
        "decode_tps": (len(ids) - 1) / decode_s if decode_s > 0 else 0.0,
        "load_ms": load_s * 1e3,
        "cpu_over_wall": (cpu_s() - cpu0) / wall,
        "rss_before_load_kb": rss0,
        "vm_hwm_kb": vm_hwm_kb(),
        "threads": torch.get_num_threads(),
        "version": torch.__version__,
    }


def main(argv=None):
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("ember")
    e.add_argument("--pte", required=True)
    g = sub.add_parser("eager")
    g.add_argument("--model-dir", required=True)
    for p in (e, g):
        p.add_argument("--prompt-ids", required=True, help="a JSON list of token ids")
        p.add_argument("--new-tokens", type=int, required=True)
        p.add_argument("--threads", type=int, default=1)
        p.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    with open(a.prompt_ids) as f:
        prompt = json.load(f)
    if a.cmd == "ember":
        r = measure_ember(a.pte, prompt, a.new_tokens, a.threads)
    else:
        r = measure_eager(a.model_dir, prompt, a.new_tokens, a.threads)
    with open(a.out, "w") as f:
        json.dump(r, f)


if __name__ == "__main__":
    main()
