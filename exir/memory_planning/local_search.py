"""A seeded, bounded search over placement orders, improving on the greedy first-fit plans.

First fit is only as good as its order. Starting from the better of the size and area orders, each step moves
one allocation that ends at the current peak earlier in the order (or swaps two at random), re-places, and keeps
the result when it is no larger. The search is deterministic (fixed seed, fixed step count) and stops as soon
as the plan reaches the lower bound, where nothing can improve it.
"""

from __future__ import annotations

import random
from typing import Dict, List, Sequence

from exir.memory_planning.allocation import Allocation
from exir.memory_planning.first_fit import by_area, by_size, conflicts, extent, place

SEED = 20261122
# Steps scale down with pool size so that a 300-tensor pool still plans in well under a second.
MAX_STEPS = 400
STEP_BUDGET = 60000  # steps x allocations


def local_search(items: Sequence[Allocation], bound: int = 0) -> Dict[int, int]:
    if not items:
        return {}
    cmap = conflicts(items)
    best_order: List[Allocation] = []
    best_offsets: Dict[int, int] = {}
    best = None
    for order in (by_size(items), by_area(items)):
        offsets = place(order, cmap)
        size = extent(items, offsets)
        if best is None or size < best:
            best, best_order, best_offsets = size, list(order), offsets
    rng = random.Random(SEED)
    steps = min(MAX_STEPS, STEP_BUDGET // max(1, len(items)))
    n = len(best_order)
    for _ in range(steps):
        if best <= bound or n < 2:
            break
        order = list(best_order)
        peak = [i for i, a in enumerate(order) if a.size and best_offsets[a.id] + a.aligned_size == best]
        if peak and rng.random() < 0.7:
            i = rng.choice(peak)
            j = rng.randrange(0, i) if i else 0
            order.insert(j, order.pop(i))
        else:
            i, j = rng.randrange(n), rng.randrange(n)
            order[i], order[j] = order[j], order[i]
        offsets = place(order, cmap)
        size = extent(items, offsets)
        if size <= best:
            best, best_order, best_offsets = size, order, offsets
    return best_offsets
