"""Control flow rebuilt from jumps: a program holds cond/map/scan/while as JumpFalseCalls in one instruction chain
(exir/lowering/control_flow.py), and each becomes a nested region here.

- A backward jump at j to d is a loop over [d, j] (map and scan jump back while the counter is short of the
  length; while_loop jumps back unconditionally). A forward jump inside it to j + 1 leaves the loop: the
  instructions up to it compute the condition, the rest are the body.
- Any other forward jump at i to e is a cond: [i + 1, e) runs when the predicate holds and [e, end) otherwise, when
  the then-branch ends with an unconditional jump over the else-branch to end.

A region's kind comes from the source map's jump labels ("jump_false to map_impl_loop_3") when there is one.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Dict, List, Optional

from schema import program as S


@dataclasses.dataclass
class Region:
    name: str  # namespace segment: "cond_0", "cond_0/then", ...
    first: int
    last: int  # inclusive


def _jump_kind(label: Optional[str], default: str) -> str:
    """'jump_false to while_loop_done_1' -> 'while_loop'; the label names the FX node the jump came from."""
    m = re.match(r"jump_false to (\w+?)_(?:loop|done|else|end)_\d+$", label or "")
    return m.group(1) if m else default


def _always(plan: S.ExecutionPlan, value: int) -> bool:
    """True when the jump's condition is the constant False: it always jumps."""
    v = plan.values[value].val if 0 <= value < len(plan.values) else None
    return isinstance(v, S.Bool) and not v.bool_val


def find(plan: S.ExecutionPlan, labels: Optional[List[str]] = None) -> List[Region]:
    """The control-flow regions of `plan`'s chain, outer ones first; each nested in any that contains it."""
    instrs = plan.chains[0].instructions if plan.chains else []
    jumps = {i: ins.instr_args for i, ins in enumerate(instrs) if isinstance(ins.instr_args, S.JumpFalseCall)}
    label = lambda i: labels[i] if labels and i < len(labels) else None  # noqa: E731
    regions: List[Region] = []
    exits = set()
    counts: Dict[str, int] = {}

    def name(kind: str) -> str:
        counts[kind] = counts.get(kind, 0) + 1
        return f"{kind}_{counts[kind] - 1}"

    for j, jump in jumps.items():
        d = jump.destination_instruction
        if d > j:
            continue
        loop = name(_jump_kind(label(j), "loop"))
        regions.append(Region(loop, d, j))
        exit_at = next((i for i in range(d, j) if i in jumps and jumps[i].destination_instruction == j + 1), None)
        if exit_at is not None:
            exits.add(exit_at)
            regions.append(Region(f"{loop}/condition", d, exit_at))
            if exit_at + 1 <= j:
                regions.append(Region(f"{loop}/body", exit_at + 1, j))
    skipped = set()
    for i, jump in jumps.items():
        e = jump.destination_instruction
        if e <= i or i in exits or i in skipped or _always(plan, jump.cond_value_index):
            continue
        cond = name(_jump_kind(label(i), "cond"))
        over = jumps.get(e - 1)
        if over is not None and _always(plan, over.cond_value_index) and over.destination_instruction > e:
            skipped.add(e - 1)
            end = over.destination_instruction
            regions.append(Region(cond, i, end - 1))
            regions.append(Region(f"{cond}/then", i + 1, e - 1))
            regions.append(Region(f"{cond}/else", e, end - 1))
        else:
            regions.append(Region(cond, i, e - 1))
            regions.append(Region(f"{cond}/then", i + 1, e - 1))
    return regions


def namespaces(plan: S.ExecutionPlan, labels: Optional[List[str]] = None) -> List[str]:
    """Per instruction, the '/'-joined path of regions holding it, outermost first ("" at top level)."""
    n = len(plan.chains[0].instructions) if plan.chains else 0
    found = find(plan, labels)
    paths = []
    for i in range(n):
        # Outer regions span more; a part (then/else/condition/body) spans no more than its own region.
        holding = sorted((r for r in found if r.first <= i <= r.last), key=lambda r: -(r.last - r.first))
        segments: List[str] = []
        for r in holding:
            segments.append(r.name.split("/", 1)[1] if "/" in r.name else r.name)
        paths.append("/".join(segments))
    return paths
