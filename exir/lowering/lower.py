"""ExportedProgram (edge, core ATen) -> MethodGraph.

The graph signature says what each placeholder is: user input, parameter, buffer (mutated or not) or lifted
constant. Mutated buffers and inputs are written back with `aten::copy_` at the end of the method, which is how
ExecuTorch encodes them too, so both runtimes agree on the program's meaning.
"""

from __future__ import annotations

import dataclasses
import operator
from typing import Any, Dict, List, Optional

import torch
from torch.export.graph_signature import InputKind, OutputKind

from exir.lowering import fold
from exir.lowering.ir import Call, MethodGraph, Role, TensorValue
from exir.lowering.out_variants import OutVariantError, out_arguments, out_variant
from exir.lowering.control_flow import CONTROL_FLOW, lower_control_flow
from exir.lowering.node_meta import LoweringError, _tensor_from_meta, module_of, source_of
from exir.lowering.symbolic import NEG, PRIM_OPS, Bounds, DynamicShapeError, SymValue, is_symbolic


def _constant(name: str, data: torch.Tensor, fqn: Optional[str] = None) -> TensorValue:
    data = data.detach().contiguous()
    return TensorValue(
        name=name,
        dtype=data.dtype,
        shape=tuple(data.shape),
        dim_order=tuple(range(data.dim())),
        role=Role.CONSTANT,
        data=data,
        fqn=fqn,
    )


def _folded_fqn(op, args, kwargs) -> Optional[str]:
    """A name for a constant folded from named ones ("lin.weight:permute"), so that an export that keeps constants
    in a .ptd (ExecutorchBackendConfig.external_constants) can still select it by its parameters' names. None when
    no input constant has a name (a folded scalar arithmetic)."""
    names = [t.fqn for a in list(args) + list(kwargs.values()) for t in fold.tensors_in(a) if t.fqn is not None]
    if not names:
        return None
    return f"{'+'.join(names)}:{op._schema.name.split('::')[-1]}"


def _fold_result_to_values(node: torch.fx.Node, result, fqn: Optional[str] = None) -> Any:
    if isinstance(result, torch.Tensor):
        return _constant(node.name, result, fqn=fqn)
    if isinstance(result, (tuple, list)):
        return [
            _constant(f"{node.name}_{i}", r, fqn=f"{fqn}.{i}" if fqn else None) if isinstance(r, torch.Tensor) else r
            for i, r in enumerate(result)
        ]
    return result


def _map_arg(env: Dict[str, Any], a: Any) -> Any:
    if isinstance(a, torch.fx.Node):
        return env[a.name]
    if isinstance(a, (list, tuple)):
        return [_map_arg(env, x) for x in a]
    return a


def _out_values(node: torch.fx.Node, materializes_view: bool, bounds: Bounds) -> List[TensorValue]:
    val = node.meta.get("val")
    vals = list(val) if isinstance(val, (tuple, list)) else [val]
    outs = []
    for i, v in enumerate(vals):
        if not isinstance(v, torch.Tensor):
            raise LoweringError(
                f"node '{node.name}' returns a {type(v).__name__}, not a tensor; "
                f"Ember kernels return tensors only. {source_of(node)}"
            )
        name = node.name if len(vals) == 1 else f"{node.name}_{i}"
        t = _tensor_from_meta(node, v, name, Role.ACTIVATION, bounds)
        if materializes_view:
            # The metadata describes the view's strides; the *_copy kernel writes a fresh contiguous tensor.
            t.dim_order = tuple(range(len(t.shape)))
        outs.append(t)
    return outs


def _tensor_inputs(values) -> List[TensorValue]:
    found = []
    for v in values:
        if isinstance(v, TensorValue):
            found.append(v)
        elif isinstance(v, (list, tuple)):
            found.extend(_tensor_inputs(v))
    return found


def _broadcasts_to(shape, target) -> bool:
    if len(shape) > len(target):
        return False
    return all(s in (1, t) for s, t in zip(reversed(shape), reversed(target)))


