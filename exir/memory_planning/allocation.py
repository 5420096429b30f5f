"""The planner's data: allocations in, plans out, and the two checks every plan must pass."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Dict, List, Optional, Sequence


class PlanError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class Allocation:
    id: int  # the caller's key, unique
    size: int  # bytes; 0 takes no space
    first: int  # first step at which it is live, inclusive
    last: int  # last step at which it is live, inclusive
    mem_id: int = 1  # pool; 0 is reserved for constants
    alignment: int = 16  # power of two
    fixed_offset: Optional[int] = None  # pinned by the caller; others are placed around it

    @property
    def aligned_size(self) -> int:
        return align_up(self.size, self.alignment)

    def overlaps_in_time(self, other: "Allocation") -> bool:
        return self.first <= other.last and other.first <= self.last


@dataclasses.dataclass
class Plan:
    offsets: Dict[int, int]  # id -> byte offset in its pool
    pool_sizes: Dict[int, int]  # mem_id -> bytes
    algorithm: str
    lower_bounds: Dict[int, int]  # mem_id -> bytes no plan can go below

    @property
    def total(self) -> int:
        return sum(self.pool_sizes.values())


def align_up(n: int, alignment: int) -> int:
    return (n + alignment - 1) // alignment * alignment


def validate(allocs: Sequence[Allocation]) -> None:
    seen = set()
    for a in allocs:
        where = f"allocation {a.id}"
        if a.id in seen:
            raise PlanError(f"{where}: id used twice")
        seen.add(a.id)
        if a.mem_id < 1:
            raise PlanError(f"{where}: memory id {a.mem_id}; pool 0 is reserved for constants")
        if a.size < 0:
            raise PlanError(f"{where}: negative size {a.size}")
        if a.alignment < 1 or a.alignment & (a.alignment - 1):
            raise PlanError(f"{where}: alignment {a.alignment} is not a power of two")
        if a.first > a.last:
            raise PlanError(f"{where}: lifetime [{a.first}, {a.last}] ends before it starts")
        if a.fixed_offset is not None and a.fixed_offset % a.alignment:
            raise PlanError(f"{where}: fixed offset {a.fixed_offset} is not {a.alignment}-aligned")


def by_pool(allocs: Sequence[Allocation]) -> Dict[int, List[Allocation]]:
    pools: Dict[int, List[Allocation]] = defaultdict(list)
    for a in allocs:
        pools[a.mem_id].append(a)
    return dict(pools)


def lower_bound(allocs: Sequence[Allocation]) -> Dict[int, int]:
    """Per pool, the largest sum of the bytes of the allocations live at one step.

    Sizes are counted unaligned, so a plan's distance from this bound includes what alignment costs.
    """
    bounds = {}
    for mem_id, items in by_pool(allocs).items():
        delta: Dict[int, int] = defaultdict(int)
        for a in items:
            delta[a.first] += a.size
            delta[a.last + 1] -= a.size
        live = peak = 0
        for step in sorted(delta):
            live += delta[step]
            peak = max(peak, live)
        bounds[mem_id] = peak
    return bounds


def verify_plan(allocs: Sequence[Allocation], plan: Plan) -> None:
    """Raises PlanError if two allocations live at the same step share a byte, or any is misplaced."""
    for a in allocs:
        if a.id not in plan.offsets:
            raise PlanError(f"allocation {a.id} has no offset")
        off = plan.offsets[a.id]
        pool = plan.pool_sizes.get(a.mem_id, 0)
        if off < 0 or off % a.alignment:
            raise PlanError(f"allocation {a.id}: offset {off} is not {a.alignment}-aligned")
        if a.size and off + a.size > pool:
            raise PlanError(f"allocation {a.id}: bytes [{off}, {off + a.size}) exceed pool {a.mem_id} of {pool}")
        if a.fixed_offset is not None and off != a.fixed_offset:
            raise PlanError(f"allocation {a.id}: pinned at {a.fixed_offset} but placed at {off}")
    for mem_id, items in by_pool(allocs).items():
        # Sweep in order of first step; compare each with the ones still live.
        items = sorted((a for a in items if a.size), key=lambda a: (a.first, a.id))
        active: List[Allocation] = []
        for a in items:
            active = [b for b in active if b.last >= a.first]
            lo, hi = plan.offsets[a.id], plan.offsets[a.id] + a.size
            for b in active:
                blo, bhi = plan.offsets[b.id], plan.offsets[b.id] + b.size
                if lo < bhi and blo < hi:
                    raise PlanError(
                        f"allocations {b.id} and {a.id} in pool {mem_id} are both live at step "
                        f"{max(a.first, b.first)} and share bytes: [{blo}, {bhi}) and [{lo}, {hi})"
                    )
            active.append(a)
