"""Measurement of the Python-hosted frameworks, each in a process of its own (so ru_maxrss is that framework's):

    python -m bench.pymeasure ort   MODEL.onnx  INPUTS.npz [--runs N --warmup N | --target-s S] --out OUT.npz
    python -m bench.pymeasure eager MODEL_NAME  STATE.pt INPUTS.npz [--runs N --warmup N | --target-s S] --out OUT.npz

`ort` imports only onnxruntime and numpy (runs in .venv-bench); `eager` imports torch and the model set (any venv
with torch 2.13). Both print one JSON line: {"load_us", "runs", "warmup", "median_us", "p90_us", "mean_us",
"min_us", "rss_before_load_kb", "vm_hwm_kb", "threads", "version"} (the two RSS figures are this process's
peak resident set before loading the model and at the end, from /proc/self/status).

Timing: perf_counter_ns around each call, inputs prepared outside the timer; the call includes the framework's
own Python entry (session.run / module.__call__), which is how these frameworks are used from Python.
Load: ORT from the .onnx file to a ready InferenceSession (graph optimizations included); eager from the saved
state dict to a module ready to call (constructing the module and loading its weights).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def vm_hwm_kb() -> int:
    """The process's peak resident set so far (VmHWM), in KiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def stats(times_ns):
    s = sorted(times_ns)
    n = len(s)

    def rank(percent):  # nearest rank, as the C++ runners do
        return s[(n * percent + 99) // 100 - 1]

    return {"median_us": rank(50) / 1e3, "p90_us": rank(90) / 1e3, "mean_us": sum(s) / n / 1e3, "min_us": s[0] / 1e3}


def plan_runs(estimate_us: float, target_s: float, min_runs: int, max_runs: int):
    """(runs, warmup) so the timed runs take about target_s: at least min_runs, at most max_runs; warm-up is a
    tenth of that, at least 2 runs (caches, lazy initialization, branch predictors)."""
    runs = int(target_s * 1e6 / max(estimate_us, 0.01))
    runs = max(min_runs, min(max_runs, runs))
    return runs, max(2, min(runs // 10, 500))


def time_calls(
    call, runs: int, warmup: int, target_s: float = 0.0, min_runs: int = 10, max_runs: int = 5000, before=None
):
    """(per-call times in ns, warm-up calls made). With target_s, runs and warmup are planned from a few untimed
    calls (plan_runs). `before`, when given, runs ahead of every call outside the timer (setting inputs)."""
    clock = time.perf_counter_ns

    def once():
        if before is not None:
            before()
        t0 = clock()
        call()
        return clock() - t0

    if target_s:
        once()  # cold
        runs, warmup = plan_runs(sum(once() for _ in range(3)) / 3e3, target_s, min_runs, max_runs)
    for _ in range(warmup):
        once()
    return [once() for _ in range(runs)], warmup


def measure_ort(model_path, inputs_path, runs, warmup, out_path, **plan):
    import numpy as np
    import onnxruntime as ort

    arrays = np.load(inputs_path)
    inputs = [arrays[f"input_{i}"] for i in range(len(arrays.files))]
    rss0 = vm_hwm_kb()
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    t0 = time.perf_counter_ns()
    sess = ort.InferenceSession(model_path, sess_options=opts, providers=["CPUExecutionProvider"])
    load_ns = time.perf_counter_ns() - t0
    feeds = {i.name: x for i, x in zip(sess.get_inputs(), inputs)}
    result = {}

    def call():
        result["out"] = sess.run(None, feeds)

    times, warmup = time_calls(call, runs, warmup, **plan)
    np.savez(out_path, **{f"output_{i}": o for i, o in enumerate(result["out"])})
    return {
        "load_us": load_ns / 1e3,
        "runs": len(times),
        "warmup": warmup,
        **stats(times),
        "rss_before_load_kb": rss0,
        "vm_hwm_kb": vm_hwm_kb(),
        "threads": 1,
        "version": ort.__version__,
    }


def measure_eager(model_name, state_path, inputs_path, runs, warmup, out_path, **plan):
    import numpy as np
    import torch

    sys.path.insert(0, ROOT)
    from bench.models import MODELS

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    arrays = np.load(inputs_path)
    inputs = [torch.from_numpy(arrays[f"input_{i}"]) for i in range(len(arrays.files))]
    rss0 = vm_hwm_kb()
    t0 = time.perf_counter_ns()
    module, _ = MODELS[model_name].build()
    module.load_state_dict(torch.load(state_path, weights_only=True))
    module.eval()
    load_ns = time.perf_counter_ns() - t0
    result = {}

    def call():
        with torch.inference_mode():
            out = module(*inputs)
        result["out"] = out

    times, warmup = time_calls(call, runs, warmup, **plan)
    outs = result["out"] if isinstance(result["out"], (tuple, list)) else [result["out"]]
    np.savez(out_path, **{f"output_{i}": o.numpy() for i, o in enumerate(outs)})
    return {
        "load_us": load_ns / 1e3,
        "runs": len(times),
        "warmup": warmup,
        **stats(times),
        "rss_before_load_kb": rss0,
        "vm_hwm_kb": vm_hwm_kb(),
        "threads": torch.get_num_threads(),
        "version": torch.__version__,
    }


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    o = sub.add_parser("ort")
    o.add_argument("model")
    o.add_argument("inputs")
    e = sub.add_parser("eager")
    e.add_argument("model")
    e.add_argument("state")
    e.add_argument("inputs")
    for p in (o, e):
        p.add_argument("--runs", type=int, default=0, help="timed runs (default: planned from --target-s)")
        p.add_argument("--warmup", type=int, default=0)
        p.add_argument("--target-s", type=float, default=1.0, help="time the timed runs should take")
        p.add_argument("--min-runs", type=int, default=10)
        p.add_argument("--max-runs", type=int, default=5000)
        p.add_argument("--out", required=True)
    a = ap.parse_args()
    plan = {} if a.runs else {"target_s": a.target_s, "min_runs": a.min_runs, "max_runs": a.max_runs}
    if a.cmd == "ort":
        r = measure_ort(a.model, a.inputs, a.runs, a.warmup, a.out, **plan)
    else:
        r = measure_eager(a.model, a.state, a.inputs, a.runs, a.warmup, a.out, **plan)
    print(json.dumps(r))


if __name__ == "__main__":
    main()
