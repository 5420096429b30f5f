"""Ember's ahead-of-time memory planner: tensors with lifetimes -> byte offsets in numbered pools.

Input: one Allocation per storage (a tensor, or a tensor with its aliases), live over an inclusive range of
steps (instruction indices). Output: an offset per allocation such that no two allocations live at the same
step share a byte. Each pool (memory id) is planned on its own.

Several algorithms run and the smallest plan wins, as ExecuTorch's suite does:
  naive           bump allocation, no reuse: the upper bound
  shared_objects  ExecuTorch's greedy: size-sorted tensors share fixed-size buckets, buckets laid end to end
  greedy_by_size  TFLite Micro's: largest first, each at the lowest offset where it fits between the
                  already-placed tensors live at the same time (first fit into gaps)
  greedy_by_area  the same placement, ordered by size x lifetime
  local_search    first-fit placement over orders found by a seeded, bounded search (TVM's hill-climb idea),
                  stopping as soon as a plan reaches the lower bound
The lower bound is the largest sum of live bytes at any step: no plan can be smaller.

    plan = plan_memory([Allocation(id=0, size=64, first=0, last=2), ...])
    plan.offsets[0], plan.pool_sizes[1], plan.lower_bounds[1]
"""

from exir.memory_planning.allocation import Allocation, Plan, PlanError, lower_bound, verify_plan
from exir.memory_planning.suite import ALGORITHMS, compare_algorithms, plan_memory

__all__ = [
    "ALGORITHMS",
    "Allocation",
    "Plan",
    "PlanError",
    "compare_algorithms",
    "lower_bound",
    "plan_memory",
    "verify_plan",
]
