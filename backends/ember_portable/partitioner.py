"""EmberPortablePartitioner: tags the operator nodes EmberPortable takes (all, or those named)."""

from __future__ import annotations

from typing import Iterable, List, Optional

import torch

from backends.ember_portable.preprocess import BACKEND_ID
from exir.backend.partitioner import CompileSpec, DelegationSpec, PartitionResult, Partitioner


def _op_names(op) -> set:
    """Every way a user may name `op`: "aten.linear.default", "aten::linear", "aten.linear"."""
    if not isinstance(op, torch._ops.OpOverload):
        return set()
    ns, name = op._schema.name.split("::")
    return {str(op), f"{ns}::{name}", f"{ns}.{name}", op.name()}


class EmberPortablePartitioner(Partitioner):
    """Tags every operator node (or those named in `ops`, as "aten.linear.default", "aten::relu" or "aten.relu")
    for EmberPortable. Nodes with dynamic shapes and control flow stay with the program's own kernels."""

    def __init__(
        self,
        ops: Optional[Iterable[str]] = None,
        compile_specs: Optional[List[CompileSpec]] = None,
        tag: str = "ember_portable",
    ):
        super().__init__(DelegationSpec(BACKEND_ID, list(compile_specs or [])))
        self.ops = set(ops) if ops is not None else None
        self.tag = tag

    def _takes(self, node: torch.fx.Node) -> bool:
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            return False
        if self.ops is not None and not (_op_names(node.target) & self.ops):
            return False
        val = node.meta.get("val")
        vals = val if isinstance(val, (list, tuple)) else [val]
        if not all(isinstance(v, torch.Tensor) for v in vals):
            return False
        return all(isinstance(d, int) for v in vals for d in v.shape)

    def partition(self, exported_program: torch.export.ExportedProgram) -> PartitionResult:
        tagged = 0
        for node in exported_program.graph_module.graph.nodes:
            if self._takes(node):
                node.meta["delegation_tag"] = self.tag
                tagged += 1
        return PartitionResult(exported_program, {self.tag: self.delegation_spec} if tagged else {})
