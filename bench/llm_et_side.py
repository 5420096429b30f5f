"""ExecuTorch's side of the LLM benchmark; runs inside .venv-executorch (tools/setup_executorch_venv.sh).

    python -m bench.llm_et_side export --checkpoint W.pth --params P.json --max-seq-len N --group-size G
                                       --metadata JSON --out-dir D --report R.json --variants fp32,int8,8da4w
                                       [--extended-ops]
        ExecuTorch's own LLM export (examples/models/llama/export_llama: its Llama definition, its source
        transforms and quantizers, XNNPACK) of each variant, as the command line
          python -m executorch.examples.models.llama.export_llama --model llama3 --checkpoint W.pth
            --params P.json -kv --use_sdpa_with_kv_cache -X [--xnnpack-extended-ops] -d fp32
            --max_seq_length N --max_context_length N --metadata JSON
            [-qmode int8 | -qmode 8da4w -G G | --pt2e_quantize xnnpack_dynamic]
            --output-dir D --output_name D/et_<variant>.pte
        would run it (the same parser and entry point, called in one process to import ExecuTorch once). Writes
        --report R.json: {variant: {"path", "pte_bytes", "export_s", "operators", "delegates", "planned",
        "command"}}.

    python -m bench.llm_et_side run --pte P --tokenizer T --prompt-file F --new-tokens N --threads K --out R.json
        one greedy generation with ExecuTorch's TextLLMRunner (its C++ prefill and decode loop, through the wheel's
        Python bindings), its threadpool reset to K threads first. Writes R.json (the fields of
        bench/llm_measure.py, plus ExecuTorch's own Stats).

Thread count: the runner's kernels (XNNPACK's delegate, the custom SDPA op) take their threads from the wheel's
one threadpool (libexecutorch_threadpool.so, which the runner's extension loads through the bindings' _C), sized to
the machine's cores by default; the bindings' _unsafe_reset_threadpool(K) (portable_lib re-exports it) resizes
that pool. The run records the pool's size as the bindings report it and CPU time over wall time during decode,
which shows whether K threads really worked.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import json
import os
import resource
import shlex
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.pymeasure import vm_hwm_kb  # noqa: E402

# The three weight formats both frameworks export, and "int8_dynact": ExecuTorch's XNNPACK int8 path
# (--pt2e_quantize xnnpack_dynamic: int8 weights per channel, activations quantized to int8 at run time), measured
# beside its "-qmode int8", whose int8 weights export folds back to fp32 (see the report).
VARIANT_FLAGS = {
    "fp32": [],
    "int8": ["-qmode", "int8"],
    "8da4w": ["-qmode", "8da4w"],
    "int8_dynact": ["--pt2e_quantize", "xnnpack_dynamic"],
}


def package_dir() -> str:
    import executorch.version  # not executorch.exir: seconds of imports the runner does not need

    return os.path.dirname(os.path.abspath(executorch.version.__file__))


def program_facts(path: str) -> dict:
    from executorch.exir._serialize._program import deserialize_pte_binary

    with open(path, "rb") as f:
        p = deserialize_pte_binary(f.read())
    p = getattr(p, "program", p)
    plan = next(pl for pl in p.execution_plan if pl.name == "forward")
    return {
        "operators": sorted({f"{o.name}.{o.overload}" if o.overload else o.name for o in plan.operators}),
        "delegates": [d.id for d in plan.delegates],
        "planned": [int(b) for b in plan.non_const_buffer_sizes[1:]],
    }


def export(a) -> dict:
    import torch
    from executorch.examples.models.llama.export_llama_lib import build_args_parser, export_llama

    os.makedirs(a.out_dir, exist_ok=True)
    report = {}
    for variant in a.variants.split(","):
        # A name ending in .pte is taken as the whole path (else: output dir / name + ".pte").
        path = os.path.join(os.path.abspath(a.out_dir), f"et_{variant}.pte")
        argv = [
            "--model",
            "llama3",
            "--checkpoint",
            a.checkpoint,
            "--params",
            a.params,
            "-kv",
            "--use_sdpa_with_kv_cache",
            "-X",
            "-d",
            "fp32",
            "--max_seq_length",
            str(a.max_seq_len),
            "--max_context_length",
            str(a.max_seq_len),
            "--metadata",
            a.metadata,
            "--output-dir",
            a.out_dir,
            "--output_name",
            path,
        ]
        if a.extended_ops:
            argv.insert(argv.index("-X") + 1, "--xnnpack-extended-ops")
        argv += VARIANT_FLAGS[variant]
        if variant == "8da4w":
            argv += ["-G", str(a.group_size)]
        torch.manual_seed(42)  # export_llama's main() seeds so; the weights come from the checkpoint anyway
        t0 = time.perf_counter()
        export_llama(build_args_parser().parse_args(argv))
        elapsed = time.perf_counter() - t0
        command = "python -m executorch.examples.models.llama.export_llama " + " ".join(shlex.quote(x) for x in argv)
        report[variant] = {
            "path": path,
            "command": command,
            "pte_bytes": os.path.getsize(path),
            "export_s": elapsed,
            **program_facts(path),
        }
        print(f"llm_et_side: exported {path}", file=sys.stderr, flush=True)
    from executorch.version import __version__

    report["_versions"] = {"executorch": __version__, "torch": torch.__version__}
    with open(a.report, "w") as f:
        json.dump(report, f, indent=1)
    return report


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def load_missing_kernels(operators):
    """The bindings register ExecuTorch's portable and optimized kernels and XNNPACK; the LLM custom ops
    (llama::sdpa_with_kv_cache, ...) and the quantized kernels live in libraries of their own, which register
    their kernels when loaded. Loads those the program needs; returns (what was loaded, operators still without a
    kernel)."""
    import torch
    from executorch.extension.pybindings import _C

    loaded = []
    missing = set(operators) - set(_C._get_operator_names())
    if any(o.startswith("llama::") for o in missing):
        # What executorch.extension.llm.custom_ops does, without that module's torch._inductor imports (seconds).
        for lib in glob.glob(os.path.join(package_dir(), "extension", "llm", "custom_ops", "libcustom_ops_aot_lib.*")):
            torch.ops.load_library(lib)
            loaded.append(os.path.basename(lib))
    if any(o.startswith("quantized_decomposed::") for o in missing):
        for lib in glob.glob(os.path.join(package_dir(), "lib", "libexecutorch_kernels_quantized*.so")):
            ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
            loaded.append(os.path.basename(lib))
    still = sorted(set(operators) - set(_C._get_operator_names()))
    return loaded, still


def run(a) -> dict:
    import torch
    from executorch.extension.llm.runner import GenerationConfig, TextLLMRunner

    # The bindings' core module, which portable_lib re-exports (importing portable_lib pulls in exir and torchao:
    # seconds, and memory before the baseline, for nothing the runner uses).
    from executorch.extension.pybindings import _C

    torch.set_num_threads(a.threads)
    _C._unsafe_reset_threadpool(a.threads)
    pool = _C._threadpool_get_thread_count()
    with open(a.facts) as f:
        operators = json.load(f)["operators"]
    extra_libs, unregistered = load_missing_kernels(operators)
    with open(a.prompt_file) as f:
        prompt = f.read()
    rss0 = vm_hwm_kb()
    t0 = time.perf_counter()
    runner = TextLLMRunner(a.pte, a.tokenizer)
    construct_ms = (time.perf_counter() - t0) * 1e3
    marks, pieces, stats = [], [], {}

    def on_token(piece):
        marks.append((time.perf_counter(), cpu_s()))
        pieces.append(piece)

    def on_stats(s):
        for k in (
            "model_load_start_ms",
            "model_load_end_ms",
            "inference_start_ms",
            "prompt_eval_end_ms",
            "first_token_ms",
            "inference_end_ms",
            "aggregate_sampling_time_ms",
            "num_prompt_tokens",
            "num_generated_tokens",
        ):
            stats[k] = int(getattr(s, k))

    config = GenerationConfig(echo=False, max_new_tokens=a.new_tokens, temperature=0.0)
    runner.generate(prompt, config, on_token, on_stats)
    n = len(marks)
    decode_wall = marks[-1][0] - marks[0][0] if n > 1 else 0.0
    prefill_ms = stats["prompt_eval_end_ms"] - stats["inference_start_ms"]
    return {
        "text": "".join(pieces),
        "prompt_tokens": stats["num_prompt_tokens"],
        "generated_tokens": n,
        # ExecuTorch's own Stats, in whole milliseconds: the first token is counted from inference start
        # (after the lazy load of the forward method), prefill tokens/s over prompt evaluation (encode + prefill).
        "ttft_ms": stats["first_token_ms"] - stats["inference_start_ms"],
        "prefill_tps": stats["num_prompt_tokens"] / (prefill_ms / 1e3) if prefill_ms > 0 else None,
        "prefill_ms": prefill_ms,
        # Decode from the token callbacks (perf_counter), as Ember's runners count it: the tokens after the first
        # over the time after it. The callbacks come from the C++ loop; each costs a few microseconds.
        "decode_tps": (n - 1) / decode_wall if decode_wall > 0 else 0.0,
        "cpu_over_wall": (marks[-1][1] - marks[0][1]) / decode_wall if decode_wall > 0 else None,
        "load_ms": construct_ms + stats["model_load_end_ms"] - stats["model_load_start_ms"],
        "rss_before_load_kb": rss0,
        "vm_hwm_kb": vm_hwm_kb(),
        "threads": a.threads,
        "threadpool_threads": pool,
        "extra_kernel_libs": extra_libs,
        "unregistered_operators": unregistered,
        "et_stats": stats,
    }


def main(argv=None):
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export")
    e.add_argument("--checkpoint", required=True)
    e.add_argument("--params", required=True)
    e.add_argument("--max-seq-len", type=int, required=True)
    e.add_argument("--group-size", type=int, required=True)
    e.add_argument("--metadata", required=True)
    e.add_argument("--out-dir", required=True)
    e.add_argument("--report", required=True, help="where the JSON report goes")
    e.add_argument("--variants", default="fp32,int8,8da4w")
    e.add_argument(
        "--extended-ops",
        action="store_true",
        help="--xnnpack-extended-ops: XNNPACK takes every op "
        "it can (fp32 linears too), not only the dynamically quantized linears",
    )
    r = sub.add_parser("run")
    r.add_argument("--pte", required=True)
    r.add_argument("--facts", required=True, help="the export's JSON entry for this program (its operators)")
    r.add_argument("--tokenizer", required=True)
    r.add_argument("--prompt-file", required=True)
    r.add_argument("--new-tokens", type=int, required=True)
    r.add_argument("--threads", type=int, default=1)
    r.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    if a.cmd == "export":
        export(a)
    else:
        result = run(a)
        with open(a.out, "w") as f:
            json.dump(result, f)


if __name__ == "__main__":
    main()
