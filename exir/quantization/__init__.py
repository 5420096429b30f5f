"""Post-training int8 quantization on PyTorch's PT2E flow (torchao's prepare_pt2e / convert_pt2e in torch 2.13).

    q = exir.quantization.quantize(model, example_inputs, calibration=[(x1,), (x2,), ...])
    q.reference(x)                          # PyTorch's reference quantized computation (q/dq around float ops)
    exir.to_edge(q.exported_program).to_executorch().save("model_int8.pte")

Weights are int8 symmetric per output channel, activations int8 asymmetric per tensor, calibrated on the data
you pass (exir.quantization.quantizer says exactly what is annotated). Patterns with an int8 kernel become
Ember's fused ops (ember_quantized::conv2d, linear, add, mul, adaptive_avg_pool2d, avg_pool2d, with ReLU/ReLU6 folded
into their clamp), max pooling, padding and views run on the int8 values; everything else runs as float between
quantized_decomposed quantize/dequantize, as in ExecuTorch. Dropout in eval mode is removed first.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Iterable, Optional, Sequence

import torch

from exir.quantization.quantizer import EmberQuantizer

logging.getLogger("torchao").setLevel(logging.ERROR)
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e  # noqa: E402


class QuantizationError(RuntimeError):
    pass


@dataclasses.dataclass
class QuantizedModel:
    exported_program: torch.export.ExportedProgram  # with Ember's fused int8 ops: give it to exir.to_edge
    reference: torch.fx.GraphModule  # convert_pt2e's output: PyTorch's reference computation
    fused_ops: int  # how many patterns became fused int8 ops


def quantize(
    model: torch.nn.Module,
    example_inputs: Sequence[torch.Tensor],
    calibration: Iterable[Sequence[torch.Tensor]],
    quantizer: Optional[object] = None,
) -> QuantizedModel:
    """Calibrates `model` on `calibration` (an iterable of input tuples) and returns it quantized to int8."""
    from exir.quantization.lower_quantized import fuse_quantized

    example_inputs = tuple(example_inputs)
    try:
        captured = torch.export.export(model.eval(), example_inputs).module()
    except Exception as e:
        raise QuantizationError(
            f"torch.export could not capture the model: {_summary(e)}. Fix the model (or the "
            f"example inputs) until torch.export.export(model, example_inputs) succeeds"
        ) from e
    _drop_eval_dropout(captured)
    prepared = prepare_pt2e(captured, quantizer or EmberQuantizer())
    seen = 0
    with torch.no_grad():
        for batch in calibration:
            try:
                prepared(*(batch if isinstance(batch, (tuple, list)) else (batch,)))
            except Exception as e:
                raise QuantizationError(
                    f"calibration batch {seen} failed: {_summary(e)}. Each batch is an input "
                    f"tuple shaped like example_inputs"
                ) from e
            seen += 1
    if seen == 0:
        raise QuantizationError(
            "calibration is empty: pass at least one input tuple shaped like example_inputs "
            "(a few dozen representative samples give good activation ranges)"
        )
    reference = convert_pt2e(prepared)
    # The fused graph is a rewrite of a copy: `reference` stays PyTorch's own computation for comparisons.
    fused, count = fuse_quantized(convert_pt2e_copy(reference))
    ep = torch.export.export(fused, example_inputs)
    return QuantizedModel(exported_program=ep, reference=reference, fused_ops=count)


def _drop_eval_dropout(gm: torch.fx.GraphModule) -> None:
    """Removes dropout in eval mode (train=False), the identity: left in, it would sit in float between a
    dequantize and a quantize and cut the int8 chain in two."""
    aten = torch.ops.aten
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in (aten.dropout.default, aten.dropout_.default):
            continue
        train = node.args[2] if len(node.args) > 2 else node.kwargs.get("train", True)
        if train is False:
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
    gm.recompile()


def _summary(e: BaseException) -> str:
    """'NameError: name 'x' is not defined, at model.py:12': the exception's first line and the innermost frame
    outside torch, torchao and exir (the user's code), if the traceback has one."""
    import traceback

    first = (str(e).strip().splitlines() or [""])[0][:300]
    where = ""
    for frame in traceback.extract_tb(e.__traceback__):
        path = frame.filename.replace("\\", "/")
        if not any(part in path for part in ("/torch/", "/torchao/", "/exir/", "<")):
            where = f", at {frame.filename}:{frame.lineno}" + (f" ({frame.line})" if frame.line else "")
    return f"{type(e).__name__}: {first}{where}"


def convert_pt2e_copy(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    import copy
    import warnings

    with warnings.catch_warnings():
        # Copying the module's pytree specs trips a deprecation inside torch itself, not in anything we call.
        warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
        return copy.deepcopy(gm)


__all__ = ["EmberQuantizer", "QuantizationError", "QuantizedModel", "quantize"]
