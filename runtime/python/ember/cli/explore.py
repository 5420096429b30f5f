"""`ember explore MODEL.pte`: the program in Model Explorer (devtools/explorer, docs/explore.md): every method as a
graph with delegates and control flow as groups, the memory plan overlay always, per-operator time with
`--etdump`, and per-operator numeric error against eager with `--model` (the model it was exported from: a zoo
name or FILE.py:NAME, with the export flags it was exported with; for an LLM program `--llm 'FLAGS'`, the flags
`ember llm export` took) and `--inputs FILE.pt`, as
devtools.debug.compare runs it. The source map (MODEL.etrecord.json beside the .pte, or `--etrecord`) adds each
node's source line and module."""

from __future__ import annotations

import argparse
import os
import shutil

from ember.cli.errors import CliError, require_file
from ember.cli.export import add_export_options


def _inputs(path: str):
    import torch

    require_file(path, "inputs file")
    loaded = torch.load(path)
    return (loaded,) if isinstance(loaded, torch.Tensor) else tuple(loaded)


def _report(args, pte_path: str):
    """devtools.debug.compare of the model re-exported the same way (a zoo model with ember export's flags, or an
    LLM with ember llm export's), against the program in the .pte."""
    from devtools.explorer import launch

    inputs = _inputs(args.inputs)
    if args.llm is not None:
        edge, prog = launch.reexport_llm(args.llm)
        what = f"--llm '{args.llm}'"
    else:
        from ember.cli.export import export
        from ember.cli.progress import Progress

        prog, _, _, edge = export(args, Progress("explore", quiet=True), keep_edge=True)
        what = args.model
    try:
        return launch.numeric_report(pte_path, args.method, edge, prog, inputs, what)
    except ValueError as e:
        raise CliError(str(e)) from None


def prepare(argv, prog: str = "ember explore"):
    """(the .pte's path, {overlay: node data}, args): all `main` does but serve (devtools.explorer.check runs it)."""
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
    ap.add_argument(
        "--llm",
        metavar="'FLAGS'",
        help="numeric overlay of an LLM program: the flags `ember llm export` made it with, but -o (e.g. "
        "'--model config.json --max-seq-len 64 --seed 0'); --inputs holds (tokens [1, T], input_pos [1])",
    )
    add_export_options(ap, model=False)
    # A --model of your own takes its example inputs from the file (ember export's --shape flags are not here).
    ap.set_defaults(shape=None, example_inputs=None, dtype="float32")
    args = ap.parse_args(argv)
    pte = os.path.abspath(args.program)
    require_file(pte, "program")
    if args.model and args.llm is not None:
        raise CliError("--model names a zoo model, --llm an LLM's export flags: give one")
    if bool(args.model or args.llm is not None) != bool(args.inputs):
        raise CliError(
            "the numeric overlay needs both --model (or --llm: what the .pte was exported from) and --inputs"
        )
    if args.etrecord:
        from devtools import etrecord

        require_file(args.etrecord, "source map")
        beside = etrecord.sidecar_path(pte)
        if os.path.abspath(args.etrecord) != beside:
            shutil.copyfile(args.etrecord, beside)  # the adapter reads the source map beside the program
    from devtools.explorer import launch

    report = _report(args, pte) if args.inputs else None
    if args.etdump:
        require_file(args.etdump, "ETDump")
    try:
        data = launch.node_data(pte, args.method, args.etdump, report)
    except ValueError as e:
        raise CliError(str(e)) from None
    return pte, data, args


def main(argv, prog: str) -> int:
    from devtools.explorer import launch

    pte, data, args = prepare(argv, prog)
    launch.serve(pte, data, args.host, args.port, open_browser=not args.no_open)
    return 0
