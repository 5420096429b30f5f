"""Ember's XNNPACK delegate, ahead of time: XnnpackPartitioner tags what Debian's 2022 XNNPACK runs, and
XnnpackBackend.preprocess writes each partition as a blob in ExecuTorch's XNNPACK format (XH00 header, XN01
flatbuffer, weights in the program's named data or in the blob), which backends/xnnpack/runtime and ExecuTorch
1.5.1's runtime both run.

    import exir
    from backends.xnnpack import XnnpackPartitioner
    edge = exir.to_edge_transform_and_lower(torch.export.export(model, inputs), partitioner=[XnnpackPartitioner()])
    edge.to_executorch().save("model.pte")
"""

from backends.xnnpack.partitioner import XnnpackPartitioner
from backends.xnnpack.preprocess import BACKEND_ID, XnnpackBackend

__all__ = ["BACKEND_ID", "XnnpackBackend", "XnnpackPartitioner"]
