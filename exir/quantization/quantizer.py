"""EmberQuantizer: what to quantize and how, for PyTorch's PT2E flow (prepare_pt2e / convert_pt2e).

In torch 2.13 the PT2E flow lives in torchao (torchao.quantization.pt2e), no longer in torch.ao; this module
annotates the exported graph with Ember's int8 scheme, the one kernels/quantized computes:
  - activations: int8, asymmetric, per tensor (a histogram observer: outliers do not stretch the range)
  - weights of conv2d and linear: int8, symmetric, per output channel (zero point 0), range [-127, 127]
  - bias: int32 with scale input_scale * weight_scale[c], zero point 0 (derived, not observed)
  - a ReLU/ReLU6/hardtanh right after conv, linear, add or mul is fused: only its output is observed
  - add: both inputs and the output; mul likewise, or its tensor input and output when the other is a number;
    average pooling (adaptive or not) and spatial mean, max pooling and padding:
    the output shares the input's parameters
  - softmax of a value that is quantized anyway: the output fixed at scale 1/256 and zero point -128 (its range is
    [0, 1]: all 256 codes cover it, as PyTorch's fixed-qparams softmax does)
Everything else stays float; exir.quantization.lower_quantized keeps quantize/dequantize around it.
"""

from __future__ import annotations

import logging
from typing import Dict, Optional

import torch

# torchao's import logs one line per CUDA extension it cannot load (this is a CPU build), and torch logs that
# one of torchao's enums no longer needs registering; neither is a problem for users to act on.
logging.getLogger("torchao").setLevel(logging.ERROR)
_pytree_log = logging.getLogger("torch.utils._pytree")
_pytree_level = _pytree_log.level
_pytree_log.setLevel(logging.ERROR)

from torchao.quantization.pt2e.observer import HistogramObserver, PerChannelMinMaxObserver  # noqa: E402
from torchao.quantization.pt2e.quantizer import DerivedQuantizationSpec, QuantizationAnnotation  # noqa: E402
from torchao.quantization.pt2e.quantizer import QuantizationSpec, Quantizer, SharedQuantizationSpec  # noqa: E402
from torchao.quantization.pt2e.quantizer import FixedQParamsQuantizationSpec  # noqa: E402

_pytree_log.setLevel(_pytree_level)

aten = torch.ops.aten

ACT = QuantizationSpec(
    dtype=torch.int8,
    quant_min=-128,
    quant_max=127,
    qscheme=torch.per_tensor_affine,
    is_dynamic=False,
    observer_or_fake_quant_ctr=HistogramObserver.with_args(eps=2**-12),
)
WEIGHT = QuantizationSpec(
    dtype=torch.int8,
    quant_min=-127,
    quant_max=127,
    qscheme=torch.per_channel_symmetric,
    ch_axis=0,
    is_dynamic=False,
    observer_or_fake_quant_ctr=PerChannelMinMaxObserver.with_args(eps=2**-12),
)

SOFTMAX_OUT = FixedQParamsQuantizationSpec(
    dtype=torch.int8, scale=1.0 / 256.0, zero_point=-128, quant_min=-128, quant_max=127, qscheme=torch.per_tensor_affine
)
SOFTMAX_OPS = {aten.softmax.int, aten._softmax.default, aten._safe_softmax.default}
CONV_OPS = {aten.conv2d.default}
LINEAR_OPS = {aten.linear.default}
ADD_OPS = {aten.add.Tensor, aten.add_.Tensor}
# mul: two quantized tensors (broadcasting), or one and a Python number (its factor stays exact: lower_quantized).
MUL_OPS = {aten.mul.Tensor, aten.mul_.Tensor}
ACTIVATION_OPS = {
    aten.relu.default,
    aten.relu_.default,
    aten.relu6.default,
    aten.hardtanh.default,
    aten.hardtanh_.default,
}
POOL_OPS = {aten.adaptive_avg_pool2d.default, aten.mean.dim, aten.avg_pool2d.default}
# Ops that pick or copy values without arithmetic: max pooling and padding. With the input's parameters on the
# output they run on the int8 values themselves and give exactly what dequantize -> op -> quantize gives.
SELECT_OPS = {aten.max_pool2d.default, aten.pad.default, aten.constant_pad_nd.default}
# Ops that only move bytes: quantized with their input's parameters, so the int8 value passes through.
VIEW_OPS = {
    aten.flatten.using_ints,
    aten.view.default,
    aten.reshape.default,
    aten.squeeze.dim,
    aten.unsqueeze.default,
    aten.permute.default,
}


def _bias_spec(input_act: torch.fx.Node, weight: torch.fx.Node, node: torch.fx.Node) -> DerivedQuantizationSpec:
    def derive(observers):
        act_obs, w_obs = observers
        act_scale, _ = act_obs.calculate_qparams()
        w_scale, _ = w_obs.calculate_qparams()
        scale = (act_scale * w_scale).to(torch.float32)
        return scale, torch.zeros_like(scale, dtype=torch.int32)

    return DerivedQuantizationSpec(
        derived_from=[(input_act, node), (weight, node)],
        derive_qparams_fn=derive,
        dtype=torch.int32,
        quant_min=-(2**31) + 1,
        quant_max=2**31 - 1,
        qscheme=torch.per_channel_symmetric,
        ch_axis=0,
    )


