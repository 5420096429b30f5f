"""Tensor lifetimes over a MethodGraph's schedule, in the terms the memory planner takes.

Step i is calls[i]. One allocation per storage root: an aliased view extends its root's lifetime. Inputs are
live from step 0 (the caller copies them in before execute); outputs until one step past the last call (the
caller reads them after execute); mutable buffers for the whole method, since their values carry over to the
next call.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List

from exir.lowering.alias import root_of
from exir.lowering.ir import MethodGraph, Role, TensorValue


@dataclasses.dataclass
class Lifetime:
    root: TensorValue
    first: int
    last: int
    members: List[TensorValue]  # the root and every alias of it


def lifetimes(graph: MethodGraph) -> List[Lifetime]:
    end = len(graph.calls)
    spans: Dict[int, Lifetime] = {}

    def touch(t: TensorValue, step: int) -> None:
        root, _ = root_of(t)
        if not root.is_planned:
            return
        lt = spans.get(id(root))
        if lt is None:
            spans[id(root)] = lt = Lifetime(root, step, step, [])
        lt.first, lt.last = min(lt.first, step), max(lt.last, step)
        if all(m is not t for m in lt.members):
            lt.members.append(t)

    for t in graph.inputs + graph.buffers:
        touch(t, 0)
    for i, call in enumerate(graph.calls):
        for t in call.tensor_args() + call.outs:
            touch(t, i)
    for o in graph.outputs:
        if isinstance(o, TensorValue):
            touch(o, end)
    for b in graph.buffers:
        touch(b, end)
    _cover_loops(graph, spans.values())
    return sorted(spans.values(), key=lambda lt: (lt.first, lt.root.name))


def _cover_loops(graph: MethodGraph, spans) -> None:
    """A tensor live both inside a loop and outside it (read by every iteration, a carry, a stacked result) must
    keep its bytes for the whole loop: the schedule is a line, but the loop runs its stretch again and again.
    Tensors that live and die within one iteration keep their spans. Inner loops come first in graph.loops."""
    if not graph.loops:
        return
    index = {id(c): i for i, c in enumerate(graph.calls)}
    regions = [(index[id(a)], index[id(b)]) for a, b in graph.loops]
    for _ in range(2):  # an extension for an outer loop can reach across an inner one
        for s, e in regions:
            for lt in spans:
                inside = s < lt.first and lt.last < e  # the labels themselves touch no tensor
                if not inside and lt.first <= e and lt.last >= s:
                    lt.first, lt.last = min(lt.first, s), max(lt.last, e)


@dataclasses.dataclass(frozen=True)
class TensorInfo:
    """What a memory-id policy sees of a planned tensor."""

    name: str
    role: Role
    nbytes: int
    shape: tuple
    is_output: bool
    fqn: str


MemIdPolicy = Callable[[TensorInfo], int]


def default_mem_id(_: TensorInfo) -> int:
    return 1


def assign_mem_ids(graph: MethodGraph, spans: List[Lifetime], policy: MemIdPolicy) -> None:
    outputs = {id(o) for o in graph.outputs if isinstance(o, TensorValue)}
    for lt in spans:
        r = lt.root
        info = TensorInfo(
            r.name, r.role, r.nbytes, tuple(r.shape), any(id(m) in outputs for m in lt.members), r.fqn or ""
        )
        mem_id = int(policy(info))
        if mem_id < 1:
            raise ValueError(
                f"memory id policy returned {mem_id} for tensor '{r.name}'; pool 0 is reserved for "
                f"constants, so planned tensors need an id >= 1"
            )
        for m in lt.members:
            m.mem_id = mem_id
