"""`./ember demo`: the main job on a built-in example model, end to end.

export (torch.export -> exir) -> .pte -> memory plan report -> reference run checked against eager.
Run `python -m examples.demo --model mobilenet_v2_035_96` for another zoo model; `--list` shows them.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import torch

import exir
from examples.models import ZOO, export_methods
from exir.lowering.interpreter import Interpreter


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="ember demo", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="mlp", help="zoo model to export (default: mlp)")
    ap.add_argument("--out", default="out", help="directory for the .pte (default: out/)")
    ap.add_argument("--list", action="store_true", help="list the zoo models and exit")
    args = ap.parse_args(argv)
    if args.list:
        for name, e in ZOO.items():
            print(f"{name:22s} {e.description}")
        return 0
    if args.model not in ZOO:
        print(f"ember demo: unknown model '{args.model}'; choose one of: {', '.join(ZOO)}", file=sys.stderr)
        return 2

    t0 = time.time()
    programs, inputs, module = export_methods(args.model)
    prog = exir.to_edge(programs).to_executorch()
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"{args.model}.pte")
    prog.save(path)
    print(f"exported {args.model} ({ZOO[args.model].description}) -> {path}, {len(prog.buffer)} bytes, "
          f"in {time.time() - t0:.1f}s")
    print(prog.memory_report())

    for method in prog.methods:
        graph = prog.method_graphs[method]
        report = prog.reports[method]
        pools = {p.mem_id: p.planned_bytes for p in report.pools}
        # Re-run the method over its real planned arena: outputs must match eager PyTorch.
        interp = Interpreter(graph, prog.plan_offsets[method], pools)
        got = interp.run(inputs[method])
        want = getattr(module, method)(*inputs[method])
        want = list(want) if isinstance(want, (tuple, list)) else [want]
        err = max((a - b).abs().max().item() for a, b in zip(got, want))
        print(f"method {method}: reference run over the planned arena, max |out - eager| = {err:.2e}")
    print(f"inspect it: python -m exir.inspect {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
