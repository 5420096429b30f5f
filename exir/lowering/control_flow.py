"""torch.cond, map, scan and while_loop, lowered into the method's one instruction chain.

The encoding is ExecuTorch's, so programs without while_loop run on its runtime too:
- cond: JumpFalse(pred -> else); the true branch; JumpFalse(False -> end); else: the false branch; end.
- map and scan: a loop over dim 0 with a counter Int that prim ops advance (`executorch_prim::add/eq/sub`), each
  iteration's slice taken with select_copy and each result stacked with `executorch_prim::et_copy_index`; the
  counter returns to 0 after the last iteration, so the next execute starts afresh.
- while_loop (which ExecuTorch cannot export): cond graph; JumpFalse(pred -> end); body; carries updated;
  JumpFalse(False -> start).

Each construct writes its results into bindings: tensors planned like any other, which every branch (or every
iteration) writes with a copy. Both branches' tensors are in the plan, and a loop's tensors are planned once for
all its iterations (exir.lowering.lifetimes keeps what crosses the back edge live for the whole loop), so a
method's memory is still known before it runs. A loop that does not end is bounded at run time by the caller's
instruction limit (Method::set_instruction_limit; the runner's --instruction-limit).
"""

from __future__ import annotations

import itertools
from typing import Any, List

import torch

from exir.lowering.ir import Call, Jump, Label, Role, TensorValue
from exir.lowering.node_meta import LoweringError, _tensor_from_meta, source_of
from exir.lowering.symbolic import COPY_INDEX, PRIM_OPS, SymValue

higher_order = torch.ops.higher_order
CONTROL_FLOW = {higher_order.cond, higher_order.map_impl, higher_order.scan, higher_order.while_loop}

_ids = itertools.count()


def lower_control_flow(ctx, node: torch.fx.Node, args: List[Any]) -> List[Any]:
    lower = {
        higher_order.cond: _cond,
        higher_order.map_impl: _map,
        higher_order.scan: _scan,
        higher_order.while_loop: _while,
    }[node.target]
    try:
        return lower(ctx, node, args)
    except LoweringError:
        raise
    except (TypeError, ValueError) as e:
        raise LoweringError(f"node '{node.name}' ({node.target.__name__}): {e} {source_of(node)}") from None


def _source(node) -> str:
    return source_of(node)


def _label(node, what: str) -> Label:
    return Label(f"{node.name}_{what}_{next(_ids)}")


def _bindings(ctx, node, vals) -> List[TensorValue]:
    """Planned tensors for a construct's results (contiguous; bounded-dynamic where the result is)."""
    out = []
    for i, v in enumerate(vals):
        if not isinstance(v, torch.Tensor):
            raise ValueError(f"result {i} is a {type(v).__name__}; Ember's control flow carries tensors only")
        t = _tensor_from_meta(node, v, f"{node.name}_{i}", Role.ACTIVATION, ctx.bounds)
        t.dim_order = tuple(range(len(t.shape)))
        out.append(t)
    return out


def _like(t: TensorValue, name: str) -> TensorValue:
    c = TensorValue(
        name=name,
        dtype=t.dtype,
        shape=tuple(t.shape),
        dim_order=tuple(range(len(t.shape))),
        role=Role.ACTIVATION,
        dynamic=t.dynamic,
    )
    c.lower_shape = t.lower_shape
    return c


def _move(ctx, src: Any, dst: TensorValue, source: str) -> None:
    if not isinstance(src, TensorValue):
        raise ValueError(f"a branch or loop body returns {src!r} where a tensor is expected; return tensors only")
    if src.dtype != dst.dtype:
        raise ValueError(f"a branch or loop body returns {src.dtype} where {dst.dtype} is expected")
    ctx.calls.append(Call(op=torch.ops.aten.clone.out, args=[src, None, dst], outs=[dst], source=source, pinned=True))


def _move_all(ctx, srcs: List[Any], dsts: List[TensorValue], source: str) -> None:
    """dsts[k] = srcs[k] for all k at once: a source that is another destination is staged first (a swap)."""
    if len(srcs) != len(dsts):
        raise ValueError(f"{len(srcs)} results for {len(dsts)} bindings")
    dst_ids = {id(d) for d in dsts}
    staged = []
    for s, d in zip(srcs, dsts):
        if s is d:
            staged.append(None)
        elif isinstance(s, TensorValue) and id(s) in dst_ids:
            tmp = _like(s, f"{s.name}_staged_{next(_ids)}")
            _move(ctx, s, tmp, source)
            staged.append(tmp)
        else:
            staged.append(s)
    for s, d in zip(staged, dsts):
        if s is not None:
            _move(ctx, s, d, source)


def _cond(ctx, node, args):
    pred, true_gm, false_gm, operands = args
    operands = list(operands)
    if isinstance(pred, bool):  # export specialized the predicate: one branch
        return ctx.lower_subgraph(true_gm if pred else false_gm, operands)
    if isinstance(pred, TensorValue) and (pred.dtype != torch.bool or pred.numel != 1):
        raise ValueError(
            f"the predicate is a {pred.dtype} tensor of shape {list(pred.shape)}; torch.cond needs one Bool element"
        )
    outs = _bindings(ctx, node, node.meta["val"])
    src = _source(node)
    other, end = _label(node, "else"), _label(node, "end")
    ctx.calls.append(Jump(pred, other, src))
    _move_all(ctx, ctx.lower_subgraph(true_gm, operands), outs, src)
    ctx.calls.append(Jump(False, end, src))
    ctx.calls.append(other)
    _move_all(ctx, ctx.lower_subgraph(false_gm, operands), outs, src)
    ctx.calls.append(end)
    return outs


