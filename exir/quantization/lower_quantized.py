"""Quantize/dequantize patterns -> Ember's fused int8 operators, on the graph convert_pt2e returns.

convert_pt2e leaves PyTorch's reference form: every quantized op is dequantize -> float op -> quantize. Where
kernels/quantized has a kernel, the whole pattern becomes one call that reads and writes int8:

    dq(x) -> conv2d(., dq(w_int8), dq(b_int32)) [-> relu | relu6 | hardtanh] -> q   =>  ember_quantized::conv2d
    dq(x) -> linear(...)                      [-> activation]                  -> q   =>  ember_quantized::linear
    dq(a), dq(b) -> add or add_               [-> activation]                  -> q   =>  ember_quantized::add
    dq(a), dq(b) -> mul (broadcasting)        [-> activation]                  -> q   =>  ember_quantized::mul
    dq(a) -> mul by a Python number c         [-> activation]                  -> q   =>  ember_quantized::mul
    dq(x) -> adaptive_avg_pool2d / mean(H, W, keepdim)                         -> q   =>  ember_quantized::adaptive_avg_pool2d
    dq(x) -> avg_pool2d                                                        -> q   =>  ember_quantized::avg_pool2d
    dq(x) -> softmax / _softmax / _safe_softmax (dim)                          -> q   =>  ember_quantized::softmax
    dq(x) -> view-like op, max_pool2d or pad -> q  (same scale and zero point)       =>  the same op on int8

Max pooling and padding only pick and copy values, and quantization is monotonic, so on shared parameters the
int8 op gives exactly the reference's result; a constant pad's value is quantized once, as the reference would.

The number c of a mul becomes an exact int8 constant: a tensor [1] holding sign(c) at scale |c| (so the kernel's one
requantization multiplies by a_scale * |c| / out_scale with no rounding of c to 8 bits).

The activation becomes the kernel's clamp [activation_min, activation_max] in the output's int8 domain. The
rest stays as it is: float kernels between quantized_decomposed quantize/dequantize, which the runtime also
runs. Must run before to_edge: its decompositions split linear into transposes and addmm.
"""

from __future__ import annotations

import math
from typing import Optional, Tuple

import torch

import kernels.quantized.ops  # noqa: F401  (registers ember_quantized::*)

aten = torch.ops.aten
qd = torch.ops.quantized_decomposed
eq = torch.ops.ember_quantized

Q_TENSOR = {qd.quantize_per_tensor.default}
DQ_TENSOR = {qd.dequantize_per_tensor.default}
DQ_CHANNEL = {qd.dequantize_per_channel.default}
VIEW_OPS = {
    aten.flatten.using_ints,
    aten.view.default,
    aten.reshape.default,
    aten.squeeze.dim,
    aten.squeeze.dims,
    aten.unsqueeze.default,
    aten.permute.default,
    aten.contiguous.default,
}
# Ops that pick or copy values without arithmetic (see the top of this file).
SELECT_OPS = {aten.max_pool2d.default, aten.pad.default, aten.constant_pad_nd.default}
# Softmax as export leaves it (softmax.int) or decomposed (_softmax; _safe_softmax, whose zeros for a row of -inf
# cannot arise from int8 values).
SOFTMAX_OPS = {aten.softmax.int, aten._softmax.default, aten._safe_softmax.default}


def _call(node, targets) -> bool:
    return isinstance(node, torch.fx.Node) and node.op == "call_function" and node.target in targets


def _single_user(node: torch.fx.Node) -> bool:
    return len(node.users) == 1


def _int8_tensor_qparams(node) -> Optional[Tuple[torch.fx.Node, float, int]]:
    """(int8 source, scale, zero point) if `node` dequantizes a per-tensor int8 value."""
    if not _call(node, DQ_TENSOR):
        return None
    src, scale, zp, qmin, qmax, dtype = node.args[:6]
    if dtype != torch.int8 or (qmin, qmax) != (-128, 127):
        return None
    return src, float(scale), int(zp)