def _layouts_from_inputs(op, args, kwargs, outs: List[TensorValue]) -> None:
    """Gives each out a dim order its inputs really have.

    Eager's metadata derives an out's strides from its inputs' strides, but those are the strides eager saw: a
    permuted view there is a permute_copy here, which writes a contiguous tensor. Kept as it is, the metadata
    asks for outs in an order no input has (a `mul` of a materialized permute declared (0, 2, 1, 3)), which the
    kernels refuse. An order other than contiguous stays only when it comes from the data: some input has it,
    every input of out's shape shares it, and any broadcast input is a single value (what the elementwise loop
    can walk in memory order). Ops that choose a layout (memory_format, dim_order) keep one given explicitly and
    otherwise preserve their input's.
    """
    inputs = _tensor_inputs(list(args) + list(kwargs.values()))
    chooser = next((a for a in op._schema.arguments if a.name in ("memory_format", "dim_order")), None)
    if chooser is not None:
        given = kwargs.get(chooser.name)
        if given is not None and given is not torch.preserve_format:
            return  # an explicit layout: the metadata has it
        # Preserve-format (clone, _to_copy): the order of the input as it really is.
        if inputs and len(outs) == 1 and len(inputs[0].shape) == len(outs[0].shape):
            outs[0].dim_order = tuple(inputs[0].dim_order)
        return
    for out in outs:
        order, shape = tuple(out.dim_order), tuple(out.shape)
        if order == tuple(range(len(shape))):
            continue
        inherited = any(tuple(t.dim_order) == order for t in inputs)
        same_shape_agree = all(tuple(t.dim_order) == order for t in inputs if tuple(t.shape) == shape)
        broadcast_single = all(
            t.numel == 1 for t in inputs if tuple(t.shape) != shape and _broadcasts_to(tuple(t.shape), shape)
        )
        if not (inherited and same_shape_agree and broadcast_single):
            out.dim_order = tuple(range(len(shape)))


def _schema_args(
    node: torch.fx.Node, op, out_op, args: List[Any], kwargs: Dict[str, Any], outs: List[TensorValue]
) -> List[Any]:
    """The out overload's full argument list: given values by name, defaults for the rest, outs in order."""
    given = dict(kwargs)
    for a, v in zip(op._schema.arguments, args):
        given[a.name] = v
    result, out_iter = [], iter(outs)
    for a in out_op._schema.arguments:
        if a.is_out and _is_list_out(a):
            result.append(list(outs))  # the op's only out: a Tensor[] receiving every result
        elif a.is_out:
            result.append(next(out_iter))
        elif a.name in given:
            result.append(given[a.name])
        elif a.has_default_value():
            result.append(a.default_value)
        else:
            raise LoweringError(f"{out_op.name()}: no value for argument '{a.name}' at node '{node.name}'")
    return result


def _is_list_out(arg) -> bool:
    """An out= argument that is a list of tensors (split_copy.Tensor_out's `Tensor(a!)[] out`)."""
    return isinstance(arg.type, torch.ListType)


def _outs_match(out_op, outs: List[TensorValue]) -> bool:
    """Whether the out overload writes exactly `outs`: one out= tensor each, or one Tensor[] out for them all."""
    out_args = out_arguments(out_op)
    if len(out_args) == 1 and _is_list_out(out_args[0]):
        return True
    return len(outs) == len(out_args) and not any(_is_list_out(a) for a in out_args)


def _is_number(x: Any) -> bool:
    return isinstance(x, (bool, int, float)) and not isinstance(x, TensorValue)


def _scalars_to_tensors(node: torch.fx.Node, op, args: List[Any], kwargs: Dict[str, Any]):
    """Python numbers passed where the schema wants a Tensor (`x + 1.0` exports as add.Tensor(x, 1.0)).

    Kernels take tensors there, so such a call moves to the op's `.Scalar` overload when one exists (no constant,
    a cheaper kernel); otherwise the number becomes a 0-dim constant, with the dtype PyTorch gives a wrapped
    number (bool, int64, float32), so type promotion is unchanged.
    """
    schema_args = op._schema.arguments
    bad = [i for i, (a, v) in enumerate(zip(schema_args, args)) if str(a.type) == "Tensor" and _is_number(v)]
    if not bad:
        return op, args
    packet = getattr(getattr(torch.ops, op.namespace), op._schema.name.split("::")[1])
    scalar_op = getattr(packet, "Scalar", None)
    if scalar_op is not None and len(scalar_op._schema.arguments) == len(schema_args):
        ok = all(
            str(sa.type) == ("Scalar" if i in bad else str(a.type)) and sa.name == a.name
            for i, (a, sa) in enumerate(zip(schema_args, scalar_op._schema.arguments))
        )
        ok = ok or all(
            (str(sa.type) in ("Scalar", "number") if i in bad else str(sa.type) == str(a.type))
            for i, (a, sa) in enumerate(zip(schema_args, scalar_op._schema.arguments))
        )
        if ok:
            return scalar_op, args
    args = list(args)
    for i in bad:
        v = args[i]
        dtype = torch.bool if isinstance(v, bool) else torch.int64 if isinstance(v, int) else torch.float32
        args[i] = _constant(f"{node.name}_scalar{i}", torch.tensor(v, dtype=dtype))
    return op, args


