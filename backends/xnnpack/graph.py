"""The XNNGraph a partition becomes, and its blob: the bytes backends/xnnpack/runtime (and ExecuTorch's XnnpackBackend)
read.

Blob layout (ExecuTorch's, see schema/xnnpack_graph.fbs): a 30-byte little-endian header padded to 32 bytes (4 zero
bytes, "XH00", u16 header length 30, u32 flatbuffer offset, u32 flatbuffer size, u32 constant-data offset, u64
constant-data size), the XNNGraph flatbuffer (identifier "XN01") padded to 16 bytes, then the constant data.

Constants are either in the program's named data, under the SHA-256 of their bytes (ExecuTorch's default: offset
UINT64_MAX and the key), or in the blob's own constant data (offset and size, no key), each at 16 bytes.
Constant index 0 is reserved: a value with constant_buffer_idx 0 has no data.

Inline weights are only the ones XNNPACK packs (copies) when the runtime is created: convolution and
fully-connected filters and biases. Constants it reads on every run (an element-wise operand, a batch norm's
scale) stay in named data even then, because ExecuTorch 1.5.1's runtime frees the blob after init: its
XNNPACK would read them from freed memory (it does: an inline `x + 1.0` crashes it). Ember's runtime keeps the
blob, so either layout is safe there.

Values are ids into one list; a value that is a delegate argument carries external_id = its position in the
call's arguments (inputs first, then outputs) and the external-input or -output flag, and the graph lists those
ids in argument order (input_ids, output_ids): how both runtimes match the call's tensors to the graph.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import struct
from typing import Dict, List, Optional, Sequence

import torch

from exir.backend.named_data import NamedDataStore
from schema._yaml import SCHEMA_DIR

SCHEMA = os.path.join(SCHEMA_DIR, "xnnpack_graph.fbs")

NO_ID = 0xFFFFFFFF  # XNN_INVALID_VALUE_ID: internal value, absent bias
NO_OFFSET = 0xFFFFFFFFFFFFFFFF  # a constant that lives in named data
VALUE_EXTERNAL_INPUT = 0x1  # XNN_VALUE_FLAG_EXTERNAL_INPUT
VALUE_EXTERNAL_OUTPUT = 0x2  # XNN_VALUE_FLAG_EXTERNAL_OUTPUT
FLAG_ALIGN_CORNERS = 0x8  # resize bilinear
FLAG_KEEP_DIMS = 0x40  # pooling: the output keeps the input's rank (newer libraries read it)
HEADER_MAGIC = b"XH00"
HEADER_LENGTH = 30
ALIGNMENT = 16  # header, flatbuffer and each constant start at a multiple of this
MAX_DIMS = 6  # XNN_MAX_TENSOR_DIMS

WEIGHTS_NAMED = "named"
WEIGHTS_INLINE = "inline"


def _pad(data: bytes, alignment: int = ALIGNMENT) -> bytes:
    return data + b"\0" * (-len(data) % alignment)


class XnnGraph:
    """An XNNGraph being built: values, nodes and constant data, in the schema's field names."""

    def __init__(self, weights: str = WEIGHTS_NAMED):
        if weights not in (WEIGHTS_NAMED, WEIGHTS_INLINE):
            raise ValueError(f"weights must be '{WEIGHTS_NAMED}' or '{WEIGHTS_INLINE}', got {weights!r}")
        self.weights = weights
        self.values: List[dict] = []
        self.nodes: List[dict] = []
        # Index 0 means "no data" (ExecuTorch writes it with an empty key). ExecuTorch's runtime looks a constant up
        # in named data whenever its entry has a key, even an empty one, so bytes in the blob have none.
        self.constant_data: List[dict] = [{"offset": 0, "size": 0, "named_key": ""}]
        self.inline = bytearray()
        self.named = NamedDataStore()
        self._constant_index: Dict[tuple, int] = {}
        self.producer: Dict[int, int] = {}  # value id -> index of the node writing it
        self.inputs: List[int] = []
        self.outputs: List[int] = []

    # --- values -------------------------------------------------------------------------------------------------

    def tensor(self, dims: Sequence[int], data: Optional[torch.Tensor] = None, packed: bool = False) -> int:
        """A new fp32 value of shape `dims` (a 0-dim tensor is [1]); with `data`, a constant holding it. `packed`:
        the constant is a weight XNNPACK copies at load (may go inline)."""
        dims = [int(d) for d in dims] or [1]
        if len(dims) > MAX_DIMS:
            raise ValueError(f"XNNPACK values have at most {MAX_DIMS} dims, got {dims}")
        vid = len(self.values)
        value = {
            "datatype": "fp32",
            "num_dims": len(dims),
            "dims": dims,
            "constant_buffer_idx": 0,
            "external_id": NO_ID,
            "flags": 0,
            "id_out": vid,
        }
        if data is not None:
            if data.numel() != math.prod(dims):
                raise ValueError(f"constant of shape {list(data.shape)} for a value of shape {dims}")
            value["constant_buffer_idx"] = self._constant(data, packed)
        self.values.append({"value_type": "TensorValue", "value": value})
        return vid

    def _constant(self, data: torch.Tensor, packed: bool) -> int:
        raw = data.detach().to(torch.float32).contiguous().numpy().tobytes()
        key = hashlib.sha256(raw).hexdigest()
        inline = self.weights == WEIGHTS_INLINE and packed
        if (key, inline) in self._constant_index:
            return self._constant_index[(key, inline)]
        if not inline:
            self.named.add_named_data(key, raw, ALIGNMENT)
            entry = {"offset": NO_OFFSET, "size": len(raw), "named_key": key}
        else:
            self.inline.extend(b"\0" * (-len(self.inline) % ALIGNMENT))
            entry = {"offset": len(self.inline), "size": len(raw)}
            self.inline.extend(raw)
        self._constant_index[(key, inline)] = len(self.constant_data)
        self.constant_data.append(entry)
        return self._constant_index[(key, inline)]

    def dims(self, vid: int) -> List[int]:
        return list(self.values[vid]["value"]["dims"])

    def is_constant(self, vid: int) -> bool:
        return self.values[vid]["value"]["constant_buffer_idx"] != 0

    def mark_input(self, vid: int) -> None:
        self._external(vid, len(self.inputs), VALUE_EXTERNAL_INPUT)
        self.inputs.append(vid)

    def mark_output(self, vid: int) -> None:
        # External ids: the call's inputs are 0..n-1, its outputs follow (set again in finish, once n is known).
        self._external(vid, len(self.outputs), VALUE_EXTERNAL_OUTPUT)
        self.outputs.append(vid)

    def _external(self, vid: int, position: int, flag: int) -> None:
        v = self.values[vid]["value"]
        if v["flags"] or v["constant_buffer_idx"]:
            raise ValueError(
                f"value {vid} cannot be delegate argument {position}: it is already "
                f"{'a constant' if v['constant_buffer_idx'] else 'an argument'}"
            )
        v["external_id"] = position
        v["flags"] = flag

    # --- nodes --------------------------------------------------------------------------------------------------

    def node(self, kind: str, table: dict, bounds: Optional[tuple] = None, debug_handle: int = 0) -> int:
        """Appends a node of union member `kind` (schema NodeUnion) with fields `table`; `bounds` = (min, max) is
        a clamp applied to its output. Returns the node's index."""
        node = {"node_type": kind, "node": dict(table), "debug_handle": debug_handle}
        if bounds is not None:
            node["output_min_max"] = {"output_min": float(bounds[0]), "output_max": float(bounds[1])}
        self.nodes.append(node)
        for field in ("output_id", "output_value_id", "output_index_id"):
            if field in table:
                self.producer[table[field]] = len(self.nodes) - 1
        return len(self.nodes) - 1

    # --- the blob -----------------------------------------------------------------------------------------------

    def to_json(self) -> str:
        n_in = len(self.inputs)
        for k, vid in enumerate(self.outputs):
            self.values[vid]["value"]["external_id"] = n_in + k
        graph = {
            "version": "0",
            "nodes": self.nodes,
            "values": self.values,
            "num_externs": n_in + len(self.outputs),
            "input_ids": list(self.inputs),
            "output_ids": list(self.outputs),
            "constant_data": self.constant_data,
        }
        return _dumps(graph)

    def serialize(self) -> bytes:
        from exir.serialize.flatc import encode

        flatbuffer = encode(self.to_json(), SCHEMA, "the XNNGraph")
        if flatbuffer[4:8] != b"XN01":
            raise ValueError(f"flatc wrote identifier {flatbuffer[4:8]!r}, expected b'XN01'")
        return frame(flatbuffer, bytes(self.inline))


