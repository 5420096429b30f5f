"""BackendDetails: a backend's ahead-of-time half (ExecuTorch's name): `preprocess` turns one partition into the
blob the runtime backend of the same id reads at init."""

from __future__ import annotations

import dataclasses
import importlib
from typing import Dict, List, Optional, Type

from exir.backend.named_data import NamedDataStoreOutput
from exir.backend.partitioner import CompileSpec


@dataclasses.dataclass
class PreprocessResult:
    processed_bytes: bytes
    debug_handle_map: Dict[int, tuple] = dataclasses.field(default_factory=dict)
    # Bytes the blob refers to by key (exir.backend.named_data): stored once in the program's named data.
    data_store_output: Optional[NamedDataStoreOutput] = None


class BackendDetails:
    """Subclass with a class attribute `backend_id` (BackendDelegate.id in the .pte, the runtime's Backend.id)
    and a `preprocess(partition, compile_specs)` classmethod.

    `partition` is Ember's lowered form of the partition (exir.lowering.MethodGraph: out-variant calls over typed
    tensors, its inputs the values the program passes in, its outputs those it reads back), where ExecuTorch hands
    an ExportedProgram of the same nodes."""

    backend_id: str = ""

    @classmethod
    def preprocess(cls, partition, compile_specs: List[CompileSpec]) -> PreprocessResult:
        raise NotImplementedError(f"{cls.__name__} must implement preprocess(partition, compile_specs)")


_BACKENDS: Dict[str, Type[BackendDetails]] = {}

# Where the ahead-of-time half of each of Ember's backends lives, by id: imported (by name, with importlib) only
# when a program asks for an id nobody registered yet, e.g. a DelegationSpec built by hand. exir never imports a
# backend itself, so no backend module is on an import path out of exir and nothing imports exir back (a backend
# imports exir, registers itself, and is done). A backend outside this table registers itself when its user
# imports it, as importing its partitioner does.
KNOWN_BACKEND_MODULES: Dict[str, str] = {
    "EmberPortable": "backends.ember_portable",
    "XnnpackBackend": "backends.xnnpack",
}


def register_backend(details: Type[BackendDetails]) -> Type[BackendDetails]:
    """Makes `details` the ahead-of-time side of its backend_id (usable as a class decorator)."""
    if not details.backend_id:
        raise ValueError(f"{details.__name__} has no backend_id; set the id its runtime backend registers under")
    _BACKENDS[details.backend_id] = details
    return details


def get_backend(backend_id: str) -> Type[BackendDetails]:
    if backend_id not in _BACKENDS and backend_id in KNOWN_BACKEND_MODULES:
        importlib.import_module(KNOWN_BACKEND_MODULES[backend_id])  # registers itself on import
    if backend_id not in _BACKENDS:
        raise KeyError(
            f"no ahead-of-time backend '{backend_id}' is registered (have: {sorted(_BACKENDS)}); "
            f"import the module defining its BackendDetails, or call register_backend()"
        )
    return _BACKENDS[backend_id]
