"""`bench/run --llm`: text generation with a Llama-family decoder, Ember against ExecuTorch 1.5.1, llama.cpp and eager
PyTorch.

The model is a published architecture with seeded random weights (CONFIGS; SmolLM-135M's Llama config by
default, a 2-layer one for --quick), exported three ways by each framework: fp32, int8 weights (per output channel)
and 8da4w (int4 weight groups, int8 activations per token). Every runner gets the same tokenizer file
(bench/llm_tokenizer.py), the same prompt of a fixed token count, greedy decoding and the same number of new tokens,
and runs at 1 and at 2 threads, pinned to that many CPUs. What runs (bench/README.md, "LLM benchmark"):

  ember     Ember's C++ runner, bazel-bin/examples/llm/llm_runner --threads K (mmapped .pte, its own loop)
  ember_py  Ember's Python path: ember.runtime.load(threads=K) + ember.llm.generate (the loop in Python)
  et        ExecuTorch's TextLLMRunner through its Python bindings (its loop in C++), threadpool reset to K
  llamacpp  llama.cpp (llama-cpp-python's bindings of libllama, built from source) on the same weights as GGUF:
            fp32 -> F32, int8 -> Q8_0, 8da4w -> Q4_0 (bench/llm_gguf.py), n_threads = n_threads_batch = K
  eager     transformers' LlamaForCausalLM with its KV cache, torch.set_num_threads(K) (fp32 only)

Each generation is a process of its own started by bench/peak_rss, so its peak RSS is its own; the Python-hosted
ones also report their peak before the model was loaded, and the report gives the rise above it.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import time
from typing import Dict, List, Optional

from bench import harness as H
from bench import llm_tokenizer
from bench.llm_gguf import VARIANT_QTYPE
from bench.llm_model import CONFIGS, count_parameters, et_checkpoint
from bench.llm_report import BUSY

VARIANTS = ("fp32", "int8", "8da4w")
# ExecuTorch only: its XNNPACK int8 path (bench/llm_et_side.py), beside "-qmode int8", whose weights export folds
# back to fp32. Ember's int8 is compared with both.
ET_EXTRA = ("int8_dynact",)
# ExecuTorch's exports in two processes (two cores; each export is mostly one Python thread).
ET_EXPORT_GROUPS = (("fp32", "int8"), ("8da4w", "int8_dynact"))
FRAMEWORKS = {
    "ember": "Ember, examples/llm/llm_runner (C++: mmapped .pte, prefill + decode loop), --threads K",
    "ember_py": "Ember from Python: ember.runtime.load(pte, threads=K) and ember.llm.generate (loop in Python)",
    "et": "ExecuTorch 1.5.1: export_llama (XNNPACK) and TextLLMRunner through its Python bindings (loop in C++), "
    "threadpool reset to K threads",
    "llamacpp": "llama.cpp (llama-cpp-python 0.3.36, built from source): the same weights as GGUF F32 / Q8_0 / Q4_0 "
    "for fp32 / int8 / 8da4w (the gguf package's quantizers), its C API from Python: llama_decode of the prompt, then "
    "one per token, greedy sampler, n_threads = n_threads_batch = K, F32 KV cache",
    "eager": "eager PyTorch: transformers' LlamaForCausalLM with its KV cache, torch.set_num_threads(K), "
    "inference_mode",
}
LLAMACPP_PYTHON = os.environ.get("EMBER_LLAMACPP_PYTHON", os.path.join(H.ROOT, ".venv-llamacpp", "bin", "python3"))
RUNNER_TARGETS = {
    "//examples/llm:llm_runner": "examples/llm/llm_runner",
    "//runtime/python:_ember_runtime.so": "runtime/python/_ember_runtime.so",
}


def defaults(a) -> dict:
    """The run's settings from the options (--quick: the tiny config, short prompt, one round)."""
    quick = a.quick
    spec = a.llm_config or ("tiny" if quick else "smollm-135m")
    if spec in CONFIGS:
        name, config = spec, dict(CONFIGS[spec])
    else:
        with open(spec) as f:
            name, config = os.path.splitext(os.path.basename(spec))[0], json.load(f)
        config.setdefault("model_type", "llama")
    prompt = a.llm_prompt_tokens or (16 if quick else 64)
    new = a.llm_new_tokens or (16 if quick else 64)
    threads = [int(t) for t in (a.llm_threads or "1,2").split(",") if t]
    return {
        "config_name": name,
        "config": config,
        "prompt_tokens": prompt,
        "new_tokens": new,
        "max_seq_len": prompt + new,
        "group_size": a.llm_group_size,
        "threads": threads,
        "rounds": a.llm_rounds or (1 if quick else 3),
        "et_extended_ops": a.llm_et_extended_ops,
        # --quick leaves ExecuTorch's extra int8 export out: it would add a third of its export time.
        "et_extra_variants": [] if quick else list(ET_EXTRA),
        # llama.cpp's KV cache in F32 like Ember's and ExecuTorch's (its own default is F16).
        "llamacpp_kv_type": "f32",
    }


