"""Which lowered calls XNNPACK takes, and the XNNGraph nodes each becomes.

One table (OPS) answers both questions, so the partitioner tags exactly what preprocess can write: each entry has a
`check` (raises Unsupported with the reason) and a `lower` (appends nodes to the graph). The set is what Debian's
2022 XNNPACK runs and ExecuTorch 1.5.1's runtime reads, in float32:

  convolution (2-d, constant weights; depthwise when each group has one input channel; transposed too),
  addmm / mm with a constant matrix (fully connected), add / sub (alpha 1) / mul / div / maximum / minimum with
  tensors or numbers, relu / hardtanh / clamp (fused into the convolution, fully connected, add, sub or mul before
  them where nothing else reads that result), sigmoid, hardswish (also PyTorch's decomposition of it), silu (as
  sigmoid and multiply), softmax over the last dim, avg and max pooling (ceil mode through padding, as ExecuTorch
  does), mean over H and W and adaptive average pooling to 1x1 (global average pooling), inference batch norm
  (folded into the convolution before it, else a multiply and an add), view / squeeze / unsqueeze (static
  reshape), clone (nothing, or a copy), constant_pad_nd, upsample_bilinear2d.

Layout: XNNPACK's convolutions and pooling are NHWC, PyTorch's tensors NCHW. As in ExecuTorch, a 4-d tensor is
produced in the layout of the node writing it and converted (a StaticTranspose, perm [0, 2, 3, 1] or [0, 3, 1, 2])
only where a reader needs the other one: convolution, pooling and resize read NHWC; fully connected, softmax and
reshapes read NCHW; element-wise ops, clamps and pads follow their input. The delegate's own inputs and outputs are
always NCHW (contiguous), so a CNN's delegate starts with one transpose to NHWC and ends with one back.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from backends.xnnpack.graph import FLAG_ALIGN_CORNERS, FLAG_KEEP_DIMS, MAX_DIMS, NO_ID, XnnGraph
from exir.lowering.ir import Call, MethodGraph, Role, TensorValue

aten = torch.ops.aten
NCHW, NHWC = "NCHW", "NHWC"
TO_NHWC = (0, 2, 3, 1)
TO_NCHW = (0, 3, 1, 2)
INF = math.inf

# Node kinds that apply a clamp to their output (output_min_max) in both the 2022 library and ExecuTorch's runtime.
TAKES_CLAMP = {"Conv2d", "DepthwiseConv2d", "ConvTranspose2d", "FullyConnected", "Add", "Subtract", "Multiply", "Clamp"}


class Unsupported(Exception):
    """A call XNNPACK does not take; the message says why."""


def _is_tensor(x: Any) -> bool:
    return isinstance(x, TensorValue)


def _is_const(x: Any) -> bool:
    return isinstance(x, TensorValue) and x.role is Role.CONSTANT


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _numel(t: TensorValue) -> int:
    return math.prod(t.shape)


def _pair(v: Any, what: str) -> Tuple[int, int]:
    v = [int(x) for x in v] if isinstance(v, (list, tuple)) else [int(v)]
    if len(v) == 1:
        v = v * 2
    if len(v) != 2:
        raise Unsupported(f"{what} {v}: only 2-d")
    return v[0], v[1]


def _require(ok: bool, why: str) -> None:
    if not ok:
        raise Unsupported(why)


class Context:
    """What a check needs beyond its call: the tensors something reads or returns (an unused max-pool index output
    or batch-norm statistic may be dropped)."""

    def __init__(self, calls: List[Call], outputs: List[Any]):
        self.used = {id(t) for c in calls for t in c.input_tensors()}
        self.used |= {id(o) for o in outputs if _is_tensor(o)}


# --- common checks ---------------------------------------------------------------------------------------------


def _check_tensors(call: Call, skip_outs: Tuple[int, ...] = ()) -> None:
    for t in call.tensor_args():
        if any(t is call.outs[i] for i in skip_outs if i < len(call.outs)):
            continue
        _require(t.dtype == torch.float32, f"{t.name} is {str(t.dtype).replace('torch.', '')}; float32 only")
        _require(not t.dynamic, f"{t.name} has a dynamic shape; static shapes only")
        _require(len(t.shape) <= MAX_DIMS, f"{t.name} has {len(t.shape)} dims; XNNPACK takes at most {MAX_DIMS}")
        _require(_numel(t) > 0, f"{t.name} is empty")
        _require(t.alias_of is None, f"{t.name} is a view of another tensor")
        if not _is_const(t):
            _require(
                tuple(t.dim_order) == tuple(range(len(t.shape))),
                f"{t.name} has dim order {tuple(t.dim_order)}; contiguous tensors only",
            )


def _unused(ctx: Context, call: Call, indices: Tuple[int, ...], what: str) -> None:
    for i in indices:
        if i < len(call.outs):
            _require(id(call.outs[i]) not in ctx.used, f"its {what} output is used; XNNPACK does not compute it")


# --- the lowering state ----------------------------------------------------------------------------------------


class Lowering:
    """One partition being written into an XnnGraph: which value holds each tensor, in which layout."""

    def __init__(self, sub: MethodGraph, graph: XnnGraph):
        self.g = graph
        self.sub = sub
        self.vals: Dict[int, Dict[str, int]] = {}  # id(tensor) -> layout -> value id
        self.native: Dict[int, str] = {}  # id(tensor) -> the layout its producer wrote
        self.consts: Dict[tuple, int] = {}
        self.readers = Counter(id(t) for c in sub.calls for t in c.input_tensors())
        self.outputs = {id(o) for o in sub.outputs if _is_tensor(o)}
        self.external_inputs = set()
        self.shared = set()  # value ids that hold two tensors (a clone's): never clamped in place
        self.debug_handle = 0

    # values

    def layout(self, t: TensorValue) -> str:
        return NCHW if _is_const(t) else self.native[id(t)]

    def value(self, t: TensorValue, layout: str) -> int:
        """The value holding `t` in `layout`, adding a transpose the first time a 4-d tensor is wanted in the other
        layout."""
        if _is_const(t):
            return self.constant(t, layout)
        have = self.vals[id(t)]
        if layout in have:
            return have[layout]
        if len(t.shape) != 4:
            raise Unsupported(f"{t.name} ({list(t.shape)}) is wanted in {layout}; only 4-d tensors change layout")
        src = have[self.native[id(t)]]
        perm = TO_NHWC if layout == NHWC else TO_NCHW
        dims = [self.g.dims(src)[p] for p in perm]
        vid = self.g.tensor(dims)
        self.g.node(
            "StaticTranspose",
            {"num_dims": 4, "perm": list(perm), "input_id": src, "output_id": vid, "flags": 0},
            debug_handle=self.debug_handle,
        )
        have[layout] = vid
        return vid

    def constant(self, t: Any, layout: str = NCHW, rank: Optional[int] = None) -> int:
        """A constant value for tensor constant `t` or Python number `t`. In NHWC, brought to 4-d first (leading
        size-1 dims, as broadcasting would) and permuted; `rank` pads to that many dims in NCHW (batch norm)."""
        if _is_const(t):
            key, data = (id(t), layout, rank), t.data
        else:
            key, data = ("number", float(t), layout, rank), torch.tensor([float(t)])
        if key in self.consts:
            return self.consts[key]
        data = data.detach().to(torch.float32)
        if layout == NHWC and data.numel() > 1:
            if data.dim() > 4:
                raise Unsupported(f"a {data.dim()}-d constant cannot be read in NHWC")
            data = data.reshape([1] * (4 - data.dim()) + list(data.shape)).permute(TO_NHWC).contiguous()
        elif rank is not None and data.dim() < rank:
            data = data.reshape([1] * (rank - data.dim()) + list(data.shape))
        vid = self.g.tensor(list(data.shape), data.contiguous())
        self.consts[key] = vid
        return vid

    def define(self, t: TensorValue, layout: str) -> int:
        """A new value for `t`, written by the node about to be added, in `layout`."""
        dims = list(t.shape)
        if layout == NHWC:
            dims = [dims[p] for p in TO_NHWC]
        vid = self.g.tensor(dims)
        self.vals[id(t)] = {layout: vid}
        self.native[id(t)] = layout
        return vid

    def alias(self, t: TensorValue, like: TensorValue, shared: bool = True) -> None:
        """`t` is held by the values that hold `like`: a clone (`shared`: both stay readable), or a clamp fused into
        `like`'s producer (`like` is read no more)."""
        self.vals[id(t)] = self.vals[id(like)]
        self.native[id(t)] = self.native[id(like)]
        if shared:
            self.shared.update(self.vals[id(t)].values())

    def node(self, kind: str, table: dict, bounds: Optional[tuple] = None) -> int:
        return self.g.node(kind, table, bounds, debug_handle=self.debug_handle)

    def only_reader(self, t: TensorValue) -> bool:
        """Whether this call is the only use of `t` inside the partition and nothing outside reads it."""
        return (
            not _is_const(t)
            and id(t) not in self.outputs
            and id(t) not in self.external_inputs
            and self.readers[id(t)] == 1
            and len(self.vals[id(t)]) == 1
            and not set(self.vals[id(t)].values()) & self.shared
        )


