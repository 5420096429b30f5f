"""devtools.debug.compare: which operator's output first leaves eager's, with its source line and module.

    edge = exir.to_edge(torch.export.export(model, (x,)))
    prog = edge.to_executorch()
    report = devtools.debug.compare(edge, prog, (x,))      # or compare(model, prog, (x,)): exported the same way
    print(report)                                       # a table, first divergence marked
    report.first_divergence                             # OpResult: name, op, source, module, error, where

How, by default (capture="variant"): the program side runs a *debug variant* of the method, emitted by exir from
the same lowered graph (the same kernels, constants, fusions and aliases) with every kernel call's output also a
method output, planned without reuse so each survives to the end. It runs on Ember's C++ runtime like any program:
no runtime change, and the same variant runs on a device or on ExecuTorch's runtime.

capture="runtime" runs the real program instead, with the runtime's event tracer in debug mode (the profiling
build): each kernel's output is copied out right after the kernel, before any later instruction can reuse its
bytes. That is the program as it ships, memory plan and all, so a planning bug shows as the first operator whose
input was overwritten; it needs the profiling build of the default kernels.

The eager side runs the edge program's FX graph node by node through torch.fx.Interpreter on the same inputs;
the program's tensors carry their FX node's name, so each output is
compared with the eager value of the node it came from. Nodes folded into constants or fused away (batch norm
into its convolution) have no output of their own and are skipped; the fused call is compared under the name of
the node whose value it produces.

The debug variant plans no reuse, so it cannot reproduce a memory-planning bug: the report also runs the real
program and says when its outputs diverge while no operator does (then suspect the plan, not a kernel, and run
again with capture="runtime").
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Dict, List, Optional, Sequence

import torch

from exir.lowering.ir import DelegateCall, Jump, Label, MethodGraph, Role, TensorValue, is_instruction
from exir.lowering.lower import source_of

# Default tolerances per dtype class, relative to the eager output's largest magnitude (at least 1): float32's
# kernels sum in another order than eager's; an int8 kernel may round one step differently from the reference.
FLOAT_TOLERANCE = 1e-4
INTEGER_TOLERANCE = 1


@dataclasses.dataclass
class OpResult:
    index: int  # instruction index in the method
    name: str  # the FX node (and program tensor) name
    op: str  # the kernel: aten::addmm.out
    source: str  # the model's own line (innermost frame outside torch): "model.py:12 (x = self.fc2(x))"
    module: str  # the nn.Module path the node came from ("encoder.layer.0.fc2"), "" if unknown
    stack_trace: str  # the node's whole stack trace
    dtype: torch.dtype
    shape: tuple
    max_abs_error: float  # max |program - eager| over the elements (inf for NaN against a number)
    worst_index: tuple  # where it is
    program_value: float
    eager_value: float
    scale: float  # max(1, max |eager|): errors are judged relative to it
    diverged: bool

    @property
    def relative_error(self) -> float:
        return self.max_abs_error / self.scale


@dataclasses.dataclass
class NumericReport:
    method: str
    ops: List[OpResult]
    skipped: List[str]  # program tensors with no eager node of their own (fused, renamed)
    output_error: float  # the real program's outputs against eager's, max relative error
    outputs_diverged: bool

    @property
    def first_divergence(self) -> Optional[OpResult]:
        return next((o for o in self.ops if o.diverged), None)

    @property
    def worst(self) -> Optional[OpResult]:
        return max(self.ops, key=lambda o: o.relative_error, default=None)

    def __str__(self) -> str:
        first = self.first_divergence
        lines = [
            f"method '{self.method}': {len(self.ops)} operator outputs compared with eager "
            f"({len(self.skipped)} without an eager node of their own)"
        ]
        lines.append(f"{'#':>4}  {'node':<28} {'operator':<40} {'max |error|':>12} {'relative':>10}  where")
        for o in self.ops:
            mark = "  <-- first divergence" if o is first else ""
            lines.append(
                f"{o.index:>4}  {o.name[:28]:<28} {o.op[:40]:<40} {o.max_abs_error:>12.3g} "
                f"{o.relative_error:>10.3g}  {o.module or '-'} {o.source}{mark}"
            )
        if first is not None:
            lines.append(
                f"first divergence: instruction {first.index} {first.op} (node '{first.name}', module "
                f"'{first.module or '?'}') at {first.source or 'an unknown line'}: |error| "
                f"{first.max_abs_error:.3g} at element {list(first.worst_index)} (program "
                f"{first.program_value:.6g}, eager {first.eager_value:.6g})"
            )
        else:
            lines.append("no operator diverges beyond tolerance")
        worst = self.worst
        if worst is not None:
            lines.append(
                f"worst: instruction {worst.index} {worst.op} (node '{worst.name}', module "
                f"'{worst.module or '?'}'), relative error {worst.relative_error:.3g}"
            )
        if self.outputs_diverged and first is None:
            lines.append(
                f"the program's outputs diverge (relative {self.output_error:.3g}) though no operator "
                f"does in the debug variant: suspect the memory plan (two live tensors overlapping)"
            )
        return "\n".join(lines)


def _edge_program(model: Any, inputs: Sequence[Any], method: str):
    import exir
    from exir.edge import EdgeProgramManager

    if isinstance(model, EdgeProgramManager):
        return model.exported_program(method)
    if isinstance(model, torch.export.ExportedProgram):
        return exir.to_edge(model).exported_program(method)
    if isinstance(model, torch.nn.Module):
        if method != "forward":
            raise ValueError(
                f"compare(model, ...) exports 'forward' only; for method '{method}' pass the "
                f"EdgeProgramManager you lowered"
            )
        return exir.to_edge(torch.export.export(model, tuple(inputs))).exported_program(method)
    raise TypeError(
        f"model must be an nn.Module, an ExportedProgram or the EdgeProgramManager the program came "
        f"from; got a {type(model).__name__}"
    )


def _eager_values(ep: torch.export.ExportedProgram, inputs: Sequence[torch.Tensor]):
    """Every node's value, by name, and the graph's user outputs, running the edge graph node by node."""
    from torch.export.graph_signature import InputKind

    args, user = [], iter(inputs)
    for spec in ep.graph_signature.input_specs:
        if spec.kind == InputKind.USER_INPUT:
            args.append(next(user))
        elif spec.target in ep.state_dict:
            args.append(ep.state_dict[spec.target])
        else:
            args.append(ep.constants[spec.target])
    values: Dict[str, Any] = {}
    nodes: Dict[str, torch.fx.Node] = {}

    # Control flow's branches and loop bodies are graphs of their own (cond's true_graph_0, while_loop's
    # body_graph_0) whose node names the program's tensors keep too: each runs through a Recorder as the
    # higher-order op calls it, so a loop's values are its last iteration's (as the program's, which overwrite in
    # place) and a branch not taken records nothing (the program did not run it either). A name two graphs share
    # is ambiguous here; per_graph keeps every graph's own values (a cond's branches: _cond_branches).
    counts: Dict[str, int] = {}
    graphs = [m for m in ep.graph_module.modules() if isinstance(m, torch.fx.GraphModule)]
    for gm in graphs:
        for n in gm.graph.nodes:
            if n.op not in ("placeholder", "output"):
                counts[n.name] = counts.get(n.name, 0) + 1

    per_graph: Dict[int, tuple] = {id(gm): ({}, {}) for gm in graphs}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            result = super().run_node(n)
            own_values, own_nodes = per_graph[id(self.module)]
            own_values[n.name], own_nodes[n.name] = result, n
            if counts.get(n.name, 0) == 1:
                values[n.name] = result
                nodes[n.name] = n
            return result

    def recorded(gm):
        return lambda *a: Recorder(gm).run(*a)

    for gm in graphs[1:]:
        gm.forward = recorded(gm)
    try:
        with torch.no_grad():
            outs = Recorder(ep.graph_module).run(*args)
    finally:
        for gm in graphs[1:]:
            del gm.forward
    n_user = sum(1 for s in ep.graph_signature.output_specs if s.kind.name == "USER_OUTPUT")
    user_outs = [o for o, s in zip(outs, ep.graph_signature.output_specs) if s.kind.name == "USER_OUTPUT"]
    assert len(user_outs) == n_user
    return values, nodes, user_outs, per_graph


def _cond_branches(graph: MethodGraph, ep, values: Dict[str, Any], per_graph: Dict[int, tuple]) -> Dict[int, Any]:
    """id(call) -> the (values, nodes) of the branch graph it was lowered from, for the calls of the method's
    top-level conds' branches (lowered as Jump(pred, else) then-calls Jump(False, end) else: else-calls end:); None
    for the branch eager did not take, which the program did not run either. Both branches may name their nodes
    alike (each has its own addmm): this tells them apart."""
    conds = {}
    for n in ep.graph.nodes:
        if n.op == "call_function" and n.target is torch.ops.higher_order.cond and isinstance(n.args[0], torch.fx.Node):
            conds[n.args[0].name] = n
    out: Dict[int, Any] = {}
    calls = graph.calls
    for k, c in enumerate(calls):
        if not isinstance(c, Jump) or not isinstance(c.cond, TensorValue) or c.cond.name not in conds:
            continue
        pred = values.get(c.cond.name)
        else_at = next((i for i in range(k + 1, len(calls)) if calls[i] is c.target), None)
        if not isinstance(pred, torch.Tensor) or pred.numel() != 1 or else_at is None:
            continue
        skip = calls[else_at - 1]
        end_at = next((i for i in range(else_at + 1, len(calls)) if calls[i] is getattr(skip, "target", None)), None)
        if not isinstance(skip, Jump) or end_at is None:
            continue
        node, taken = conds[c.cond.name], bool(pred.item())
        for branch, lo, hi, ran in (
            (node.args[1], k + 1, else_at - 1, taken),
            (node.args[2], else_at + 1, end_at, not taken),
        ):
            gm = getattr(ep.graph_module, branch.target, None)
            if gm is None:
                continue
            for inner in calls[lo:hi]:
                out[id(inner)] = per_graph.get(id(gm)) if ran else None
    return out


def _eager_for(name: str, values: Dict[str, Any], nodes: Dict[str, torch.fx.Node]):
    """The eager tensor and FX node of a program tensor name ("linear_1", or "node_2" for output 2 of "node")."""
    if name in values and isinstance(values[name], torch.Tensor):
        return values[name], nodes[name]
    base, _, idx = name.rpartition("_")
    if base in values and idx.isdigit() and isinstance(values[base], (tuple, list)) and int(idx) < len(values[base]):
        v = values[base][int(idx)]
        return (v, nodes[base]) if isinstance(v, torch.Tensor) else (None, None)
    return None, None


def _module_path(node: torch.fx.Node) -> str:
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path = list(stack.values())[-1][0]
    # torch.export spells paths as L['self'].fc2 or L['self'].layers[0]; keep the attribute path.
    for prefix in ("L['self'].", "L['self']"):
        if path.startswith(prefix):
            path = path[len(prefix) :]
    return path.replace("_modules['", "").replace("']", "")


def _debug_variant(graph: MethodGraph):
    """The method with every kernel or delegate call's output (written once, planned) also an output, and the
    probes: (instruction index, call, tensor, position among the debug variant's outputs). The index is the
    instruction's in the method's chain, as the .pte holds it: jumps count (Labels emit nothing)."""
    written: Dict[int, int] = {}
    for c in graph.calls:
        if is_instruction(c) or isinstance(c, DelegateCall):
            for o in c.outs:
                written[id(o)] = written.get(id(o), 0) + 1
    position = {}
    for i, o in enumerate(graph.outputs):
        position.setdefault(id(o), i)
    extra, probes = [], []
    for index, c in enumerate([c for c in graph.calls if not isinstance(c, Label)]):
        if not (is_instruction(c) or isinstance(c, DelegateCall)):
            continue  # a jump
        for o in c.outs:
            if o.role is not Role.ACTIVATION or written[id(o)] != 1:
                continue
            if id(o) not in position:
                position[id(o)] = len(graph.outputs) + len(extra)
                extra.append(o)
            probes.append((index, c, o, position[id(o)]))
    debug = dataclasses.replace(graph, outputs=list(graph.outputs) + extra, out_spec="")
    return debug, probes


def _user_source(node: torch.fx.Node) -> str:
    """The innermost frame of the node's stack trace outside torch itself (the model's own line), as
    'file.py:12 (code)'; else the innermost frame."""
    lines = [l.strip() for l in (node.meta.get("stack_trace") or "").strip().splitlines() if l.strip()]
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith("File ") and "/torch/" not in lines[i].split('"')[1 if '"' in lines[i] else 0]:
            parts = lines[i].split('"')
            lineno = lines[i].split("line ")[-1].split(",")[0]
            code = lines[i + 1] if i + 1 < len(lines) and not lines[i + 1].startswith("File ") else ""
            return f"{parts[1] if len(parts) > 1 else '?'}:{lineno}" + (f" ({code})" if code else "")
    return source_of(node)


def _emit(graph: MethodGraph) -> bytes:
    from exir.backend.named_data import NamedDataStoreOutput, merge_named_data
    from exir.emit import ConstantPool, emit_method
    from exir.program import MemoryPlanningConfig, _plan
    from exir.serialize import serialize_pte
    from schema import program as S

    constants, initial_values, blobs = ConstantPool(), ConstantPool(), []
    offsets, plan, _ = _plan(graph, MemoryPlanningConfig())
    plan_fb = emit_method(graph, offsets, plan.pool_sizes, constants, initial_values, delegate_blobs=blobs)
    # A delegate's blob (XNNPACK's) may keep its weights by key in the program's named data.
    named = NamedDataStoreOutput()
    for c in graph.calls:
        if isinstance(c, DelegateCall) and c.named_data is not None:
            merge_named_data(named, c.named_data, f"delegate {c.backend_id}: ")
    program = S.Program(
        version=0,
        execution_plan=[plan_fb],
        constant_buffer=[],
        backend_delegate_data=[],
        segments=[],
        constant_segment=S.SubsegmentOffsets(segment_index=0, offsets=[]),
        mutable_data_segments=[],
        named_data=[],
    )
    return serialize_pte(
        program,
        constants.blobs[1:],
        mutable_blobs=initial_values.blobs[1:],
        delegate_blobs=blobs,
        named_data=[(k, v, named.alignment.get(k, 1)) for k, v in named.pte_data.items()],
    )


def _error(got: torch.Tensor, want: torch.Tensor):
    """max |got - want|, its index, and the two values there; NaN against a number counts as infinite."""
    if got.shape != want.shape:
        raise RuntimeError(f"shape {list(got.shape)} against eager's {list(want.shape)}")
    if got.numel() == 0:
        return 0.0, (), 0.0, 0.0
    g, w = got.detach().double(), want.detach().double()
    diff = (g - w).abs()
    both_nan = g.isnan() & w.isnan()
    same_inf = g.isinf() & w.isinf() & (g == w)
    diff = torch.where(both_nan | same_inf, torch.zeros_like(diff), diff)
    diff = torch.where(diff.isnan(), torch.full_like(diff, math.inf), diff)
    flat = int(diff.reshape(-1).argmax())
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), diff.shape)) if diff.dim() else ()
    return float(diff.reshape(-1)[flat]), index, float(g.reshape(-1)[flat]), float(w.reshape(-1)[flat])


def _runtime_outputs(runtime, program: Any, graph: MethodGraph, method: str, inputs: Sequence[torch.Tensor]):
    """instruction index -> the tensors its kernel returned, captured by the runtime's tracer in debug mode."""
    from devtools import etdump

    # Room for every kernel output at its planned (upper-bound) size, with each one's header and padding.
    budget = sum(
        o.numel * o.dtype.itemsize + 16 * (len(o.shape) + 4) for c in graph.calls if is_instruction(c) for o in c.outs
    )
    n_outs = sum(len(c.outs) for c in graph.calls if is_instruction(c) or isinstance(c, DelegateCall))
    _, trace = runtime.load(program.buffer).run(
        method,
        inputs,
        profile=True,
        profile_outputs=max(budget, 1),
        profile_events=2 * n_outs + 2 * len(graph.calls) + 64,
    )
    if trace.dropped or trace.dropped_outputs:
        raise RuntimeError(
            f"the traced run kept {trace.events} events and dropped {trace.dropped} events and "
            f"{trace.dropped_outputs} outputs: the program's outputs outgrew their planned sizes"
        )
    return etdump.outputs(trace.etdump, trace.debug_buffer)


