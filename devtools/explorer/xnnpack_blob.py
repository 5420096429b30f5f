"""The nodes inside an XnnpackBackend blob, for drawing a delegate call as a subgraph.

The blob is framed as backends/xnnpack/graph.py writes it (an "XH00" header, then the XNNGraph flatbuffer); older
blobs are a bare flatbuffer. The flatbuffer is decoded with flatc against schema/xnnpack_graph.fbs, the schema both
runtimes read, so what is drawn is what runs.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import struct
from typing import Dict, List, Optional

from backends.xnnpack.graph import HEADER_MAGIC, SCHEMA
from exir.serialize.flatc import decode

# Node-table fields that name the node's result; every other "*_id" field is an operand.
OUTPUT_FIELDS = ("output_id", "output_value_id", "output_index_id")


@dataclasses.dataclass
class XnnNode:
    index: int
    kind: str  # the NodeUnion member: "XNNConv2d", "XNNAdd", ...
    inputs: List[int]  # XNNGraph value ids
    outputs: List[int]
    debug_handle: int
    fields: Dict[str, object]  # the node table's other fields (strides, padding, ...)


@dataclasses.dataclass
class XnnValue:
    id: int
    datatype: str
    dims: List[int]
    constant: bool
    external_id: Optional[int]  # position among the delegate call's arguments, or None inside the graph


@dataclasses.dataclass
class XnnGraphView:
    nodes: List[XnnNode]
    values: Dict[int, XnnValue]
    input_ids: List[int]
    output_ids: List[int]


def flatbuffer_of(blob: bytes) -> bytes:
    """The XNNGraph flatbuffer inside a blob, with or without the XH00 header."""
    if len(blob) >= 30 and blob[4:8] == HEADER_MAGIC:
        _, fb_offset, fb_size = struct.unpack_from("<HII", blob, 8)
        if fb_offset + fb_size > len(blob):
            raise ValueError(
                f"XNNPACK blob header puts the flatbuffer at [{fb_offset}, {fb_offset + fb_size}), past the "
                f"blob's {len(blob)} bytes"
            )
        return blob[fb_offset : fb_offset + fb_size]
    return blob


@functools.lru_cache(maxsize=None)
def _id_fields() -> Dict[str, List[str]]:
    """Per NodeUnion member, its table's "*_id" fields in schema order. flatc's JSON leaves out a field that holds
    its default (0), so value id 0 would vanish from a node's operands without this list."""
    with open(SCHEMA) as f:
        text = re.sub(r"//[^\n]*", "", f.read())
    tables = {
        name: re.findall(r"(\w+_id)\s*:\s*uint", body)
        for name, body in re.findall(r"table\s+(\w+)\s*\{([^}]*)\}", text)
    }
    union = re.search(r"union\s+NodeUnion\s*\{([^}]*)\}", text).group(1)
    fields = {}
    for member in union.split(","):
        kind, _, table = (part.strip() for part in member.partition(":"))
        if kind:
            fields[kind] = tables.get(table or kind, [])
    return fields


def _value(raw: dict) -> Optional[XnnValue]:
    body = raw.get("value") or {}
    tensor = body.get("base", body)  # a QuantizedTensorValue wraps its TensorValue as "base"
    if "id_out" not in tensor:
        return None
    ext = tensor.get("external_id", 0xFFFFFFFF)
    return XnnValue(
        id=int(tensor["id_out"]),
        datatype=str(tensor.get("datatype", "?")).lower().replace("xnn_datatype_", ""),
        dims=[int(d) for d in tensor.get("dims", [])],
        constant=int(tensor.get("constant_buffer_idx", 0)) != 0,
        external_id=None if ext == 0xFFFFFFFF else int(ext),
    )


def _node(index: int, raw: dict) -> XnnNode:
    table = raw.get("node") or {}
    kind = str(raw.get("node_type", "?"))
    ids = {f: int(table.get(f, 0)) for f in _id_fields().get(kind, [])}
    outputs = [v for f, v in ids.items() if f in OUTPUT_FIELDS]
    inputs = [v for f, v in ids.items() if f not in OUTPUT_FIELDS and v != 0xFFFFFFFF]
    fields = {}
    for key, val in table.items():
        if key in ids:
            continue
        if key.endswith("_ids") and isinstance(val, list):
            inputs.extend(int(v) for v in val)
        else:
            fields[key] = val
    return XnnNode(
        index=index,
        kind=kind,
        inputs=inputs,
        outputs=outputs,
        debug_handle=int(raw.get("debug_handle", 0)),
        fields=fields,
    )


def read(blob: bytes) -> XnnGraphView:
    """The blob's nodes and values; ValueError (flatc's message, or the header's offsets) if it is not an XNNGraph."""
    text = decode(flatbuffer_of(blob), SCHEMA, "the XNNPACK delegate blob", error=ValueError)
    # flatc writes an unbounded clamp as bare inf/-inf (and nan), which JSON lacks; Python's reader takes these.
    text = re.sub(r"(?<=[:\[,\s])(-?)inf\b", r"\1Infinity", text)
    text = re.sub(r"(?<=[:\[,\s])nan\b", "NaN", text)
    graph = json.loads(text)
    values = {}
    for raw in graph.get("values", []):
        v = _value(raw)
        if v is not None:
            values[v.id] = v
    return XnnGraphView(
        nodes=[_node(i, n) for i, n in enumerate(graph.get("nodes", []))],
        values=values,
        input_ids=[int(i) for i in graph.get("input_ids", [])],
        output_ids=[int(i) for i in graph.get("output_ids", [])],
    )
