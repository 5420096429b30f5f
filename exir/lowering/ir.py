"""MethodGraph: one method as a straight list of out-variant kernel calls over typed values.

Values are Python scalars/lists (they become Int/Double/Bool/IntList/... EValues) or TensorValue objects. A
TensorValue is identified by the object itself; the emitter gives each a value index. Calls run in list order,
which is the schedule the memory planner sees.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, List, Optional, Tuple

import torch


class Role(enum.Enum):
    INPUT = "input"  # user input, copied in by the caller (planned)
    CONSTANT = "constant"  # weights and folded results, stored in the constant segment
    BUFFER = "buffer"  # mutable state that lives across calls (planned for the whole method)
    ACTIVATION = "activation"  # produced by a call (planned for its lifetime)


@dataclasses.dataclass(eq=False)
class TensorValue:
    name: str
    dtype: torch.dtype
    shape: Tuple[int, ...]
    dim_order: Tuple[int, ...]
    role: Role
    # Constants: the value. Buffers: the initial value.
    data: Optional[torch.Tensor] = None
    # Buffers and parameters: the module attribute it came from ("layer.weight").
    fqn: Optional[str] = None
    mem_id: int = 1
    # Set when this tensor is a byte-preserving view of another: (base tensor, byte offset into the base).
    alias_of: Optional[Tuple["TensorValue", int]] = None
    # A bounded dynamic tensor: `shape` is its upper bound (what is planned), `lower_shape` its smallest shape;
    # kernels resize it at run time (DYNAMIC_BOUND in the program).
    dynamic: bool = False
    lower_shape: Optional[Tuple[int, ...]] = None

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def nbytes(self) -> int:
        return self.numel * torch.empty((), dtype=self.dtype).element_size()

    @property
    def is_planned(self) -> bool:
        return self.role is not Role.CONSTANT

    def __repr__(self) -> str:
        return f"%{self.name}:{str(self.dtype).replace('torch.', '')}{list(self.shape)}"


@dataclasses.dataclass(eq=False)
class Call:
    """One kernel call. `op` is the out-variant OpOverload (or a torch op for prim ops).

    `args` follows the op's schema argument list exactly (defaults filled in, out= arguments included), so the
    emitter can write it without looking at the schema again. `outs` are the tensors the call writes.
    """

    op: Any
    args: List[Any]
    outs: List[TensorValue]
    # Where in the user's code this call came from ("model.py:12 in forward"), for error messages.
    source: str = ""
    # The nn.Module the call came from, as "path (Type)" ("layers.0.conv (Conv2d)"; "" for the top module), for
    # profiles (devtools/etrecord.py).
    module: str = ""
    # A prim op's integer result (exir.lowering.symbolic.SymValue): the call's return value.
    result: Any = None
    # A copy into a control-flow binding (a cond's output, a loop's carry), which other calls write too: never
    # turned into an alias or fused away.
    pinned: bool = False
    # The partition a Partitioner put the call's node in (node.meta["delegation_tag"]); None: run by kernels.
    tag: Optional[str] = None
    # The name of the graph node the call came from ("" for calls lowering adds), so a Partitioner that decides on
    # lowered calls can tag their nodes (backends/xnnpack).
    node_name: str = ""

    @property
    def op_name(self) -> str:
        ns, rest = self.op.name().split("::", 1)
        base, _, overload = rest.partition(".")
        return f"{ns}::{base}" + (f".{overload}" if overload else "")

    def input_tensors(self) -> List[TensorValue]:
        """Tensors the call reads (its arguments minus the out= tensors it writes)."""
        outs = {id(o) for o in self.outs}
        return [t for t in self.tensor_args() if id(t) not in outs]

    def tensor_args(self) -> List[TensorValue]:
        found = []
        for a in self.args:
            if isinstance(a, TensorValue):
                found.append(a)
            elif isinstance(a, (list, tuple)):
                found.extend(x for x in a if isinstance(x, TensorValue))
        return found


class Label(Call):
    """A position in the call list that a Jump goes to; emits no instruction."""

    def __init__(self, name: str):
        super().__init__(op=None, args=[], outs=[], source="")
        self.name = name

    @property
    def op_name(self) -> str:
        return f"label {self.name}"


class Jump(Call):
    """Goes to `target` when `cond` is false, else on (ExecuTorch's JumpFalseCall). `cond`: a one-element Bool
    tensor, a run-time Bool (a SymValue), or the constant False for a jump that is always taken."""

    def __init__(self, cond: Any, target: Label, source: str = ""):
        super().__init__(op=None, args=[cond], outs=[], source=source)
        self.target = target

    @property
    def cond(self) -> Any:
        return self.args[0]

    @property
    def op_name(self) -> str:
        return f"jump_false to {self.target.name}"


class DelegateCall(Call):
    """A call of a lowered backend module (ExecuTorch's DelegateCall): `args` are the partition's input tensors,
    `outs` its outputs; the backend's preprocessed blob and compile specs go into the program's delegates. The
    memory planner plans its inputs and outputs like any call's; what happens inside is the backend's."""

    def __init__(
        self,
        backend_id: str,
        processed: bytes,
        compile_specs: List[Any],
        inputs: List[TensorValue],
        outputs: List[TensorValue],
        source: str = "",
        num_calls: int = 0,
        named_data: Any = None,
    ):
        super().__init__(op=None, args=list(inputs), outs=list(outputs), source=source)
        self.backend_id = backend_id
        self.processed = bytes(processed)
        self.compile_specs = list(compile_specs)
        self.num_calls = num_calls  # how many kernel calls the partition replaced (for reports)
        # The bytes the blob refers to by key (exir.backend.named_data.NamedDataStoreOutput), or None.
        self.named_data = named_data

    @property
    def op_name(self) -> str:
        return f"delegate {self.backend_id}"


def is_instruction(c: Call) -> bool:
    """A kernel call (not a Label or Jump): what passes that rewrite kernel calls look at."""
    return c.op is not None


@dataclasses.dataclass
class MethodGraph:
    name: str
    inputs: List[TensorValue]
    outputs: List[Any]
    calls: List[Call]
    # Mutable buffers, in signature order (their final values are written back by a copy_ call).
    buffers: List[TensorValue] = dataclasses.field(default_factory=list)
    # Pytree specs of the method's inputs and outputs (torch.utils._pytree serialized), kept for compatibility.
    in_spec: str = ""
    out_spec: str = ""
    # Loops (map, scan, while_loop) as (first, last) Labels: a tensor live across a loop's back edge must stay
    # live for the whole loop (exir.lowering.lifetimes).
    loops: List[Tuple[Label, Label]] = dataclasses.field(default_factory=list)

    def tensors(self) -> List[TensorValue]:
        """Every distinct tensor the method touches, in first-seen order."""
        seen, out = set(), []

        def add(t):
            if isinstance(t, TensorValue) and id(t) not in seen:
                seen.add(id(t))
                out.append(t)

        for t in self.inputs + self.buffers:
            add(t)
        for c in self.calls:
            for t in c.tensor_args() + c.outs:
                add(t)
        for o in self.outputs:
            add(o)
        return out

    def describe(self) -> str:
        lines = [f"method {self.name}: inputs {self.inputs}"]
        for i, c in enumerate(self.calls):
            lines.append(f"  [{i}] {c.op_name}({', '.join(map(repr, c.args))})")
        lines.append(f"  return {self.outputs}")
        return "\n".join(lines)
