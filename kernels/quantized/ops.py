"""The quantized kernel library's operators for export, with PyTorch reference implementations.

Importing this module registers with torch.library:
  * ember_quantized::{conv2d, linear, add, mul, adaptive_avg_pool2d, avg_pool2d}: functional and out= overloads. The
    schemas are the contract between exir's quantization lowering (which emits these ops) and kernels/quantized
    (which runs them): they live in schema/operators.yaml, which kernels.yaml names them from.
  * quantized_decomposed::{quantize,dequantize}_per_{tensor,channel}.out: PyTorch defines only the functional
    ops; exir lowers every call to its out= overload, so these must exist for export (same arguments as
    PyTorch's, plus out=, as ExecuTorch declares them).

Each reference is what the C++ kernels are tested against: dequantize the int8 inputs with
torch.ops.quantized_decomposed, run the float op, quantize the result per tensor (round half to even), clamp
to [activation_min, activation_max]. The kernels compute the same thing in int32 with fixed-point
requantization and agree to within one int8 unit (tests/kernels/test_quantized_ops.py measures how often
they differ at all).
"""

from __future__ import annotations

from typing import List, Optional, Sequence

import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  (defines torch.ops.quantized_decomposed)
import torch.nn.functional as F

from schema import operators as contract

NAMESPACE = "ember_quantized"
# Schemas are the format contract's (schema/operators.yaml): the ember_quantized ops, and the quantized_decomposed
# ops whose out= overloads Ember adds.
_OPS = {op.name: op for op in contract.in_namespace(NAMESPACE)}
_DECOMPOSED = contract.in_namespace("quantized_decomposed")

_qd = torch.ops.quantized_decomposed
_I8_MIN, _I8_MAX = -128, 127


# --- references: dequantize -> float op -> quantize ------------------------------------------------------------


def _dequant(x: torch.Tensor, scale: float, zero_point: int) -> torch.Tensor:
    return _qd.dequantize_per_tensor(x, scale, zero_point, _I8_MIN, _I8_MAX, torch.int8)


def _requant(y: torch.Tensor, scale: float, zero_point: int, act_min: int, act_max: int) -> torch.Tensor:
    q = _qd.quantize_per_tensor(y, scale, zero_point, _I8_MIN, _I8_MAX, torch.int8)
    return q.clamp(act_min, act_max)


def _dequant_weight(weight: torch.Tensor, weight_scales: torch.Tensor) -> torch.Tensor:
    scales = weight_scales.to(torch.float32).reshape(-1)
    if scales.numel() == 1:
        scales = scales.expand(weight.shape[0])
    return _qd.dequantize_per_channel(weight, scales.contiguous(), None, 0, _I8_MIN, _I8_MAX, torch.int8)


def _dequant_bias(bias: Optional[torch.Tensor], input_scale: float, weight_scales: torch.Tensor, out_features: int):
    if bias is None:
        return None
    scales = (input_scale * weight_scales.to(torch.float64).reshape(-1)).expand(out_features)
    return (bias.to(torch.float64) * scales).to(torch.float32)


def conv2d(
    input,
    input_scale,
    input_zero_point,
    weight,
    weight_scales,
    bias,
    stride,
    padding,
    dilation,
    groups,
    output_scale,
    output_zero_point,
    activation_min,
    activation_max,
):
    x = _dequant(input, input_scale, input_zero_point)
    w = _dequant_weight(weight, weight_scales)
    b = _dequant_bias(bias, input_scale, weight_scales, weight.shape[0])
    y = F.conv2d(x, w, b, list(stride), list(padding), list(dilation), groups)
    return _requant(y, output_scale, output_zero_point, activation_min, activation_max)


def linear(
    input,
    input_scale,
    input_zero_point,
    weight,
    weight_scales,
    bias,
    output_scale,
    output_zero_point,
    activation_min,
    activation_max,
):
    x = _dequant(input, input_scale, input_zero_point)
    w = _dequant_weight(weight, weight_scales)
    b = _dequant_bias(bias, input_scale, weight_scales, weight.shape[0])
    return _requant(F.linear(x, w, b), output_scale, output_zero_point, activation_min, activation_max)


def add(
    self,
    self_scale,
    self_zero_point,
    other,
    other_scale,
    other_zero_point,
    output_scale,
    output_zero_point,
    activation_min,
    activation_max,
):
    if self.shape != other.shape:
        raise RuntimeError(
            f"ember_quantized::add: self {list(self.shape)} and other {list(other.shape)} must have "
            f"the same shape (no broadcasting)"
        )
    y = _dequant(self, self_scale, self_zero_point) + _dequant(other, other_scale, other_zero_point)
    return _requant(y, output_scale, output_zero_point, activation_min, activation_max)


def mul(
    self,
    self_scale,
    self_zero_point,
    other,
    other_scale,
    other_zero_point,
    output_scale,
    output_zero_point,
    activation_min,
    activation_max,
):
    y = _dequant(self, self_scale, self_zero_point) * _dequant(other, other_scale, other_zero_point)
    return _requant(y, output_scale, output_zero_point, activation_min, activation_max)


def adaptive_avg_pool2d(input, input_scale, input_zero_point, output_size, output_scale, output_zero_point):
    y = F.adaptive_avg_pool2d(_dequant(input, input_scale, input_zero_point), list(output_size))
    return _requant(y, output_scale, output_zero_point, _I8_MIN, _I8_MAX)


def avg_pool2d(
    input,
    input_scale,
    input_zero_point,
    kernel_size,
    stride,
    padding,
    ceil_mode,
    count_include_pad,
    divisor_override,
    output_scale,
    output_zero_point,
):
    y = F.avg_pool2d(
        _dequant(input, input_scale, input_zero_point),
        list(kernel_size),
        list(stride),
        list(padding),
        ceil_mode,
        count_include_pad,
        divisor_override,
    )
    return _requant(y, output_scale, output_zero_point, _I8_MIN, _I8_MAX)


