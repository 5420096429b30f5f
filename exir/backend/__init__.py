"""Delegation, with ExecuTorch's names: a Partitioner tags the nodes a backend takes, each backend's
BackendDetails.preprocess turns its partition into a blob, and the program calls the lowered partition through a
DelegateCall whose blob travels in the .pte (inline or as a segment).

    from exir.backend import to_edge_transform_and_lower
    from backends.ember_portable import EmberPortablePartitioner
    edge = to_edge_transform_and_lower(torch.export.export(model, inputs), partitioner=[EmberPortablePartitioner()])
    edge.to_executorch().save("model.pte")
"""

from exir.backend.backend_details import BackendDetails, PreprocessResult, get_backend, register_backend
from exir.backend.partitioner import CompileSpec, DelegationSpec, PartitionResult, Partitioner
from exir.backend.to_backend import DelegationError, to_backend


def __getattr__(name):
    # exir.edge owns to_edge_transform_and_lower (it is to_edge plus to_backend); loaded on first use so that
    # importing exir.edge, which imports this package's modules, never finds this package half made.
    if name == "to_edge_transform_and_lower":
        from exir.edge.to_edge import to_edge_transform_and_lower

        return to_edge_transform_and_lower
    raise AttributeError(f"module 'exir.backend' has no attribute '{name}'")


__all__ = [
    "BackendDetails",
    "CompileSpec",
    "DelegationError",
    "DelegationSpec",
    "PartitionResult",
    "Partitioner",
    "PreprocessResult",
    "get_backend",
    "register_backend",
    "to_backend",
    "to_edge_transform_and_lower",
]
