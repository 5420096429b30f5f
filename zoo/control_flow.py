"""Models with control flow: torch.cond on a data-dependent predicate, map, scan (an RNN-style cumulative loop)
and while_loop (iterative refinement until a tolerance). Each entry has several input sets, so every branch and
several trip counts are exercised. Importable in ExecuTorch's venv too (tools/et_reference.py --zoo control_flow):
ExecuTorch exports cond, map and scan, but not while_loop.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Tuple

import torch
from torch import nn


def _hop(name):
    # Imported late: the modules moved between torch releases, and importing them early slows every test.
    if name == "map":
        from torch._higher_order_ops.map import map as f
    elif name == "scan":
        from torch._higher_order_ops.scan import scan as f
    else:
        from torch._higher_order_ops.while_loop import while_loop as f
    return f


class Gate(nn.Module):
    """A data-dependent branch: a small MLP when the input's mean is positive, a different one otherwise."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)

    def forward(self, x):
        def positive(x):
            return torch.relu(self.a(x)) * 2.0

        def other(x):
            return torch.tanh(self.b(x)) - 1.0

        return torch.cond(x.mean() > 0, positive, other, (x,))


class RowMap(nn.Module):
    """map: one small computation per row of xs, with a shared operand."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(6, 4) * 0.3)

    def forward(self, xs, bias):
        return _hop("map")(lambda x, b: torch.sigmoid(x @ self.w + b), xs, bias)


class CumulativeRnn(nn.Module):
    """scan: h_t = tanh(W x_t + U h_{t-1}); returns the last state and every state."""

    def __init__(self):
        super().__init__()
        self.wx = nn.Linear(5, 7)
        self.wh = nn.Linear(7, 7, bias=False)

    def forward(self, h0, xs):
        def step(h, x):
            h = torch.tanh(self.wx(x) + self.wh(h))
            return h, h.clone()

        return _hop("scan")(step, h0, xs)


class Refine(nn.Module):
    """while_loop: halve the residual until it is below a tolerance (or 64 steps); returns the step count too."""

    def forward(self, x):
        def cond(i, v):
            return (v.abs().max() > 0.05) & (i < 64)

        def body(i, v):
            return i + 1, v * 0.5

        return _hop("while")(cond, body, (torch.zeros((), dtype=torch.int64), x))


@dataclasses.dataclass(frozen=True)
class ControlFlowModel:
    name: str
    make: Callable[[], nn.Module]
    # Several input sets: the first is the export example; the others take other branches or trip counts.
    inputs: Callable[[], List[Tuple[torch.Tensor, ...]]]
    executorch_exports: bool = True  # ExecuTorch 1.5.1 emits cond, map and scan, not while_loop


def _g(seed):
    return torch.Generator().manual_seed(seed)


def _gate_inputs():
    g = _g(1)
    x = torch.randn(2, 8, generator=g)
    return [(x.abs(),), (-x.abs(),), (x,)]


def _map_inputs():
    g = _g(2)
    return [(torch.randn(5, 6, generator=g), torch.randn(4, generator=g))]


def _scan_inputs():
    g = _g(3)
    return [
        (torch.zeros(7), torch.randn(6, 5, generator=g)),
        (torch.randn(7, generator=g), torch.randn(6, 5, generator=g)),
    ]


def _refine_inputs():
    g = _g(4)
    return [(torch.randn(4, generator=g),), (torch.full((4,), 10.0),), (torch.full((4,), 0.01),)]


def _seeded(cls, seed):
    def make():
        torch.manual_seed(seed)
        return cls().eval()

    return make


MODELS: Dict[str, ControlFlowModel] = {
    m.name: m
    for m in [
        ControlFlowModel("cond_gate", _seeded(Gate, 11), _gate_inputs),
        ControlFlowModel("map_rows", _seeded(RowMap, 12), _map_inputs),
        ControlFlowModel("scan_rnn", _seeded(CumulativeRnn, 13), _scan_inputs),
        ControlFlowModel("while_refine", _seeded(Refine, 14), _refine_inputs, executorch_exports=False),
    ]
}


def export_methods(name: str):
    """Like zoo.models.export_methods: ({"forward": ExportedProgram}, {"forward": first inputs}, module)."""
    entry = MODELS[name]
    module = entry.make()
    first = entry.inputs()[0]
    return {"forward": torch.export.export(module, first)}, {"forward": first}, module
