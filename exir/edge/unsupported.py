"""Model features Ember cannot export, found in the exported graph and named with the user's source line, before
they fail deep inside decomposition, lowering or emission with an error about something else:

- sparse (or other non-strided) tensors: PyTorch's decompositions fail on them with an unrelated type error;
- complex and quantized-tensor dtypes: no .pte ScalarType or kernel computes them;
- data-dependent shapes (nonzero, masked indexing, unique...): memory is planned before any data exists;
- higher-order ops other than the control flow Ember lowers (torch.cond, map, scan, while_loop).
"""

from __future__ import annotations

from typing import Iterable, List

import torch

from exir.lowering.lower import source_of


class UnsupportedFeatureError(RuntimeError):
    pass


def _where(node: torch.fx.Node) -> str:
    """The innermost frame of the user's own code (not a generated '<eval_with_key>' graph), else the node."""
    trace = node.meta.get("stack_trace") or ""
    lines = [l.strip() for l in trace.strip().splitlines() if l.strip()]
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith('File "') and not lines[i].startswith('File "<'):
            fname = lines[i].split('"')[1]
            lineno = lines[i].split("line ")[-1].split(",")[0]
            code = lines[i + 1] if i + 1 < len(lines) and not lines[i + 1].startswith("File ") else ""
            return f"{fname}:{lineno}" + (f" ({code})" if code else "")
    if node.op == "placeholder":
        return f"input '{node.name}'"
    return source_of(node) or f"node '{node.name}'"


def _at(node: torch.fx.Node) -> str:
    return "" if node.op == "placeholder" else f", at {_where(node)}"


class _Problems:
    """One line per node where a problem starts: nodes that only inherit it from an input (every op after a
    complex input is complex too) are not listed again."""

    def __init__(self):
        self.lines: List[str] = []
        self._flagged = {}

    def add(self, kind: str, node: torch.fx.Node, line: str) -> None:
        flagged = self._flagged.setdefault(kind, set())
        if not any(n in flagged for n in node.all_input_nodes):
            self.lines.append(line)
        flagged.add(node)


def _what(node: torch.fx.Node) -> str:
    if node.op == "placeholder":
        return f"input '{node.name}'"
    target = node.target
    name = target.name() if isinstance(target, torch._ops.OpOverload) else getattr(target, "__name__", str(target))
    return f"'{node.name}' ({name})"


def _tensors(val) -> Iterable[torch.Tensor]:
    if isinstance(val, torch.Tensor):
        yield val
    elif isinstance(val, (list, tuple)):
        for v in val:
            yield from _tensors(v)


def _dtype_problem(dtype: torch.dtype) -> str:
    if dtype.is_complex:
        return (
            f"is {dtype}: Ember's kernels and the .pte format are real-valued; keep real and imaginary parts "
            f"as separate real tensors"
        )
    if dtype in (torch.qint8, torch.quint8, torch.qint32, torch.quint4x2, torch.quint2x4):
        return (
            f"is a quantized tensor ({dtype}): quantize with exir.quantization.quantize (PT2E), whose int8 "
            f"tensors Ember runs"
        )
    from exir.emit.emitter import EmitError, scalar_type_of
    from schema import program as S

    try:
        S.ScalarType(scalar_type_of(dtype))
    except (EmitError, ValueError):
        return f"is {dtype}, which a .pte cannot carry"
    return ""


def check_layouts(gm: torch.fx.GraphModule, method: str) -> None:
    """Before decompositions: sparse and other non-strided tensors, which those would fail on obscurely."""
    problems = _Problems()
    for node in gm.graph.nodes:
        for t in _tensors(node.meta.get("val")):
            if t.layout != torch.strided:
                problems.add(
                    "layout",
                    node,
                    f"  {_what(node)} is a {t.layout} tensor{_at(node)}: Ember plans and "
                    f"runs dense tensors; convert with .to_dense() (inputs: pass dense example inputs)",
                )
                break
    _raise(method, problems.lines)


def check_supported(gm: torch.fx.GraphModule, method: str) -> None:
    """After decompositions: dtypes, data-dependent shapes and higher-order ops."""
    problems = _Problems()
    _check_graph(gm, problems)
    _raise(method, problems.lines)


def _check_graph(gm: torch.fx.GraphModule, problems: _Problems) -> None:
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols
    from exir.lowering.control_flow import CONTROL_FLOW

    for node in gm.graph.nodes:
        if node.op == "get_attr" and isinstance(getattr(gm, node.target, None), torch.fx.GraphModule):
            _check_graph(getattr(gm, node.target), problems)  # a branch or loop body
            continue
        if node.op == "call_function" and isinstance(node.target, torch._ops.HigherOrderOperator):
            if node.target not in CONTROL_FLOW:
                problems.add(
                    "hop",
                    node,
                    f"  {_what(node)}{_at(node)}: a higher-order op Ember does not lower "
                    f"(it lowers torch.cond, map, scan and while_loop)",
                )
            continue
        for t in _tensors(node.meta.get("val")):
            dtype = _dtype_problem(t.dtype)
            if dtype:
                problems.add("dtype", node, f"  {_what(node)} {dtype}{_at(node)}")
                break
            unbacked = [s for s in t.shape if isinstance(s, torch.SymInt) and free_unbacked_symbols(s)]
            if unbacked:
                shape = ", ".join(str(s) for s in t.shape)
                problems.add(
                    "shape",
                    node,
                    f"  {_what(node)} has a data-dependent shape [{shape}]{_at(node)}: "
                    f"Ember plans every tensor's bytes before any data exists; use a fixed-size "
                    f"formulation (a mask with torch.where instead of indexing by it, a padded result)",
                )
                break


def _raise(method: str, problems: List[str]) -> None:
    if problems:
        raise UnsupportedFeatureError(f"method '{method}' uses features Ember cannot export:\n" + "\n".join(problems))
