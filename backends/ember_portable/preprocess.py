"""EmberPortable's ahead-of-time half: the partition planned and emitted as an Ember program of its own (one
method, `forward`), the blob the runtime half (runtime/ember_portable.cc) loads and runs with its own kernels."""

from __future__ import annotations

from typing import List

from exir.backend.backend_details import BackendDetails, PreprocessResult, register_backend
from exir.backend.partitioner import CompileSpec

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
        program = S.Program(
            version=0,
            execution_plan=[method],
            constant_buffer=[],
            backend_delegate_data=[],
            segments=[],
            constant_segment=S.SubsegmentOffsets(segment_index=0, offsets=[]),
            mutable_data_segments=[],
            named_data=[],
        )
        # Small alignment: the blob is itself inside a 16-byte-aligned segment or inline vector.
        return PreprocessResult(serialize_pte(program, constants.blobs[1:], segment_alignment=16))