def _lower_sym_node(node: torch.fx.Node, env: Dict[str, Any], calls: List[Call], bounds: Bounds) -> Any:
    """A node computing an integer from sizes: a prim op call writing a SymValue (or the int, when export
    specialized it)."""
    val = node.meta.get("val")
    if isinstance(val, (bool, torch.SymBool)) and not is_symbolic(val):
        return bool(val)
    if isinstance(val, (int, torch.SymInt)) and not is_symbolic(val):
        return int(val)
    args = [_map_arg(env, a) for a in node.args]
    target = node.target
    if isinstance(val, torch.SymBool):
        result = SymValue(node.name, 1, kind="bool")
    else:
        try:
            result = SymValue(node.name, bounds.upper(val, f"the integer '{node.name}'"))
        except DynamicShapeError as e:
            raise LoweringError(f"{e} {source_of(node)}") from None
    if target in (torch.ops.aten.sym_size.int, torch.ops.aten.sym_numel.default):
        op = target
    elif target in PRIM_OPS:
        op = PRIM_OPS[target]
    elif target is operator.neg:
        op = NEG
    else:
        raise LoweringError(
            f"node '{node.name}' computes a size with {getattr(target, '__name__', target)}, "
            f"which has no prim op; Ember's symbolic sizes support sym_size, sym_numel and "
            f"{', '.join(sorted(o.__name__ for o in PRIM_OPS))}. {source_of(node)}"
        )
    if len(args) != len(op._schema.arguments):
        raise LoweringError(
            f"node '{node.name}': {op.name()} takes {len(op._schema.arguments)} arguments, "
            f"got {len(args)}. {source_of(node)}"
        )
    calls.append(Call(op=op, args=args, outs=[], source=source_of(node), module=module_of(node), result=result))
    return result


@dataclasses.dataclass
class LowerContext:
    """What lowering a graph (a method's, or a branch's or loop body's) appends to and reads."""

    calls: List[Any]
    bounds: Bounds
    fold_constants: bool = True
    fold_free_bytes: int = fold.DEFAULT_FOLD_FREE_BYTES
    fold_growth: float = fold.DEFAULT_FOLD_GROWTH
    loops: List[Any] = dataclasses.field(default_factory=list)

    def lower_subgraph(self, gm: torch.fx.GraphModule, operands: List[Any]) -> List[Any]:
        """lower_subgraph below, for exir.lowering.control_flow: a construct's bodies are lowered by the lowering
        that met the construct, reached through the context so that control_flow need not import this module."""
        return lower_subgraph(self, gm, operands)


def lower_nodes(ctx: LowerContext, gm: torch.fx.GraphModule, env: Dict[str, Any]) -> None:
    """Appends the calls of gm's nodes, in order, to ctx.calls; env maps node names to values (the placeholders
    must be there already) and receives every node's value."""
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            env[node.name] = getattr(gm, node.target)  # a branch or loop body (a GraphModule)
            continue
        if node.op != "call_function":
            continue
        if node.target is operator.getitem:
            src, idx = node.args
            env[node.name] = env[src.name][idx]
            continue
        if isinstance(node.meta.get("val"), (torch.SymInt, torch.SymBool)) or node.target in PRIM_OPS:
            env[node.name] = _lower_sym_node(node, env, ctx.calls, ctx.bounds)
            continue
        if node.target in CONTROL_FLOW:
            env[node.name] = lower_control_flow(ctx, node, [_map_arg(env, a) for a in node.args])
            continue
        op = node.target
        if not isinstance(op, torch._ops.OpOverload):
            raise LoweringError(
                f"node '{node.name}' calls {getattr(op, '__name__', op)}, which Ember cannot "
                f"lower (control flow and Python callables are not supported yet). "
                f"{source_of(node)}"
            )
        args = [_map_arg(env, a) for a in node.args]
        kwargs = {k: _map_arg(env, v) for k, v in node.kwargs.items()}
        op, args = _scalars_to_tensors(node, op, args, kwargs)
        val = node.meta.get("val")
        metas = [v for v in (val if isinstance(val, (tuple, list)) else [val]) if isinstance(v, torch.Tensor)]
        symbolic = any(is_symbolic(d) for v in metas for d in v.shape)
        out_nbytes = 0 if symbolic else sum(v.numel() * v.element_size() for v in metas)
        if ctx.fold_constants and not symbolic:
            folded = fold.try_fold(op, args, kwargs, out_nbytes, free_bytes=ctx.fold_free_bytes, growth=ctx.fold_growth)
            if folded is not None:
                env[node.name] = _fold_result_to_values(node, folded, _folded_fqn(op, args, kwargs))
                continue
        try:
            out_op = out_variant(op)
        except OutVariantError as e:
            raise LoweringError(f"{e} (node '{node.name}', {source_of(node) or 'no source line'})") from None
        outs = _out_values(node, materializes_view=out_op._schema.name != op._schema.name, bounds=ctx.bounds)
        _layouts_from_inputs(op, args, kwargs, outs)
        if not _outs_match(out_op, outs):
            raise LoweringError(
                f"{out_op.name()} writes {len(out_arguments(out_op))} outputs but node "
                f"'{node.name}' has {len(outs)} ({source_of(node) or 'no source line'})"
            )
        ctx.calls.append(
            Call(
                op=out_op,
                args=_schema_args(node, op, out_op, args, kwargs, outs),
                outs=outs,
                source=source_of(node),
                module=module_of(node),
                tag=node.meta.get("delegation_tag"),
                node_name=node.name,
            )
        )
        env[node.name] = outs[0] if len(outs) == 1 and not isinstance(val, (tuple, list)) else outs


