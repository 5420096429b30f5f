"""`ember bundle MODEL -o model.bpte`: export a model (as `ember export` does, same options) and bundle it with
seeded random test cases whose expected outputs eager PyTorch computes (devtools.bundled_program: ExecuTorch's
BundledProgram format); `--verify` then checks them on the C++ runtime (runner_verify), as `ember run X.bpte` does."""

from __future__ import annotations

import argparse
import os

from ember.cli.export import add_export_options, export
from ember.cli.progress import Progress
from ember.cli.verify import ENGINES, verify


def _cases(example, n: int, seed: int):
    import torch

    g = torch.Generator().manual_seed(seed)
    return [
        tuple(torch.randn(a.shape, generator=g).to(a.dtype) if a.is_floating_point() else a.clone() for a in example)
        for _ in range(n)
    ]


def main(argv, prog: str) -> int:
    ap = argparse.ArgumentParser(
        prog=prog,
        description=__doc__,
        epilog="Exit codes: 0 success (and every case within tolerance with --verify), 1 the export or bundling "
        "failed, or a case out of tolerance, 2 usage; with --verify, runner_verify's own: 3 bundle refused, "
        "4 a case's inputs refused, 5 execution failed.",
    )
    add_export_options(ap)
    ap.add_argument("-o", "--output", help="the .bpte to write (default: NAME.bpte here)")
    ap.add_argument("--cases", type=int, default=2, help="test cases (default 2)")
    ap.add_argument("--seed", type=int, default=20261124, help="the cases' random seed")
    ap.add_argument("--atol", type=float, default=1e-5, help="absolute tolerance stored in the bundle")
    ap.add_argument("--rtol", type=float, default=1e-4, help="relative tolerance stored in the bundle")
    ap.add_argument("--verify", action="store_true", help="then verify the cases on the C++ runtime")
    ap.add_argument(
        "--engine",
        choices=ENGINES,
        help="--verify on runner_verify (default in a checkout) or ember.runtime (default in an installed wheel)",
    )
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    if args.cases < 1:
        ap.error("--cases must be at least 1")
    from devtools.bundled_program import bundle

    output = args.output or f"{args.model.rpartition(':')[2]}.bpte"
    steps = 4 if args.quantize else 3
    with Progress(f"{prog} {args.model}", total=steps + 1, quiet=args.quiet) as progress:
        program, inputs, module = export(args, progress, methods=["forward"])
        progress.stage(f"{args.cases} cases through eager", 1)
        cases = _cases(inputs["forward"], args.cases, args.seed)
        bundled = bundle(program, cases, expected=module, atol=args.atol, rtol=args.rtol)
        if os.path.dirname(output):
            os.makedirs(os.path.dirname(output), exist_ok=True)
        bundled.save(output)
    print(f"wrote {output}: {os.path.getsize(output):,} bytes, {args.cases} cases for forward")
    if not args.verify:
        return 0
    return verify(output, args.engine, quiet=args.quiet)
