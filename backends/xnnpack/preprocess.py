"""XnnpackBackend's ahead-of-time half: a partition (Ember's lowered MethodGraph of the tagged calls) becomes an
XNNPACK blob in ExecuTorch's format, which backends/xnnpack/runtime and ExecuTorch 1.5.1's XnnpackBackend both run.

Before writing nodes, two rewrites on the partition: inference batch norm folded into the convolution before it
(exir.lowering.fuse_batch_norm), and PyTorch's decompositions of hardswish and SiLU put back together
(exir.lowering.fuse_activation), so each becomes one node.

Weights go to the program's named data under the SHA-256 of their bytes (ExecuTorch's default; a weight used by
two delegates is stored once), or, with XnnpackPartitioner(weights="inline"), into the blob's own constant data
(those XNNPACK packs at load; see backends/xnnpack/graph.py for the ones that stay named and why).
"""

from __future__ import annotations

from typing import List

from exir.backend.backend_details import BackendDetails, PreprocessResult, register_backend
from exir.backend.partitioner import CompileSpec
from exir.backend.to_backend import DelegationError
from backends.xnnpack.graph import WEIGHTS_INLINE, WEIGHTS_NAMED, XnnGraph
from backends.xnnpack.ops import NCHW, Context, Lowering, lower_call, why_not
from exir.lowering.ir import MethodGraph, TensorValue

BACKEND_ID = "XnnpackBackend"
# Compile spec choosing where weights go: b"named" (default, also when absent) or b"inline". Both runtimes ignore
# compile specs they do not know, so it only steers preprocess.
WEIGHTS_SPEC = "ember_weights"


def weights_of(compile_specs: List[CompileSpec]) -> str:
    for spec in compile_specs:
        if spec.key == WEIGHTS_SPEC:
            value = bytes(spec.value).decode()
            if value not in (WEIGHTS_NAMED, WEIGHTS_INLINE):
                raise DelegationError(
                    f"{BACKEND_ID}: compile spec {WEIGHTS_SPEC}={value!r}; expected "
                    f"'{WEIGHTS_NAMED}' or '{WEIGHTS_INLINE}'"
                )
            return value
    return WEIGHTS_NAMED


def _check_argument(t: TensorValue, what: str) -> None:
    import torch

    if t.dtype != torch.float32 or t.dynamic or tuple(t.dim_order) != tuple(range(len(t.shape))):
        raise DelegationError(
            f"{BACKEND_ID}: the partition's {what} {t.name} is {t!r} with dim order "
            f"{tuple(t.dim_order)}{' (dynamic)' if t.dynamic else ''}; XNNPACK delegates take "
            f"static, contiguous float32 tensors"
        )


def build_graph(partition: MethodGraph, weights: str = WEIGHTS_NAMED) -> XnnGraph:
    """The XNNGraph of `partition` (rewritten in place first). Raises DelegationError naming the first call
    XNNPACK does not take."""
    from exir.lowering.fuse_activation import fuse_elementwise_activations
    from exir.lowering.fuse_batch_norm import fuse_batch_norm

    fuse_batch_norm(partition)
    fuse_elementwise_activations(partition)
    graph = XnnGraph(weights)
    lowering = Lowering(partition, graph)
    for t in partition.inputs:
        _check_argument(t, "input")
        vid = graph.tensor(t.shape)
        graph.mark_input(vid)
        lowering.vals[id(t)] = {NCHW: vid}
        lowering.native[id(t)] = NCHW
        lowering.external_inputs.add(id(t))
    ctx = Context(partition.calls, partition.outputs)
    for i, call in enumerate(partition.calls):
        reason = why_not(call, ctx)
        if reason is not None:
            raise DelegationError(
                f"{BACKEND_ID}: call {i} of the partition, {call.op_name if call.op else call} "
                f"({call.source or 'no source line'}), cannot be lowered: {reason}"
            )
        lowering.debug_handle = i
        lower_call(call, lowering)
    for t in partition.outputs:
        if not isinstance(t, TensorValue):
            raise DelegationError(f"{BACKEND_ID}: the partition returns {t!r}, not a tensor")
        _check_argument(t, "output")
        graph.mark_output(lowering.value(t, NCHW))
    return graph


@register_backend
class XnnpackBackend(BackendDetails):
    backend_id = BACKEND_ID

    @classmethod
    def preprocess(cls, partition, compile_specs: List[CompileSpec]) -> PreprocessResult:
        weights = weights_of(compile_specs)
        graph = build_graph(partition, weights)
        named = graph.named.get_named_data_store_output()
        return PreprocessResult(graph.serialize(), data_store_output=named if named.pte_data else None)
