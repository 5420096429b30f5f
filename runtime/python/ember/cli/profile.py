"""`ember profile MODEL.pte`: run the program on the profiling build of the runner (--config=profiling: the event
tracer times every instruction) into an ETDump, then tabulate it per operator and per source module
(devtools.profile; module rows need MODEL.etrecord.json beside the .pte: `ember export --etrecord`).
`--from-trace FILE` skips the run and reads a trace already taken (an .etdp, or a device's raw .emtr).
`--engine python` takes the trace through ember.runtime's traced extension instead (one timed run after the warm-up
ones): the default in an installed wheel, which carries that extension rather than a profiling runner."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

from ember.cli.binaries import find_binary, installed_wheel
from ember.cli.errors import CliError, require_file
from ember.cli.passthrough import call
from ember.cli.run import add_runner_options, runner_args


def _python_trace(args, trace: str) -> None:
    """One profiled run on ember.runtime (after --warmup plain ones), its ETDump written to `trace`."""
    import torch

    from ember import runtime
    from schema import scalar_types

    if args.input:
        raise CliError("--engine python takes --inputs FILE.pt (or random inputs by default), not --input")
    method = args.method or "forward"
    program = runtime.load(args.program, **({"threads": args.threads} if args.threads else {}))
    if args.inputs:
        require_file(args.inputs, "inputs file")
        loaded = torch.load(args.inputs)
        inputs = [loaded] if isinstance(loaded, torch.Tensor) else list(loaded)
    else:
        g = torch.Generator().manual_seed(0)
        inputs = []
        for spec in program.method_meta(method)["inputs"]:
            dtype = scalar_types.by_number(spec["dtype"]).torch_dtype()
            x = torch.randn(spec["shape"], generator=g)
            inputs.append(x.to(dtype) if dtype.is_floating_point else torch.zeros(spec["shape"], dtype=dtype))
    for _ in range(args.warmup or 0):
        program.run(method, inputs)
    _, result = program.run(method, inputs, profile=True, profile_memory=args.memory)
    result.save(trace)


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
    ap.add_argument(
        "--engine",
        choices=("runner", "python"),
        default=None,
        help="the profiling runner (default in a checkout) or ember.runtime's traced extension (default installed)",
    )
    args = ap.parse_args(argv)
    require_file(args.program, "program")
    trace = args.from_trace
    if trace:
        require_file(trace, "trace")
    else:
        trace = args.trace or os.path.splitext(args.program)[0] + ".etdp"
    if not args.from_trace and (args.engine or ("python" if installed_wheel() else "runner")) == "python":
        _python_trace(args, trace)
    elif not args.from_trace:
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
