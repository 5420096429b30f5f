"""Delegation, with ExecuTorch's names: a Partitioner tags the nodes a backend takes, each backend's
BackendDetails.preprocess turns its partition into a blob, and the program calls the lowered partition through a
DelegateCall whose blob travels in the .pte (inline or as a segment).

    from exir.backend import to_edge_transform_and_lower
    from exir.backend.ember_portable import EmberPortablePartitioner
    edge = to_edge_transform_and_lower(torch.export.export(model, inputs), partitioner=[EmberPortablePartitioner()])
    edge.to_executorch().save("model.pte")
"""
from exir.backend.backend_details import BackendDetails, PreprocessResult, get_backend, register_backend
from exir.backend.partitioner import CompileSpec, DelegationSpec, PartitionResult, Partitioner
from exir.backend.to_backend import DelegationError, to_backend, to_edge_transform_and_lower

__all__ = ["BackendDetails", "CompileSpec", "DelegationError", "DelegationSpec", "PartitionResult", "Partitioner",
           "PreprocessResult", "get_backend", "register_backend", "to_backend", "to_edge_transform_and_lower"]
