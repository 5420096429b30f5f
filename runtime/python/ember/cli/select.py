"""`ember select MODEL.pte... -o model_ops.yaml`: the selective-build manifest of the programs (selective_build.select:
operators, every dtype they see, delegate backends, runtime features); `--check` then checks the programs against
it (selective_build.check), as a runtime built from it would. Build one with
`bazel build //:runner --//:manifest=//PKG:model_ops.yaml` (docs/cli.md)."""

from __future__ import annotations

import argparse

from ember.cli.passthrough import call


def main(argv, prog: str) -> int:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__, epilog="Exit codes: 0, 1 a program refused, 2 usage.")
    ap.add_argument("programs", nargs="*", help=".pte files")
    ap.add_argument("--merge", action="append", default=[], help="selection files to merge in")
    ap.add_argument("-o", "--output", help="where to write (default: stdout)")
    ap.add_argument("--check", action="store_true", help="then check each program against the written selection")
    args = ap.parse_args(argv)
    if args.check and not args.output:
        ap.error("--check needs -o FILE")
    tool_args = [*args.programs, *(x for m in args.merge for x in ("--merge", m))]
    tool_args += ["-o", args.output] if args.output else []
    code = call("selective_build.select", tool_args, prog)
    if code or not args.check:
        return code
    return call("selective_build.check", [*args.programs, "--selection", args.output], prog)