def frame(flatbuffer: bytes, constant_data: bytes = b"") -> bytes:
    """The XH00 header, the flatbuffer and the constant data, each part starting at a multiple of 16."""
    header_size = len(_pad(b"\0" * HEADER_LENGTH))
    fb_padded = _pad(flatbuffer)
    header = (
        b"\0\0\0\0"
        + HEADER_MAGIC
        + struct.pack(
            "<HIIIQ", HEADER_LENGTH, header_size, len(flatbuffer), header_size + len(fb_padded), len(constant_data)
        )
    )
    assert len(header) == HEADER_LENGTH
    return _pad(header) + fb_padded + constant_data


def _dumps(obj) -> str:
    """JSON as flatc reads it: infinities are written `inf` / `-inf` (JSON has no spelling for them)."""

    def fix(x):
        if isinstance(x, float) and math.isinf(x):
            return _Inf(x)
        if isinstance(x, dict):
            return {k: fix(v) for k, v in x.items()}
        if isinstance(x, list):
            return [fix(v) for v in x]
        return x

    text = json.dumps(fix(obj), default=lambda o: o.token)
    return text.replace('"__inf__"', "inf").replace('"__-inf__"', "-inf")


class _Inf:
    def __init__(self, x: float):
        self.token = "__inf__" if x > 0 else "__-inf__"