def _channel_weights(node, dtype) -> Optional[Tuple[torch.fx.Node, torch.fx.Node]]:
    """(quantized constant, scales) if `node` dequantizes a per-channel constant along axis 0."""
    if not _call(node, DQ_CHANNEL):
        return None
    src, scales, _zps, axis = node.args[:4]
    if node.args[6] != dtype or axis != 0 or src.op != "get_attr" or scales.op != "get_attr":
        return None
    return src, scales


def _shape(node: torch.fx.Node):
    val = node.meta.get("val")
    return tuple(val.shape) if isinstance(val, torch.Tensor) else None


def _clamp_range(act: Optional[torch.fx.Node], scale: float, zp: int) -> Optional[Tuple[int, int]]:
    """The activation as an int8 clamp of the output, or None if it is not one Ember fuses."""

    def q(v: float) -> int:
        return max(-128, min(127, int(round(v / scale)) + zp))

    if act is None:
        return -128, 127
    if act.target in (aten.relu.default, aten.relu_.default):
        return q(0.0), 127
    if act.target == aten.relu6.default:
        return q(0.0), q(6.0)
    if act.target in (aten.hardtanh.default, aten.hardtanh_.default):
        lo = act.args[1] if len(act.args) > 1 else act.kwargs.get("min_val", -1.0)
        hi = act.args[2] if len(act.args) > 2 else act.kwargs.get("max_val", 1.0)
        return q(float(lo)), q(float(hi))
    return None


def _float32_attr(gm: torch.fx.GraphModule, node: torch.fx.Node) -> torch.fx.Node:
    """A get_attr of the same constant as float32 (per-channel scales may be float64)."""
    value = getattr(gm, node.target)
    if value.dtype == torch.float32:
        return node
    name = f"{node.target}_f32"
    if not hasattr(gm, name):
        gm.register_buffer(name, value.to(torch.float32))
    with gm.graph.inserting_after(node):
        return gm.graph.get_attr(name)


def _arg(node: torch.fx.Node, index: int, name: str, default):
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def _pair(v):
    return [int(v), int(v)] if isinstance(v, int) else [int(x) for x in v]


def _two(v, default):
    """A pooling size argument as two ints: an int or one value for both dims, an empty list for `default`."""
    v = _pair(v)
    return list(default) if not v else v * 2 if len(v) == 1 else v


def _avg_pool2d_args(core: torch.fx.Node):
    """avg_pool2d's arguments with their defaults made explicit: kernel, stride (the kernel if empty), padding,
    ceil_mode, count_include_pad, divisor_override."""
    kernel = _two(core.args[1], None)
    return (
        kernel,
        _two(_arg(core, 2, "stride", []), kernel),
        _two(_arg(core, 3, "padding", 0), [0, 0]),
        bool(_arg(core, 4, "ceil_mode", False)),
        bool(_arg(core, 5, "count_include_pad", True)),
        _arg(core, 6, "divisor_override", None),
    )


def _int8_select_args(core: torch.fx.Node, src: torch.fx.Node, scale: float, zp: int):
    """(args, kwargs) of a view or select op moved onto the int8 value `src`; a constant pad's value becomes its
    int8 code, quantized as the reference quantizes the padded float tensor."""
    args, kwargs = (src,) + tuple(core.args[1:]), dict(core.kwargs)
    if core.target == aten.pad.default:
        if _arg(core, 2, "mode", "constant") != "constant":
            return args, kwargs  # reflect, replicate, circular: copies of the values themselves
        value = _arg(core, 3, "value", None)
        code = _quantized_value(0.0 if value is None else float(value), scale, zp)
        kwargs.pop("mode", None)
        kwargs.pop("value", None)
        args = (src, core.args[1], "constant", code)
    elif core.target == aten.constant_pad_nd.default:
        value = _arg(core, 2, "value", 0.0)
        kwargs.pop("value", None)
        args = (src, core.args[1], _quantized_value(float(value), scale, zp))
    return args, kwargs


def _quantized_value(v: float, scale: float, zp: int) -> int:
    # PyTorch's own quantize, so a value between two codes rounds exactly as the reference rounds it.
    q = torch.ops.quantized_decomposed.quantize_per_tensor(torch.tensor([v]), scale, zp, -128, 127, torch.int8)
    return int(q.item())


