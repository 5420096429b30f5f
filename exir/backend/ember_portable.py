"""EmberPortable: a backend whose blob is an Ember program of its own (one method, `forward`), planned and
emitted by this same pipeline, which the runtime's EmberPortable backend (runtime/backend/ember_portable) loads
and runs with its own kernels. It proves the delegate path end to end without hardware, and is the template
for a real backend's two halves.

    from exir.backend import to_edge_transform_and_lower
    from exir.backend.ember_portable import EmberPortablePartitioner
    edge = to_edge_transform_and_lower(ep, partitioner=[EmberPortablePartitioner()])
"""
from __future__ import annotations

from typing import Iterable, List, Optional

import torch

from exir.backend.backend_details import BackendDetails, PreprocessResult, register_backend
from exir.backend.partitioner import CompileSpec, DelegationSpec, PartitionResult, Partitioner

BACKEND_ID = "EmberPortable"


@register_backend
class EmberPortableBackend(BackendDetails):
    backend_id = BACKEND_ID

    @classmethod
    def preprocess(cls, partition, compile_specs: List[CompileSpec]) -> PreprocessResult:
        from exir.emit import ConstantPool, emit_method
        from exir.lowering.alias import alias_views
        from exir.program import MemoryPlanningConfig, _plan
        from exir.serialize import serialize_pte
        from schema import program as S

        alias_views(partition)
        offsets, plan, _ = _plan(partition, MemoryPlanningConfig())
        constants, initial_values = ConstantPool(), ConstantPool()
        method = emit_method(partition, offsets, plan.pool_sizes, constants, initial_values)
        program = S.Program(version=0, execution_plan=[method], constant_buffer=[], backend_delegate_data=[],
                            segments=[], constant_segment=S.SubsegmentOffsets(segment_index=0, offsets=[]),
                            mutable_data_segments=[], named_data=[])
        # Small alignment: the blob is itself inside a 16-byte-aligned segment or inline vector.
        return PreprocessResult(serialize_pte(program, constants.blobs[1:], segment_alignment=16))


def _op_names(op) -> set:
    """Every way a user may name `op`: "aten.linear.default", "aten::linear", "aten.linear"."""
    if not isinstance(op, torch._ops.OpOverload):
        return set()
    ns, name = op._schema.name.split("::")
    return {str(op), f"{ns}::{name}", f"{ns}.{name}", op.name()}


class EmberPortablePartitioner(Partitioner):
    """Tags every operator node (or those named in `ops`, as "aten.linear.default", "aten::relu" or "aten.relu")
    for EmberPortable. Nodes with dynamic shapes and control flow stay with the program's own kernels."""

    def __init__(self, ops: Optional[Iterable[str]] = None, compile_specs: Optional[List[CompileSpec]] = None,
                 tag: str = "ember_portable"):
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
