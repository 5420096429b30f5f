"""LiteRT's side of the benchmark; runs inside .venv-litert (tools/setup_litert_venv.sh).

    python -m bench.litert_side convert --out DIR --models a,b --work WORK
      litert-torch converts each model to DIR/<model>.tflite: a public-zoo model from the torch.export program the
      harness saved (WORK/<model>/program.pt2, its definition's libraries not being in this venv; litert-torch
      takes a module, so the program's own module, ep.module(), with the program's weights), the others from
      bench/models.py. Each model converts in a process of its own, so a converter that aborts fails that model
      only. Prints one JSON line: {model: {"path", "tflite_bytes", "convert_s", "operators": {op: count}} or
      {"error": "..."}, "_versions": {...}}.

    python -m bench.litert_side measure MODEL.tflite INPUTS.npz --threads N [--runs N --warmup N | --target-s S]
        --output-dir DIR
      ai-edge-litert's Interpreter with N threads and its default CPU path (the XNNPACK delegate, which the
      interpreter applies when it allocates tensors), timed like bench/pymeasure.py: perf_counter_ns around
      interpreter.invoke(), the inputs set before every call outside the timer. It speaks Ember's runner's
      language, so the harness measures it in the same interleaved rounds as the C++ runners: the runner's "time:"
      lines on stdout, DIR/output_<i>.bin (raw, as the runner writes them), and DIR/litert.json with the rest
      (threads, peak RSS before loading, "xnnpack": which operators the delegate took, partitions_of below).

Inputs: litert-torch narrows 64-bit model inputs to 32 bits (its default; BERT's int64 token ids become int32), so
each input is cast to the dtype the .tflite declares; the values are the same.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

# Lines the converter and the runtime print on every run (progress, absl's preamble, torchao's optional CUDA
# libraries): left out of an error's text so that the message says what failed.
_NOISE = ("[START]", "[ DONE]", "absl::InitializeLog", "oneDNN custom operations", "Failed to load ", "_pytree.py")


def _quiet_tail(text: str, limit: int = 1500) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip() and not any(n in ln for n in _NOISE)]
    return "\n".join(lines)[-limit:]


def convert_one(name: str, work: str, path: str, report_path: str):
    """Converts one model and writes its facts (or the converter's error) to report_path as JSON."""
    import litert_torch

    from bench.models import exported

    ep, module, args = exported(name, work)
    t0 = time.perf_counter()
    try:
        # The saved program's module carries the program's graph and weights; litert-torch exports it again.
        edge = litert_torch.convert(ep.module() if ep is not None else module.eval(), args)
        edge.export(path)
    except Exception as e:  # recorded for this model; the harness reports it
        facts = {"error": f"litert_torch.convert: {type(e).__name__}: {e}"[:2000]}
    else:
        facts = {
            "path": path,
            "tflite_bytes": os.path.getsize(path),
            "convert_s": time.perf_counter() - t0,
            "operators": operator_counts(path),
        }
    with open(report_path, "w") as f:
        json.dump(facts, f)


def convert_all(out_dir: str, models, work: str):
    import ai_edge_litert
    import litert_torch
    import torch

    os.makedirs(out_dir, exist_ok=True)
    report = {}
    for name in models:
        path = os.path.join(out_dir, f"{name}.tflite")
        facts_path = os.path.join(out_dir, f"{name}.convert.json")
        if os.path.exists(facts_path):
            os.remove(facts_path)
        args = [sys.executable, "-m", "bench.litert_side", "convert-one", name, "--work", work]
        r = subprocess.run(
            args + ["--path", path, "--report", facts_path], cwd=ROOT, capture_output=True, text=True, timeout=3600
        )
        if os.path.exists(facts_path):
            with open(facts_path) as f:
                report[name] = json.load(f)
        else:  # the converter took the process down: its exit status and what it printed last
            report[name] = {"error": f"converting {name}: the process exited {r.returncode}: {_quiet_tail(r.stderr)}"}
    report["_versions"] = {
        "litert-torch": litert_torch.__version__,
        "ai-edge-litert": _dist_version("ai-edge-litert", ai_edge_litert),
        "litert-converter": _dist_version("litert-converter", None),
        "torch": torch.__version__,
    }
    print(json.dumps(report))


def _dist_version(dist: str, module) -> str:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return getattr(module, "__version__", "unknown")


def operator_counts(path: str) -> dict:
    """The .tflite's operators, counted by name, as written (before any delegate takes them)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    interp = Interpreter(
        model_path=path, experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    )
    return dict(sorted(collections.Counter(op["op_name"] for op in interp._get_ops_details()).items()))


def partitions_of(interp) -> dict:
    """Which operators the default delegate (XNNPACK) took, from the interpreter's node list once tensors are
    allocated: each DELEGATE node replaces a partition of the original nodes, namely the nodes that compute its
    output tensors from its input tensors; walking back from its outputs, stopping at its inputs, finds them.
    Whatever no partition covers runs on LiteRT's builtin kernels."""
    ops = interp._get_ops_details()
    delegates = [op for op in ops if op["op_name"] == "DELEGATE"]
    producer = {int(t): op for op in ops if op["op_name"] != "DELEGATE" for t in op["outputs"]}
    covered = set()
    for d in delegates:
        stop = {int(t) for t in d["inputs"]}
        pending = [int(t) for t in d["outputs"]]
        while pending:
            t = pending.pop()
            op = producer.get(t)
            if t in stop or op is None or op["index"] in covered:
                continue
            covered.add(op["index"])
            pending.extend(int(x) for x in op["inputs"] if x >= 0)
    outside = collections.Counter(
        op["op_name"] for op in ops if op["op_name"] != "DELEGATE" and op["index"] not in covered
    )
    return {
        "partitions": len(delegates),
        "operators": sum(1 for op in ops if op["op_name"] != "DELEGATE"),
        "in_xnnpack": len(covered),
        "outside": dict(sorted(outside.items())),
    }


def _signature_tensors(interp):
    """The input and output tensor indices in argument order (args_0, args_1, ...; output_0, ...): the
    interpreter's input list need not follow the module's argument order."""
    sig = interp._get_full_signature_list()
    if len(sig) != 1:
        raise ValueError(f"expected one signature in the .tflite, found {sorted(sig)}")
    (s,) = sig.values()

    def ordered(named):
        return [named[k] for k in sorted(named, key=lambda k: int(k.rsplit("_", 1)[-1]))]

    return ordered(s["inputs"]), ordered(s["outputs"])


def measure(model_path, inputs_path, threads, runs, warmup, out_dir, **plan):
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    from bench.pymeasure import stats, time_calls, vm_hwm_kb

    arrays = np.load(inputs_path)
    rss0 = vm_hwm_kb()
    t0 = time.perf_counter_ns()
    interp = Interpreter(model_path=model_path, num_threads=threads)
    interp.allocate_tensors()  # applies the XNNPACK delegate, which packs the weights
    load_ns = time.perf_counter_ns() - t0
    ins, outs = _signature_tensors(interp)
    details = {d["index"]: d for d in interp.get_input_details()}
    feeds = [(i, arrays[f"input_{n}"].astype(details[i]["dtype"])) for n, i in enumerate(ins)]

    def set_inputs():
        for i, x in feeds:
            interp.set_tensor(i, x)

    times, warmup = time_calls(interp.invoke, runs, warmup, before=set_inputs, **plan)
    os.makedirs(out_dir, exist_ok=True)
    for n, i in enumerate(outs):
        interp.get_tensor(i).tofile(os.path.join(out_dir, f"output_{n}.bin"))
    s = stats(times)
    facts = {"threads": threads, "rss_before_load_kb": rss0, "vm_hwm_kb": vm_hwm_kb(), "xnnpack": partitions_of(interp)}
    with open(os.path.join(out_dir, "litert.json"), "w") as f:
        json.dump(facts, f)
    # The lines bench/harness.py parse_runner reads from Ember's runner and bench/et_runner.
    print(f"time: load {load_ns / 1e3:.3f} us")
    print(f"time: {len(times)} runs, mean {s['mean_us']:.3f} us, min {s['min_us']:.3f} us")
    print(
        f"time: {warmup} warm-up runs, min {s['min_us']:.3f} us, median {s['median_us']:.3f} us, p90 {s['p90_us']:.3f} us"
    )


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("convert")
    c.add_argument("--out", required=True)
    c.add_argument("--models", required=True)
    c.add_argument("--work", required=True, help="the harness's work folder (public-zoo models' program.pt2)")
    one = sub.add_parser("convert-one")
    one.add_argument("model")
    one.add_argument("--work", required=True)
    one.add_argument("--path", required=True)
    one.add_argument("--report", required=True)
    m = sub.add_parser("measure")
    m.add_argument("model")
    m.add_argument("inputs")
    m.add_argument("--threads", type=int, default=1)
    m.add_argument("--runs", type=int, default=0, help="timed runs (default: planned from --target-s)")
    m.add_argument("--warmup", type=int, default=0)
    m.add_argument("--target-s", type=float, default=1.0, help="time the timed runs should take")
    m.add_argument("--min-runs", type=int, default=10)
    m.add_argument("--max-runs", type=int, default=5000)
    m.add_argument("--output-dir", required=True)
    a = ap.parse_args()
    if a.cmd == "convert":
        convert_all(a.out, [n for n in a.models.split(",") if n], a.work)
    elif a.cmd == "convert-one":
        convert_one(a.model, a.work, a.path, a.report)
    else:
        plan = {} if a.runs else {"target_s": a.target_s, "min_runs": a.min_runs, "max_runs": a.max_runs}
        measure(a.model, a.inputs, a.threads, a.runs, a.warmup, a.output_dir, **plan)


if __name__ == "__main__":
    main()
