"""Bundle zoo models with test cases: `python -m zoo.bundle --out DIR [--cases N] NAME ...` writes
DIR/<name>.bpte (the exported program with N seeded random cases, expected outputs from eager, atol 1e-5 and
rtol 1e-4) and DIR/<name>_bundled.pte (the same program alone, for selective builds of firmware that verifies it).
"""

import argparse
import os
import sys

import torch

import exir
from devtools.bundled_program import bundle
from zoo.models import ZOO, export_methods


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cases", type=int, default=2)
    ap.add_argument("names", nargs="+")
    args = ap.parse_args(argv)
    unknown = [n for n in args.names if n not in ZOO]
    if unknown:
        print(f"zoo.bundle: unknown models {unknown}; choose from {list(ZOO)}", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    for name in args.names:
        programs, inputs, module = export_methods(name)
        prog = exir.to_edge({"forward": programs["forward"]}).to_executorch()
        g = torch.Generator().manual_seed(20261124)
        example = inputs["forward"]
        cases = [tuple(torch.randn(a.shape, generator=g, dtype=a.dtype) for a in example) for _ in range(args.cases)]
        bundle(prog, cases, expected=module, atol=1e-5, rtol=1e-4).save(os.path.join(args.out, f"{name}.bpte"))
        prog.save(os.path.join(args.out, f"{name}_bundled.pte"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
