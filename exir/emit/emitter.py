"""MethodGraph + memory plan -> schema.ExecutionPlan, the layout ExecuTorch's runtime reads as well.

Layout choices that matter for compatibility (observed in programs ExecuTorch 1.5.1 writes):
- a KernelCall's args are every schema argument in order (defaults filled in, out= tensors included),
  followed by the return value: the out tensor, or a TensorList of the outs when there are several;
- int lists are boxed: an IntList holds value indices of Int values, which are emitted before the list;
- user inputs and outputs are planned tensors (the caller copies inputs in and reads outputs out);
- a constant's data_buffer_idx indexes the constant segment's offsets, where entry 0 is reserved.
Scalars are deduplicated (kernels never write them), which keeps the value table and the runtime's
bookkeeping small.
"""

from __future__ import annotations

import hashlib
from typing import Any, Dict, List, Optional, Tuple

import torch

from exir.lowering.alias import root_of
from exir.lowering.ir import Call, DelegateCall, Jump, Label, MethodGraph, Role, TensorValue
from exir.lowering.symbolic import SymValue
from schema import program as S
from schema.scalar_types import NotInFormat, pte_scalar_type

# ATen enums passed as arguments are ints on the wire, with PyTorch's own numbering.
_MEMORY_FORMAT = {
    torch.contiguous_format: 0,
    torch.preserve_format: 1,
    torch.channels_last: 2,
    torch.channels_last_3d: 3,
}
_LAYOUT = {torch.strided: 0, torch.sparse_coo: 1}


class EmitError(RuntimeError):
    pass


def scalar_type_of(dtype: torch.dtype) -> S.ScalarType:
    """The .pte ScalarType of `dtype` (schema/scalar_types.yaml); EmitError says why when a .pte cannot hold it."""
    try:
        return pte_scalar_type(dtype)
    except NotInFormat as e:
        raise EmitError(str(e)) from None


class ConstantPool:
    """Constant tensors of a whole program (all methods), deduplicated by content.

    Index 0 is reserved (it means 'not a constant' in a tensor's data_buffer_idx), so the first constant is 1.
    """

    def __init__(self):
        self.blobs: List[bytes] = [b""]
        self._index: Dict[Tuple[str, int], int] = {}
        self.external: Optional[ExternalConstants] = None  # set when constants may go to .ptd files

    def add(self, data: torch.Tensor) -> int:
        raw = _raw_bytes(data)
        key = (hashlib.sha256(raw).hexdigest(), len(raw))
        if key not in self._index:
            self._index[key] = len(self.blobs)
            self.blobs.append(raw)
        return self._index[key]

    @property
    def nbytes(self) -> int:
        return sum(len(b) for b in self.blobs)


DEFAULT_EXTERNAL_TAG = "_default_external_constant"  # ExecuTorch's name for the one .ptd of `external_constants=True`


class ExternalConstants:
    """Constants a program keeps in .ptd files instead of its own segment (program-data separation).

    `select` is ExecutorchBackendConfig.external_constants: True (every named constant, to one file), or a function
    from a constant's name (its parameter's fully qualified name, or "lin.weight:permute" for one folded from it) to
    the tag of the file it goes to, or None to keep it in the .pte. Constants without a name stay in the .pte.
    `files` is then tag -> {name: (bytes, ScalarType number, sizes, dim_order)}.
    """

    def __init__(self, select):
        self._select = select
        self.files: Dict[str, Dict[str, tuple]] = {}

    def tag_of(self, t: TensorValue) -> Optional[str]:
        if t.fqn is None:
            return None
        tag = self._select(t.fqn) if callable(self._select) else self._select
        if tag is True:
            return DEFAULT_EXTERNAL_TAG
        if tag is None or tag is False:
            return None
        if not isinstance(tag, str) or not tag or "/" in tag or tag.startswith("."):
            raise EmitError(f"external_constants gave {tag!r} for '{t.fqn}': give a file tag (a plain name) or None")
        return tag

    def add(self, tag: str, t: TensorValue, scalar_type: int) -> str:
        """Records `t`'s data under its name in file `tag`; returns the name the program refers to it by. A name
        already taken by other bytes (two folds of one parameter) gets a suffix."""
        raw = _raw_bytes(t.data)
        entry = (raw, int(scalar_type), list(t.shape), list(t.dim_order))
        file = self.files.setdefault(tag, {})
        name, n = t.fqn, 1
        while name in file and file[name] != entry:
            n += 1
            name = f"{t.fqn}#{n}"
        file[name] = entry
        return name