def _length(ctx, node, xs: TensorValue, src: str):
    """Dim 0 of xs: an int, or a SymValue that sym_size computes when dim 0 is dynamic."""
    if not xs.dynamic or xs.lower_shape is None or xs.lower_shape[0] == xs.shape[0]:
        return xs.shape[0]
    n = SymValue(f"{node.name}_n_{next(_ids)}", xs.shape[0])
    ctx.calls.append(Call(op=torch.ops.aten.sym_size.int, args=[xs, 0], outs=[], source=src, result=n))
    return n


def _slice(ctx, node, x: TensorValue, i: SymValue, src: str) -> TensorValue:
    out = TensorValue(
        name=f"{x.name}_row_{next(_ids)}",
        dtype=x.dtype,
        shape=tuple(x.shape[1:]),
        dim_order=tuple(range(len(x.shape) - 1)),
        role=Role.ACTIVATION,
        dynamic=x.dynamic and x.lower_shape is not None and x.lower_shape[1:] != x.shape[1:],
    )
    if out.dynamic:
        out.lower_shape = tuple(x.lower_shape[1:])
    ctx.calls.append(Call(op=torch.ops.aten.select_copy.int_out, args=[x, 0, i, out], outs=[out], source=src))
    return out


def _loop(ctx, node, xs: List[TensorValue], carries: List[TensorValue], stacked: List[TensorValue], body, extra):
    """The map/scan loop: body(carries + rows of xs + extra) -> new carries + rows of the stacked results."""
    src = _source(node)
    if not xs:
        raise ValueError("a loop over no tensors")
    n = _length(ctx, node, xs[0], src)
    i = SymValue(f"{node.name}_i_{next(_ids)}", xs[0].shape[0], initial=0)
    start, end = _label(node, "loop"), _label(node, "done")
    ctx.calls.append(start)
    rows = [_slice(ctx, node, x, i, src) for x in xs]
    results = ctx.lower_subgraph(body, list(carries) + rows + list(extra))
    new_carries, ys = results[: len(carries)], results[len(carries) :]
    if len(ys) != len(stacked):
        raise ValueError(f"the body returns {len(ys)} per-iteration results for {len(stacked)} outputs")
    for y, out in zip(ys, stacked):
        if not isinstance(y, TensorValue):
            raise ValueError(f"the body returns {y!r} where a tensor is expected")
        ctx.calls.append(Call(op=COPY_INDEX, args=[out, y, i], outs=[out], source=src, pinned=True))
    _move_all(ctx, new_carries, carries, src)
    ctx.calls.append(Call(op=PRIM_OPS[_op("add")], args=[i, 1], outs=[], source=src, result=i))
    done = SymValue(f"{node.name}_done_{next(_ids)}", 1, kind="bool")
    ctx.calls.append(Call(op=PRIM_OPS[_op("eq")], args=[i, n], outs=[], source=src, result=done))
    ctx.calls.append(Jump(done, start, src))
    ctx.calls.append(end)
    # Back to 0 for the next execute (i == n here).
    ctx.calls.append(Call(op=PRIM_OPS[_op("sub")], args=[i, n], outs=[], source=src, result=i))
    ctx.loops.append((start, end))


def _op(name):
    import operator

    return getattr(operator, name)


def _stacked(ctx, node, vals) -> List[TensorValue]:
    """Stacked per-iteration results: bounded-dynamic along dim 0 (et_copy_index grows them as the loop runs)."""
    outs = _bindings(ctx, node, vals)
    for t in outs:
        t.dynamic = True
        t.lower_shape = (min(1, t.shape[0]),) + tuple(t.lower_shape[1:] if t.lower_shape else t.shape[1:])
    return outs


def _map(ctx, node, args):
    body, xs, extra = args
    outs = _stacked(ctx, node, node.meta["val"])
    _loop(ctx, node, list(xs), [], outs, body, list(extra))
    return outs


def _scan(ctx, node, args):
    combine, init, xs, extra = args[:4]
    src = _source(node)
    vals = node.meta["val"]
    carries = _bindings(ctx, node, vals[: len(init)])
    _move_all(ctx, list(init), carries, src)
    ys = _stacked(ctx, node, vals[len(init) :])
    _loop(ctx, node, list(xs), carries, ys, combine, list(extra))
    return carries + ys


def _while(ctx, node, args):
    cond_gm, body_gm, carried, extra = args
    src = _source(node)
    carries = _bindings(ctx, node, node.meta["val"])
    _move_all(ctx, list(carried), carries, src)
    start, end = _label(node, "loop"), _label(node, "done")
    ctx.calls.append(start)
    (pred,) = ctx.lower_subgraph(cond_gm, carries + list(extra))
    if isinstance(pred, TensorValue) and (pred.dtype != torch.bool or pred.numel != 1):
        raise ValueError(
            f"the loop's condition is a {pred.dtype} tensor of shape {list(pred.shape)}; it must be one Bool element"
        )
    ctx.calls.append(Jump(pred, end, src))
    _move_all(ctx, ctx.lower_subgraph(body_gm, carries + list(extra)), carries, src)
    ctx.calls.append(Jump(False, start, src))
    ctx.calls.append(end)
    ctx.loops.append((start, end))
    return carries