def cpus_for(threads: int, pin: bool) -> Optional[List[int]]:
    """The last `threads` CPUs this process may use (the existing benchmark pins single-threaded runs to the last)."""
    if not pin:
        return None
    cpus = sorted(os.sched_getaffinity(0))
    return cpus[-threads:] if threads <= len(cpus) else None


# --- preparation (in this process, the project's .venv) ---------------------------------------------------------


def et_fingerprint(env: H.Env, s: dict, eos: int) -> str:
    """Everything ExecuTorch's exports depend on: the model and export settings, the EOS id, the code that makes its
    checkpoint and runs its export, and both venvs' versions (the weights come from .venv's torch and transformers)."""
    import torch
    import transformers

    et_version = H.run(
        [env.et_python, "-c", "import executorch.version as v, torch; print(v.__version__, torch.__version__)"],
        timeout=600,
    ).stdout.strip()
    code = ""
    for name in ("llm_et_side.py", "llm_model.py"):
        with open(os.path.join(H.ROOT, "bench", name)) as f:
            code += f.read()
    key = {
        "config": s["config"],
        "max_seq_len": s["max_seq_len"],
        "group_size": s["group_size"],
        "eos": eos,
        "extended_ops": s["et_extended_ops"],
        "variants": sorted(set(VARIANTS) | set(s["et_extra_variants"])),
        "code": hashlib.sha256(code.encode()).hexdigest(),
        "et": et_version,
        "venv": [torch.__version__, transformers.__version__],
    }
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def prepare(env: H.Env, s: dict, cache: Optional[str], llamacpp: bool = False) -> dict:
    """config.json, tokenizer.json, the prompt (text and ids, checked to be the wanted length), the eager greedy
    reference, an EOS id for ExecuTorch's runner that greedy decoding does not reach, and where ExecuTorch's exports
    go: a folder of `cache` named by their fingerprint, kept across runs (with the checkpoint they need, unless an
    earlier run left them there; `cache` None: no ExecuTorch); with `llamacpp`, the weights as .npz for its GGUF
    conversion (in its venv, which has the gguf package and no torch)."""
    import torch

    from bench.llm_measure import build_hf, greedy_hf

    d = os.path.join(env.work, s["config_name"])
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(s["config"], f, indent=1)
    tok = llm_tokenizer.write(os.path.join(d, "tokenizer.json"), s["config"]["vocab_size"])
    text = llm_tokenizer.prompt(s["prompt_tokens"])
    ids = llm_tokenizer.encode_with_tokenizers(tok, text)
    if len(ids) != s["prompt_tokens"]:
        raise SystemExit(
            f"bench: the prompt encodes to {len(ids)} tokens, not {s['prompt_tokens']}: the synthetic "
            "tokenizer makes every three-letter word one token only from a vocabulary of 36,787 up"
        )
    paths = {
        "dir": d,
        "config": os.path.join(d, "config.json"),
        "tokenizer": tok,
        "prompt_text": os.path.join(d, "prompt.txt"),
        "prompt_ids": os.path.join(d, "prompt_ids.json"),
    }
    with open(paths["prompt_text"], "w") as f:
        f.write(text)
    with open(paths["prompt_ids"], "w") as f:
        json.dump(ids, f)
    t0 = time.perf_counter()
    hf = build_hf(d)
    ref, _, _, _ = greedy_hf(hf, ids, s["new_tokens"])
    with torch.inference_mode():
        logits = hf(torch.tensor([ids])).logits[0, -1]
    # ExecuTorch 1.5.1's runner has no "ignore EOS": its EOS is the token the model finds least likely after the
    # prompt, which greedy decoding does not produce (runs that still stop early are reported as such).
    order = torch.argsort(logits).tolist()
    eos = next(t for t in order if t not in ref and t != 0)
    et_dir = paths["et_dir"] = (
        os.path.join(cache, f"{s['config_name']}-{et_fingerprint(env, s, eos)}") if cache else None
    )
    if et_dir and not os.path.exists(os.path.join(et_dir, "export.json")):
        shutil.rmtree(et_dir, ignore_errors=True)
        os.makedirs(et_dir)
        paths.update(et_checkpoint(hf, s["config"], et_dir))
    if llamacpp:
        from bench.llm_gguf import save_state_dict

        paths["npz"] = save_state_dict(
            hf.state_dict(), os.path.join(d, "weights.npz"), tied=s["config"].get("tie_word_embeddings", False)
        )
    del hf
    H.log(
        f"prepared {s['config_name']} ({count_parameters(s['config']) / 1e6:.1f}M parameters): tokenizer, "
        f"{len(ids)}-token prompt, eager reference, ExecuTorch's checkpoint in {time.perf_counter() - t0:.0f} s"
    )
    from tokenizers import Tokenizer

    t = Tokenizer.from_file(tok)
    return {
        **paths,
        "ids": ids,
        "reference_ids": ref,
        "reference_pieces": [t.decode([i]) for i in ref],
        "et_eos": eos,
        "text": text,
    }


