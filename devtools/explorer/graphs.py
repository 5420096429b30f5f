"""A .pte's methods as Model Explorer graphs: instructions as nodes named by operator (with source line and module
from the source map beside the .pte, when there is one), values as edges carrying dtype, shape and memory plan,
delegate calls as groups holding their XNNPACK nodes, control flow as nested groups (regions.py), and the method's
inputs, outputs, constants and mutable buffers as nodes of their own.

Node ids are stable names the overlays key on: "i<instruction>", "in<k>", "out<k>", "v<value>" (a constant or
mutable buffer), "d<instruction>_n<node>" (a node inside a delegate).
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional, Tuple

from model_explorer import graph_builder as gb

from devtools import etrecord
from devtools.explorer import regions, xnnpack_blob
from devtools.inspect import tensor_nbytes
from exir.serialize import PteFile
from schema import program as S
from schema import scalar_types

CONSTANT_STYLE = gb.GraphNodeStyle(backgroundColor="#eeeeee", borderColor="#999999")
BUFFER_STYLE = gb.GraphNodeStyle(backgroundColor="#fff3c4", borderColor="#c9a227")
IO_STYLE = gb.GraphNodeStyle(backgroundColor="#dceeff", borderColor="#4a7fb5")


def instruction_id(index: int) -> str:
    return f"i{index}"


def dtype_name(t: S.Tensor) -> str:
    info = scalar_types.by_number(int(t.scalar_type))
    return info.name.lower() if info else f"scalar_type_{int(t.scalar_type)}"


def shape_text(t: S.Tensor) -> str:
    """ "float[1, 3, 96, 96]"; a dynamic tensor's sizes are its upper bounds, written "<=N"."""
    dynamic = int(t.shape_dynamism) != int(S.TensorShapeDynamism.STATIC)
    dims = ", ".join(f"<={s}" if dynamic else str(s) for s in t.sizes)
    return f"{dtype_name(t)}[{dims}]"


def is_constant(t: S.Tensor) -> bool:
    return bool(t.data_buffer_idx) and t.allocation_info is None


def is_mutable_buffer(t: S.Tensor) -> bool:
    """Planned memory that holds state between calls: an initial value, or a name the program keeps for it."""
    named = t.extra_tensor_info is not None and bool(t.extra_tensor_info.fully_qualified_name)
    return t.allocation_info is not None and (bool(t.data_buffer_idx) or named)


def value_text(plan: S.ExecutionPlan, idx: int) -> str:
    v = plan.values[idx].val if 0 <= idx < len(plan.values) else None
    if isinstance(v, S.Tensor):
        return shape_text(v)
    if v is None or isinstance(v, S.Null):
        return "None"
    for cls, attr in ((S.Int, "int_val"), (S.Bool, "bool_val"), (S.Double, "double_val"), (S.String, "string_val")):
        if isinstance(v, cls):
            return repr(getattr(v, attr))
    return f"{type(v).__name__}{list(getattr(v, 'items', []))}"


def _tensor_meta(plan: S.ExecutionPlan, idx: int, slot: int) -> gb.MetadataItem:
    attrs = [gb.KeyValue("__tensor_tag", f"v{idx}")]
    v = plan.values[idx].val
    if isinstance(v, S.Tensor):
        attrs.append(gb.KeyValue("tensor_shape", shape_text(v)))
        if v.allocation_info is not None:
            attrs.append(
                gb.KeyValue(
                    "memory", f"pool {v.allocation_info.memory_id} @ {v.allocation_info.offset}, {tensor_nbytes(v)} B"
                )
            )
    else:
        attrs.append(gb.KeyValue("value", value_text(plan, idx)))
    return gb.MetadataItem(id=str(slot), attrs=attrs)


def _source_rows(pte_path: str, method: str, n: int) -> Optional[List[dict]]:
    """The source map's rows for `method`, when the sidecar beside the .pte matches the program."""
    path = etrecord.sidecar_path(pte_path)
    if not os.path.exists(path):
        return None
    try:
        rows = etrecord.read(path)["methods"].get(method)
    except ValueError:
        return None
    return rows if rows is not None and len(rows) == n else None


def _frame_source(chain: S.Chain, index: int) -> str:
    """The source line the program itself carries (exported with --emit-stacktrace): its innermost frame."""
    if not chain.stacktrace or index >= len(chain.stacktrace) or not chain.stacktrace[index].items:
        return ""
    f = chain.stacktrace[index].items[-1]
    return f"{f.filename}:{f.lineno} ({f.context or f.name})"


