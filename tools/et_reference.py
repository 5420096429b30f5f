"""Runs inside the ExecuTorch venv (tools/setup_executorch_venv.sh): ExecuTorch's side of Ember's
compatibility and planner comparisons. It never imports Ember's runtime, only the zoo and Ember's .pte files.

  export  --out DIR [--models a,b] [--zoo models|control_flow]
                                     ExecuTorch exports each zoo model (portable ops); writes DIR/<model>.pte,
                                     DIR/<model>.inputs.pt / .outputs.pt, and prints JSON:
                                     {model: {"planned": [bytes per pool], "instructions": n}}
  run     FILE.pte INPUTS.pt         loads a .pte (e.g. Ember's) in ExecuTorch's runtime, runs 'forward' (or
                                     --method), prints JSON {"outputs": [[...floats...]], "shapes": [...]}
  run-batch DIR                      for every DIR/<name>.pte with DIR/<name>.inputs.pt ({method: inputs}), runs
                                     each method in ExecuTorch; writes DIR/<name>.et_outputs.pt and prints JSON
                                     {name: "ok" | error text}
  inspect FILE.etdp                  ExecuTorch's Inspector reads a trace (ETDump) with no ETRecord; prints JSON
                                     {"blocks": [{"name", "events": [{"name", "instruction_id", "runs",
                                     "p50_ms"}]}]}; with --debug-buffer FILE (the runner's --profile-outputs)
                                     and --save-outputs OUT.pt, also saves what it inflated per event:
                                     {instruction_id: [tensors]}
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _export(out_dir: str, models, zoo: str = "models"):
    import importlib

    from executorch.exir import to_edge
    from executorch.exir._serialize._program import deserialize_pte_binary

    registry = importlib.import_module(f"zoo.{zoo}")
    export_methods = registry.export_methods
    everything = list(getattr(registry, "ZOO", None) or registry.MODELS)
    os.makedirs(out_dir, exist_ok=True)
    report = {}
    for name in models or everything:
        programs, inputs, module = export_methods(name)
        prog = to_edge(programs).to_executorch()
        path = os.path.join(out_dir, f"{name}.pte")
        with open(path, "wb") as f:
            f.write(prog.buffer)
        torch.save(inputs, os.path.join(out_dir, f"{name}.inputs.pt"))
        outs = {}
        for method, args in inputs.items():
            o = getattr(module, method)(*args) if method != "forward" else module(*args)
            outs[method] = list(o) if isinstance(o, (tuple, list)) else [o]
        torch.save(outs, os.path.join(out_dir, f"{name}.eager.pt"))
        p = deserialize_pte_binary(prog.buffer)
        p = getattr(p, "program", p)
        report[name] = {
            plan.name: {
                "planned": list(plan.non_const_buffer_sizes[1:]),
                "instructions": len(plan.chains[0].instructions),
            }
            for plan in p.execution_plan
        }
    print(json.dumps(report))


def _run(pte: str, inputs_path: str, method: str, repeats: int):
    # By path: the from-buffer loader does not copy, so a temporary bytes object would be freed under it.
    from executorch.extension.pybindings.portable_lib import _load_for_executorch

    module = _load_for_executorch(pte)
    inputs = torch.load(inputs_path)
    if isinstance(inputs, dict):
        inputs = inputs[method]
    result = []
    for _ in range(repeats):
        result = module.run_method(method, list(inputs))
    # Scalars (a constant method's values) come back as Python numbers.
    print(
        json.dumps(
            {
                "outputs": [t.flatten().tolist() if isinstance(t, torch.Tensor) else t for t in result],
                "shapes": [list(t.shape) if isinstance(t, torch.Tensor) else [] for t in result],
            }
        )
    )


def _run_batch(directory: str):
    import glob
    from executorch.extension.pybindings.portable_lib import _load_for_executorch

    status = {}
    for pte in sorted(glob.glob(os.path.join(directory, "*.pte"))):
        name = os.path.basename(pte)[:-4]
        try:
            module = _load_for_executorch(pte)
            inputs = torch.load(os.path.join(directory, f"{name}.inputs.pt"))
            outs = {m: [t.clone() for t in module.run_method(m, list(args))] for m, args in inputs.items()}
            torch.save(outs, os.path.join(directory, f"{name}.et_outputs.pt"))
            status[name] = "ok"
        except Exception as e:  # reported per model; the caller's test names it
            status[name] = f"{type(e).__name__}: {e}"
    print(json.dumps(status))


def _inspect(etdp: str, debug_buffer: str = "", save_outputs: str = ""):
    import warnings

    from executorch.devtools import Inspector

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Output Buffer not found": a trace without tensor data
        inspector = Inspector(etdump_path=etdp, debug_buffer_path=debug_buffer or None)
    blocks = []
    if save_outputs:

        def tensors(values):  # a TensorList's value inflates to a list of its tensors
            return [t.clone() for v in values for t in (v if isinstance(v, list) else [v])]

        torch.save(
            {
                e._instruction_id: tensors(e.debug_data)
                for b in inspector.event_blocks
                for e in b.events
                if e.debug_data
            },
            save_outputs,
        )
    for b in inspector.event_blocks:
        events = [
            {
                "name": e.name,
                "instruction_id": e._instruction_id,
                "runs": len(e.perf_data.raw) if e.perf_data else 0,
                "p50_ms": e.perf_data.p50 if e.perf_data else None,
            }
            for e in b.events
        ]
        blocks.append({"name": b.name, "events": events})
    print(json.dumps({"blocks": blocks}))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export")
    e.add_argument("--out", required=True)
    e.add_argument("--models", default="")
    e.add_argument(
        "--zoo",
        default="models",
        choices=["models", "control_flow"],
        help="zoo.models (the zoo) or zoo.control_flow (cond, map, scan)",
    )
    r = sub.add_parser("run")
    r.add_argument("pte")
    r.add_argument("inputs")
    r.add_argument("--method", default="forward")
    r.add_argument("--repeats", type=int, default=1)
    b = sub.add_parser("run-batch")
    b.add_argument("dir")
    i = sub.add_parser("inspect")
    i.add_argument("etdp")
    i.add_argument("--debug-buffer", default="")
    i.add_argument("--save-outputs", default="")
    a = ap.parse_args()
    if a.cmd == "export":
        _export(a.out, [m for m in a.models.split(",") if m], a.zoo)
    elif a.cmd == "run-batch":
        _run_batch(a.dir)
    elif a.cmd == "inspect":
        _inspect(a.etdp, a.debug_buffer, a.save_outputs)
    else:
        _run(a.pte, a.inputs, a.method, a.repeats)


if __name__ == "__main__":
    main()