def compare(
    model: Any,
    program: Any,
    inputs: Sequence[torch.Tensor],
    method: str = "forward",
    float_tolerance: float = FLOAT_TOLERANCE,
    integer_tolerance: float = INTEGER_TOLERANCE,
    kernels: str = "default",
    capture: str = "variant",
) -> NumericReport:
    """Runs `program`'s method with every operator output captured and eager alongside; returns a report naming
    the first operator whose output diverges beyond tolerance (relative to its eager output's largest
    magnitude, at least 1: `float_tolerance` for floating outputs, `integer_tolerance` steps for integer ones).

    model: the EdgeProgramManager `program` was lowered from (exact), an ExportedProgram or the nn.Module
      (exported here the same way). program: what to_executorch() returned. kernels: "default" or "portable".
    capture: "variant" (the debug variant, any kernels) or "runtime" (the real program, its outputs captured by
      the runtime's tracer; default kernels only). See the module's docstring.
    """
    from ember import runtime

    if capture not in ("variant", "runtime"):
        raise ValueError(
            f"capture={capture!r}: choose 'variant' (a debug variant of the program) or 'runtime' "
            f"(the real program, outputs captured by the runtime's tracer)"
        )
    if capture == "runtime" and kernels != "default":
        raise ValueError(
            "capture='runtime' runs the profiling build, which has the default kernels: drop "
            f"kernels={kernels!r}, or use capture='variant'"
        )
    graphs = getattr(program, "method_graphs", None)
    if not graphs or method not in graphs:
        raise TypeError(
            f"program must be what to_executorch() returned, with method '{method}' (it keeps the "
            f"lowered graphs the debug variant is emitted from)"
        )
    inputs = list(inputs)
    ep = _edge_program(model, inputs, method)
    values, nodes, eager_outs, per_graph = _eager_values(ep, inputs)
    graph = graphs[method]
    branches = _cond_branches(graph, ep, values, per_graph)

    def eager_of(call, name):
        if id(call) in branches:
            return _eager_for(name, *branches[id(call)]) if branches[id(call)] is not None else (None, None)
        return _eager_for(name, values, nodes)

    debug, probes = _debug_variant(graph)
    matched = [p for p in probes if eager_of(p[1], p[2].name)[0] is not None]
    if probes and not matched:
        raise ValueError(
            f"none of the program's {len(probes)} operator outputs has an eager node of the same "
            f"name: pass the EdgeProgramManager the program was lowered from as `model`"
        )
    if capture == "runtime":
        kept = _runtime_outputs(runtime, program, graph, method, inputs)
    else:
        got = runtime.load(_emit(debug), kernels=kernels).run(method, inputs)
    ops, skipped = [], []
    for index, call, t, at in probes:
        want, node = eager_of(call, t.name)
        if want is None:
            skipped.append(t.name)
            continue
        if capture == "runtime":
            if index not in kept:  # a delegate's work: the tracer sees the call, not its outputs
                skipped.append(t.name)
                continue
            value = kept[index][[id(o) for o in call.outs].index(id(t))]
        else:
            value = got[at]
        err, where, g, w = _error(value, want)
        scale = max(1.0, float(want.detach().double().abs().max()) if want.numel() else 1.0)
        if want.is_floating_point():
            diverged = not err <= float_tolerance * scale
        else:
            diverged = not err <= integer_tolerance
        ops.append(
            OpResult(
                index=index,
                name=t.name,
                op=call.op_name,
                source=_user_source(node),
                module=_module_path(node),
                stack_trace=node.meta.get("stack_trace") or "",
                dtype=value.dtype,
                shape=tuple(value.shape),
                max_abs_error=err,
                worst_index=where,
                program_value=g,
                eager_value=w,
                scale=scale,
                diverged=diverged,
            )
        )
    # The real program (its own memory plan) against eager's outputs.
    real = runtime.load(program.buffer, kernels=kernels).run(method, inputs)
    output_error, outputs_diverged = 0.0, False
    for r, e in zip(real, eager_outs):
        if isinstance(r, torch.Tensor) and isinstance(e, torch.Tensor):
            err, _, _, _ = _error(r, e)
            scale = max(1.0, float(e.detach().double().abs().max()) if e.numel() else 1.0)
            output_error = max(output_error, err / scale)
            tol = float_tolerance if e.is_floating_point() else integer_tolerance / scale
            outputs_diverged |= not err / scale <= tol
    return NumericReport(
        method=method, ops=ops, skipped=skipped, output_error=output_error, outputs_diverged=outputs_diverged
    )