def build_runners(env: H.Env) -> Dict[str, str]:
    """llm_runner and the Python extension in one `bazel build`, copied into the work folder (so a later build in
    this workspace does not change them under the measurement)."""
    log_cmd = f"bazel build {' '.join(RUNNER_TARGETS)}"
    H.log(log_cmd)
    r = H.run(["bazel", "build", *RUNNER_TARGETS], cwd=H.ROOT, timeout=3600)
    if r.returncode != 0:
        raise SystemExit(f"bench: {log_cmd} failed:\n{r.stderr[-3000:]}")
    bin_dir = H.run(["bazel", "info", "bazel-bin"], cwd=H.ROOT, timeout=600).stdout.strip()
    out = {}
    os.makedirs(os.path.join(env.work, "bin"), exist_ok=True)
    for target, rel in RUNNER_TARGETS.items():
        dst = os.path.join(env.work, "bin", os.path.basename(rel))
        shutil.copy2(os.path.join(bin_dir, rel), dst)
        out[target] = dst
    return {"llm_runner": out["//examples/llm:llm_runner"], "extension": out["//runtime/python:_ember_runtime.so"]}


# --- exports ----------------------------------------------------------------------------------------------------


def start_et_export(env: H.Env, s: dict, prep: dict) -> list:
    """ExecuTorch's exports, started in the background; none when an earlier run left the same ones in the cache."""
    if os.path.exists(os.path.join(prep["et_dir"], "export.json")):
        H.log(f"ExecuTorch's exports: reusing {prep['et_dir']} (made by an earlier run with the same inputs)")
        return []
    metadata = json.dumps({"get_bos_id": 0, "get_eos_ids": [prep["et_eos"]]})
    procs = []
    wanted = set(VARIANTS) | set(s["et_extra_variants"])
    for i, group in enumerate(ET_EXPORT_GROUPS):
        group = [v for v in group if v in wanted]
        d = prep["et_dir"]
        args = [
            env.et_python,
            "-m",
            "bench.llm_et_side",
            "export",
            "--checkpoint",
            prep["checkpoint"],
            "--params",
            prep["params"],
            "--max-seq-len",
            str(s["max_seq_len"]),
            "--group-size",
            str(s["group_size"]),
            "--metadata",
            metadata,
            "--out-dir",
            d,
            "--report",
            os.path.join(d, f"export_{i}.json"),
            "--variants",
            ",".join(group),
        ]
        if s["et_extended_ops"]:
            args.append("--extended-ops")
        log = open(os.path.join(d, f"export_{i}.log"), "w")
        procs.append((subprocess.Popen(args, cwd=H.ROOT, stdout=log, stderr=subprocess.STDOUT, text=True), log))
    return procs