def _mul_inputs(gm: torch.fx.GraphModule, q: torch.fx.Node, core: torch.fx.Node):
    """(a, a_scale, a_zp, b, b_scale, b_zp) of ember_quantized::mul for a mul of two dequantized int8 tensors (their
    shapes broadcast: the float mul took them), or of one and a number, which becomes the constant b (see the top of
    this file); None if the mul is neither."""
    a, other = _int8_tensor_qparams(core.args[0]), core.args[1]
    if a is None:
        return None
    if isinstance(other, torch.fx.Node):
        b = _int8_tensor_qparams(other)
        return None if b is None else a + b
    if isinstance(other, bool) or not isinstance(other, (int, float)) or not math.isfinite(float(other)):
        return None
    c = float(other)
    name = f"_ember_mul_factor_{sum(1 for n in gm.graph.nodes if n.op == 'get_attr')}"
    while hasattr(gm, name):
        name += "_"
    gm.register_buffer(name, torch.tensor([(c > 0) - (c < 0)], dtype=torch.int8))
    with gm.graph.inserting_before(q):
        factor = gm.graph.get_attr(name)
    return a + (factor, abs(c) if c != 0 else 1.0, 0)


def _softmax_args(core: torch.fx.Node, out_scale: float, out_zp: int):
    """ember_quantized::softmax's arguments for a float32 softmax of a dequantized int8 value, else None."""
    x = _int8_tensor_qparams(core.args[0])
    if x is None:
        return None
    if core.target == aten._softmax.default:
        if _arg(core, 2, "half_to_float", False):
            return None
    elif _arg(core, 2, "dtype", None) not in (None, torch.float32):
        return None
    return (x[0], x[1], x[2], int(core.args[1]), out_scale, out_zp)


