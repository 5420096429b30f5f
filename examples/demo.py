"""`./ember demo`: the main job on a built-in example model, end to end.

export (torch.export -> exir) -> model.pte -> memory plan -> bazel build //:runner -> run it on the C++
runtime -> compare with eager PyTorch -> report memory and time.
`./ember demo --model mobilenet_v2_035_96` for another zoo model; `--list` shows them.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time


import exir
from zoo.models import ZOO, export_methods
from zoo.runner_io import read_outputs, run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _build_runner() -> str:
    print("building //:runner ...", flush=True)
    r = subprocess.run(["bazel", "build", "//:runner"], cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stderr[-4000:])
        raise SystemExit("ember demo: `bazel build //:runner` failed (output above)")
    return os.path.join(ROOT, "bazel-bin", "runtime", "runner", "runner")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="ember demo", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--model", default="mlp", help="zoo model to export (default: mlp)")
    ap.add_argument("--out", default="out", help="directory for the .pte and run files (default: out/)")
    ap.add_argument("--runs", type=int, default=20, help="timed runs on the runtime (default: 20)")
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
    out_dir = os.path.join(ROOT, args.out) if not os.path.isabs(args.out) else args.out
    os.makedirs(out_dir, exist_ok=True)
    pte = os.path.join(out_dir, f"{args.model}.pte")
    prog.save(pte)
    print(
        f"exported {args.model} ({ZOO[args.model].description}) -> {pte}: {len(prog.buffer):,} bytes "
        f"in {time.time() - t0:.1f}s"
    )
    print(prog.memory_report())

    runner = _build_runner()
    worst = 0.0
    for method in prog.methods:
        work = os.path.join(out_dir, f"{args.model}.{method}")
        r = run(
            runner, pte, inputs[method], work, method=method, runs=args.runs, extra_args=("--print", "4"), timeout=None
        )
        sys.stdout.write(r.stdout)
        if r.returncode != 0:
            sys.stderr.write(r.stderr)
            print(f"ember demo: the runner failed on method '{method}' (exit {r.returncode})", file=sys.stderr)
            return 1
        # Eager, called as many times as the runner ran, so mutable state matches.
        for _ in range(args.runs):
            want = getattr(module, method)(*inputs[method])
        want = list(want) if isinstance(want, (tuple, list)) else [want]
        for got, w in zip(read_outputs(work, want), want):
            worst = max(worst, (got - w).abs().max().item())
    ok = worst <= 1e-4
    print(f"C++ runtime vs eager PyTorch: max |difference| = {worst:.2e} ({'OK' if ok else 'MISMATCH'})")
    print(f"inspect the program: ./ember inspect {os.path.relpath(pte, ROOT)}  (every command: docs/cli.md)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
