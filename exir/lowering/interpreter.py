"""A reference executor for MethodGraphs: PyTorch's own out= kernels over a real, planned arena.

Every planned tensor is a view into one byte buffer per pool, at the offset the memory planner chose, exactly
as the C++ runtime lays them out. Running a model here and comparing with eager checks lowering, folding,
fusion, aliasing and the memory plan together: two live tensors the planner overlapped, or an alias at a
wrong offset, corrupt the result. It also gives the C++ runtime's parity tests a second reference.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from exir.lowering.alias import root_of
from exir.lowering.ir import MethodGraph, Role, TensorValue


class ArenaError(RuntimeError):
    pass


def _view(buf: torch.Tensor, offset: int, t: TensorValue) -> torch.Tensor:
    nbytes = t.nbytes
    if offset < 0 or offset + nbytes > buf.numel():
        raise ArenaError(f"tensor '{t.name}' needs bytes [{offset}, {offset + nbytes}) of a {buf.numel()}-byte pool")
    flat = buf[offset : offset + nbytes].view(t.dtype)
    # Lay the elements out in dim order (outermost first), then present them in logical order.
    physical = [t.shape[d] for d in t.dim_order]
    inverse = [0] * len(t.dim_order)
    for i, d in enumerate(t.dim_order):
        inverse[d] = i
    return flat.reshape(physical).permute(inverse) if t.shape else flat.reshape(())


class Arena:
    def __init__(self, pool_sizes: Dict[int, int], offsets: Dict[int, Tuple[int, int]]):
        # Filled with a pattern, not zeros, so a kernel that reads memory it never wrote shows up.
        self.pools = {m: torch.full((size,), 0xA5, dtype=torch.uint8) for m, size in pool_sizes.items()}
        self.offsets = offsets
        self._cache: Dict[int, torch.Tensor] = {}

    def tensor(self, t: TensorValue) -> torch.Tensor:
        if id(t) in self._cache:
            return self._cache[id(t)]
        root, byte_offset = root_of(t)
        if root.role is Role.CONSTANT:
            if byte_offset:
                raise ArenaError(f"constant alias '{t.name}' at offset {byte_offset}")
            view = root.data.reshape(t.shape)
        else:
            mem_id, offset = self.offsets[id(root)]
            view = _view(self.pools[mem_id], offset + byte_offset, t)
        self._cache[id(t)] = view
        return view


def _unplanned_layout(graph: MethodGraph):
    """Without a plan, every root gets its own region (pool 1): a plan with no reuse at all."""
    from exir.lowering.lifetimes import lifetimes

    offsets, cursor = {}, 0
    for lt in lifetimes(graph):
        offsets[id(lt.root)] = (1, cursor)
        cursor += (lt.root.nbytes + 15) // 16 * 16
    return offsets, {1: cursor}


def _materialize(arena: Arena, v: Any) -> Any:
    if isinstance(v, TensorValue):
        return arena.tensor(v)
    if isinstance(v, list):
        return [_materialize(arena, x) for x in v]
    return v


class Interpreter:
    """Runs one method repeatedly; mutable buffers keep their values between runs, as on the device."""

    def __init__(
        self,
        graph: MethodGraph,
        offsets: Optional[Dict[int, Tuple[int, int]]] = None,
        pool_sizes: Optional[Dict[int, int]] = None,
    ):
        if offsets is None:
            offsets, pool_sizes = _unplanned_layout(graph)
        self.graph = graph
        self.arena = Arena(pool_sizes, offsets)
        for b in graph.buffers:
            self.arena.tensor(b).copy_(b.data)

    def run(self, inputs: Sequence[torch.Tensor]) -> List[torch.Tensor]:
        g = self.graph
        if len(inputs) != len(g.inputs):
            raise ValueError(f"method '{g.name}' takes {len(g.inputs)} inputs, got {len(inputs)}")
        for spec, x in zip(g.inputs, inputs):
            self.arena.tensor(spec).copy_(x)
        for i, call in enumerate(g.calls):
            if call.op is None:
                raise NotImplementedError(
                    f"method '{g.name}' has control flow ({call.op_name}); the reference "
                    f"interpreter runs straight-line methods only"
                )
            args, kwargs = [], {}
            for a, v in zip(call.op._schema.arguments, call.args):
                value = _materialize(self.arena, v)
                if a.kwarg_only:
                    kwargs[a.name] = value
                else:
                    args.append(value)
            before = [self.arena.tensor(o).data_ptr() for o in call.outs]
            call.op(*args, **kwargs)
            after = [self.arena.tensor(o).data_ptr() for o in call.outs]
            if before != after:
                raise ArenaError(f"instruction {i} ({call.op_name}) resized its output out of the arena")
        return [self.arena.tensor(o).clone() for o in g.outputs]