REFERENCES = {
    "conv2d": conv2d,
    "linear": linear,
    "add": add,
    "adaptive_avg_pool2d": adaptive_avg_pool2d,
    "avg_pool2d": avg_pool2d,
}
REFERENCES["mul"] = mul


# --- shapes for export (fake tensors) ---------------------------------------------------------------------------


def _conv2d_fake(
    input,
    input_scale,
    input_zero_point,
    weight,
    weight_scales,
    bias,
    stride,
    padding,
    dilation,
    groups,
    output_scale,
    output_zero_point,
    activation_min,
    activation_max,
):
    def pair(v: Sequence[int]) -> List[int]:
        return [v[0], v[-1]]

    (sh, sw), (ph, pw), (dh, dw) = pair(stride), pair(padding), pair(dilation)
    n, _, h, w = input.shape
    oc, _, kh, kw = weight.shape
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    return input.new_empty((n, oc, oh, ow))


def _linear_fake(
    input,
    input_scale,
    input_zero_point,
    weight,
    weight_scales,
    bias,
    output_scale,
    output_zero_point,
    activation_min,
    activation_max,
):
    return input.new_empty((*input.shape[:-1], weight.shape[0]))


def _add_fake(
    self,
    self_scale,
    self_zero_point,
    other,
    other_scale,
    other_zero_point,
    output_scale,
    output_zero_point,
    activation_min,
    activation_max,
):
    return self.new_empty(self.shape)


def _mul_fake(
    self,
    self_scale,
    self_zero_point,
    other,
    other_scale,
    other_zero_point,
    output_scale,
    output_zero_point,
    activation_min,
    activation_max,
):
    return self.new_empty(torch.broadcast_shapes(self.shape, other.shape))


def _pool_fake(input, input_scale, input_zero_point, output_size, output_scale, output_zero_point):
    return input.new_empty((*input.shape[:-2], output_size[0], output_size[1]))


def _avg_pool2d_fake(
    input,
    input_scale,
    input_zero_point,
    kernel_size,
    stride,
    padding,
    ceil_mode,
    count_include_pad,
    divisor_override,
    output_scale,
    output_zero_point,
):
    # The float op on a float stand-in gives PyTorch's output size (ceil_mode's rule included).
    return F.avg_pool2d(
        input.new_empty(input.shape, dtype=torch.float32),
        list(kernel_size),
        list(stride),
        list(padding),
        ceil_mode,
        count_include_pad,
        divisor_override,
    ).to(input.dtype)


_FAKES = {
    "conv2d": _conv2d_fake,
    "linear": _linear_fake,
    "add": _add_fake,
    "adaptive_avg_pool2d": _pool_fake,
    "avg_pool2d": _avg_pool2d_fake,
}
_FAKES["mul"] = _mul_fake


# softmax: the reference is PyTorch's own float32 softmax between dequantize and quantize, as convert_pt2e leaves a
# quantized softmax; the kernel computes it in integers (kernels/quantized/util/softmax_table.h).
def softmax(input, input_scale, input_zero_point, dim, output_scale, output_zero_point):
    y = torch.softmax(_dequant(input, input_scale, input_zero_point), dim)
    return _requant(y, output_scale, output_zero_point, _I8_MIN, _I8_MAX)


def _softmax_fake(input, input_scale, input_zero_point, dim, output_scale, output_zero_point):
    return input.new_empty(input.shape)


REFERENCES["softmax"] = softmax
_FAKES["softmax"] = _softmax_fake

# --- registration -----------------------------------------------------------------------------------------------


def _make_out(fn):
    def out_variant(*args, out, **kwargs):
        result = fn(*args, **kwargs)
        out.resize_(result.shape)
        return out.copy_(result)

    return out_variant


def _has_overload(namespace: str, name: str, overload: str) -> bool:
    try:
        return overload in getattr(getattr(torch.ops, namespace), name).overloads()
    except (AttributeError, RuntimeError):
        return False


def _register():
    # Imported twice under different module names (a test's sys.path, say): the ops exist already.
    if _has_overload(NAMESPACE, "conv2d", "default"):
        return ()
    missing = sorted(set(_OPS) - (set(REFERENCES) & set(_FAKES)))
    if missing:
        raise RuntimeError(
            f"schema/operators.yaml declares {', '.join(NAMESPACE + '::' + m for m in missing)}, "
            f"which kernels/quantized/ops.py lacks a reference implementation or fake for (REFERENCES, "
            f"_FAKES): add them there"
        )
    lib = torch.library.Library(NAMESPACE, "DEF")
    for name, op in _OPS.items():
        lib.define(op.functional)
        lib.define(op.out)
        lib.impl(name, REFERENCES[name], "CompositeExplicitAutograd")
        lib.impl(f"{name}.out", _make_out(REFERENCES[name]), "CompositeExplicitAutograd")
        torch.library.register_fake(f"{NAMESPACE}::{name}", _FAKES[name], lib=lib)

    # Another library (ExecuTorch's quantized ops, say) may have added the out= overloads already: keep theirs,
    # the schemas are the same.
    fragment = torch.library.Library("quantized_decomposed", "FRAGMENT")
    for op in _DECOMPOSED:
        if _has_overload("quantized_decomposed", op.name, "out"):
            continue
        fragment.define(op.out)
        fragment.impl(f"{op.name}.out", _make_out(getattr(_qd, op.name).default), "CompositeExplicitAutograd")
    return lib, fragment


_LIBRARIES = _register()
