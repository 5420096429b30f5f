"""to_edge: torch.export's ExportedProgram -> the core ATen op set, verified. Several methods per program."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Set, Union

import torch

from exir.edge.unsupported import check_layouts, check_supported
from exir.edge.verifier import verify_op_set

if TYPE_CHECKING:
    from exir.backend.partitioner import Partitioner


@dataclasses.dataclass
class EdgeCompileConfig:
    # Check that every op is core ATen (or a custom op with an out= variant). Turning it off only moves the
    # failure later, to lowering or to the device.
    check_ir_validity: bool = True
    # Operators to accept beyond core ATen, by qualified name ("aten::bucketize.Tensor"); each still needs
    # an out= variant and a kernel.
    allowed_ops: Sequence[str] = ()
    # Extra decompositions on top of PyTorch's core ATen table (op overload -> python function).
    decompositions: Optional[Mapping] = None


class EdgeProgramManager:
    """The edge programs of one model, one per method, ready for to_executorch()."""

    def __init__(
        self,
        programs: Dict[str, torch.export.ExportedProgram],
        config: EdgeCompileConfig,
        constant_methods: Optional[Dict[str, Any]] = None,
    ):
        self._programs = dict(programs)
        self.compile_config = config
        # Methods that take nothing and return constants (ExecuTorch's constant methods: an LLM's get_max_seq_len,
        # get_bos_id, ...): name -> an int, float or bool, or a list of them (one output each).
        self.constant_methods: Dict[str, List[Any]] = dict(constant_methods or {})

    @property
    def methods(self):
        return list(self._programs)

    def exported_program(self, method_name: str = "forward") -> torch.export.ExportedProgram:
        if method_name not in self._programs:
            raise KeyError(f"no method '{method_name}'; this program has {self.methods}")
        return self._programs[method_name]

    def to_executorch(self, config=None):
        from exir.program import to_executorch

        return to_executorch(self, config)


def _drop_assertions(ep: torch.export.ExportedProgram) -> None:
    """Removes export-time checks (`_assert_tensor_metadata`, `_assert_scalar`, ...): they compute nothing a
    device needs, and their conditions held when the model was exported."""
    graph = ep.graph_module.graph
    removed = False
    for node in list(graph.nodes):
        op = node.target
        if (
            node.op == "call_function"
            and isinstance(op, torch._ops.OpOverload)
            and not node.users
            and (
                op._schema.name.split("::")[-1].startswith("_assert")
                or op._schema.name.split("::")[-1].startswith("sym_constrain_range")
            )
        ):
            graph.erase_node(node)
            removed = True
    # The conditions those checks read (`u0 <= 5`, `sym_not(...)`) are now unused integer arithmetic.
    for node in reversed(list(graph.nodes)):
        if node.op == "call_function" and not node.users and _is_symbolic_scalar(node.meta.get("val")):
            graph.erase_node(node)
            removed = True
    if removed:
        ep.graph_module.recompile()


def _is_symbolic_scalar(value) -> bool:
    return isinstance(value, (torch.SymInt, torch.SymBool, torch.SymFloat))


def _non_core_ops(gm: torch.fx.GraphModule, allowed: Sequence[str]) -> Set[torch._ops.OpOverload]:
    allowed = set(allowed)
    found = set()
    for node in gm.graph.nodes:
        if node.op == "get_attr" and isinstance(getattr(gm, node.target, None), torch.fx.GraphModule):
            found |= _non_core_ops(getattr(gm, node.target), allowed)  # a branch or loop body
            continue
        op = node.target
        if (
            node.op == "call_function"
            and isinstance(op, torch._ops.OpOverload)
            and op.namespace == "aten"
            and torch.Tag.core not in op.tags
            and op.name() not in allowed
            and str(op) not in allowed
        ):
            found.add(op)
    return found


def _decompose(ep: torch.export.ExportedProgram, table: Dict, allowed: Sequence[str]) -> torch.export.ExportedProgram:
    """PyTorch's core ATen decompositions, then, for the non-core ops they leave (linalg_vector_norm, ...), the
    decompositions PyTorch registers for those in torch._decomp: applied, not refused. Repeated while a round
    brings in new non-core ops that have one; what is left is refused by verify_op_set, by name."""
    from torch._decomp import decomposition_table

    decomposed = ep.run_decompositions(table)
    table = dict(table)
    for _ in range(4):
        extra = {
            op: decomposition_table[op]
            for op in _non_core_ops(decomposed.graph_module, allowed)
            if op in decomposition_table and op not in table
        }
        if not extra:
            break
        table.update(extra)
        decomposed = ep.run_decompositions(table)
    return decomposed


def _constant_outputs(name: str, value) -> List[Any]:
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    for v in items:
        if not isinstance(v, (bool, int, float)):
            raise TypeError(
                f"constant method '{name}': {v!r} is a {type(v).__name__}; a constant method returns ints, "
                f"floats or bools (or a list of them, one output each)"
            )
    return items


def to_edge(
    programs: Union[torch.export.ExportedProgram, Dict[str, torch.export.ExportedProgram]],
    compile_config: Optional[EdgeCompileConfig] = None,
    constant_methods: Optional[Mapping[str, Any]] = None,
) -> EdgeProgramManager:
    """Decomposes each exported method to core ATen and verifies its op set.

    `programs` is one ExportedProgram (the method `forward`) or a dict of method name -> ExportedProgram.
    `constant_methods`: extra methods with no inputs that return constants, as ExecuTorch's to_edge takes them
    (name -> int, float, bool or a list of them); an LLM's metadata travels this way.
    """
    config = compile_config or EdgeCompileConfig()
    if isinstance(programs, torch.export.ExportedProgram):
        programs = {"forward": programs}
    if not isinstance(programs, Mapping):
        raise TypeError(
            f"to_edge takes a torch.export.ExportedProgram or a dict of method name -> ExportedProgram, "
            f"got {type(programs).__name__}. Call torch.export.export(model, example_inputs) first."
        )
    if not programs:
        raise ValueError("to_edge needs at least one ExportedProgram")
    edge = {}
    for name, ep in programs.items():
        if not isinstance(ep, torch.export.ExportedProgram):
            raise TypeError(
                f"method '{name}': expected a torch.export.ExportedProgram, got {type(ep).__name__}. "
                f"Call torch.export.export(model, example_inputs) first."
            )
        table = torch.export.default_decompositions()
        if config.decompositions:
            table.update(config.decompositions)
        check_layouts(ep.graph_module, name)
        decomposed = _decompose(ep, table, config.allowed_ops)
        _drop_assertions(decomposed)
        check_supported(decomposed.graph_module, name)
        if config.check_ir_validity:
            try:
                verify_op_set(decomposed.graph_module, config.allowed_ops)
            except Exception as e:
                raise type(e)(f"method '{name}': {e}") from None
        edge[name] = decomposed
    constants = {}
    for name, value in (constant_methods or {}).items():
        if name in edge:
            raise ValueError(f"'{name}' is both an exported method and a constant method")
        constants[name] = _constant_outputs(name, value)
    return EdgeProgramManager(edge, config, constants)


def to_edge_transform_and_lower(
    programs,
    partitioner: Optional[Union[Sequence[Partitioner], Mapping[str, Sequence[Partitioner]]]] = None,
    compile_config=None,
    constant_methods=None,
):
    """to_edge, then each partitioner in turn over each method (a list for every method, or a dict of method name
    -> list). Returns the EdgeProgramManager; its to_executorch() lowers the tagged partitions."""
    # Imported here, not above: exir.backend's package imports this module for its to_edge_transform_and_lower.
    from exir.backend.partitioner import Partitioner
    from exir.backend.to_backend import to_backend

    edge = to_edge(programs, compile_config=compile_config, constant_methods=constant_methods)
    for name in edge.methods:
        chosen = partitioner.get(name, []) if isinstance(partitioner, Mapping) else (partitioner or [])
        if isinstance(chosen, Partitioner):
            chosen = [chosen]
        for p in chosen:
            to_backend(edge.exported_program(name), p)
    return edge