def finish_et_export(procs: list, prep: dict) -> dict:
    done = os.path.join(prep["et_dir"], "export.json")
    if not procs:
        with open(done) as f:
            return {**json.load(f), "_reused": True}
    report = {}
    for i, (proc, log) in enumerate(procs):
        rc = proc.wait(timeout=7200)
        log.close()
        if rc != 0:
            with open(log.name) as f:
                tail = f.read()[-2000:]
            raise RuntimeError(f"ExecuTorch's export ({log.name}) exited {rc}:\n{tail}")
        with open(os.path.join(prep["et_dir"], f"export_{i}.json")) as f:
            report.update(json.load(f))
    # Written last, so a folder with it holds every export (an interrupted run leaves none to reuse).
    with open(done, "w") as f:
        json.dump(report, f, indent=1)
    os.remove(prep["checkpoint"])  # 4 bytes a parameter, needed by the exports only
    return report


def start_llamacpp_convert(env: H.Env, prep: dict):
    """The GGUF files (bench/llm_llamacpp_side.py convert, in .venv-llamacpp), started in the background."""
    report = os.path.join(prep["dir"], "llamacpp_convert.json")
    args = [
        LLAMACPP_PYTHON,
        "-m",
        "bench.llm_llamacpp_side",
        "convert",
        "--config",
        prep["config"],
        "--weights",
        prep["npz"],
        "--tokenizer",
        prep["tokenizer"],
        "--out-dir",
        prep["dir"],
        "--qtypes",
        ",".join(VARIANT_QTYPE[v] for v in VARIANTS),
        "--report",
        report,
    ]
    log = open(os.path.join(prep["dir"], "llamacpp_convert.log"), "w")
    return subprocess.Popen(args, cwd=H.ROOT, stdout=log, stderr=subprocess.STDOUT, text=True), log, report


def finish_llamacpp_convert(started, prep: dict) -> dict:
    """{variant: {"path", "pte_bytes" (the .gguf's), "export_s", "qtype", "tensor_types", "head"}, "_versions"}; the
    .npz is removed."""
    proc, log, report = started
    rc = proc.wait(timeout=3600)
    log.close()
    os.remove(prep["npz"])  # 4 bytes a parameter, needed by the conversion only
    if rc != 0:
        with open(log.name) as f:
            raise RuntimeError(f"llama.cpp's GGUF conversion ({log.name}) exited {rc}:\n{f.read()[-2000:]}")
    with open(report) as f:
        by_qtype = json.load(f)
    out = {"_versions": by_qtype.pop("_versions")}
    for v in VARIANTS:
        q = by_qtype[VARIANT_QTYPE[v]]
        types = q["tensors"]
        out[v] = {
            "path": q["path"],
            "pte_bytes": q["bytes"],
            "export_s": q["convert_s"],
            "qtype": q["qtype"],
            "tensor_types": {t: list(types.values()).count(t) for t in sorted(set(types.values()))},
            "head": types.get("output.weight", "tied: token_embd.weight"),
        }
        H.log(f"llama.cpp GGUF {q['qtype']} (for {v}): {q['bytes']:,} bytes in {q['convert_s']:.0f} s")
    return out


def export_ember(s: dict, prep: dict) -> dict:
    """examples/llm/export.py's command line, called in this process (torch and transformers imported once):
    `python -m examples.llm.export --model config.json --max-seq-len N [--quantize ... --group-size G] -o ...`."""
    from examples.llm import export as ember_export

    out = {}
    for variant in VARIANTS:
        path = os.path.join(prep["dir"], f"ember_{variant}.pte")
        argv = ["--model", prep["config"], "--max-seq-len", str(s["max_seq_len"]), "-o", path]
        if variant != "fp32":
            argv += ["--quantize", variant]
        if variant == "8da4w":
            argv += ["--group-size", str(s["group_size"])]
        t0 = time.perf_counter()
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            ember_export.main(argv)
        out[variant] = {
            "path": path,
            "pte_bytes": os.path.getsize(path),
            "export_s": time.perf_counter() - t0,
            "argv": argv,
            "report": text.getvalue(),
        }
        H.log(f"Ember export {variant}: {os.path.getsize(path):,} bytes in {out[variant]['export_s']:.0f} s")
    return out


