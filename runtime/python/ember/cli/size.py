"""`ember size [NAME=]BINARY...`: the binary size report (selective_build.size_report: text, data and bss, and the
bytes of each kernel) of Ember's own binaries by name (runner, runner_verify, llm_runner, llm_server: built or
found as `ember run` finds them) or of any ELF file by path. For the per-model runners and their budgets:
`bazel build --config=size //examples/selections:size_report` (docs/cli.md)."""

from __future__ import annotations

import argparse
import os

from ember.cli.binaries import TARGETS, find_binary
from ember.cli.errors import CliError
from ember.cli.passthrough import call


def main(argv, prog: str) -> int:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__, epilog="Exit codes: 0, 1 a binary missing, 2 usage.")
    ap.add_argument("binaries", nargs="+", metavar="[NAME=]BINARY", help=f"a path, or one of {', '.join(TARGETS)}")
    ap.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    ap.add_argument("--markdown", metavar="FILE", help="also write the table")
    ap.add_argument("--svg", metavar="FILE", help="also draw it")
    ap.add_argument("--tools-prefix", default="", help="binutils prefix for cross-built binaries (arm-none-eabi-)")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress display while building")
    args = ap.parse_args(argv)
    specs = []
    for spec in args.binaries:
        name, sep, path = spec.rpartition("=") if "=" in spec else ("", "", spec)
        if path in TARGETS and not os.path.exists(path):
            name, path = name or path, find_binary(path, quiet=args.quiet)
        elif not os.path.isfile(path):
            raise CliError(f"{path}: no such binary (nor one of {', '.join(TARGETS)})")
        specs.append(f"{name or os.path.basename(path)}={path}")
    tool_args = specs + [
        x for flag in ("json", "markdown", "svg") if getattr(args, flag) for x in (f"--{flag}", getattr(args, flag))
    ]
    if args.tools_prefix:
        tool_args += ["--tools-prefix", args.tools_prefix]
    return call("selective_build.size_report", tool_args, prog)
