"""python -m tools.heavy opinfo|zoo|fuzz ...: see tools/heavy/__init__.py."""

from __future__ import annotations

import argparse
import sys

from tools import heavy


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m tools.heavy", description=heavy.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="tier", required=True)
    op = sub.add_parser("opinfo", help="the OpInfo sweep (tests/opinfo/sweep.py) in chunks")
    op.add_argument("--results", required=True, help="the chunks' directory (made, or resumed when it exists)")
    op.add_argument("--address", help="an existing Ray cluster (`ray start`'s address, or auto); default: local")
    op.add_argument("--cpus", type=int, help="the local cluster's CPUs (default: all)")
    op.add_argument("--full", action="store_true", help="every sample of every OpInfo in scope")
    op.add_argument("--max-samples", type=int, default=None, help="the first N samples per OpInfo and dtype")
    op.add_argument("--ops", default="", help="comma-separated OpInfo names (default: every OpInfo in scope)")
    op.add_argument("--batch", type=int, default=16, help="samples per exported program")
    op.add_argument("--per-chunk", type=int, default=16, help="(OpInfo, dtype) units per chunk")
    op.add_argument("--out", help="the merged report (markdown); default stdout")
    op.add_argument("--json", help="also write every sample's outcome here (sweep.py --from-json reads it)")
    op.add_argument("--ci-list", help="write the CI tier's samples here, as sweep.py --ci-list does")
    fz = sub.add_parser("fuzz", help="fuzz campaigns (tests/fuzz) in parts, as tools/fuzz.sh long")
    fz.add_argument("targets", nargs="*", help="fuzz targets (default: all, tools/fuzz.sh targets)")
    fz.add_argument("--runs", type=int, default=10_000_000, help="executions per target")
    fz.add_argument("--chunk-runs", type=int, default=2_500_000, help="executions per part (one task)")
    fz.add_argument("--seed", type=int, help="the first part's seed (default: from the commit)")
    fz.add_argument("--results", required=True, help="the parts' directory (made, or resumed when it exists)")
    fz.add_argument("--address", help="an existing Ray cluster (`ray start`'s address, or auto); default: local")
    fz.add_argument("--cpus", type=int, help="the local cluster's CPUs (default: all)")
    fz.add_argument("--out", help="the table (default fuzz-results/<date>-<commit>.md; - for stdout)")
    fz.add_argument(
        "--merge-only", action="store_true", help="run nothing: the table of the targets whose parts are all done"
    )
    zo = sub.add_parser("zoo", help="the public model zoo (zoo/public/status.py), a model per task")
    zo.add_argument("models", nargs="*", help="default: the whole zoo")
    zo.add_argument("--size", choices=("ci", "full"), default="ci")
    zo.add_argument("--results", required=True, help="the chunks' directory (made, or resumed when it exists)")
    zo.add_argument("--address", help="an existing Ray cluster (`ray start`'s address, or auto); default: local")
    zo.add_argument("--cpus", type=int, help="the local cluster's CPUs (default: all)")
    zo.add_argument("--per-chunk", type=int, default=1, help="models per chunk")
    zo.add_argument("--out", help="write the report to this file (as status.py --out)")
    zo.add_argument("--readme", action="store_true", help="replace README.md's public zoo status section")
    zo.add_argument("--expected", action="store_true", help="also print tests/zoo's EXPECTED_FAILURES")
    zo.add_argument("--json", help="also write every model's result here (status.py --from-json reads it)")
    a = ap.parse_args(argv)
    if a.tier == "zoo":
        from tools.heavy import zoo

        return zoo.main(a)
    if a.tier == "fuzz":
        from tools.heavy import fuzz

        return fuzz.main(a)
    from tools.heavy import opinfo

    return opinfo.main(a)


if __name__ == "__main__":
    sys.exit(main())
