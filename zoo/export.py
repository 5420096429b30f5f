"""Export zoo models to .pte files: `python -m zoo.export --out DIR [NAME ...]` (default: all). Names
from zoo.control_flow (cond_gate, while_refine, ...) and zoo.dynamic (dynamic_mlp) are accepted too."""

import argparse
import os
import sys

import exir
from zoo import control_flow, dynamic
from zoo.models import ZOO, export_methods


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument(
        "--etrecord",
        action="store_true",
        help="also write NAME.etrecord.json, the source map python -m devtools.profile reads",
    )
    ap.add_argument("names", nargs="*", help=f"zoo models (default: all of {', '.join(ZOO)})")
    args = ap.parse_args(argv)
    registries = {
        **{n: control_flow.export_methods for n in control_flow.MODELS},
        **{n: dynamic.export_methods for n in dynamic.MODELS},
    }
    unknown = [n for n in args.names if n not in ZOO and n not in registries]
    if unknown:
        print(f"zoo.export: unknown models {unknown}; choose from {list(ZOO) + list(registries)}", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    for name in args.names or list(ZOO):
        programs, _, _ = registries.get(name, export_methods)(name)
        exir.to_edge(programs).to_executorch().save(os.path.join(args.out, f"{name}.pte"), etrecord=args.etrecord)
    return 0


if __name__ == "__main__":
    sys.exit(main())