# --- measurement ------------------------------------------------------------------------------------------------

_RUNNER_RE = {
    "threads": re.compile(r"^llm_runner: model: .*; (\d+) threads?$", re.M),
    "load_ms": re.compile(r"^llm_runner: model: .*; load ([\d.]+) ms", re.M),
    "prompt_tokens": re.compile(r"^llm_runner: prompt tokens: (\d+)$", re.M),
    "generated_tokens": re.compile(r"^llm_runner: generated tokens: (\d+)", re.M),
    "ttft_ms": re.compile(r"^llm_runner: time to first token: ([\d.]+) ms$", re.M),
    "prefill_tps": re.compile(r"^llm_runner: prefill: \d+ tokens in [\d.]+ ms, ([\d.]+) tokens/s$", re.M),
    "decode_tps": re.compile(r"^llm_runner: decode: \d+ tokens in [\d.]+ ms, ([\d.]+) tokens/s$", re.M),
    "planned_bytes": re.compile(r"^llm_runner: memory: (\d+) bytes planned by MethodMeta", re.M),
    "runner_peak_rss_kb": re.compile(r"peak RSS (\d+) KiB$", re.M),
}


def parse_llm_runner(stderr: str) -> dict:
    out = {}
    for key, rx in _RUNNER_RE.items():
        m = rx.search(stderr)
        if m is None and key != "threads":
            raise ValueError(f"llm_runner output without its '{key}' line:\n{stderr[-1500:]}")
        if m is not None:
            out[key] = float(m.group(1)) if "." in m.group(1) else int(m.group(1))
    return out


def agreement(got: List, want: List) -> int:
    """How many leading tokens (ids, or ExecuTorch's text pieces) equal eager PyTorch's fp32 greedy ones."""
    n = 0
    for g, w in zip(got, want):
        if g != w:
            break
        n += 1
    return n


def busy_s(cpus) -> float:
    """CPU seconds the given CPUs (None: all) have spent busy since boot, from /proc/stat (idle and iowait left out)."""
    total = 0
    with open("/proc/stat") as f:
        for line in f:
            name, *fields = line.split()
            if not name.startswith("cpu") or name == "cpu":
                continue
            if cpus is None or int(name[3:]) in cpus:
                user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
                total += user + nice + system + irq + softirq + steal
    return total / os.sysconf("SC_CLK_TCK")