def _raw_bytes(data: torch.Tensor) -> bytes:
    # Flattened first: a 0-dim tensor (a scalar parameter, a folded `x.sum()`) cannot be viewed as bytes.
    return data.detach().contiguous().cpu().reshape(-1).view(torch.uint8).numpy().tobytes() if data.numel() else b""


class _Values:
    def __init__(self, constants: ConstantPool, initial_values: ConstantPool, offsets: Dict[int, Tuple[int, int]]):
        self.values: List[S.EValue] = []
        self._tensor_ids: Dict[int, int] = {}
        self._sym_ids: Dict[int, int] = {}
        self._scalar_ids: Dict[Tuple, int] = {}
        self._constants = constants
        self._initial_values = initial_values
        self._offsets = offsets  # id(root) -> (mem_id, offset)

    def _add(self, val) -> int:
        self.values.append(S.EValue(val=val))
        return len(self.values) - 1

    def tensor(self, t: TensorValue) -> int:
        if id(t) in self._tensor_ids:
            return self._tensor_ids[id(t)]
        root, byte_offset = root_of(t)
        data_idx, alloc, extra = 0, None, None
        if root.role is Role.CONSTANT:
            if byte_offset:
                raise EmitError(
                    f"constant '{t.name}' is an alias at offset {byte_offset}; constants are folded "
                    f"whole and never aliased"
                )
            external = self._constants.external
            tag = external.tag_of(root) if external is not None else None
            if tag is None:
                data_idx = self._constants.add(root.data)
            else:
                if t.numel != root.numel:
                    raise EmitError(
                        f"constant '{t.name}' views {t.numel} of the {root.numel} elements of '{root.fqn}', which "
                        f"goes to a .ptd; an external tensor is read whole"
                    )
                # No data in the .pte: the runtime finds the bytes by name in a data file when the method loads.
                name = external.add(tag, root, int(scalar_type_of(root.dtype)))
                extra = S.ExtraTensorInfo(fully_qualified_name=name, location=S.TensorDataLocation.EXTERNAL)
        else:
            mem_id, offset = self._offsets[id(root)]
            alloc = S.AllocationDetails.from_offset(mem_id, offset + byte_offset)
            if root.role is Role.BUFFER and root is t and root.data is not None:
                # Planned and with an initial value (an index into mutable_data_segments[0]): the runtime copies
                # it in when the method loads.
                data_idx = self._initial_values.add(root.data)
        try:
            scalar_type = scalar_type_of(t.dtype)
        except EmitError as e:
            raise EmitError(f"tensor '{t.name}': {e}") from None
        tensor = S.Tensor(
            scalar_type=scalar_type,
            storage_offset=0,
            sizes=list(t.shape),
            dim_order=list(t.dim_order),
            requires_grad=False,
            layout=0,
            data_buffer_idx=data_idx,
            allocation_info=alloc,
            extra_tensor_info=extra,
            shape_dynamism=S.TensorShapeDynamism.DYNAMIC_BOUND if t.dynamic else S.TensorShapeDynamism.STATIC,
        )
        idx = self._add(tensor)
        self._tensor_ids[id(t)] = idx
        return idx

    def sym(self, v: SymValue) -> int:
        """A run-time integer: its own Int value (never shared: a prim op writes it), holding the bound."""
        if id(v) not in self._sym_ids:
            if v.kind == "bool":
                self._sym_ids[id(v)] = self._add(S.Bool(bool_val=False))
            else:
                first = v.bound if v.initial is None else v.initial
                self._sym_ids[id(v)] = self._add(S.Int(int_val=int(first)))
        return self._sym_ids[id(v)]

    def _scalar(self, key: Tuple, make) -> int:
        if key not in self._scalar_ids:
            self._scalar_ids[key] = self._add(make())
        return self._scalar_ids[key]

    def none(self) -> int:
        return self._scalar(("none",), S.Null)

    def int_(self, v: int) -> int:
        return self._scalar(("int", int(v)), lambda: S.Int(int_val=int(v)))

    def bool_(self, v: bool) -> int:
        return self._scalar(("bool", bool(v)), lambda: S.Bool(bool_val=bool(v)))

    def double(self, v: float) -> int:
        # repr keeps -0.0 and 0.0 apart, and nan equal to itself.
        return self._scalar(("double", repr(float(v))), lambda: S.Double(double_val=float(v)))

    def string(self, v: str) -> int:
        return self._scalar(("str", v), lambda: S.String(string_val=v))

    def int_list(self, items: List[Any]) -> int:
        # Items may be run-time integers (a view's size from sym_size): the list then points at their values.
        ids = [self.sym(x) if isinstance(x, SymValue) else self.int_(x) for x in items]
        return self._scalar(("intlist", tuple(ids)), lambda: S.IntList(items=ids))

    def double_list(self, items: List[float]) -> int:
        return self._scalar(("dlist", tuple(map(repr, items))), lambda: S.DoubleList(items=[float(x) for x in items]))

    def bool_list(self, items: List[bool]) -> int:
        return self._scalar(("blist", tuple(items)), lambda: S.BoolList(items=[bool(x) for x in items]))

    def tensor_list(self, items: List[TensorValue]) -> int:
        ids = [self.tensor(t) for t in items]
        return self._add(S.TensorList(items=ids))

    def optional_tensor_list(self, items: List[Optional[TensorValue]]) -> int:
        ids = [-1 if t is None else self.tensor(t) for t in items]
        return self._add(S.OptionalTensorList(items=ids))

    def argument(self, value: Any, type_str: str, where: str) -> int:
        if isinstance(value, TensorValue):
            return self.tensor(value)
        if isinstance(value, SymValue):
            return self.sym(value)
        if value is None:
            return self.none()
        if isinstance(value, bool):
            return self.bool_(value)
        if isinstance(value, torch.dtype):
            return self.int_(int(scalar_type_of(value)))
        if isinstance(value, torch.memory_format):
            return self.int_(_MEMORY_FORMAT[value])
        if isinstance(value, torch.layout):
            return self.int_(_LAYOUT[value])
        if isinstance(value, torch.device):
            return self.none()  # CPU only; kernels ignore the device argument
        if isinstance(value, int):
            return self.double(value) if type_str == "float" else self.int_(value)
        if isinstance(value, float):
            return self.double(value)
        if isinstance(value, str):
            return self.string(value)
        if isinstance(value, (list, tuple)):
            if "Optional[Tensor]" in type_str:
                return self.optional_tensor_list(list(value))
            if "Tensor" in type_str or (value and all(isinstance(x, TensorValue) for x in value)):
                return self.tensor_list(list(value))
            if "bool" in type_str or (value and all(isinstance(x, bool) for x in value)):
                return self.bool_list(list(value))
            if "float" in type_str or any(isinstance(x, float) for x in value):
                return self.double_list(list(value))
            return self.int_list([x if isinstance(x, SymValue) else int(x) for x in value])
        raise EmitError(f"{where}: cannot encode argument {value!r} of type {type_str}")


