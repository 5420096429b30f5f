"""Bump allocation with no reuse: every allocation gets bytes of its own. The upper bound."""

from __future__ import annotations

from typing import Dict, Sequence

from exir.memory_planning.allocation import Allocation, align_up


def naive(items: Sequence[Allocation]) -> Dict[int, int]:
    offsets = {a.id: a.fixed_offset for a in items if a.fixed_offset is not None}
    cursor = max((a.fixed_offset + a.aligned_size for a in items if a.fixed_offset is not None), default=0)
    for a in items:
        if a.id in offsets:
            continue
        if a.size == 0:
            offsets[a.id] = 0  # takes no bytes; any aligned offset is valid
            continue
        cursor = align_up(cursor, a.alignment)
        offsets[a.id] = cursor
        cursor += a.aligned_size
    return offsets
