"""First-fit placement into gaps, for any order: the core of greedy_by_size, greedy_by_area and local_search.

Each allocation goes to the lowest aligned offset at which it overlaps (in bytes) none of the already-placed
allocations that are live at the same time. With the largest first, this is TFLite Micro's greedy planner.
"""

from __future__ import annotations

from typing import Dict, List, Sequence

from exir.memory_planning.allocation import Allocation, align_up


def conflicts(items: Sequence[Allocation]) -> Dict[int, List[Allocation]]:
    """id -> the allocations live at some common step (computed once per pool; placement reuses it)."""
    out: Dict[int, List[Allocation]] = {a.id: [] for a in items}
    ordered = sorted(items, key=lambda a: a.first)
    for i, a in enumerate(ordered):
        for b in ordered[i + 1 :]:
            if b.first > a.last:
                break
            out[a.id].append(b)
            out[b.id].append(a)
    return out


def place(order: Sequence[Allocation], conflict_map: Dict[int, List[Allocation]]) -> Dict[int, int]:
    offsets: Dict[int, int] = {}
    for a in order:
        if a.fixed_offset is not None:
            offsets[a.id] = a.fixed_offset
    for a in order:
        if a.id in offsets:
            continue
        if a.size == 0:
            offsets[a.id] = 0
            continue
        size = a.aligned_size
        busy = sorted(
            (offsets[b.id], offsets[b.id] + b.aligned_size) for b in conflict_map[a.id] if b.id in offsets and b.size
        )
        offset = 0
        for lo, hi in busy:
            if offset + size <= lo:
                break
            offset = max(offset, align_up(hi, a.alignment))
        offsets[a.id] = offset
    return offsets


def extent(items: Sequence[Allocation], offsets: Dict[int, int]) -> int:
    return max((offsets[a.id] + a.aligned_size for a in items if a.size), default=0)


def by_size(items: Sequence[Allocation]) -> List[Allocation]:
    # Ties: the longer-lived first (it constrains more), then by id for determinism.
    return sorted(items, key=lambda a: (-a.aligned_size, -(a.last - a.first), a.id))


def by_area(items: Sequence[Allocation]) -> List[Allocation]:
    return sorted(items, key=lambda a: (-a.aligned_size * (a.last - a.first + 1), -a.aligned_size, a.id))


def greedy_by_size(items: Sequence[Allocation]) -> Dict[int, int]:
    return place(by_size(items), conflicts(items))


def greedy_by_area(items: Sequence[Allocation]) -> Dict[int, int]:
    return place(by_area(items), conflicts(items))
