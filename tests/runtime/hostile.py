"""Hostile programs for tests: a valid .pte decoded, one field edited, encoded again.

    bad = rewrite(pte_bytes, lambda p: p.execution_plan[0].non_const_buffer_sizes.__setitem__(1, 1 << 40))

Constants and mutable initial values are carried over byte for byte, so only the edit differs from the original.
"""

from __future__ import annotations

import copy
from typing import Callable, List

from exir.serialize import deserialize_pte, serialize_pte
from schema import program as S


def _subsegment_blobs(f, sub) -> List[bytes]:
    """The blobs of a SubsegmentOffsets (entry 0 reserved), each up to where the next starts (padding included,
    so serialize_pte's re-layout puts every blob back at its original offset)."""
    if sub is None or len(sub.offsets) < 2:
        return []
    seg = f.segment(sub.segment_index)
    ends = list(sub.offsets[2:]) + [len(seg)]
    return [seg[start:end] for start, end in zip(sub.offsets[1:], ends)]


def rewrite(pte: bytes, edit: Callable[[S.Program], None]) -> bytes:
    f = deserialize_pte(pte)
    program = copy.deepcopy(f.program)
    edit(program)
    constants = _subsegment_blobs(f, f.program.constant_segment)
    mutable = _subsegment_blobs(f, f.program.mutable_data_segments[0]) if f.program.mutable_data_segments else []
    return serialize_pte(program, constants, mutable_blobs=mutable)


def set_pool_size(pte: bytes, pool: int, size: int, method: int = 0) -> bytes:
    """`pool` counts from 1 (memory id), as non_const_buffer_sizes does."""

    def edit(p):
        p.execution_plan[method].non_const_buffer_sizes[pool] = size

    return rewrite(pte, edit)


def input_tensor(program: S.Program, index: int, method: int = 0) -> S.Tensor:
    plan = program.execution_plan[method]
    return plan.values[plan.inputs[index]].val
