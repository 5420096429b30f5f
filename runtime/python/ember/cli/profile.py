"""`ember profile MODEL.pte`: run the program on the profiling build of the runner (--config=profiling: the event
tracer times every instruction) into an ETDump, then tabulate it per operator and per source module
(devtools.profile; module rows need MODEL.etrecord.json beside the .pte: `ember export --etrecord`).
`--from-trace FILE` skips the run and reads a trace already taken (an .etdp, or a device's raw .emtr)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

from ember.cli.binaries import find_binary
from ember.cli.errors import CliError, require_file
from ember.cli.passthrough import call
from ember.cli.run import add_runner_options, runner_args


def main(argv, prog: str) -> int:
    ap = argparse.ArgumentParser(
        prog=prog,
        description=__doc__,
        epilog="Exit codes: 0 success, 1 the run or the trace failed (named), 2 usage.",
    )
    add_runner_options(ap)
    ap.add_argument("--trace", metavar="FILE", help="where the ETDump goes (default: MODEL.etdp beside the .pte)")
    ap.add_argument("--from-trace", metavar="FILE", help="tabulate this trace instead of running")
    ap.add_argument("--memory", action="store_true", help="also record each run's allocations (--profile-memory)")
    ap.add_argument("--etrecord", help="the source map (default: MODEL.etrecord.json beside the .pte)")
    ap.add_argument("--top", type=int, default=15, help="rows per table, the rest summed in one (0: all)")
    ap.add_argument("--no-svg", action="store_true", help="tables only, no timeline/memory pictures")
    args = ap.parse_args(argv)
    require_file(args.program, "program")
    trace = args.from_trace
    if trace:
        require_file(trace, "trace")
    else:
        trace = args.trace or os.path.splitext(args.program)[0] + ".etdp"
        runner = args.runner or find_binary("runner_profiling", quiet=args.quiet)
        with tempfile.TemporaryDirectory(prefix="ember-profile-") as workdir:
            cmd = [runner, args.program, *runner_args(args, workdir), "--profile", trace]
            if args.memory:
                cmd.append("--profile-memory")
            r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            sys.stderr.write(r.stderr)
            raise CliError(f"the profiling runner failed on {args.program} (exit {r.returncode}; its message is above)")
    tool_args = [args.program, trace, "--top", str(args.top)]
    if args.method:
        tool_args += ["--method", args.method]
    if args.etrecord:
        tool_args += ["--etrecord", args.etrecord]
    if args.no_svg:
        tool_args.append("--no-svg")
    return call("devtools.profile", tool_args, prog)