# --- convolution -----------------------------------------------------------------------------------------------


def _check_conv(call: Call, ctx: Context) -> None:
    x, w, b, stride, padding, dilation, transposed, output_padding, groups = call.args[:9]
    _require(len(x.shape) == 4, f"a {len(x.shape) - 2}-d convolution; XNNPACK takes 2-d ones")
    _require(_is_const(w), "its weight is computed at run time; XNNPACK packs weights at load")
    _require(b is None or _is_const(b), "its bias is computed at run time; XNNPACK packs biases at load")
    _pair(stride, "stride")
    _require(min(_pair(padding, "padding")) >= 0, "negative padding")
    _pair(dilation, "dilation")
    if transposed:
        oph, opw = _pair(output_padding, "output_padding")
        _require(oph >= 0 and opw >= 0, "negative output padding")


def _lower_conv(call: Call, L: Lowering) -> None:
    x, w, b, stride, padding, dilation, transposed, output_padding, groups = call.args[:9]
    out = call.outs[0]
    sh, sw = _pair(stride, "stride")
    ph, pw = _pair(padding, "padding")
    dh, dw = _pair(dilation, "dilation")
    kh, kw = w.shape[2], w.shape[3]
    weight = w.data.detach().to(torch.float32)
    table = {
        "padding_top": ph,
        "padding_right": pw,
        "padding_bottom": ph,
        "padding_left": pw,
        "kernel_height": kh,
        "kernel_width": kw,
        "subsampling_height": sh,
        "subsampling_width": sw,
        "dilation_height": dh,
        "dilation_width": dw,
        "groups": groups,
        "adjustment_height": 0,
        "adjustment_width": 0,
        "flags": 0,
    }
    if transposed:
        # PyTorch [Cin, Cout/g, kh, kw] -> XNNPACK [Cout, kh, kw, Cin/g], group by group.
        cin, cout_g = weight.shape[0], weight.shape[1]
        filt = weight.reshape(groups, cin // groups, cout_g, kh, kw).permute(0, 2, 3, 4, 1)
        filt = filt.reshape(groups * cout_g, kh, kw, cin // groups)
        oph, opw = _pair(output_padding, "output_padding")
        table.update(
            group_input_channels=cin // groups,
            group_output_channels=cout_g,
            adjustment_height=oph,
            adjustment_width=opw,
        )
        kind = "ConvTranspose2d"
    elif weight.shape[1] == 1:
        # Depthwise (one input channel per group): [Cout, 1, kh, kw] -> [1, kh, kw, Cout]; ExecuTorch's fields:
        # groups = input channels, group_input_channels 1, group_output_channels = the depth multiplier.
        filt = weight.permute(1, 2, 3, 0)
        table.update(group_input_channels=1, group_output_channels=weight.shape[0] // groups)
        kind = "DepthwiseConv2d"
    else:
        filt = weight.permute(0, 2, 3, 1)  # [Cout, Cin/g, kh, kw] -> [Cout, kh, kw, Cin/g]
        table.update(group_input_channels=weight.shape[1], group_output_channels=weight.shape[0] // groups)
        kind = "Conv2d"
    filt = filt.contiguous()
    table["input1_id"] = L.value(x, NHWC)
    table["filter_id"] = L.g.tensor(list(filt.shape), filt, packed=True)
    table["bias_id"] = NO_ID if b is None else L.g.tensor([_numel(b)], b.data, packed=True)
    table["output_id"] = L.define(out, NHWC)
    L.node(kind, table)


# --- fully connected -------------------------------------------------------------------------------------------


def _check_addmm(call: Call, ctx: Context) -> None:
    bias, x, w, beta, alpha = call.args[:5]
    _require(_is_const(w), "its matrix is computed at run time; XNNPACK packs fully-connected weights at load")
    _require(_is_const(bias), "its bias is computed at run time")
    _require(
        _numel(bias) == w.shape[1] and (len(bias.shape) == 1 or bias.shape[-1] == w.shape[1]),
        f"bias {list(bias.shape)} is not one value per output ({w.shape[1]})",
    )
    _require(beta == 1 and alpha == 1, f"beta {beta}, alpha {alpha}: only 1")
    _require(not _is_const(x), "both operands are constant")


def _check_mm(call: Call, ctx: Context) -> None:
    x, w = call.args[:2]
    _require(_is_const(w), "its second operand is computed at run time; XNNPACK packs fully-connected weights at load")
    _require(not _is_const(x), "both operands are constant")


def _lower_fc(x: TensorValue, w: TensorValue, bias: Optional[TensorValue], out: TensorValue, L: Lowering) -> None:
    filt = w.data.detach().to(torch.float32).t().contiguous()  # [in, out] -> XNNPACK's [out, in]
    L.node(
        "FullyConnected",
        {
            "input1_id": L.value(x, NCHW),
            "filter_id": L.g.tensor(list(filt.shape), filt, packed=True),
            "bias_id": NO_ID if bias is None else L.g.tensor([_numel(bias)], bias.data, packed=True),
            "output_id": L.define(out, NCHW),
            "flags": 0,
        },
    )


def _lower_addmm(call: Call, L: Lowering) -> None:
    bias, x, w = call.args[:3]
    _lower_fc(x, w, bias, call.outs[0], L)


def _lower_mm(call: Call, L: Lowering) -> None:
    x, w = call.args[:2]
    _lower_fc(x, w, None, call.outs[0], L)


# --- element-wise ----------------------------------------------------------------------------------------------

BINARY = {
    aten.add.out: "Add",
    aten.add.Scalar_out: "Add",
    aten.sub.out: "Subtract",
    aten.sub.Scalar_out: "Subtract",
    aten.mul.out: "Multiply",
    aten.mul.Scalar_out: "Multiply",
    aten.div.out: "Div",
    aten.div.Scalar_out: "Div",
    aten.maximum.out: "Maximum",
    aten.minimum.out: "Minimum",
}
_WITH_ALPHA = {aten.add.out, aten.add.Scalar_out, aten.sub.out, aten.sub.Scalar_out}


def _check_binary(call: Call, ctx: Context) -> None:
    a, b = call.args[0], call.args[1]
    if call.op in _WITH_ALPHA:
        _require(call.args[2] == 1, f"alpha {call.args[2]}: only 1")
    for x in (a, b):
        _require(_is_tensor(x) or _is_number(x), f"operand {x!r} is neither a tensor nor a finite number")
    _require(any(_is_tensor(x) and not _is_const(x) for x in (a, b)), "both operands are constant")


def _lower_binary(call: Call, L: Lowering) -> None:
    a, b, out = call.args[0], call.args[1], call.outs[0]
    live = [x for x in (a, b) if _is_tensor(x) and not _is_const(x)]
    nhwc = (
        len(out.shape) == 4
        and any(L.layout(x) == NHWC for x in live)
        and all(len(x.shape) == 4 or _numel(x) == 1 for x in live)
    )
    layout = NHWC if nhwc else NCHW

    def operand(x):
        if not _is_tensor(x) or _is_const(x):
            return L.constant(x, layout)
        if layout == NHWC and len(x.shape) != 4:  # one element: any layout has the same byte
            return L.value(x, L.layout(x))
        return L.value(x, layout)

    ids = [operand(a), operand(b)]
    L.node(BINARY[call.op], {"input1_id": ids[0], "input2_id": ids[1], "output_id": L.define(out, layout), "flags": 0})


def clamp_bounds(call: Call) -> Optional[Tuple[float, float]]:
    if call.op == aten.relu.out:
        return 0.0, INF
    if call.op == aten.hardtanh.out:
        lo, hi = call.args[1], call.args[2]
        return (float(lo), float(hi)) if _is_number(lo) and _is_number(hi) else None
    if call.op == aten.clamp.out:
        lo, hi = call.args[1], call.args[2]
        if (lo is None and hi is None) or not all(v is None or _is_number(v) for v in (lo, hi)):
            return None
        return (-INF if lo is None else float(lo)), (INF if hi is None else float(hi))
    return None


def _check_clamp(call: Call, ctx: Context) -> None:
    bounds = clamp_bounds(call)
    _require(bounds is not None, "its bounds are not numbers")
    _require(bounds[0] <= bounds[1], f"min {bounds[0]} > max {bounds[1]}")


def _lower_clamp(call: Call, L: Lowering) -> None:
    x, out = call.args[0], call.outs[0]
    lo, hi = clamp_bounds(call)
    layout = L.layout(x)
    vid = L.value(x, layout)
    n = L.g.producer.get(vid)
    if n is not None and L.only_reader(x) and L.g.nodes[n]["node_type"] in TAKES_CLAMP:
        # Fused: the producer clamps its own output (ExecuTorch's output_min_max), one pass less.
        node = L.g.nodes[n]
        old = node.get("output_min_max")
        olo, ohi = (old["output_min"], old["output_max"]) if old else (-INF, INF)
        nlo, nhi = max(olo, lo), min(ohi, hi)
        if nlo <= nhi:
            node["output_min_max"] = {"output_min": float(nlo), "output_max": float(nhi)}
            L.alias(out, x, shared=False)
            return
    L.node("Clamp", {"input_id": vid, "output_id": L.define(out, layout), "flags": 0}, bounds=(lo, hi))


UNARY = {aten.sigmoid.out: "Sigmoid", aten.hardswish.out: "Hardswish"}


def _lower_unary(call: Call, L: Lowering) -> None:
    x, out = call.args[0], call.outs[0]
    layout = L.layout(x)
    L.node(UNARY[call.op], {"input_id": L.value(x, layout), "output_id": L.define(out, layout), "flags": 0})


def _lower_silu(call: Call, L: Lowering) -> None:
    x, out = call.args[0], call.outs[0]
    layout = L.layout(x)
    xv = L.value(x, layout)
    s = L.g.tensor(L.g.dims(xv))
    L.node("Sigmoid", {"input_id": xv, "output_id": s, "flags": 0})
    L.node("Multiply", {"input1_id": xv, "input2_id": s, "output_id": L.define(out, layout), "flags": 0})


def _check_softmax(call: Call, ctx: Context) -> None:
    x, dim, half_to_float = call.args[:3]
    _require(dim % max(1, len(x.shape)) == len(x.shape) - 1, f"dim {dim}: XNNPACK's softmax is over the last dim")
    _require(not half_to_float, "half_to_float")


def _lower_softmax(call: Call, L: Lowering) -> None:
    x, out = call.args[0], call.outs[0]
    L.node("Softmax", {"input_id": L.value(x, NCHW), "output_id": L.define(out, NCHW), "flags": 0})


# --- batch norm ------------------------------------------------------------------------------------------------


def _check_batch_norm(call: Call, ctx: Context) -> None:
    x, w, b, mean, var = call.args[:5]
    _require(len(x.shape) >= 2, "a batch norm of a 1-d tensor")
    _require(
        all(t is None or _is_const(t) for t in (w, b)) and _is_const(mean) and _is_const(var),
        "its statistics or affine parameters are computed at run time",
    )
    _unused(ctx, call, (1, 2), "saved statistics")


def _lower_batch_norm(call: Call, L: Lowering) -> None:
    # Not after a convolution it could be folded into (exir.lowering.fuse_batch_norm ran first): y = x * s + t.
    x, w, b, mean, var, _momentum, eps = call.args[:7]
    out = call.outs[0]
    c = x.shape[1]
    with torch.no_grad():
        g = w.data.double() if w is not None else torch.ones(c, dtype=torch.float64)
        beta = b.data.double() if b is not None else torch.zeros(c, dtype=torch.float64)
        s = g / torch.sqrt(var.data.double() + eps)
        t = beta - mean.data.double() * s
    layout = L.layout(x)
    shape = [c] if layout == NHWC else [c] + [1] * (len(x.shape) - 2)
    xv = L.value(x, layout)
    sv = L.g.tensor(shape, s.float().reshape(shape))
    tv = L.g.tensor(shape, t.float().reshape(shape))
    mid = L.g.tensor(L.g.dims(xv))
    L.node("Multiply", {"input1_id": xv, "input2_id": sv, "output_id": mid, "flags": 0})
    L.node("Add", {"input1_id": mid, "input2_id": tv, "output_id": L.define(out, layout), "flags": 0})


# --- shapes ----------------------------------------------------------------------------------------------------

RESHAPES = {
    aten.view_copy.out,
    aten.squeeze_copy.out,
    aten.squeeze_copy.dim_out,
    aten.squeeze_copy.dims_out,
    aten.unsqueeze_copy.out,
    aten.alias_copy.out,
    aten._unsafe_view.out,
}


def _lower_reshape(call: Call, L: Lowering) -> None:
    x, out = call.args[0], call.outs[0]
    shape = list(out.shape) or [1]
    L.node(
        "StaticReshape",
        {
            "num_dims": len(shape),
            "new_shape": shape,
            "input_id": L.value(x, NCHW),
            "output_id": L.define(out, NCHW),
            "flags": 0,
        },
    )


def _check_clone(call: Call, ctx: Context) -> None:
    fmt = call.args[1] if len(call.args) > 2 else None
    _require(fmt in (None, torch.preserve_format, torch.contiguous_format), f"memory format {fmt}")
    _require(not _is_const(call.args[0]), "a copy of a constant")


def _lower_clone(call: Call, L: Lowering) -> None:
    x, out = call.args[0], call.outs[-1]
    if id(out) not in L.outputs:
        L.alias(out, x)  # the same bytes: no node at all
        return
    layout = L.layout(x)
    L.node("Copy", {"input_id": L.value(x, layout), "output_id": L.define(out, layout), "flags": 0})


def _check_pad(call: Call, ctx: Context) -> None:
    x, pad, value = call.args[:3]
    _require(len(pad) % 2 == 0 and len(pad) <= 2 * len(x.shape), f"padding {list(pad)}")
    _require(all(int(p) >= 0 for p in pad), f"negative padding {list(pad)} (a crop)")
    _require(_is_number(value), f"padding value {value!r}")


def _lower_pad(call: Call, L: Lowering) -> None:
    x, pad, value = call.args[:3]
    out = call.outs[0]
    rank = len(x.shape)
    pre, post = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):  # PyTorch lists the last dim first
        pre[rank - 1 - i], post[rank - 1 - i] = int(pad[2 * i]), int(pad[2 * i + 1])
    layout = L.layout(x)
    if layout == NHWC:
        pre, post = [pre[p] for p in TO_NHWC], [post[p] for p in TO_NHWC]
    L.node(
        "StaticConstantPad",
        {
            "pre_paddings": pre,
            "post_paddings": post,
            "padding_value": float(value),
            "input_id": L.value(x, layout),
            "output_id": L.define(out, layout),
            "flags": 0,
        },
    )


# --- pooling and resizing --------------------------------------------------------------------------------------


def _window(size: int, k: int, s: int, p: int, d: int, ceil: bool) -> int:
    span = size + 2 * p - d * (k - 1) - 1
    if span < 0:
        return 0
    o = (span + (s - 1 if ceil else 0)) // s + 1
    if ceil and (o - 1) * s >= size + p:  # PyTorch: the last window must start inside the input or left padding
        o -= 1
    return o


def _pool_geometry(call: Call, max_pool: bool):
    kh, kw = _pair(call.args[1], "kernel_size")
    stride = call.args[2]
    sh, sw = _pair(stride, "stride") if stride else (kh, kw)
    ph, pw = _pair(call.args[3], "padding")
    if max_pool:
        dh, dw = _pair(call.args[4], "dilation")
        ceil = bool(call.args[5])
    else:
        dh = dw = 1
        ceil = bool(call.args[4])
    return kh, kw, sh, sw, ph, pw, dh, dw, ceil


def _check_pool(call: Call, ctx: Context, max_pool: bool) -> None:
    x, out = call.args[0], call.outs[0]
    _require(len(x.shape) == 4, f"{len(x.shape)}-d pooling; 4-d only")
    kh, kw, sh, sw, ph, pw, dh, dw, ceil = _pool_geometry(call, max_pool)
    _require(kh * kw > 1, "a 1x1 window")
    _require(sh <= kh and sw <= kw, f"stride {sh}x{sw} larger than the {kh}x{kw} window")
    oh = _window(x.shape[2], kh, sh, ph, dh, ceil)
    ow = _window(x.shape[3], kw, sw, pw, dw, ceil)
    _require((oh, ow) == tuple(out.shape[2:]), f"output {list(out.shape)} does not match the window")
    if max_pool:
        _unused(ctx, call, (1,), "index")
    else:
        count_include_pad, divisor = call.args[5], call.args[6]
        _require(
            not ceil
            or (oh, ow) == (_window(x.shape[2], kh, sh, ph, 1, False), _window(x.shape[3], kw, sw, pw, 1, False)),
            "ceil mode adds a partial window; XNNPACK's average pooling has no ceil mode",
        )
        _require(
            not (count_include_pad and (ph or pw)),
            "count_include_pad with padding (XNNPACK averages over the input only)",
        )
        _require(divisor in (None, kh * kw), f"divisor_override {divisor}")


def _lower_pool(call: Call, L: Lowering, max_pool: bool) -> None:
    x, out = call.args[0], call.outs[0]
    kh, kw, sh, sw, ph, pw, dh, dw, ceil = _pool_geometry(call, max_pool)
    # Ceil mode: the partial last window, as extra padding after the input (ExecuTorch's way).
    extra_h = max(0, (out.shape[2] - 1) * sh + dh * (kh - 1) + 1 - (x.shape[2] + 2 * ph))
    extra_w = max(0, (out.shape[3] - 1) * sw + dw * (kw - 1) + 1 - (x.shape[3] + 2 * pw))
    table = {
        "padding_top": ph,
        "padding_right": pw + extra_w,
        "padding_bottom": ph + extra_h,
        "padding_left": pw,
        "pooling_height": kh,
        "pooling_width": kw,
        "stride_height": sh,
        "stride_width": sw,
        "dilation_height": dh if max_pool else 0,
        "dilation_width": dw if max_pool else 0,
        "input_id": L.value(x, NHWC),
        "output_id": L.define(out, NHWC),
        "flags": FLAG_KEEP_DIMS,
    }
    L.node("MaxPooling2d" if max_pool else "AvgPooling2d", table)


def _check_mean(call: Call, ctx: Context) -> None:
    x, dims, keepdim, dtype = call.args[:4]
    _require(len(x.shape) == 4, "a mean of a non-4-d tensor")
    _require(
        dims is not None and sorted(int(d) % 4 for d in dims) == [2, 3],
        f"a mean over dims {dims}; only over H and W (global pooling)",
    )
    _require(dtype is None, f"dtype {dtype}")


def _check_adaptive(call: Call, ctx: Context) -> None:
    x, size = call.args[:2]
    _require(len(x.shape) == 4 and [int(s) for s in size] == [1, 1], f"adaptive pooling to {list(size)}; only to 1x1")


def _lower_global_pool(call: Call, L: Lowering) -> None:
    x, out = call.args[0], call.outs[0]
    n, c = x.shape[0], x.shape[1]
    if len(out.shape) == 4:
        L.node(
            "GlobalAvgPooling2d",
            {"input_id": L.value(x, NHWC), "output_id": L.define(out, NHWC), "flags": FLAG_KEEP_DIMS},
        )
        return
    # keepdim=False: pooled to [N, 1, 1, C], then the same bytes as [N, C].
    pooled = L.g.tensor([n, 1, 1, c])
    L.node("GlobalAvgPooling2d", {"input_id": L.value(x, NHWC), "output_id": pooled, "flags": FLAG_KEEP_DIMS})
    L.node(
        "StaticReshape",
        {"num_dims": 2, "new_shape": [n, c], "input_id": pooled, "output_id": L.define(out, NCHW), "flags": 0},
    )


def _check_upsample(call: Call, ctx: Context) -> None:
    x, out = call.args[0], call.outs[0]
    _require(len(x.shape) == 4, "a non-4-d resize")
    if call.op == aten.upsample_bilinear2d.vec_out:
        scales = call.args[3]
    else:
        scales = [s for s in call.args[3:5]] if any(s is not None for s in call.args[3:5]) else None
    if scales:
        # PyTorch maps coordinates with 1/scale when a scale is given, XNNPACK with in/out: equal only when the
        # scale is exactly out/in.
        _require(
            all(s is not None and x.shape[2 + i] * float(s) == out.shape[2 + i] for i, s in enumerate(scales)),
            f"scale factors {list(scales)} that are not output/input exactly",
        )


def _lower_upsample(call: Call, L: Lowering) -> None:
    x, out = call.args[0], call.outs[0]
    align = bool(call.args[2])
    L.node(
        "StaticResizeBilinear2D",
        {
            "new_height": out.shape[2],
            "new_width": out.shape[3],
            "input_id": L.value(x, NHWC),
            "output_id": L.define(out, NHWC),
            "flags": FLAG_ALIGN_CORNERS if align else 0,
        },
    )


# --- the table -------------------------------------------------------------------------------------------------


def _no_check(call: Call, ctx: Context) -> None:
    return None


OPS: Dict[Any, Tuple[Callable, Callable]] = {
    aten.convolution.out: (_check_conv, _lower_conv),
    aten.addmm.out: (_check_addmm, _lower_addmm),
    aten.mm.out: (_check_mm, _lower_mm),
    aten.relu.out: (_check_clamp, _lower_clamp),
    aten.hardtanh.out: (_check_clamp, _lower_clamp),
    aten.clamp.out: (_check_clamp, _lower_clamp),
    aten.sigmoid.out: (_no_check, _lower_unary),
    aten.hardswish.out: (_no_check, _lower_unary),
    aten.silu.out: (_no_check, _lower_silu),
    aten._softmax.out: (_check_softmax, _lower_softmax),
    aten._native_batch_norm_legit_no_training.out: (_check_batch_norm, _lower_batch_norm),
    aten.clone.out: (_check_clone, _lower_clone),
    aten.constant_pad_nd.out: (_check_pad, _lower_pad),
    aten.avg_pool2d.out: (lambda c, x: _check_pool(c, x, False), lambda c, L: _lower_pool(c, L, False)),
    aten.max_pool2d_with_indices.out: (lambda c, x: _check_pool(c, x, True), lambda c, L: _lower_pool(c, L, True)),
    aten.mean.out: (_check_mean, _lower_global_pool),
    aten._adaptive_avg_pool2d.out: (_check_adaptive, _lower_global_pool),
    aten.upsample_bilinear2d.vec_out: (_check_upsample, _lower_upsample),
    aten.upsample_bilinear2d.out: (_check_upsample, _lower_upsample),
}
OPS.update({op: (_check_binary, _lower_binary) for op in BINARY})
OPS.update({op: (_no_check, _lower_reshape) for op in RESHAPES})

# Outputs a call may leave uncomputed when nothing uses them (checked by the call's own check).
_SKIPPED_OUTS = {aten.max_pool2d_with_indices.out: (1,), aten._native_batch_norm_legit_no_training.out: (1, 2)}

# Calls that move no data: a partition of nothing else is not worth a delegate call.
TRIVIAL = RESHAPES | {aten.clone.out}


def why_not(call: Call, ctx: Context) -> Optional[str]:
    """None when XNNPACK takes `call`, else the reason it does not."""
    if call.op is None or call.result is not None or call.pinned:
        return "not an operator call"
    entry = OPS.get(call.op)
    if entry is None:
        return f"{call.op_name} is not an operator the 2022 XNNPACK runs"
    try:
        _check_tensors(call, _SKIPPED_OUTS.get(call.op, ()))
        _require(
            any(not _is_const(t) for t in call.input_tensors()),
            "every input is a constant (constant folding keeps such calls out of the program)",
        )
        entry[0](call, ctx)
    except Unsupported as e:
        return str(e)
    except (TypeError, ValueError, IndexError, AttributeError) as e:  # an argument of a shape we do not read
        return f"arguments not understood ({e})"
    return None


def lower_call(call: Call, L: Lowering) -> None:
    OPS[call.op][1](call, L)
