"""Models with bounded dynamic dimensions, small enough for the Cortex-M55 firmware: exported once with
torch.export.Dim, planned at the bound, run at several sizes (tests/platforms). Each entry has several input sets
of different shapes within the bounds; the first is the export example."""

from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Tuple

import torch
from torch import nn
from torch.export import Dim


@dataclasses.dataclass(frozen=True)
class DynamicModel:
    name: str
    make: Callable[[], nn.Module]
    dynamic_shapes: Callable[[], tuple]
    inputs: Callable[[], List[Tuple[torch.Tensor, ...]]]


def _mlp():
    torch.manual_seed(21)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).eval()


def _mlp_inputs():
    g = torch.Generator().manual_seed(22)
    return [(torch.randn(n, 16, generator=g),) for n in (2, 1, 5, 8)]


MODELS: Dict[str, DynamicModel] = {
    m.name: m
    for m in [
        DynamicModel("dynamic_mlp", _mlp, lambda: ({0: Dim("batch", min=1, max=8)},), _mlp_inputs),
    ]
}


def export_methods(name: str):
    """Like zoo.models.export_methods: ({"forward": ExportedProgram}, {"forward": first inputs}, module)."""
    entry = MODELS[name]
    module = entry.make()
    first = entry.inputs()[0]
    ep = torch.export.export(module, first, dynamic_shapes=entry.dynamic_shapes())
    return {"forward": ep}, {"forward": first}, module
