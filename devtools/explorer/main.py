"""The Model Explorer adapter for Ember programs (.pte): `model_explorer --extensions=devtools.explorer` loads it,
as Model Explorer loads every adapter extension (the package's `main` module)."""

from __future__ import annotations

from typing import Dict

from model_explorer import Adapter, AdapterMetadata, ModelExplorerGraphs

from devtools.explorer.graphs import method_graphs
from exir.serialize import deserialize_pte


class EmberPteAdapter(Adapter):
    """Every method of a .pte as a graph (devtools/explorer/graphs.py)."""

    metadata = AdapterMetadata(
        id="ember_pte",
        name="Ember .pte adapter",
        description="Ember and ExecuTorch programs: methods, delegates, control flow, memory plan",
        source_repo="https://github.com/ember/ember",
        fileExts=["pte"],
    )

    def __init__(self):
        super().__init__()

    def convert(self, model_path: str, settings: Dict) -> ModelExplorerGraphs:
        with open(model_path, "rb") as f:
            pte = deserialize_pte(f.read())
        return {"graphs": method_graphs(pte, model_path)}
