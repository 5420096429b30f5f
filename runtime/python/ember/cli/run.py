"""`ember run MODEL.pte`: the C++ runner (runtime/runner) on a program, built or found by ember.cli.binaries.
A .bpte (bundled program) runs on runner_verify, which checks its test cases (--verify)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

from ember.cli.binaries import find_binary
from ember.cli.errors import CliError, require_file
from ember.cli.verify import ENGINES, verify


def add_runner_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("program", help="a .pte (or .bpte) file")
    ap.add_argument("--method", default=None, help="method to run (default: forward)")
    ap.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="SPEC",
        help="zeros | ones | random[:SEED] | FILE[@[D0,D1,...]] (raw bytes); repeat per input",
    )
    ap.add_argument("--inputs", metavar="FILE.pt", help="a torch.save'd tensor or tuple of tensors as the inputs")
    ap.add_argument("--runs", type=int, default=None, help="timed runs")
    ap.add_argument("--warmup", type=int, default=None, help="untimed runs first")
    ap.add_argument("--threads", type=int, default=None, help="threads for the method, the calling one included")
    ap.add_argument("--runner", metavar="PATH", help="this runner binary instead of the built/packaged one")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress display while building")


def _torch_inputs(path: str, workdir: str):
    """--input flags for the tensors saved in `path`, written as raw files with their shapes."""
    import torch

    require_file(path, "inputs file")
    try:
        loaded = torch.load(path)
    except Exception as e:
        raise CliError(f"{path}: not a torch.save'd tensor or tuple: {str(e).splitlines()[0]}") from None
    tensors = (loaded,) if isinstance(loaded, torch.Tensor) else tuple(loaded)
    flags = []
    for i, x in enumerate(tensors):
        raw = os.path.join(workdir, f"input_{i}.bin")
        with open(raw, "wb") as f:
            f.write(x.contiguous().numpy().tobytes())
        flags += ["--input", f"{raw}@[{','.join(str(d) for d in x.shape)}]"]
    return flags


def save_outputs(program_path: str, method: str, output_dir: str, dest: str) -> None:
    """The runner's raw outputs (output_<i>.bin) as a torch.save'd tuple of tensors with the program's dtypes and
    shapes (flat when a bounded dynamic output came out smaller than its bound; None for a non-tensor output)."""
    import torch

    from exir.serialize import deserialize_pte
    from schema import program as S
    from schema import scalar_types

    with open(program_path, "rb") as f:
        plan = next((p for p in deserialize_pte(f.read()).program.execution_plan if p.name == method), None)
    if plan is None:
        raise CliError(f"{program_path} has no method '{method}'")
    outputs = []
    for i, index in enumerate(plan.outputs):
        value, raw = plan.values[index].val, os.path.join(output_dir, f"output_{i}.bin")
        if not isinstance(value, S.Tensor) or not os.path.exists(raw):
            outputs.append(None)
            continue
        info = scalar_types.by_number(int(value.scalar_type))
        dtype = info.torch_dtype() if info else None
        if dtype is None:
            raise CliError(f"output {i} of '{method}': scalar type {int(value.scalar_type)} has no torch dtype")
        with open(raw, "rb") as f:
            flat = (
                torch.frombuffer(bytearray(f.read()), dtype=dtype)
                if os.path.getsize(raw)
                else torch.empty(0, dtype=dtype)
            )
        shape = list(value.sizes)
        outputs.append(flat.reshape(shape) if flat.numel() == torch.Size(shape).numel() else flat)
    torch.save(tuple(outputs), dest)


def runner_args(args, workdir: str):
    out = []
    if args.method:
        out += ["--method", args.method]
    for spec in args.input:
        out += ["--input", spec]
    if args.inputs:
        out += _torch_inputs(args.inputs, workdir)
    for flag in ("runs", "warmup", "threads"):
        if getattr(args, flag) is not None:
            out += [f"--{flag}", str(getattr(args, flag))]
    return out


def main(argv, prog: str) -> int:
    ap = argparse.ArgumentParser(
        prog=prog,
        description=__doc__,
        epilog="Arguments after `--` go to the runner as they are (e.g. -- --instruction-limit 1000). Exit codes: "
        "0 success, 1 failed before the runner started (missing file, build), 2 usage, and the runner's own: "
        "3 program or method refused, 4 input refused, 5 execution failed; a .bpte's case out of tolerance: 1.",
    )
    add_runner_options(ap)
    ap.add_argument("--output-dir", metavar="DIR", help="write each output's raw bytes there (output_<i>.bin)")
    ap.add_argument(
        "--save-outputs", metavar="FILE.pt", help="the outputs as a torch.save'd tuple of tensors (torch.load it)"
    )
    ap.add_argument("--print", type=int, default=None, metavar="N", help="print the first N values of each output")
    ap.add_argument("--verify", action="store_true", help="a .bpte: check its test cases (the default for .bpte)")
    ap.add_argument("--atol", type=float, help="--verify: absolute tolerance instead of the bundle's")
    ap.add_argument("--rtol", type=float, help="--verify: relative tolerance instead of the bundle's")
    ap.add_argument(
        "--engine",
        choices=ENGINES,
        help="--verify on runner_verify (default in a checkout) or ember.runtime (default in an installed wheel)",
    )
    argv = list(argv)
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    args = ap.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    require_file(args.program, "program")
    bundled = args.verify or args.program.endswith(".bpte")
    if args.save_outputs and bundled:
        ap.error("--save-outputs is for a .pte; a .bpte's outputs are checked against its cases")
    if bundled:
        return verify(args.program, args.engine, args.atol, args.rtol, args.method, args.runner, args.quiet, extra)
    runner = args.runner or find_binary("runner", quiet=args.quiet)
    with tempfile.TemporaryDirectory(prefix="ember-run-") as workdir:
        cmd = [runner, args.program, *runner_args(args, workdir)]
        output_dir = args.output_dir or (os.path.join(workdir, "outputs") if args.save_outputs else None)
        if output_dir:
            os.makedirs(output_dir, exist_ok=True)
            cmd += ["--output-dir", output_dir]
        if args.print is not None:
            cmd += ["--print", str(args.print)]
        sys.stdout.flush()
        code = subprocess.run(cmd + extra).returncode
        if code == 0 and args.save_outputs:
            save_outputs(args.program, args.method or "forward", output_dir, args.save_outputs)
        return code
