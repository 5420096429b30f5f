"""Selections: the operators a runtime must provide, with the tensor dtypes each is called with.

File format (selected_operators.yaml), written by `python -m selective_build.select` and editable by hand:

    include_all_operators: false     # true: every operator and dtype of the kernel libraries
    operators:
      aten::addmm.out:
        dtypes: [Float]              # every tensor dtype the op sees in the programs (inputs and outputs)
      aten::max_pool2d_with_indices.out:
        dtypes: [Float, Long]

Dtypes are recorded as seen, mixed-dtype calls included (a Long `indices` output, an Int input summed into
Long); codegen compiles the ones each kernel can compute.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Dict, Iterable, Set

import yaml

from codegen.yaml_input import parse_selection, read_yaml
from schema import program as S
from schema import scalar_types


class SelectionError(ValueError):
    pass


def _tensor_dtypes(plan: S.ExecutionPlan, index: int, out: Set[str]) -> None:
    if not 0 <= index < len(plan.values):
        return
    v = plan.values[index].val
    if isinstance(v, S.Tensor):
        info = scalar_types.by_number(int(v.scalar_type))
        out.add(info.name if info else str(int(v.scalar_type)))
    elif isinstance(v, (S.TensorList, S.OptionalTensorList)):
        for i in v.items:
            if i >= 0:
                _tensor_dtypes(plan, i, out)


def operators_of(program: S.Program) -> Dict[str, Set[str]]:
    """Operator ("aten::add.out") -> the dtypes of every tensor argument of every call to it, across methods."""
    ops: Dict[str, Set[str]] = defaultdict(set)
    for plan in program.execution_plan:
        for chain in plan.chains:
            for ins in chain.instructions:
                call = ins.instr_args
                if not isinstance(call, S.KernelCall):
                    continue
                if not 0 <= call.op_index < len(plan.operators):
                    raise SelectionError(f"method '{plan.name}' calls operator {call.op_index}, but its operator "
                                         f"table has {len(plan.operators)} entries: the program is corrupt")
                op = plan.operators[call.op_index]
                name = op.name + (f".{op.overload}" if op.overload else "")
                for a in call.args:
                    _tensor_dtypes(plan, a, ops[name])
                ops.setdefault(name, set())
    return ops


def merge(selections: Iterable[Dict[str, Set[str]]]) -> Dict[str, Set[str]]:
    merged: Dict[str, Set[str]] = defaultdict(set)
    for sel in selections:
        for op, dtypes in sel.items():
            merged[op] |= set(dtypes)
    return dict(merged)


def dump(ops: Dict[str, Set[str]], sources: Iterable[str] = ()) -> str:
    order = {t.name: t.number for t in scalar_types.SCALAR_TYPES}
    body = {"include_all_operators": False,
            "operators": {op: {"dtypes": sorted(ops[op], key=lambda d: order.get(d, 99))} for op in sorted(ops)}}
    header = "# Operators and dtypes these programs use (selective_build).\n"
    if sources:
        header += "# From: " + ", ".join(sources) + "\n"
    return header + yaml.safe_dump(body, sort_keys=False, default_flow_style=None)


def load(path: str) -> Dict[str, Set[str]]:
    """A selection file as op -> dtypes. Raises SelectionError naming the file, line and problem."""
    data, lines = read_yaml(path, SelectionError)
    ops = parse_selection(data, path, SelectionError, lines)
    if ops is None:
        raise SelectionError(f"{path} selects every operator; there is nothing to merge or check per op")
    return {op: set(dtypes) for op, dtypes in ops.items()}
