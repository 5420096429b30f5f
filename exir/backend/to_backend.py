"""to_backend (ExecuTorch's name; to_edge_transform_and_lower is in exir.edge), and the lowering of tagged
partitions into DelegateCalls of Ember's MethodGraph, which exir.program runs before memory planning."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Mapping

import torch

from exir.backend.backend_details import get_backend
from exir.backend.partitioner import DelegationSpec, PartitionResult, Partitioner
from exir.lowering.ir import Call, DelegateCall, MethodGraph, Role, TensorValue

# Where the tags' specs live on a tagged program: graph_module.meta[SPECS] = {tag: DelegationSpec}.
SPECS = "ember_delegation_specs"


class DelegationError(RuntimeError):
    """A partition cannot be lowered; the message names the tag, the backend and the call at fault."""


def to_backend(
    exported_program: torch.export.ExportedProgram, partitioner: Partitioner
) -> torch.export.ExportedProgram:
    """Runs `partitioner` over `exported_program` (an edge program): tags nodes and records, per tag, which backend
    lowers them. The lowering itself happens in to_executorch, on Ember's lowered form of the method."""
    if not isinstance(partitioner, Partitioner):
        raise TypeError(f"to_backend takes a Partitioner, got {type(partitioner).__name__}")
    result = partitioner.partition(exported_program)
    if not isinstance(result, PartitionResult):
        raise TypeError(
            f"{type(partitioner).__name__}.partition returned {type(result).__name__}, not a PartitionResult"
        )
    ep = result.tagged_exported_program
    specs: Dict[str, DelegationSpec] = ep.graph_module.meta.setdefault(SPECS, {})
    used = {n.meta.get("delegation_tag") for n in ep.graph_module.graph.nodes} - {None}
    for tag in used:
        if tag not in result.partition_tags and tag not in specs:
            raise DelegationError(
                f"{type(partitioner).__name__} tagged nodes '{tag}' but gave no DelegationSpec for it"
            )
    for tag, spec in result.partition_tags.items():
        if tag in specs and specs[tag] is not spec:
            raise DelegationError(f"partition tag '{tag}' is used by two partitioners; tags must be unique per program")
        get_backend(spec.backend_id)  # an unknown backend is named now, not at to_executorch
        specs[tag] = spec
    return ep


def _runs(calls: List[Call]) -> List[List[int]]:
    """Maximal stretches of consecutive calls with one tag: each is a valid partition (whatever it reads was made
    before it), so a tag whose nodes the schedule interleaves with others becomes several delegates."""
    runs, current = [], []
    for i, c in enumerate(calls):
        tag = c.tag if c.op is not None and not isinstance(c, DelegateCall) else None
        if current and (tag is None or calls[current[0]].tag != tag):
            runs.append(current)
            current = []
        if tag is not None:
            current.append(i)
    if current:
        runs.append(current)
    return runs


def _clone(t: TensorValue, role: Role) -> TensorValue:
    return dataclasses.replace(t, role=role, alias_of=None, mem_id=1)


def _map(v: Any, mapping: Dict[int, TensorValue]) -> Any:
    if isinstance(v, TensorValue):
        return mapping.get(id(v), v)
    if isinstance(v, list):
        return [_map(x, mapping) for x in v]
    if isinstance(v, tuple):
        return tuple(_map(x, mapping) for x in v)
    return v


def _partition_graph(graph: MethodGraph, run: List[int], tag: str) -> tuple:
    """(the partition as a MethodGraph of its own, the outer tensors it reads, the outer tensors it writes)."""
    calls = [graph.calls[i] for i in run]
    where = f"method '{graph.name}' partition '{tag}'"
    produced = {}
    for c in calls:
        if c.result is not None:
            raise DelegationError(
                f"{where}: call {c.op_name} computes a size at run time ({c.source}); partitions "
                f"take static shapes only"
            )
        for o in c.outs:
            if o.role is not Role.ACTIVATION or o.alias_of is not None:
                raise DelegationError(
                    f"{where}: call {c.op_name} writes {o.name}, a {o.role.value}; a partition "
                    f"may only write its own results ({c.source})"
                )
            produced[id(o)] = o
    inputs: List[TensorValue] = []
    seen = set()
    for c in calls:
        for t in c.input_tensors():
            if id(t) in produced or id(t) in seen or t.role is Role.CONSTANT:
                continue
            seen.add(id(t))
            inputs.append(t)
    for t in inputs + list(produced.values()):
        if t.dynamic:
            raise DelegationError(f"{where}: tensor {t.name} has a dynamic shape; partitions take static shapes only")
    later = set()
    last = run[-1]
    for c in graph.calls[last + 1 :]:
        for t in c.tensor_args() + c.outs:
            later.add(id(t))
    for c in graph.calls[: run[0]]:
        # A loop's back edge could read a result again; partitions inside loops are refused.
        if c.op is None and not isinstance(c, DelegateCall) and graph.loops:
            raise DelegationError(f"{where}: partitions inside loops are not supported")
    returned = {id(o) for o in graph.outputs if isinstance(o, TensorValue)}
    outputs = [o for o in produced.values() if id(o) in later or id(o) in returned]
    if not outputs:
        raise DelegationError(f"{where}: nothing the partition computes is used; drop the tag")
    mapping: Dict[int, TensorValue] = {}
    for t in inputs:
        mapping[id(t)] = _clone(t, Role.INPUT)
    for t in produced.values():
        mapping[id(t)] = _clone(t, Role.ACTIVATION)
    sub_calls = [
        dataclasses.replace(c, args=_map(c.args, mapping), outs=_map(c.outs, mapping), tag=None) for c in calls
    ]
    sub = MethodGraph(
        name="forward",
        inputs=[mapping[id(t)] for t in inputs],
        outputs=[mapping[id(o)] for o in outputs],
        calls=sub_calls,
    )
    return sub, inputs, outputs


def lower_delegates(graph: MethodGraph, specs: Mapping[str, DelegationSpec]) -> int:
    """Replaces each run of tagged calls with a DelegateCall of its backend's preprocessed partition. Returns how
    many DelegateCalls the method now has."""
    runs = _runs(graph.calls)
    if not runs:
        return 0
    replaced: Dict[int, DelegateCall] = {}
    drop = set()
    for run in runs:
        tag = graph.calls[run[0]].tag
        spec = specs.get(tag)
        if spec is None:
            raise DelegationError(
                f"method '{graph.name}': calls tagged '{tag}' but no partitioner gave a DelegationSpec for it"
            )
        sub, inputs, outputs = _partition_graph(graph, run, tag)
        details = get_backend(spec.backend_id)
        result = details.preprocess(sub, list(spec.compile_specs))
        blob = result.processed_bytes if hasattr(result, "processed_bytes") else result
        if not isinstance(blob, (bytes, bytearray)):
            raise DelegationError(
                f"{details.__name__}.preprocess returned {type(blob).__name__}; it must return a "
                f"PreprocessResult with processed_bytes"
            )
        first = graph.calls[run[0]]
        replaced[run[0]] = DelegateCall(
            spec.backend_id,
            bytes(blob),
            list(spec.compile_specs),
            inputs,
            outputs,
            source=first.source,
            num_calls=len(run),
            named_data=getattr(result, "data_store_output", None),
        )
        drop.update(run[1:])
    graph.calls = [replaced.get(i, c) for i, c in enumerate(graph.calls) if i not in drop]
    return len(runs)
