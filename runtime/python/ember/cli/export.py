"""`ember export MODEL -o model.pte`: torch.export -> exir.to_edge (or to_edge_transform_and_lower with a
delegate) -> to_executorch -> .pte, with exir's options as flags. Also the front half of `ember bundle`."""

from __future__ import annotations

import argparse
import os
import sys

from ember.cli.errors import CliError
from ember.cli.models import add_model_arguments
from ember.cli.progress import Progress

ALGORITHMS = ("naive", "shared_objects", "greedy_by_size", "greedy_by_area", "local_search")
DELEGATES = ("xnnpack", "ember_portable")


def add_export_options(ap: argparse.ArgumentParser, model: bool = True) -> None:
    """ember export's flags; model=False leaves out the MODEL argument and its input flags (ember explore names
    its model with --model)."""
    if model:
        add_model_arguments(ap)
    g = ap.add_argument_group("exir options (README.md, \"Export a model\")")
    g.add_argument("--quantize", choices=["int8"], help="post-training int8 (exir.quantization, PT2E)")
    g.add_argument(
        "--calibration",
        metavar="FILE.pt",
        help="--quantize's calibration data: a torch.save'd list of input tuples (default: --calibration-batches "
        "seeded random batches shaped like the example inputs; real data gives better ranges)",
    )
    g.add_argument("--calibration-batches", type=int, default=8, metavar="N")
    g.add_argument("--delegate", choices=DELEGATES, help="lower what the backend takes to it (its partitioner)")
    g.add_argument(
        "--memory-planning",
        action="append",
        choices=ALGORITHMS,
        metavar="ALGO",
        help=f"planning algorithm to try (repeat; the smallest plan wins; default: all of {', '.join(ALGORITHMS)})",
    )
    g.add_argument("--pool-limit", type=int, metavar="BYTES", help="fail the export if the planned pool exceeds it")
    g.add_argument("--fuse-activations", action="store_true", help="conv+clamp/SiLU, safe softmax (Ember-only ops)")
    g.add_argument("--winograd", action="store_true", help="3x3 convolutions as Winograd (Ember-only op)")
    g.add_argument("--external-constants", action="store_true", help="constants in a .ptd file beside the .pte")
    g.add_argument("--emit-stacktrace", action="store_true", help="each instruction's source line in the .pte")
    g.add_argument("--no-kernel-check", action="store_true", help="skip the check against the runtime's kernels")


def _calibration(args, inputs):
    import torch

    if args.calibration:
        if not os.path.isfile(args.calibration):
            raise CliError(f"{args.calibration}: no such file")
        batches = torch.load(args.calibration)
        return [b if isinstance(b, (tuple, list)) else (b,) for b in batches]
    g = torch.Generator().manual_seed(1)
    return [
        tuple(torch.randn(x.shape, generator=g).to(x.dtype) if x.is_floating_point() else x for x in inputs)
        for _ in range(args.calibration_batches)
    ]


def _backend_config(args):
    import exir

    planning = exir.MemoryPlanningConfig(
        algorithms=args.memory_planning, pool_limits={1: args.pool_limit} if args.pool_limit else {}
    )
    return exir.ExecutorchBackendConfig(
        memory_planning=planning,
        fuse_activations=args.fuse_activations,
        winograd=args.winograd,
        external_constants=args.external_constants,
        emit_stacktrace=args.emit_stacktrace,
        check_kernels=not args.no_kernel_check,
    )


def _partitioner(name):
    if name == "xnnpack":
        from backends.xnnpack import XnnpackPartitioner

        return XnnpackPartitioner()
    from backends.ember_portable.partitioner import EmberPortablePartitioner

    return EmberPortablePartitioner()


def export(args, progress: Progress, methods=None, keep_edge: bool = False):
    """(ExecutorchProgramManager, {method: inputs}, eager module) for args; `methods` keeps only those.
    keep_edge: also the EdgeProgramManager it was lowered from, last (devtools.debug.compare's exact eager side)."""
    progress.stage("loading torch and exir")
    import exir
    from ember.cli import models

    progress.stage("torch.export")
    programs, inputs, module = models.load(args)
    if methods:
        programs = {m: programs[m] for m in methods}
        inputs = {m: inputs[m] for m in methods}
    if args.quantize:
        if list(programs) != ["forward"]:
            raise CliError(f"--quantize takes one-method models; {args.model} has {', '.join(programs)}")
        progress.stage("quantize (calibration)", 1)
        from exir.quantization import quantize

        quantized = quantize(module, inputs["forward"], _calibration(args, inputs["forward"]))
        # The int8 program's eager counterpart is PyTorch's reference quantized computation, not the float model.
        programs, module = {"forward": quantized.exported_program}, quantized.reference
    progress.stage("to_edge" + (f" + {args.delegate}" if args.delegate else ""), 1)
    if args.delegate:
        edge = exir.to_edge_transform_and_lower(programs, partitioner=[_partitioner(args.delegate)])
    else:
        edge = exir.to_edge(programs)
    progress.stage("to_executorch (plan, emit)", 1)
    prog = edge.to_executorch(_backend_config(args))
    return (prog, inputs, module, edge) if keep_edge else (prog, inputs, module)


def main(argv, prog: str) -> int:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__)
    if argv and argv[0] == "--list":
        from ember.cli.models import list_zoo

        print(list_zoo())
        return 0
    add_export_options(ap)
    ap.add_argument("-o", "--output", help="the .pte to write (default: NAME.pte here)")
    ap.add_argument("--etrecord", action="store_true", help="also NAME.etrecord.json, the source map for profile")
    ap.add_argument("--list", action="store_true", help="list the zoo's models and exit")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bar, no memory report")
    args = ap.parse_args(argv)
    output = args.output or f"{args.model.rpartition(':')[2]}.pte"
    with Progress(f"{prog} {args.model}", total=4 if args.quantize else 3, quiet=args.quiet) as progress:
        program, _, _ = export(args, progress)
        progress.stage("save", 1)
        if os.path.dirname(output):
            os.makedirs(os.path.dirname(output), exist_ok=True)
        program.save(output, etrecord=args.etrecord)
    print(f"wrote {output}: {os.path.getsize(output):,} bytes, methods {', '.join(program.methods)}")
    if not args.quiet:
        sys.stdout.write(program.memory_report().rstrip("\n") + "\n")
    return 0
