"""Int8 versions of zoo models: calibrated on seeded random inputs (a set apart from the test inputs), quantized
with exir.quantization, exported like any other model.

    python -m zoo.quantized --out DIR mlp small_cnn    # writes DIR/<name>_int8.pte
"""

import argparse
import os
import sys

import torch

import exir
from exir.quantization import quantize
from zoo.models import ZOO

CALIBRATION_SAMPLES = 16


def calibration_set(name: str, count: int = CALIBRATION_SAMPLES, seed: int = 20261123):
    """`count` input tuples shaped like the zoo entry's, drawn from their own generator."""
    _, args = ZOO[name].build()
    g = torch.Generator().manual_seed(seed)
    return [tuple(torch.randn(a.shape, generator=g) for a in args) for _ in range(count)]


def quantize_zoo(name: str, count: int = CALIBRATION_SAMPLES):
    """(QuantizedModel, example inputs, float module) for zoo entry `name`."""
    module, args = ZOO[name].build()
    return quantize(module, args, calibration_set(name, count)), args, module


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("names", nargs="+", help=f"zoo models ({', '.join(ZOO)})")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    for name in args.names:
        if name not in ZOO:
            print(f"quantized: unknown model '{name}'; choose from {list(ZOO)}", file=sys.stderr)
            return 2
        q, _, _ = quantize_zoo(name)
        exir.to_edge(q.exported_program).to_executorch().save(os.path.join(args.out, f"{name}_int8.pte"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
