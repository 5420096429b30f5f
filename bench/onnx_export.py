"""ONNX export for the benchmark; runs inside .venv-bench (tools/setup_bench_venv.sh), where torch 2.13's
torch.onnx.export (the torch.export-based exporter, which needs onnxscript) is available.

    python -m bench.onnx_export --out DIR --models a,b --work WORK

A public-zoo model is exported from the torch.export program the harness saved (WORK/<model>/program.pt2; its
definition's libraries are not in this venv), the others from their modules (bench/models.py).

Writes DIR/<model>.onnx (weights inside the file, so its size is comparable with a .pte) and prints one JSON line:
{model: {"onnx_bytes": n, "export_s": seconds, "nodes": n, "opset": n}, "_versions": {...}}.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import sys
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--work", required=True, help="the harness's work folder (public-zoo models' program.pt2)")
    a = ap.parse_args()

    import onnx
    import onnxruntime
    import onnxscript
    import torch

    from bench.models import exported

    # The exporter logs a warning per torchvision operator it cannot register (torchvision is not installed) and
    # prints its progress; neither says anything about the models.
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    os.makedirs(a.out, exist_ok=True)
    report = {}
    for name in [m for m in a.models.split(",") if m]:
        ep, module, args = exported(name, a.work)
        path = os.path.join(a.out, f"{name}.onnx")
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            torch.onnx.export(
                ep if ep is not None else module, args, path, dynamo=True, optimize=True, external_data=False
            )
        elapsed = time.perf_counter() - t0
        model = onnx.load(path)
        report[name] = {
            "onnx_bytes": os.path.getsize(path),
            "export_s": elapsed,
            "nodes": len(model.graph.node),
            "opset": max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
            "path": path,
        }
    report["_versions"] = {
        "torch": torch.__version__,
        "onnx": onnx.__version__,
        "onnxscript": onnxscript.__version__,
        "onnxruntime": onnxruntime.__version__,
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
