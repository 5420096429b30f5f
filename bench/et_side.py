"""ExecuTorch's side of the benchmark; runs inside .venv-executorch (tools/setup_executorch_venv.sh).

    python -m bench.et_side export --out DIR --models a,b --work WORK     ExecuTorch 1.5.1 exports each model twice
      (a public-zoo model from the torch.export program the harness saved in WORK/<model>/program.pt2, since its
      definition's libraries are not in this venv; the others from bench/models.py):
        DIR/<model>.et_portable.pte   to_edge(...).to_executorch(): no delegate, the wheel's CPU kernels
        DIR/<model>.et_xnnpack.pte    to_edge_transform_and_lower(..., XnnpackPartitioner()).to_executorch()
      (an int8 model, bench/models.py: only the XNNPACK one, quantized first by XNNPACKQuantizer with per-channel
      symmetric weights and calibrated on the harness's calibration.npz, as ExecuTorch's XNNPACK examples do)
      and prints one JSON line: {model: {variant: {"planned": [bytes per pool], "instructions": n,
      "operators": [...], "delegates": [...], "export_s": seconds, "pte_bytes": n}}, "_versions": {...},
      "_optimized_ops": [...]}

    python -m bench.et_side pybind --target-s S FILE.pte:INPUTS.npz ...
      a cross-check of bench/et_runner: each program run through ExecuTorch's Python bindings (portable_lib, the
      threadpool reset to 1 thread), timed around Method.execute() with inputs set before each call; prints one
      JSON line {FILE.pte: {"median_us", "runs"}}. This includes the bindings' call overhead (well under a µs).

The programs are measured by bench/et_runner (C++, against the same wheel's runtime); `pybind` only checks it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def _program_facts(buffer: bytes):
    from executorch.exir._serialize._program import deserialize_pte_binary

    p = deserialize_pte_binary(buffer)
    p = getattr(p, "program", p)
    plan = next(pl for pl in p.execution_plan if pl.name == "forward")
    instructions = plan.chains[0].instructions
    return {
        # Index 0 of non_const_buffer_sizes is reserved (constants); the planned pools follow.
        "planned": [int(b) for b in plan.non_const_buffer_sizes[1:]],
        "instructions": len(instructions),
        "operators": sorted({f"{op.name}.{op.overload}" if op.overload else op.name for op in plan.operators}),
        "delegates": [d.id for d in plan.delegates],
    }


def optimized_ops():
    """The operators the wheel's kernel library implements with ExecuTorch's optimized kernels (the rest are its
    portable kernels), read from the library's exported symbols (opt_<name>_out)."""
    import glob
    import re
    import executorch.exir

    package = os.path.dirname(os.path.dirname(os.path.abspath(executorch.exir.__file__)))
    libs = glob.glob(os.path.join(package, "lib", "libexecutorch_kernels_optimized*.so"))
    if not libs:
        return []
    try:
        out = subprocess.run(
            ["nm", "-DC", "--defined-only", libs[0]], capture_output=True, text=True, timeout=60
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return sorted(set(re.findall(r"torch::executor::native::opt_([a-z0-9_]+?)_out\b", out)))


def export(out_dir: str, models, work: str):
    import torch
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge, to_edge_transform_and_lower
    from executorch.version import __version__ as et_version

    from bench.models import MODELS, exported

    os.makedirs(out_dir, exist_ok=True)
    report = {}
    for name in models:
        report[name] = {}
        for variant in ("et_xnnpack",) if MODELS[name].int8 else ("et_portable", "et_xnnpack"):
            t0 = time.perf_counter()
            # A fresh program per variant (lowering may change it in place).
            ep, module, args = exported(name, work)
            if ep is None:
                ep = torch.export.export(module, args)
            if MODELS[name].int8:
                ep = _quantize_xnnpack(ep, args, name, work)
            if variant == "et_portable":
                prog = to_edge(ep).to_executorch()
            else:
                prog = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch()
            buffer = prog.buffer
            elapsed = time.perf_counter() - t0
            path = os.path.join(out_dir, f"{name}.{variant}.pte")
            with open(path, "wb") as f:
                f.write(buffer)
            facts = _program_facts(buffer)
            facts.update(export_s=elapsed, pte_bytes=len(buffer), path=path)
            report[name][variant] = facts
    report["_versions"] = {"executorch": et_version, "torch": torch.__version__}
    report["_optimized_ops"] = optimized_ops()
    print(json.dumps(report))


def _quantize_xnnpack(ep, args, name: str, work: str):
    """The program quantized as ExecuTorch's XNNPACK flow does: XNNPACKQuantizer (int8 activations per tensor,
    per-channel symmetric weights) through PT2E, calibrated on the harness's calibration set."""
    import torch
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    from bench.models import calibration

    quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True))
    prepared = prepare_pt2e(ep.module(), quantizer)
    with torch.no_grad():
        for sample in calibration(work, name):
            prepared(*sample)
    return torch.export.export(convert_pt2e(prepared), args)


def pybind(pairs, target_s: float):
    import numpy as np
    import torch
    from executorch.extension.pybindings import portable_lib as et

    from bench.pymeasure import plan_runs, stats

    et._unsafe_reset_threadpool(1)
    report = {}
    for pair in pairs:
        pte, inputs_path = pair.split(":")
        arrays = np.load(inputs_path)
        inputs = [torch.from_numpy(arrays[f"input_{i}"]) for i in range(len(arrays.files))]
        method = et._load_program(pte).load_method("forward")
        clock = time.perf_counter_ns

        def once():
            method.set_inputs(inputs)
            t0 = clock()
            method.execute()
            return clock() - t0

        estimate = min(once() for _ in range(3))
        runs, warmup = plan_runs(estimate / 1e3, target_s, 3, 20000)
        for _ in range(warmup):
            once()
        times = [once() for _ in range(runs)]
        report[pte] = {
            "median_us": stats(times)["median_us"],
            "runs": runs,
            "threads": et._threadpool_get_thread_count(),
        }
    print(json.dumps(report))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export")
    e.add_argument("--out", required=True)
    e.add_argument("--models", required=True)
    e.add_argument("--work", required=True, help="the harness's work folder (public-zoo models' program.pt2)")
    p = sub.add_parser("pybind")
    p.add_argument("--target-s", type=float, default=0.2)
    p.add_argument("pairs", nargs="+")
    a = ap.parse_args()
    if a.cmd == "export":
        export(a.out, [m for m in a.models.split(",") if m], a.work)
    else:
        pybind(a.pairs, a.target_s)


if __name__ == "__main__":
    main()
