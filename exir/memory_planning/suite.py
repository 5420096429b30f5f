"""Run every algorithm on every pool, keep the smallest plan."""

from __future__ import annotations

from typing import Callable, Dict, Sequence

from exir.memory_planning.allocation import Allocation, Plan, PlanError, align_up, by_pool, lower_bound, validate
from exir.memory_planning.first_fit import extent, greedy_by_area, greedy_by_size
from exir.memory_planning.local_search import local_search
from exir.memory_planning.naive import naive
from exir.memory_planning.shared_objects import shared_objects

ALGORITHMS: Dict[str, Callable] = {
    "naive": naive,
    "shared_objects": shared_objects,
    "greedy_by_size": greedy_by_size,
    "greedy_by_area": greedy_by_area,
    "local_search": local_search,
}


def _run(name: str, items, bound: int) -> Dict[int, int]:
    fn = ALGORITHMS[name]
    return fn(items, bound) if fn is local_search else fn(items)


def _plan_with(name: str, allocs: Sequence[Allocation], pool_alignment: int) -> Plan:
    offsets: Dict[int, int] = {}
    sizes: Dict[int, int] = {}
    bounds = lower_bound(allocs)
    for mem_id, items in sorted(by_pool(allocs).items()):
        placed = _run(name, items, bounds[mem_id])
        offsets.update(placed)
        sizes[mem_id] = align_up(extent(items, placed), pool_alignment)
    return Plan(offsets, sizes, name, bounds)


def compare_algorithms(allocs: Sequence[Allocation], pool_alignment: int = 16) -> Dict[str, Dict[int, int]]:
    validate(allocs)
    return {name: _plan_with(name, allocs, pool_alignment).pool_sizes for name in ALGORITHMS}


def plan_memory(
    allocs: Sequence[Allocation], *, algorithms: Sequence[str] = tuple(ALGORITHMS), pool_alignment: int = 16
) -> Plan:
    """The smallest plan (by total bytes) among `algorithms`; ties go to the earliest listed."""
    validate(allocs)
    unknown = [a for a in algorithms if a not in ALGORITHMS]
    if unknown or not algorithms:
        raise PlanError(f"unknown planning algorithms {unknown}; choose from {list(ALGORITHMS)}")
    best = None
    for name in algorithms:
        plan = _plan_with(name, allocs, pool_alignment)
        if best is None or plan.total < best.total:
            best = plan
    return best