def measure_one(
    env: H.Env, fw: str, variant: str, threads: int, s: dict, prep: dict, bins: dict, exports: dict, pin: bool
) -> dict:
    cpus = cpus_for(threads, pin)
    e = env.with_cpus(cpus)
    out_json = os.path.join(env.work, "_result.json")
    if os.path.exists(out_json):
        os.remove(out_json)
    n = str(s["new_tokens"])
    if fw == "ember":
        args = [
            bins["llm_runner"],
            "--model",
            exports["ember"][variant]["path"],
            "--tokenizer",
            prep["tokenizer"],
            "--prompt",
            prep["text"],
            "--max-new-tokens",
            n,
            "--ignore-eos",
            "--no-bos",
            "--ids",
            "--threads",
            str(threads),
        ]
    elif fw == "ember_py":
        args = [
            env.python,
            "-m",
            "bench.llm_measure",
            "ember",
            "--pte",
            exports["ember"][variant]["path"],
            "--prompt-ids",
            prep["prompt_ids"],
            "--new-tokens",
            n,
            "--threads",
            str(threads),
            "--out",
            out_json,
        ]
    elif fw == "et":
        facts = os.path.join(env.work, "_et_facts.json")
        with open(facts, "w") as f:
            json.dump(exports["et"][variant], f)
        args = [
            env.et_python,
            "-m",
            "bench.llm_et_side",
            "run",
            "--pte",
            exports["et"][variant]["path"],
            "--facts",
            facts,
            "--tokenizer",
            prep["tokenizer"],
            "--prompt-file",
            prep["prompt_text"],
            "--new-tokens",
            n,
            "--threads",
            str(threads),
            "--out",
            out_json,
        ]
    elif fw == "llamacpp":
        args = [
            LLAMACPP_PYTHON,
            "-m",
            "bench.llm_llamacpp_side",
            "run",
            "--gguf",
            exports["llamacpp"][variant]["path"],
            "--prompt-file",
            prep["prompt_text"],
            "--prompt-ids",
            prep["prompt_ids"],
            "--new-tokens",
            n,
            "--threads",
            str(threads),
            "--max-seq-len",
            str(s["max_seq_len"]),
            "--kv-type",
            s["llamacpp_kv_type"],
            "--out",
            out_json,
        ]
    else:
        args = [
            env.python,
            "-m",
            "bench.llm_measure",
            "eager",
            "--model-dir",
            prep["dir"],
            "--prompt-ids",
            prep["prompt_ids"],
            "--new-tokens",
            n,
            "--threads",
            str(threads),
            "--out",
            out_json,
        ]
    busy0 = busy_s(cpus)
    rc, out, err, maxrss = H._spawn(e, args, timeout=3600)
    # What else ran on this run's CPUs meanwhile, in CPUs' worth (0.5: half a CPU taken by other processes). On a
    # shared machine it tells a slow run from a slow runtime; a multi-threaded run suffers most from it.
    other = busy_s(cpus) - busy0 - (e.last_spawn.get("cpu_s") or 0.0)
    if rc != 0:
        raise RuntimeError(f"{os.path.basename(args[0])} exited {rc}: {err.strip()[-1500:]}")
    if fw == "ember":
        r = parse_llm_runner(err)
        r["ids"] = [int(t) for t in out.split()]
        # Whole process (load and tokenizer included), from the launcher: the C++ runner reports no phases.
        r["cpu_over_wall"] = e.last_spawn["cpu_s"] / e.last_spawn["wall_s"] if e.last_spawn.get("cpu_s") else None
    else:
        with open(out_json) as f:
            r = json.load(f)
    r["maxrss_kb"] = maxrss
    r["others_load"] = max(0.0, other / e.last_spawn["wall_s"]) if e.last_spawn.get("cpu_s") is not None else None
    if "rss_before_load_kb" in r and maxrss is not None:
        r["rss_above_baseline_kb"] = maxrss - r["rss_before_load_kb"]
    r["cpus"] = cpus
    if "ids" in r:
        r["agree_with_eager"] = agreement(r.pop("ids"), prep["reference_ids"])
    elif "text" in r:
        r["agree_with_eager"] = agreement_text(r.pop("text"), prep["reference_pieces"])
    return r


def agreement_text(text: str, pieces: List[str]) -> int:
    n, at = 0, 0
    for p in pieces:
        if not text.startswith(p, at):
            break
        at += len(p)
        n += 1
    return n


RETRIES = 2
METRICS = (
    "prefill_tps",
    "decode_tps",
    "ttft_ms",
    "maxrss_kb",
    "rss_above_baseline_kb",
    "rss_before_load_kb",
    "cpu_over_wall",
    "load_ms",
    "others_load",
)