def _fuse_one(gm: torch.fx.GraphModule, q: torch.fx.Node) -> bool:
    y, out_scale, out_zp, qmin, qmax, dtype = q.args[:6]
    if dtype != torch.int8 or (qmin, qmax) != (-128, 127) or not isinstance(y, torch.fx.Node):
        return False
    out_scale, out_zp = float(out_scale), int(out_zp)
    act, core = None, y
    if _call(
        y, {aten.relu.default, aten.relu_.default, aten.relu6.default, aten.hardtanh.default, aten.hardtanh_.default}
    ) and _single_user(y):
        act, core = y, y.args[0]
    if not isinstance(core, torch.fx.Node) or core.op != "call_function" or not _single_user(core):
        return False
    clamp = _clamp_range(act, out_scale, out_zp)
    if clamp is None:
        return False
    lo, hi = clamp
    graph = gm.graph
    new_args, kwargs = None, {}
    if core.target in (aten.conv2d.default, aten.linear.default):
        x = _int8_tensor_qparams(core.args[0])
        w = _channel_weights(core.args[1], torch.int8)
        bias_node = _arg(core, 2, "bias", None)
        b = _channel_weights(bias_node, torch.int32) if bias_node is not None else None
        if x is None or w is None or (bias_node is not None and b is None):
            return False
        with graph.inserting_before(q):
            scales = _float32_attr(gm, w[1])
        common = (x[0], x[1], x[2], w[0], scales, b[0] if b else None)
        if core.target == aten.conv2d.default:
            stride, padding, dilation = (
                _pair(_arg(core, i, n, d)) for i, n, d in ((3, "stride", 1), (4, "padding", 0), (5, "dilation", 1))
            )
            if isinstance(_arg(core, 4, "padding", 0), str):
                return False  # padding='same' / 'valid': left to the float path
            groups = int(_arg(core, 6, "groups", 1))
            target = eq.conv2d.default
            new_args = common + (stride, padding, dilation, groups, out_scale, out_zp, lo, hi)
        else:
            target = eq.linear.default
            new_args = common + (out_scale, out_zp, lo, hi)
    elif core.target in (aten.add.Tensor, aten.add_.Tensor) and _arg(core, 2, "alpha", 1) == 1:
        # An in-place add (ResNet's `out += identity`) writes into its first input: a dequantized temporary that
        # nothing else may read, for the functional int8 add to stand for it.
        if core.target == aten.add_.Tensor and not _single_user(core.args[0]):
            return False
        a, b = _int8_tensor_qparams(core.args[0]), _int8_tensor_qparams(core.args[1])
        if a is None or b is None or _shape(a[0]) is None or _shape(a[0]) != _shape(b[0]):
            return False  # the int8 add does not broadcast
        target = eq.add.default
        new_args = (a[0], a[1], a[2], b[0], b[1], b[2], out_scale, out_zp, lo, hi)
    elif core.target in (aten.mul.Tensor, aten.mul_.Tensor):
        inputs = _mul_inputs(gm, q, core)
        if inputs is None:
            return False
        target = eq.mul.default
        new_args = inputs + (out_scale, out_zp, lo, hi)
    elif act is None and core.target in (aten.adaptive_avg_pool2d.default, aten.mean.dim):
        x = _int8_tensor_qparams(core.args[0])
        if x is None:
            return False
        if core.target == aten.mean.dim:
            dims = sorted(d % 4 for d in core.args[1])
            if dims != [2, 3] or not _arg(core, 2, "keepdim", False):
                return False
            size = [1, 1]
        else:
            size = _pair(core.args[1])
        target = eq.adaptive_avg_pool2d.default
        new_args = (x[0], x[1], x[2], size, out_scale, out_zp)
    elif act is None and core.target == aten.avg_pool2d.default:
        x = _int8_tensor_qparams(core.args[0])
        if x is None:
            return False
        target = eq.avg_pool2d.default
        new_args = (x[0], x[1], x[2]) + _avg_pool2d_args(core) + (out_scale, out_zp)
    elif act is None and core.target in SOFTMAX_OPS:
        new_args = _softmax_args(core, out_scale, out_zp)
        if new_args is None:
            return False
        target = eq.softmax.default
    elif act is None and (core.target in VIEW_OPS or core.target in SELECT_OPS):
        x = _int8_tensor_qparams(core.args[0])
        if x is None or (x[1], x[2]) != (out_scale, out_zp):
            return False
        target = core.target
        new_args, kwargs = _int8_select_args(core, x[0], out_scale, out_zp)
    else:
        return False
    with graph.inserting_before(q):
        fused = graph.call_function(target, new_args, kwargs)
    fused.meta = dict(q.meta)
    if "val" not in fused.meta and "val" in y.meta:
        fused.meta["val"] = y.meta["val"]  # for shape checks of later patterns; re-export recomputes it
    q.replace_all_uses_with(fused)
    return True


# In-place ops a fused pattern can leave behind with no reader: `relu_(conv(dq(x)))` once the conv is fused.
_IN_PLACE = {aten.relu_.default, aten.hardtanh_.default, aten.add_.Tensor, aten.mul_.Tensor}


def _drop_unread_in_place(gm: torch.fx.GraphModule) -> None:
    """Removes in-place ops nothing reads, whose mutated input nothing else reads either: dead code that
    eliminate_dead_code keeps (it treats every mutation as a side effect), and with it the float ops feeding it."""
    for node in reversed(list(gm.graph.nodes)):
        if node.op != "call_function" or node.target not in _IN_PLACE or node.users:
            continue
        mutated = node.args[0]
        if isinstance(mutated, torch.fx.Node) and all(u is node for u in mutated.users):
            gm.graph.erase_node(node)


def fuse_quantized(gm: torch.fx.GraphModule) -> Tuple[torch.fx.GraphModule, int]:
    """Rewrites `gm` (from convert_pt2e) in place; returns it and how many patterns became fused ops."""
    fused = 0
    for q in [n for n in gm.graph.nodes if _call(n, Q_TENSOR)]:
        if _fuse_one(gm, q):
            fused += 1
    # The replaced quantize nodes go first: until then they still read the in-place ops they consumed.
    gm.graph.eliminate_dead_code()
    _drop_unread_in_place(gm)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm, fused
