"""`ember explore MODEL.pte`: the program in Model Explorer (devtools/explorer, docs/explore.md): every method as a
graph with delegates and control flow as groups, the memory plan overlay always, per-operator time with
`--etdump`, and per-operator numeric error against eager with `--model` (the model it was exported from: a zoo
name or FILE.py:NAME, with the export flags it was exported with) and `--inputs FILE.pt`, as
devtools.debug.compare runs it. The source map (MODEL.etrecord.json beside the .pte, or `--etrecord`) adds each
node's source line and module."""

from __future__ import annotations

import argparse
import os
import shutil

from ember.cli.errors import CliError, require_file
from ember.cli.export import add_export_options


def _report(args, pte_path: str):
    """devtools.debug.compare of the model re-exported the same way, against the program in the .pte."""
    import torch

    from devtools.debug import compare
    from ember.cli.export import export
    from ember.cli.progress import Progress
    from exir.serialize import deserialize_pte

    require_file(args.inputs, "inputs file")
    loaded = torch.load(args.inputs)
    inputs = (loaded,) if isinstance(loaded, torch.Tensor) else tuple(loaded)
    prog, _, module = export(args, Progress("explore", quiet=True))
    with open(pte_path, "rb") as f:
        ours = deserialize_pte(f.read()).program
    theirs = {p.name: len(p.chains[0].instructions) for p in prog.executorch_program.execution_plan}
    want = {p.name: len(p.chains[0].instructions) for p in ours.execution_plan}
    if theirs.get(args.method) != want.get(args.method):
        raise CliError(
            f"{args.model} exports to {theirs.get(args.method)} instructions in '{args.method}', {pte_path} has "
            f"{want.get(args.method)}: pass the export flags the .pte was made with"
        )
    return compare(module, prog, inputs, method=args.method)


def main(argv, prog: str) -> int:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__)
    ap.add_argument("program", help="the .pte to open")
    ap.add_argument("--etdump", metavar="FILE", help="an ETDump of the program (ember profile --trace): time overlay")
    ap.add_argument("--etrecord", metavar="FILE", help="the source map (default: MODEL.etrecord.json beside the .pte)")
    ap.add_argument("--inputs", metavar="FILE.pt", help="inputs for the numeric overlay (torch.save'd tuple)")
    ap.add_argument("--method", default="forward", help="the method the overlays describe")
    ap.add_argument("--host", default="localhost")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--no-open", action="store_true", help="serve only; do not open a browser")
    ap.add_argument(
        "--model", help="numeric overlay: the model the .pte came from (a zoo name, FILE.py:NAME or module:NAME)"
    )
    add_export_options(ap)
    # A --model of your own takes its example inputs from the file (ember export's --shape flags are not here).
    ap.set_defaults(shape=None, example_inputs=None, dtype="float32")
    args = ap.parse_args(argv)
    pte = os.path.abspath(args.program)
    require_file(pte, "program")
    if bool(args.model) != bool(args.inputs):
        raise CliError("the numeric overlay needs both --model (what the .pte was exported from) and --inputs")
    if args.etrecord:
        from devtools import etrecord

        require_file(args.etrecord, "source map")
        beside = etrecord.sidecar_path(pte)
        if os.path.abspath(args.etrecord) != beside:
            shutil.copyfile(args.etrecord, beside)  # the adapter reads the source map beside the program
    from devtools.explorer import launch

    report = _report(args, pte) if args.model else None
    if args.etdump:
        require_file(args.etdump, "ETDump")
    try:
        data = launch.node_data(pte, args.method, args.etdump, report)
    except ValueError as e:
        raise CliError(str(e)) from None
    launch.serve(pte, data, args.host, args.port, open_browser=not args.no_open)
    return 0
