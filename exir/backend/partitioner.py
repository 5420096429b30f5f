"""Partitioner, PartitionResult, DelegationSpec and CompileSpec, named and shaped as in ExecuTorch
(executorch.exir.backend.partitioner / compile_spec_schema)."""

from __future__ import annotations

import dataclasses
from typing import Dict, List

import torch


@dataclasses.dataclass(frozen=True)
class CompileSpec:
    """One option for a backend's preprocess step, written into the .pte as BackendDelegate.compile_specs."""

    key: str
    value: bytes


@dataclasses.dataclass
class DelegationSpec:
    backend_id: str
    compile_specs: List[CompileSpec] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class PartitionResult:
    """The program with its nodes tagged (node.meta["delegation_tag"]) and, per tag, the backend and specs."""

    tagged_exported_program: torch.export.ExportedProgram
    partition_tags: Dict[str, DelegationSpec]


class Partitioner:
    """Decides which nodes of an edge program a backend runs: `partition` sets node.meta["delegation_tag"] on
    them (one tag per partition) and returns, per tag, the DelegationSpec saying which backend lowers it."""

    def __init__(self, delegation_spec: DelegationSpec):
        self.delegation_spec = delegation_spec

    def partition(self, exported_program: torch.export.ExportedProgram) -> PartitionResult:
        raise NotImplementedError(f"{type(self).__name__} must implement partition(exported_program)")