def _only_user(node: torch.fx.Node) -> Optional[torch.fx.Node]:
    users = list(node.users)
    return users[0] if len(users) == 1 else None


def _fused_output(node: torch.fx.Node) -> torch.fx.Node:
    """The node whose output gets observed: a single following activation if there is one."""
    user = _only_user(node)
    if user is not None and user.op == "call_function" and user.target in ACTIVATION_OPS:
        return user
    return node


def _annotate(node: torch.fx.Node, inputs: Dict[torch.fx.Node, object], output=ACT) -> None:
    node.meta["quantization_annotation"] = QuantizationAnnotation(
        input_qspec_map=inputs, output_qspec=output, _annotated=True
    )


def _is_float32(node: torch.fx.Node) -> bool:
    val = node.meta.get("val")
    return isinstance(val, torch.Tensor) and val.dtype == torch.float32


def _annotated(node: torch.fx.Node) -> bool:
    a = node.meta.get("quantization_annotation")
    return a is not None and a._annotated


class EmberQuantizer(Quantizer):
    """Annotates conv2d, linear, add, mul (with a following ReLU/ReLU6/hardtanh fused), pooling and padding."""

    def annotate(self, model: torch.fx.GraphModule) -> torch.fx.GraphModule:
        for node in model.graph.nodes:
            if node.op != "call_function" or _annotated(node):
                continue
            if node.target in CONV_OPS or node.target in LINEAR_OPS:
                self._annotate_weighted(node)
            elif node.target in ADD_OPS and all(isinstance(a, torch.fx.Node) for a in node.args[:2]):
                self._annotate_with_activation(node, {node.args[0]: ACT, node.args[1]: ACT})
            elif node.target in MUL_OPS and isinstance(node.args[0], torch.fx.Node):
                self._annotate_mul(node)
            elif (node.target in POOL_OPS or node.target in SELECT_OPS) and isinstance(node.args[0], torch.fx.Node):
                if node.target == aten.mean.dim and not self._is_spatial_mean(node):
                    continue
                _annotate(node, {node.args[0]: ACT}, SharedQuantizationSpec((node.args[0], node)))
        # Second pass: views of values that are quantized anyway stay int8, and so does a softmax of one (a
        # classifier's head); in graph order, so views before and after a softmax count.
        for node in model.graph.nodes:
            if node.op == "call_function" and node.target in VIEW_OPS and not _annotated(node):
                src = node.args[0]
                ann = src.meta.get("quantization_annotation") if isinstance(src, torch.fx.Node) else None
                if ann is not None and ann.output_qspec is not None:
                    _annotate(node, {src: SharedQuantizationSpec(src)}, SharedQuantizationSpec(src))
            elif node.op == "call_function" and node.target in SOFTMAX_OPS and not _annotated(node):
                self._annotate_softmax(node)
        return model

    @staticmethod
    def _annotate_softmax(node: torch.fx.Node) -> None:
        """Only where its input is quantized anyway: attention's softmax between float matmuls stays float (an int8
        island would add a quantize and a dequantize, and 1/256 steps on the attention weights)."""
        src = node.args[0]
        ann = src.meta.get("quantization_annotation") if isinstance(src, torch.fx.Node) else None
        if ann is not None and ann.output_qspec is not None:
            _annotate(node, {src: ACT}, SOFTMAX_OUT)

    def _annotate_weighted(self, node: torch.fx.Node) -> None:
        x, w = node.args[0], node.args[1]
        bias = node.args[2] if len(node.args) > 2 else None
        inputs = {x: ACT, w: WEIGHT}
        if isinstance(bias, torch.fx.Node):
            inputs[bias] = _bias_spec(x, w, node)
        self._annotate_with_activation(node, inputs)

    def _annotate_with_activation(self, node: torch.fx.Node, inputs) -> None:
        out = _fused_output(node)
        if out is node:
            _annotate(node, inputs)
        else:
            _annotate(node, inputs, output=None)
            _annotate(out, {}, ACT)

    def _annotate_mul(self, node: torch.fx.Node) -> None:
        x, other = node.args[0], node.args[1]
        # Only float32 products: an integer mul (shapes, indices) stays as it is.
        if not all(_is_float32(n) for n in (node, x) + ((other,) if isinstance(other, torch.fx.Node) else ())):
            return
        if isinstance(other, torch.fx.Node):
            self._annotate_with_activation(node, {x: ACT, other: ACT})
        elif isinstance(other, (int, float)) and not isinstance(other, bool):
            self._annotate_with_activation(node, {x: ACT})

    @staticmethod
    def _is_spatial_mean(node: torch.fx.Node) -> bool:
        dims = node.args[1] if len(node.args) > 1 else None
        val = node.args[0].meta.get("val")
        if val is None or dims is None or val.dim() != 4:
            return False
        return sorted(d % 4 for d in dims) == [2, 3]

    def validate(self, model: torch.fx.GraphModule) -> None:
        pass