def _median(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def _quiet(r: dict) -> bool:
    return "error" not in r and (r.get("others_load") or 0.0) <= BUSY


def summarize(rounds: List[dict]) -> dict:
    """The medians of every metric over the rounds run without other processes busy on their CPUs (over all rounds
    when none was), the rest from the first of those, and every round kept."""
    ok = [r for r in rounds if "error" not in r]
    if not ok:
        return {"error": rounds[0]["error"], "rounds": rounds}
    used = [r for r in ok if _quiet(r)] or ok
    out = {k: v for k, v in used[0].items() if k not in METRICS}
    for k in METRICS:
        out[k] = _median([r.get(k) for r in used])
    out.update(
        rounds=rounds,
        rounds_used=len(used),
        rounds_busy=len(ok) - sum(map(_quiet, ok)),
        generated_min=min(r["generated_tokens"] for r in used),
    )
    return out


def wait_quiet(cpus, limit_s: float = 60.0) -> None:
    """Waits (at most limit_s) until other processes leave the CPUs a run is pinned to."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        b0 = busy_s(cpus)
        time.sleep(0.5)
        if (busy_s(cpus) - b0) / 0.5 <= BUSY:
            return


def measure_all(env, s, prep, bins, exports, frameworks, pin) -> Dict[str, dict]:
    raw: Dict[str, List[dict]] = {}
    jobs = []
    for threads in s["threads"]:
        for variant in VARIANTS:
            jobs += [(fw, variant, threads) for fw in ("ember", "ember_py", "et", "llamacpp") if fw in frameworks]
        if "et" in frameworks:
            jobs += [("et", variant, threads) for variant in s["et_extra_variants"]]
        if "eager" in frameworks:
            jobs.append(("eager", "fp32", threads))

    def measure(job, label):
        fw, variant, threads = job
        key = f"{fw}/{variant}/{threads}"
        H.log(f"{label}: {key}")
        try:
            r = measure_one(env, fw, variant, threads, s, prep, bins, exports, pin)
        except Exception as e:  # recorded; the other measurements go on
            r = {"error": f"{type(e).__name__}: {e}"[:2000]}
            H.log(f"{key} failed: {r['error'][:300]}")
        raw.setdefault(key, []).append(r)

    # Rounds interleave every job, so a burst of load from elsewhere on a shared machine falls on all alike.
    for rnd in range(s["rounds"]):
        for job in jobs:
            measure(job, f"round {rnd + 1}/{s['rounds']}")
    # A run that had another process busy on its CPUs is measured again, once they are quiet (up to a minute's
    # wait), up to RETRIES times: a 2-thread run beside one busy process runs at a fraction of its speed.
    for attempt in range(RETRIES):
        todo = [job for job in jobs if sum(map(_quiet, raw[f"{job[0]}/{job[1]}/{job[2]}"])) < s["rounds"]]
        for job in todo:
            wait_quiet(cpus_for(job[2], pin))
            measure(job, f"again ({attempt + 1}/{RETRIES}), other processes were busy beside it")
    return {key: summarize(rounds) for key, rounds in raw.items()}


def llamacpp_venv_ok() -> Optional[str]:
    if not os.path.exists(LLAMACPP_PYTHON):
        return f"no llama.cpp venv at {LLAMACPP_PYTHON} (tools/setup_llamacpp_venv.sh)"
    r = H.run([LLAMACPP_PYTHON, "-c", "import gguf, llama_cpp"], timeout=600)
    return None if r.returncode == 0 else f"llama_cpp or gguf does not import: {r.stderr.strip()[-500:]}"


def llamacpp_build_info() -> Optional[str]:
    """What tools/setup_llamacpp_venv.sh recorded of the build: its time and llama.cpp's CPU features."""
    path = os.path.join(os.path.dirname(os.path.dirname(LLAMACPP_PYTHON)), ".ember-llamacpp-build.txt")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return f.read().strip()


def et_venv_ok(env: H.Env) -> Optional[str]:
    if not os.path.exists(env.et_python):
        return f"no ExecuTorch venv at {env.et_python} (tools/setup_executorch_venv.sh)"
    r = H.run([env.et_python, "-c", "from executorch.extension.llm.runner import TextLLMRunner"], timeout=600)
    return None if r.returncode == 0 else f"ExecuTorch's LLM runner does not import: {r.stderr.strip()[-500:]}"


def main(a) -> int:
    started = time.monotonic()
    # The machine's load when the run starts and ends: on a shared machine it says how much the numbers can mean.
    load_start = [round(x, 2) for x in os.getloadavg()]
    s = defaults(a)
    unusable = [t for t in s["threads"] if cpus_for(t, True) is None]
    if unusable:
        H.log(f"this machine has fewer CPUs than {unusable} threads; those runs are left out")
        s["threads"] = [t for t in s["threads"] if t not in unusable]
    work = os.path.abspath(os.path.join(a.work, "llm"))
    env = H.Env(work, None)
    H.clean_work(work)
    rss_floor = H.build_peak_rss(env)
    frameworks = list(FRAMEWORKS)
    skipped = {}
    why = et_venv_ok(env)
    if why:
        skipped["et"] = why
        frameworks.remove("et")
    why = llamacpp_venv_ok()
    if why:
        skipped["llamacpp"] = why
        frameworks.remove("llamacpp")
    prep = prepare(
        env,
        s,
        os.path.abspath(os.path.join(a.work, H.LLM_CACHE)) if "et" in frameworks else None,
        llamacpp="llamacpp" in frameworks,
    )
    # ExecuTorch's exports take longest: they start first and run beside the build and Ember's exports.
    proc = start_et_export(env, s, prep) if "et" in frameworks else None
    gguf_proc = start_llamacpp_convert(env, prep) if "llamacpp" in frameworks else None
    et_reused = proc == []
    bins = build_runners(env)
    os.environ["EMBER_RUNTIME_LIB"] = bins["extension"]  # ember_py runs the extension built with llm_runner
    H.log(f"exporting {', '.join(VARIANTS)}: Ember here, ExecuTorch in its venv (in parallel)")
    exports = {"ember": export_ember(s, prep)}
    if proc is not None:
        try:
            exports["et"] = finish_et_export(proc, prep)
        except Exception as e:
            skipped["et"] = f"{type(e).__name__}: {e}"[:2000]
            frameworks.remove("et")
            H.log(skipped["et"])
    if gguf_proc is not None:
        try:
            exports["llamacpp"] = finish_llamacpp_convert(gguf_proc, prep)
        except Exception as e:
            skipped["llamacpp"] = f"{type(e).__name__}: {e}"[:2000]
            frameworks.remove("llamacpp")
            H.log(skipped["llamacpp"])
    H.log(f"exports done in {time.monotonic() - started:.0f} s")
    # The memory roofline of decode: one thread's bandwidth, measured before the runs, on the 1-thread runs' CPU.
    from bench import llm_roofline

    bandwidth = llm_roofline.measure_bandwidth(env, cpus_for(1, not a.no_pin), repeats=3 if a.quick else 5)
    H.log(f"memory bandwidth, one thread: {bandwidth}")
    runs = measure_all(env, s, prep, bins, exports, frameworks, not a.no_pin)
    import torch

    machine = H.machine_info(env)
    machine["load_average"] = {"start": load_start, "end": [round(x, 2) for x in os.getloadavg()]}
    machine["memory_bandwidth"] = bandwidth
    machine["pinning"] = (
        "each measured process pinned to the last K CPUs for K threads" if not a.no_pin else "not pinned"
    )
    result = {
        "mode": "llm",
        "date": datetime.date.today().isoformat(),
        "quick": a.quick,
        "machine": machine,
        "settings": {
            **s,
            "parameters": count_parameters(s["config"]),
            "et_eos_id": prep["et_eos"],
            "rss_floor_kb": rss_floor,
            "variants": list(VARIANTS),
            "et_exports_reused": et_reused,
            "llamacpp_qtypes": {v: VARIANT_QTYPE[v] for v in VARIANTS},
            "llamacpp_build": llamacpp_build_info() if "llamacpp" in frameworks else None,
            "roofline": llm_roofline.roofline(
                s["config"], VARIANTS, s["group_size"], s["prompt_tokens"], s["new_tokens"], bandwidth.get("read_gbs")
            ),
        },
        "frameworks": {fw: {"description": FRAMEWORKS[fw], "skipped": skipped.get(fw)} for fw in FRAMEWORKS},
        "exports": {
            fw: {v: {k: x for k, x in e.items() if k != "report"} for v, e in ex.items() if not v.startswith("_")}
            for fw, ex in exports.items()
        },
        "reference": {
            "eager_fp32_greedy_ids": prep["reference_ids"],
            "prompt": prep["text"],
            "prompt_ids": prep["ids"],
        },
        "runs": runs,
        "versions": {
            "torch (.venv)": torch.__version__,
            **{f"{k} (.venv-executorch)": v for k, v in exports.get("et", {}).get("_versions", {}).items()},
            **{f"{k} (.venv-llamacpp)": v for k, v in exports.get("llamacpp", {}).get("_versions", {}).items()},
        },
    }
    result["wall_s"] = round(time.monotonic() - started, 1)
    from bench import llm_report

    stem = a.name or (result["date"] + ("-llm-quick" if a.quick else "-llm"))
    os.makedirs(a.out, exist_ok=True)
    json_path, md_path = os.path.join(a.out, f"{stem}.json"), os.path.join(a.out, f"{stem}.md")
    H.write_results(json_path, md_path, result, llm_report.markdown(result))
    H.log(f"wrote {json_path}, {md_path} in {result['wall_s']:.0f} s")
    return 0
