"""Source mapping for profiles (ExecuTorch's ETRecord idea): each instruction's debug handle, its operator, the
source line and the nn.Module it came from, in a JSON sidecar next to the .pte.

    prog = exir.to_executorch(edge)
    prog.save("model.pte", etrecord=True)   # also writes model.etrecord.json
    python -m devtools.profile model.pte trace.etdp  # finds the sidecar beside the .pte

The debug handle of an instruction is its index in the method's chain: it is what the runtime's event tracer
writes as each ETDump event's instruction_id (runtime/devtools/event_tracer.h), so a trace maps back without
the runtime knowing anything about sources.
"""

from __future__ import annotations

import json
import os
from typing import Dict, List

from exir.lowering.ir import Label

FORMAT = "ember-etrecord/1"


def sidecar_path(pte_path: str) -> str:
    """model.pte -> model.etrecord.json"""
    root, _ = os.path.splitext(pte_path)
    return root + ".etrecord.json"


def debug_info(manager) -> dict:
    """{method: [{debug_handle, op, source, module}, ...]} for an ExecutorchProgramManager, in instruction order."""
    methods: Dict[str, List[dict]] = {}
    for name, graph in manager.method_graphs.items():
        rows = []
        for call in graph.calls:
            if isinstance(call, Label):
                continue  # the emitter gives labels no instruction
            op = getattr(call, "op_name", None) if hasattr(call, "op") else None
            rows.append(
                {
                    "debug_handle": len(rows),
                    "op": op or type(call).__name__,
                    "source": getattr(call, "source", "") or "",
                    "module": getattr(call, "module", "") or "",
                }
            )
        methods[name] = rows
    return {"format": FORMAT, "methods": methods}


def write(manager, pte_path: str) -> str:
    path = sidecar_path(pte_path)
    with open(path, "w") as f:
        json.dump(debug_info(manager), f, indent=1)
    return path


def read(path: str) -> dict:
    """The sidecar at `path`, checked enough that a profile can trust its rows."""
    with open(path) as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path} is not JSON ({e}); write it again with prog.save(path, etrecord=True)") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("methods"), dict):
        raise ValueError(f"{path} is not an Ember etrecord ({FORMAT}); write it with prog.save(path, etrecord=True)")
    return data