def lower_subgraph(ctx: LowerContext, gm: torch.fx.GraphModule, operands: List[Any]) -> List[Any]:
    """Lowers a branch or loop body inline with its placeholders bound to `operands`; returns its outputs."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(operands):
        raise LoweringError(f"a subgraph takes {len(placeholders)} operands, given {len(operands)}")
    env: Dict[str, Any] = {n.name: v for n, v in zip(placeholders, operands)}
    lower_nodes(ctx, gm, env)
    output = next(n for n in gm.graph.nodes if n.op == "output")
    result = output.args[0]
    return [_map_arg(env, a) for a in (result if isinstance(result, (list, tuple)) else [result])]


def lower_method(
    name: str,
    ep: torch.export.ExportedProgram,
    *,
    fold_constants: bool = True,
    fold_free_bytes: int = fold.DEFAULT_FOLD_FREE_BYTES,
    fold_growth: float = fold.DEFAULT_FOLD_GROWTH,
) -> MethodGraph:
    sig = ep.graph_signature
    mutated_buffers = set(sig.buffers_to_mutate.values())
    env: Dict[str, Any] = {}
    inputs: List[TensorValue] = []
    buffers: Dict[str, TensorValue] = {}
    calls: List[Call] = []
    bounds = Bounds(ep)

    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
    for node, spec in zip(placeholders, sig.input_specs):
        kind, target = spec.kind, spec.target
        if kind == InputKind.USER_INPUT:
            val = node.meta.get("val")
            if not isinstance(val, torch.Tensor):
                raise LoweringError(
                    f"input '{node.name}' of method '{name}' is a {type(val).__name__}; "
                    f"Ember methods take tensors. Pass it as a tensor or bake it into the model."
                )
            t = _tensor_from_meta(node, val, node.name, Role.INPUT, bounds)
            inputs.append(t)
            env[node.name] = t
        elif kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
            data = ep.state_dict[target] if target in ep.state_dict else ep.constants[target]
            if kind == InputKind.BUFFER and target in mutated_buffers:
                t = _constant(node.name, data, fqn=target)
                t.role = Role.BUFFER
                buffers[target] = t
            else:
                t = _constant(node.name, data, fqn=target)
            env[node.name] = t
        else:
            raise LoweringError(f"input '{node.name}' of kind {kind.name} is not supported by Ember yet")

    ctx = LowerContext(
        calls=calls,
        bounds=bounds,
        fold_constants=fold_constants,
        fold_free_bytes=fold_free_bytes,
        fold_growth=fold_growth,
    )
    lower_nodes(ctx, ep.graph_module, env)

    output_node = next(n for n in ep.graph.nodes if n.op == "output")
    results = [_map_arg(env, a) for a in output_node.args[0]]
    outputs: List[Any] = []
    for spec, value in zip(sig.output_specs, results):
        if spec.kind == OutputKind.USER_OUTPUT:
            outputs.append(value)
        elif spec.kind in (OutputKind.BUFFER_MUTATION, OutputKind.USER_INPUT_MUTATION):
            if spec.kind == OutputKind.BUFFER_MUTATION:
                dest = buffers[spec.target]
            else:
                dest = next(t for t in inputs if t.name == spec.target)
            # The write-back: ExecuTorch encodes it as aten::copy_(self, src, non_blocking) -> self.
            calls.append(
                Call(
                    op=torch.ops.aten.copy_.default,
                    args=[dest, value, False],
                    outs=[dest],
                    source=f"write-back of {spec.target}",
                )
            )
        else:
            raise LoweringError(f"output kind {spec.kind.name} ('{spec.target}') is not supported by Ember yet")

    in_spec = out_spec = ""
    try:
        from torch.utils._pytree import treespec_dumps

        in_spec = treespec_dumps(ep.call_spec.in_spec) if ep.call_spec.in_spec else ""
        out_spec = treespec_dumps(ep.call_spec.out_spec) if ep.call_spec.out_spec else ""
    except Exception:  # the spec is informational; a program without it is still complete
        pass
    return MethodGraph(
        name=name,
        inputs=inputs,
        outputs=outputs,
        calls=calls,
        buffers=list(buffers.values()),
        in_spec=in_spec,
        out_spec=out_spec,
        loops=ctx.loops,
    )