class _MethodBuilder:
    """One method's graph: walks the chain once, keeping the node and output slot that last wrote each value."""

    def __init__(self, pte: PteFile, plan: S.ExecutionPlan, rows: Optional[List[dict]]):
        self.pte, self.plan, self.rows = pte, plan, rows
        self.graph = gb.Graph(id=plan.name)
        self.producer: Dict[int, Tuple[str, int]] = {}
        self.nodes: Dict[str, gb.GraphNode] = {}
        self.instrs = plan.chains[0].instructions if plan.chains else []
        self.ops = [f"{o.name}.{o.overload}" if o.overload else o.name for o in plan.operators]

    def add(self, node: gb.GraphNode) -> gb.GraphNode:
        self.graph.nodes.append(node)
        self.nodes[node.id] = node
        return node

    def _tensor_leaf(self, idx: int) -> Optional[Tuple[str, int]]:
        """A node for a constant or mutable buffer read before anything writes it."""
        v = self.plan.values[idx].val
        if not isinstance(v, S.Tensor):
            return None
        if is_constant(v):
            label, style, kind = "constant", CONSTANT_STYLE, "constant"
        elif is_mutable_buffer(v) or v.allocation_info is not None:
            label, style, kind = "mutable buffer", BUFFER_STYLE, "mutable buffer"
        else:
            return None
        name = v.extra_tensor_info.fully_qualified_name if v.extra_tensor_info else None
        attrs = [
            gb.KeyValue("kind", kind),
            gb.KeyValue("value", f"v{idx}"),
            gb.KeyValue("bytes", str(tensor_nbytes(v))),
        ]
        if name:
            attrs.append(gb.KeyValue("name", name))
        node = self.add(gb.GraphNode(id=f"v{idx}", label=label, attrs=attrs, style=style))
        node.outputsMetadata.append(_tensor_meta(self.plan, idx, 0))
        self.producer[idx] = (node.id, 0)
        return self.producer[idx]

    def connect(self, node: gb.GraphNode, idx: int) -> bool:
        """An edge from the value's producer into `node`; False when the value is a literal (no edge)."""
        src = self.producer.get(idx) or self._tensor_leaf(idx)
        if src is None:
            v = self.plan.values[idx].val if 0 <= idx < len(self.plan.values) else None
            if isinstance(v, (S.TensorList, S.OptionalTensorList)):
                return any([self.connect(node, i) for i in v.items])
            return False
        slot = len(node.incomingEdges)
        node.incomingEdges.append(
            gb.IncomingEdge(sourceNodeId=src[0], sourceNodeOutputId=str(src[1]), targetNodeInputId=str(slot))
        )
        node.inputsMetadata.append(gb.MetadataItem(id=str(slot), attrs=[gb.KeyValue("__tensor_tag", f"v{idx}")]))
        return True

    def produce(self, node: gb.GraphNode, idx: int) -> None:
        v = self.plan.values[idx].val if 0 <= idx < len(self.plan.values) else None
        if isinstance(v, S.TensorList):
            for i in v.items:
                self.produce(node, i)
            return
        slot = len(node.outputsMetadata)
        node.outputsMetadata.append(_tensor_meta(self.plan, idx, slot))
        self.producer[idx] = (node.id, slot)

    def build(self) -> gb.Graph:
        for k, idx in enumerate(self.plan.inputs):
            node = self.add(gb.GraphNode(id=f"in{k}", label=f"input {k}", style=IO_STYLE))
            self.produce(node, idx)
        paths = regions.namespaces(self.plan, [r["op"] for r in self.rows] if self.rows else None)
        for i, ins in enumerate(self.instrs):
            self.instruction(i, ins.instr_args, paths[i] if i < len(paths) else "")
        for k, idx in enumerate(self.plan.outputs):
            node = self.add(gb.GraphNode(id=f"out{k}", label=f"output {k}", style=IO_STYLE))
            node.attrs.append(gb.KeyValue("value", f"v{idx}"))
            self.connect(node, idx)
        return self.graph

    def _base_attrs(self, i: int) -> List[gb.KeyValue]:
        attrs = [gb.KeyValue("instruction", str(i))]
        row = self.rows[i] if self.rows else None
        source = (row or {}).get("source") or _frame_source(self.plan.chains[0], i)
        if source:
            attrs.append(gb.KeyValue("source", source))
        if row and row.get("module"):
            attrs.append(gb.KeyValue("module", row["module"]))
        return attrs

    def instruction(self, i: int, a, namespace: str) -> None:
        node = gb.GraphNode(id=instruction_id(i), label="?", namespace=namespace, attrs=self._base_attrs(i))
        if isinstance(a, S.KernelCall):
            node.label = self.ops[a.op_index] if 0 <= a.op_index < len(self.ops) else f"<operator {a.op_index}>"
            outs = set(self._outputs_of(a.args[-1])) if a.args else set()
            for idx in a.args[:-1]:
                if idx not in outs and not self.connect(node, idx):
                    node.attrs.append(gb.KeyValue(f"arg v{idx}", value_text(self.plan, idx)))
            self.add(node)
            if a.args:
                self.produce(node, a.args[-1])
        elif isinstance(a, S.DelegateCall):
            self.delegate(i, a, node)
        elif isinstance(a, S.MoveCall):
            node.label = "move"
            self.connect(node, a.move_from)
            self.add(node)
            self.produce(node, a.move_to)
        elif isinstance(a, S.JumpFalseCall):
            node.label = "jump" if regions._always(self.plan, a.cond_value_index) else "jump_false"
            node.attrs.append(gb.KeyValue("destination", str(a.destination_instruction)))
            self.connect(node, a.cond_value_index)
            self.add(node)
        elif isinstance(a, S.FreeCall):
            node.label = "free"
            node.attrs.append(gb.KeyValue("value", f"v{a.value_index}"))
            self.add(node)

    def _outputs_of(self, idx: int) -> List[int]:
        v = self.plan.values[idx].val if 0 <= idx < len(self.plan.values) else None
        return list(v.items) + [idx] if isinstance(v, S.TensorList) else [idx]

    def _blob(self, d: S.BackendDelegate) -> bytes:
        if d.processed is None:
            return b""
        if int(d.processed.location) == int(S.DataLocation.SEGMENT):
            return self.pte.segment(d.processed.index)
        return self.pte.program.backend_delegate_data[d.processed.index].data

    def delegate(self, i: int, a: S.DelegateCall, call: gb.GraphNode) -> None:
        """The call as a group "delegate_<i> (<backend>)": the call node pinned on top, the backend's nodes inside."""
        d = self.plan.delegates[a.delegate_index] if 0 <= a.delegate_index < len(self.plan.delegates) else None
        backend = d.id if d else f"<delegate {a.delegate_index}>"
        group = f"{call.namespace}/delegate_{i}" if call.namespace else f"delegate_{i}"
        call.label, call.namespace = f"{backend} call", group
        call.config = gb.GraphNodeConfig(pinToGroupTop=True)
        call.attrs.append(gb.KeyValue("backend", backend))
        view = None
        if d is not None and backend == "XnnpackBackend":
            try:
                view = xnnpack_blob.read(self._blob(d))
            except ValueError as e:
                call.attrs.append(gb.KeyValue("blob", f"unreadable: {e}"))
        n_out = len(view.output_ids) if view else 0
        ins, outs = (a.args[:-n_out], a.args[-n_out:]) if n_out else (a.args, [])
        for idx in ins:
            self.connect(call, idx)
        self.add(call)
        if view is None:
            for idx in a.args:  # without the blob's split, values not yet written are the call's results
                if idx not in self.producer and isinstance(self.plan.values[idx].val, S.Tensor):
                    self.produce(call, idx)
            return
        self._xnn_nodes(i, view, call, group, outs)

    def _xnn_nodes(self, i: int, view, call: gb.GraphNode, group: str, outs: List[int]) -> None:
        # Inside the group, external inputs come from the call node (one slot per call input, in order).
        made: Dict[int, Tuple[str, int]] = {vid: (call.id, 0) for vid in view.input_ids}
        for n in view.nodes:
            node = gb.GraphNode(id=f"d{i}_n{n.index}", label=n.kind, namespace=group)
            node.attrs.append(gb.KeyValue("debug_handle", str(n.debug_handle)))
            for key, val in n.fields.items():
                node.attrs.append(gb.KeyValue(key, str(val)))
            for vid in n.inputs:
                v = view.values.get(vid)
                if vid in made:
                    src = made[vid]
                    slot = len(node.incomingEdges)
                    node.incomingEdges.append(gb.IncomingEdge(src[0], str(src[1]), str(slot)))
                elif v is not None and v.constant:
                    node.attrs.append(gb.KeyValue(f"weight x{vid}", f"{v.datatype}{v.dims}"))
            for k, vid in enumerate(n.outputs):
                v = view.values.get(vid)
                shape = f"{v.datatype}{v.dims}" if v else "?"
                node.outputsMetadata.append(
                    gb.MetadataItem(
                        id=str(k), attrs=[gb.KeyValue("__tensor_tag", f"x{vid}"), gb.KeyValue("tensor_shape", shape)]
                    )
                )
                made[vid] = (node.id, k)
            self.add(node)
        # The call's results leave the group from the XNNPACK nodes that write them.
        for vid, idx in zip(view.output_ids, outs):
            if vid in made:
                node_id, slot = made[vid]
                node = self.nodes[node_id]
                meta = _tensor_meta(self.plan, idx, slot)
                node.outputsMetadata[slot] = meta
                self.producer[idx] = (node_id, slot)


def method_graphs(pte: PteFile, pte_path: str) -> List[gb.Graph]:
    """One graph per method, in program order."""
    out = []
    for plan in pte.program.execution_plan:
        n = len(plan.chains[0].instructions) if plan.chains else 0
        out.append(_MethodBuilder(pte, plan, _source_rows(pte_path, plan.name, n)).build())
    return out
