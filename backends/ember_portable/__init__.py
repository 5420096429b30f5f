"""EmberPortable: a backend whose blob is an Ember program of its own (one method, `forward`), planned and
emitted by this same pipeline, which the runtime's EmberPortable backend (backends/ember_portable/runtime) loads
and runs with its own kernels. It proves the delegate path end to end without hardware, and is the template
for a real backend's two halves.

    from exir.backend import to_edge_transform_and_lower
    from backends.ember_portable import EmberPortablePartitioner
    edge = to_edge_transform_and_lower(ep, partitioner=[EmberPortablePartitioner()])
"""

from backends.ember_portable.partitioner import EmberPortablePartitioner
from backends.ember_portable.preprocess import BACKEND_ID, EmberPortableBackend

__all__ = ["BACKEND_ID", "EmberPortableBackend", "EmberPortablePartitioner"]
