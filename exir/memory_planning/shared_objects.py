"""ExecuTorch's default ("greedy") planner, reproduced so Ember's reports can compare against it.

Allocations, largest first, go into shared objects (buckets): into the first bucket none of whose occupants is
live at the same time, at offset 0; else into a bucket with room above the occupants that are live at the same
time; else into a new bucket exactly its size. Buckets never grow, and are laid end to end.
"""

from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

from exir.memory_planning.allocation import Allocation, align_up


def shared_objects(items: Sequence[Allocation]) -> Dict[int, int]:
    fixed = [a for a in items if a.fixed_offset is not None]
    base = max((a.fixed_offset + a.aligned_size for a in fixed), default=0)
    buckets: List[Tuple[int, List[Tuple[Allocation, int]]]] = []  # (size, [(alloc, offset in bucket)])
    placement: Dict[int, Tuple[int, int]] = {}  # id -> (bucket index, offset in bucket)
    for a in sorted((a for a in items if a.fixed_offset is None), key=lambda a: (-a.aligned_size, a.first, a.id)):
        chosen = None
        for i, (size, occupants) in enumerate(buckets):
            if not any(o.overlaps_in_time(a) for o, _ in occupants):
                chosen = (i, 0)
                break
        if chosen is None:
            for i, (size, occupants) in enumerate(buckets):
                top = max(align_up(off + o.aligned_size, a.alignment) for o, off in occupants if o.overlaps_in_time(a))
                if top + a.aligned_size <= size:
                    chosen = (i, top)
                    break
        if chosen is None:
            buckets.append((a.aligned_size, []))
            chosen = (len(buckets) - 1, 0)
        buckets[chosen[0]][1].append((a, chosen[1]))
        placement[a.id] = chosen
    starts, cursor = [], base
    for size, occupants in buckets:
        # Offsets inside a bucket are aligned relative to its start, so the start takes the strictest alignment.
        cursor = align_up(cursor, max(o.alignment for o, _ in occupants))
        starts.append(cursor)
        cursor += size
    offsets = {a.id: a.fixed_offset for a in fixed}
    for a_id, (bucket, off) in placement.items():
        offsets[a_id] = starts[bucket] + off
    return offsets
