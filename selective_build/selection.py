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

A program with delegates also names their backends, which the generated table then holds (and no others):

    backends: [EmberPortable]

and the runtime features the programs use (codegen/features.py); the build compiles the others out, and refuses
at load a program that needs one. A selection without `features` keeps them all:

    features: [control_flow, dynamic_shapes, scalar_outputs, external_data]
"""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, Iterable, Optional, Set

import yaml

from codegen.features import FEATURES, parse_selected_features
from codegen.yaml_input import parse_selected_backends, parse_selection, read_yaml
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
                    raise SelectionError(
                        f"method '{plan.name}' calls operator {call.op_index}, but its operator "
                        f"table has {len(plan.operators)} entries: the program is corrupt"
                    )
                op = plan.operators[call.op_index]
                name = op.name + (f".{op.overload}" if op.overload else "")
                for a in call.args:
                    _tensor_dtypes(plan, a, ops[name])
                ops.setdefault(name, set())
    return ops


def features_of(program: S.Program) -> Set[str]:
    """The runtime features (codegen/features.py) the program's methods need: jumps, bounded dynamic tensors,
    outputs that are not tensors."""
    found: Set[str] = set()
    for plan in program.execution_plan:
        for chain in plan.chains:
            if any(isinstance(ins.instr_args, S.JumpFalseCall) for ins in chain.instructions):
                found.add("control_flow")
        for v in plan.values:
            if isinstance(v.val, S.Tensor) and int(v.val.shape_dynamism) != int(S.TensorShapeDynamism.STATIC):
                found.add("dynamic_shapes")
            info = v.val.extra_tensor_info if isinstance(v.val, S.Tensor) else None
            if info is not None and int(info.location) == int(S.TensorDataLocation.EXTERNAL):
                found.add("external_data")
        for i in plan.outputs:
            if 0 <= i < len(plan.values) and not isinstance(plan.values[i].val, S.Tensor):
                found.add("scalar_outputs")
    return found


def delegates_of(pte) -> tuple:
    """(backend ids the program's delegates name, the operators those delegates run with this runtime's own
    kernels, the runtime features they need). An EmberPortable blob is a program itself: its operators, features
    (and its own delegates) count too."""
    from exir.serialize import PteFormatError, deserialize_pte

    backends: Set[str] = set()
    ops: Dict[str, Set[str]] = defaultdict(set)
    features: Set[str] = set()
    program = pte.program
    for plan in program.execution_plan:
        for d in plan.delegates:
            backends.add(d.id)
            if d.id != "EmberPortable" or d.processed is None:
                continue
            ref = d.processed
            if ref.location == S.DataLocation.INLINE:
                if not 0 <= ref.index < len(program.backend_delegate_data):
                    raise SelectionError(
                        f"method '{plan.name}' delegate '{d.id}' names inline data {ref.index}, "
                        f"but the program has {len(program.backend_delegate_data)}"
                    )
                blob = program.backend_delegate_data[ref.index].data
            else:
                if not 0 <= ref.index < len(program.segments):
                    raise SelectionError(
                        f"method '{plan.name}' delegate '{d.id}' names segment {ref.index}, but "
                        f"the program has {len(program.segments)}"
                    )
                blob = pte.segment(ref.index)
            try:
                inner = deserialize_pte(blob)
            except PteFormatError as e:
                raise SelectionError(
                    f"method '{plan.name}' delegate '{d.id}': its blob is not a program: {e}"
                ) from None
            for op, dtypes in operators_of(inner.program).items():
                ops[op] |= dtypes
            features |= features_of(inner.program)
            inner_backends, inner_ops, inner_features = delegates_of(inner)
            backends |= inner_backends
            features |= inner_features
            for op, dtypes in inner_ops.items():
                ops[op] |= dtypes
    return backends, dict(ops), features


def merge(selections: Iterable[Dict[str, Set[str]]]) -> Dict[str, Set[str]]:
    merged: Dict[str, Set[str]] = defaultdict(set)
    for sel in selections:
        for op, dtypes in sel.items():
            merged[op] |= set(dtypes)
    return dict(merged)


def dump(
    ops: Dict[str, Set[str]],
    sources: Iterable[str] = (),
    backends: Iterable[str] = (),
    features: Optional[Iterable[str]] = None,
) -> str:
    """The selection file's text. `features`: the runtime features to keep (None: write no key, keeping all)."""
    order = {t.name: t.number for t in scalar_types.SCALAR_TYPES}
    body = {
        "include_all_operators": False,
        "operators": {op: {"dtypes": sorted(ops[op], key=lambda d: order.get(d, 99))} for op in sorted(ops)},
    }
    if backends:
        body["backends"] = sorted(set(backends))
    if features is not None:
        body["features"] = [f for f in FEATURES if f in set(features)]
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


def load_features(path: str) -> Optional[Set[str]]:
    """The runtime features a selection file keeps, or None for all of them (no `features` key)."""
    data, lines = read_yaml(path, SelectionError)
    features = parse_selected_features(data, path, SelectionError, lines)
    return None if features is None else set(features)


def load_backends(path: str) -> Set[str]:
    """The delegate backends a selection file names (`backends:`)."""
    data, lines = read_yaml(path, SelectionError)
    return set(parse_selected_backends(data, path, SelectionError, lines))
