"""Overlays as Model Explorer node data, keyed by the adapter's node ids (graphs.py), each with a colour scale:

- memory(plan): bytes each instruction writes into planned memory (its outputs' pool, offset and lifetime are in
  the graph's edge metadata);
- time(plan, runs): mean time per instruction over an ETDump's runs, in us, and its share of the run in percent;
- numeric(report): devtools.debug.compare's relative error per operator against eager.
"""

from __future__ import annotations

from typing import Dict, List

from model_explorer import node_data_builder as ndb

from devtools import etdump
from devtools.explorer.graphs import instruction_id
from devtools.inspect import tensor_nbytes, value_steps
from schema import program as S

# Light to dark: low values recede, high ones stand out.
SCALE = ["#fff5eb", "#fdae6b", "#e6550d", "#7f2704"]


def _gradient() -> List[ndb.GradientItem]:
    n = len(SCALE) - 1
    return [ndb.GradientItem(stop=k / n, bgColor=c) for k, c in enumerate(SCALE)]


def colour(fraction: float) -> str:
    """The scale's colour at `fraction` (0..1), interpolated between its stops."""
    x = min(max(fraction, 0.0), 1.0) * (len(SCALE) - 1)
    k = min(int(x), len(SCALE) - 2)
    a, b = SCALE[k], SCALE[k + 1]
    mix = [round(int(a[j : j + 2], 16) * (k + 1 - x) + int(b[j : j + 2], 16) * (x - k)) for j in (1, 3, 5)]
    return "#" + "".join(f"{c:02x}" for c in mix)


def _node_data(method: str, values: Dict[str, float]) -> ndb.ModelNodeData:
    # Each node carries its colour: Model Explorer's own gradient spreads min..max, which is empty when every node
    # has the same value (one delegate call timed); here zero is the light end and the largest value the dark one.
    top = max(values.values(), default=0.0)
    results = {
        node: ndb.NodeDataResult(value=v, bgColor=colour(v / top if top > 0 else 0.0)) for node, v in values.items()
    }
    return ndb.ModelNodeData(graphsData={method: ndb.GraphNodeData(results=results, gradient=_gradient())})


def memory_values(plan: S.ExecutionPlan) -> Dict[str, float]:
    """Per instruction node: planned bytes of the values it writes (last argument: the out tensor or list)."""
    out: Dict[str, float] = {}
    first, last, _ = value_steps(plan)
    for i, ins in enumerate(plan.chains[0].instructions if plan.chains else []):
        a = ins.instr_args
        if not isinstance(a, (S.KernelCall, S.DelegateCall)) or not a.args:
            continue
        total = 0
        for idx in set(a.args):
            v = plan.values[idx].val
            if isinstance(v, S.Tensor) and v.allocation_info is not None and first.get(idx) == i:
                total += tensor_nbytes(v)
        if total:
            out[instruction_id(i)] = float(total)
    return out


def memory(plan: S.ExecutionPlan) -> ndb.ModelNodeData:
    return _node_data(plan.name, memory_values(plan))


def time_values(runs: List[etdump.Run]) -> Dict[str, Dict[str, float]]:
    """{"mean_us": {node: us}, "share_pct": {node: percent of the mean run}}, per instruction over the runs."""
    per: Dict[int, float] = {}
    totals = []
    timed = [r for r in runs if any(e.instruction >= 0 for e in r.events)]
    for run in timed:
        whole = [e for e in run.events if e.instruction < 0 and e.name == "Method::execute"]
        instr = [e for e in run.events if e.instruction >= 0 and e.delegate_debug_id < 0]
        totals.append(whole[0].duration if whole else sum(e.duration for e in instr))
        for e in instr:
            per[e.instruction] = per.get(e.instruction, 0.0) + e.duration
    if not timed:
        return {"mean_us": {}, "share_pct": {}}
    mean_run = sum(totals) / len(totals)
    mean = {instruction_id(i): ns / len(timed) / 1000.0 for i, ns in per.items()}
    share = {k: 100.0 * us * 1000.0 / mean_run if mean_run else 0.0 for k, us in mean.items()}
    return {"mean_us": mean, "share_pct": share}


def time(method: str, runs: List[etdump.Run]) -> Dict[str, ndb.ModelNodeData]:
    vals = time_values(runs)
    return {
        "time: mean us": _node_data(method, vals["mean_us"]),
        "time: share of run %": _node_data(method, vals["share_pct"]),
    }


def numeric_values(report) -> Dict[str, float]:
    """Per compared operator, its relative error (max |program - eager| over max(1, max |eager|))."""
    return {instruction_id(o.index): float(o.relative_error) for o in report.ops}


def numeric(report) -> ndb.ModelNodeData:
    return _node_data(report.method, numeric_values(report))