def _operator_key(call: Call) -> Tuple[str, str]:
    qualified = call.op._schema.name  # "aten::add" (OpOverload.name() would include the overload)
    return qualified, call.op._overloadname if call.op._overloadname != "default" else ""


def frame_of(source: str) -> S.FrameList:
    """A Call's source ("model.py:12 (y = self.fc(x))") as the chain's stack-trace entry for its instruction."""
    head, _, code = source.partition(" (")
    filename, _, lineno = head.rpartition(":")
    if not filename or not lineno.isdigit():
        return S.FrameList(items=[S.Frame(filename=source, lineno=0, name="", context="")] if source else [])
    return S.FrameList(
        items=[
            S.Frame(filename=filename, lineno=int(lineno), name="", context=code[:-1] if code.endswith(")") else code)
        ]
    )


def emit_method(
    graph: MethodGraph,
    offsets: Dict[int, Tuple[int, int]],
    pool_sizes: Dict[int, int],
    constants: ConstantPool,
    initial_values: ConstantPool,
    stacktrace: bool = False,
    delegate_blobs: Optional[List[bytes]] = None,
    inline_delegates: bool = False,
) -> S.ExecutionPlan:
    """Builds the ExecutionPlan. `offsets` maps id(root tensor) -> (mem_id, byte offset).

    `stacktrace`: write each instruction's source line into the chain (ExecuTorch's Chain.stacktrace), so tools
    reading only the .pte (python -m selective_build.check) can name it.

    `constants` collects constant tensor data; `initial_values` the initial values of mutable buffers.
    `delegate_blobs` collects the preprocessed blobs of DelegateCalls (program-wide): a delegate's
    BackendDelegateDataReference.index is its blob's position there, in Program.backend_delegate_data when
    `inline_delegates`, else among the delegate segments (serialize_pte turns it into a segment index).
    """
    delegates: List[S.BackendDelegate] = []
    vals = _Values(constants, initial_values, offsets)
    inputs = [vals.tensor(t) for t in graph.inputs]
    operators: List[S.Operator] = []
    op_index: Dict[Tuple[str, str], int] = {}
    instructions: List[S.Instruction] = []
    # Control flow: a Label is the index of the next instruction; a Jump is ExecuTorch's JumpFalseCall.
    position: Dict[int, int] = {}
    count = 0
    for call in graph.calls:
        if isinstance(call, Label):
            position[id(call)] = count
        else:
            count += 1
    emitted: List[Call] = []
    for call in graph.calls:
        if isinstance(call, Label):
            continue
        i = len(instructions)
        emitted.append(call)
        if isinstance(call, DelegateCall):
            if delegate_blobs is None:
                raise EmitError(
                    f"method '{graph.name}' instruction {i}: a delegate call, but the emitter was given "
                    f"nowhere to put its blob (delegate_blobs)"
                )
            # ExecuTorch's layout: the delegate's inputs, then its outputs, in one argument list.
            args = [vals.tensor(t) for t in call.args] + [vals.tensor(t) for t in call.outs]
            where = S.DataLocation.INLINE if inline_delegates else S.DataLocation.SEGMENT
            delegates.append(
                S.BackendDelegate(
                    id=call.backend_id,
                    processed=S.BackendDelegateDataReference(location=where, index=len(delegate_blobs)),
                    compile_specs=[S.CompileSpec(key=c.key, value=bytes(c.value)) for c in call.compile_specs],
                )
            )
            delegate_blobs.append(call.processed)
            instructions.append(S.Instruction(instr_args=S.DelegateCall(delegate_index=len(delegates) - 1, args=args)))
            continue
        if isinstance(call, Jump):
            if id(call.target) not in position:
                raise EmitError(f"method '{graph.name}' instruction {i}: a jump to a label not in the method")
            cond = call.cond
            if isinstance(cond, bool):
                cond_idx = vals.bool_(cond)
            elif isinstance(cond, SymValue):
                cond_idx = vals.sym(cond)
            elif isinstance(cond, TensorValue):
                cond_idx = vals.tensor(cond)
            else:
                raise EmitError(f"method '{graph.name}' instruction {i}: cannot branch on {cond!r}")
            instructions.append(
                S.Instruction(
                    instr_args=S.JumpFalseCall(
                        cond_value_index=cond_idx, destination_instruction=position[id(call.target)]
                    )
                )
            )
            continue
        key = _operator_key(call)
        if key not in op_index:
            op_index[key] = len(operators)
            operators.append(S.Operator(name=key[0], overload=key[1]))
        where = f"method '{graph.name}' instruction {i} ({call.op_name})"
        schema_args = call.op._schema.arguments
        if len(schema_args) != len(call.args):
            raise EmitError(f"{where}: {len(call.args)} arguments for a schema of {len(schema_args)}")
        args = [vals.argument(v, str(a.type), where) for v, a in zip(call.args, schema_args)]
        returns = call.op._schema.returns
        if call.result is not None:
            args.append(vals.sym(call.result))  # a prim op: its integer result is the return value
        elif len(returns) == 1:
            args.append(vals.tensor(call.outs[0]))
        elif len(returns) > 1:
            args.append(vals.tensor_list(call.outs))
        else:
            # `-> ()` (split_copy.Tensor_out and the other Tensor[] outs): ExecuTorch still passes the out value
            # as the call's return, and its runtime counts it; the same list value serves.
            outs = [v for v, a in zip(args, schema_args) if a.is_out]
            if len(outs) == 1:
                args.append(outs[0])
        instructions.append(S.Instruction(instr_args=S.KernelCall(op_index=op_index[key], args=args)))
    outputs = []
    for o in graph.outputs:
        # Tensors, and scalars: a constant method's value (ExecuTorch's get_max_seq_len and the like) or a size the
        # method computes (x.shape[0]), as Int, Double or Bool values.
        if isinstance(o, TensorValue):
            outputs.append(vals.tensor(o))
        elif isinstance(o, SymValue):
            outputs.append(vals.sym(o))
        elif isinstance(o, bool):
            outputs.append(vals.bool_(o))
        elif isinstance(o, int):
            outputs.append(vals.int_(o))
        elif isinstance(o, float):
            outputs.append(vals.double(o))
        else:
            raise EmitError(
                f"method '{graph.name}' returns {o!r}; Ember methods return tensors, ints, floats and bools"
            )
    sizes = [0] * (max(pool_sizes, default=0) + 1)
    for mem_id, size in pool_sizes.items():
        sizes[mem_id] = size
    return S.ExecutionPlan(
        name=graph.name,
        container_meta_type=S.ContainerMetadata(encoded_inp_str=graph.in_spec, encoded_out_str=graph.out_spec),
        values=vals.values,
        inputs=inputs,
        outputs=outputs,
        chains=[
            S.Chain(
                inputs=[],
                outputs=[],
                instructions=instructions,
                stacktrace=[frame_of(c.source) for c in emitted] if stacktrace else None,
            )
        ],
        operators=operators,
        delegates=delegates,
        non_const_buffer_sizes=sizes,
    )
