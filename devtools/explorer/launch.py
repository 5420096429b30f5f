"""`ember explore`: Model Explorer's server with the .pte adapter and the overlays asked for.

python -m devtools.explorer.launch model.pte [--etdump run.etdp] [--method forward] [--port 8080]
ember explore model.pte --etdump run.etdp --model mobilenet_v2_005_96 --inputs inputs.pt
"""

from __future__ import annotations

from typing import Dict, List, Optional

from model_explorer.config import ModelExplorerConfig

from devtools import etdump
from devtools.explorer import overlays
from exir.serialize import deserialize_pte

EXTENSION = "devtools.explorer"
ADAPTER_ID = "ember_pte"


def _plan(program, method: str):
    for p in program.execution_plan:
        if p.name == method:
            return p
    raise ValueError(f"no method '{method}' (it has {', '.join(p.name for p in program.execution_plan)})")


def reexport_llm(flags: str):
    """(EdgeProgramManager, program) of an LLM exported with `ember llm export`'s flags (but -o), as it exported."""
    import shlex

    from examples.llm import export as llm_export

    ap = llm_export.parser("--llm", output=False)
    args = ap.parse_args(shlex.split(flags))
    return llm_export.export_decoder(llm_export.build(args, ap), keep_edge=True)


def numeric_report(pte_path: str, method: str, edge, prog, inputs, what: str = "the model"):
    """devtools.debug.compare of `prog` (the model re-exported, `edge` its edge program: the eager side) on
    `inputs`, once its method is checked to be the .pte's instruction for instruction (so the errors land on the
    .pte's nodes). Raises ValueError naming the difference."""
    from devtools.debug import compare

    with open(pte_path, "rb") as f:
        ours = deserialize_pte(f.read()).program
    mine = _plan(ours, method)
    theirs = {p.name: p for p in prog.program.execution_plan}
    if method not in theirs:
        raise ValueError(f"{what} exports no method '{method}'")
    a, b = _ops(theirs[method]), _ops(mine)
    if a != b:
        at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        raise ValueError(
            f"{what} exports {len(a)} instructions in '{method}', {pte_path} has {len(b)}, first different at "
            f"{at}: pass the export flags the .pte was made with"
        )
    try:
        return compare(edge, prog, inputs, method=method)
    except RuntimeError as e:
        if "delegate calls need a backend" not in str(e):
            raise
        raise ValueError(
            f"{pte_path} has delegate calls and this runtime has no backend for them: build it with "
            f"`bazel build --config=xnnpack_profiling //runtime/python:_ember_runtime.so` and set EMBER_RUNTIME_LIB "
            f"to the file (`bazel info --config=xnnpack_profiling bazel-bin`/runtime/python/_ember_runtime.so)"
        ) from None


def _ops(plan) -> List[str]:
    """Each instruction's kind: the operator's name, 'delegate <backend>', or 'jump'."""
    from schema import program as S

    out = []
    for ins in plan.chains[0].instructions if plan.chains else []:
        a = ins.instr_args
        if isinstance(a, S.KernelCall):
            op = plan.operators[a.op_index]
            out.append(f"{op.name}.{op.overload}")
        elif isinstance(a, S.DelegateCall):
            out.append(f"delegate {plan.delegates[a.delegate_index].id}")
        else:
            out.append(type(a).__name__)
    return out


def node_data(pte_path: str, method: str = "forward", etdump_path: Optional[str] = None, report=None) -> Dict:
    """{overlay name: ModelNodeData} for the program at pte_path: memory always, time with an ETDump, numeric
    error with a devtools.debug.compare report."""
    with open(pte_path, "rb") as f:
        plan = _plan(deserialize_pte(f.read()).program, method)
    out = {}
    # Model Explorer colours the graph by the first overlay: time when there is a trace, else the memory plan.
    if etdump_path:
        runs = etdump.read(etdump_path)
        n = len(plan.chains[0].instructions) if plan.chains else 0
        bad = [e.instruction for r in runs for e in r.events if e.instruction >= n]
        if bad:
            raise ValueError(
                f"{etdump_path} names instruction {max(bad)}, but method '{method}' of {pte_path} has {n}: is it "
                f"the trace of another program?"
            )
        out.update(overlays.time(method, runs))
    out["memory: planned bytes written"] = overlays.memory(plan)
    if report is not None:
        out["numeric: relative error vs eager"] = overlays.numeric(report)
    return out


def config_for(pte_path: str, data: Dict) -> ModelExplorerConfig:
    cfg = ModelExplorerConfig()
    cfg.add_model_from_path(pte_path, adapterId=ADAPTER_ID)
    for name, nd in data.items():
        cfg.add_node_data(name, nd)
    return cfg


def serve(pte_path: str, data: Dict, host: str = "localhost", port: int = 8080, open_browser: bool = True) -> None:
    """Starts Model Explorer (blocks until Ctrl-C)."""
    from model_explorer import server

    server.start(
        host=host,
        port=port,
        config=config_for(pte_path, data),
        extensions=[EXTENSION],
        no_open_in_browser=not open_browser,
    )


def main(argv: Optional[List[str]] = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m devtools.explorer.launch", description=__doc__.split("\n\n")[0])
    ap.add_argument("pte")
    ap.add_argument("--etdump")
    ap.add_argument("--method", default="forward")
    ap.add_argument("--host", default="localhost")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--no-open", action="store_true")
    args = ap.parse_args(argv)
    serve(args.pte, node_data(args.pte, args.method, args.etdump), args.host, args.port, not args.no_open)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
