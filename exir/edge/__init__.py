"""The edge stage: an ExportedProgram decomposed to the core ATen op set and verified."""

from exir.edge.to_edge import EdgeCompileConfig, EdgeProgramManager, to_edge, to_edge_transform_and_lower
from exir.edge.verifier import OpSetError, verify_op_set

__all__ = [
    "EdgeCompileConfig",
    "EdgeProgramManager",
    "OpSetError",
    "to_edge",
    "to_edge_transform_and_lower",
    "verify_op_set",
]
