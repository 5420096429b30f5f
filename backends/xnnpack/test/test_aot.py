"""Ember's XnnpackPartitioner and XnnpackBackend.preprocess, ahead of time only (the other tests in
backends/xnnpack/test run the programs on Ember's runner and ExecuTorch 1.5.1's runtime): the blob's framing, the graph it holds (NCHW/NHWC transposes,
weight layouts, fused clamps, arguments), weights in named data or in the blob, what is left undelegated and why,
and the memory plan's padding around XNNPACK's tensors."""

import hashlib
import json
import struct

import pytest
import torch
from torch import nn

import exir
from exir import ExecutorchBackendConfig
from exir.backend import DelegationError, DelegationSpec, PartitionResult, Partitioner
from backends.xnnpack import XnnpackPartitioner
from backends.xnnpack.graph import SCHEMA
from exir.program import XNNPACK_EXTRA_PADDING
from exir.serialize import deserialize_pte
from exir.serialize.flatc import decode
from exir.serialize.json_codec import _read_nonfinite


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        y = self.dw(y).mean((2, 3))
        return self.fc(y)


class TwoInOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 5)

    def forward(self, x, y):
        h = self.fc(x) * y
        return torch.sigmoid(h), h + 1.0


def _lower(model, inputs, partitioner=None, config=None):
    torch.manual_seed(0)
    ep = torch.export.export(model.eval(), inputs)
    partitioner = partitioner or XnnpackPartitioner()
    prog = exir.to_edge_transform_and_lower(ep, partitioner=[partitioner]).to_executorch(config)
    return deserialize_pte(prog.buffer), prog, partitioner


def _blobs(pte):
    out = []
    for d in pte.program.execution_plan[0].delegates:
        ref = d.processed
        out.append(
            pte.segment(ref.index)
            if ref.location.name == "SEGMENT"
            else bytes(pte.program.backend_delegate_data[ref.index].data)
        )
    return out


def _graph(blob):
    magic, length, fb_off, fb_size, cd_off, cd_size = struct.unpack_from("<4sHIIIQ", blob, 4)
    return json.loads(_read_nonfinite(decode(blob[fb_off : fb_off + fb_size], SCHEMA, "an XNNGraph")))


def _named(pte):
    return {n.key: pte.segment(n.segment_index) for n in pte.program.named_data or []}


def _value(graph, vid):
    return next(v["value"] for v in graph["values"] if v["value"].get("id_out", 0) == vid)


def test_blob_framing_is_executorchs():
    torch.manual_seed(0)
    pte, _, _ = _lower(Cnn(), (torch.randn(1, 3, 8, 8),))
    (blob,) = _blobs(pte)
    assert blob[:4] == b"\0\0\0\0" and blob[4:8] == b"XH00"
    length, fb_off, fb_size, cd_off, cd_size = struct.unpack_from("<HIIIQ", blob, 8)
    assert length == 30 and fb_off == 32 and cd_off % 16 == 0 and cd_off >= fb_off + fb_size
    assert blob[fb_off + 4 : fb_off + 8] == b"XN01"
    assert cd_size == 0 and cd_off + cd_size == len(blob)  # named weights: no constant data in the blob
    assert pte.program.execution_plan[0].delegates[0].id == "XnnpackBackend"


def test_convolutions_run_nhwc_between_two_transposes():
    torch.manual_seed(0)
    model = Cnn().eval()
    pte, _, _ = _lower(model, (torch.randn(1, 3, 8, 8),))
    g = _graph(_blobs(pte)[0])
    kinds = [n["node_type"] for n in g["nodes"]]
    # Input NCHW -> NHWC, convolutions (batch norm folded, ReLU fused: no Multiply, no Clamp), global pooling to
    # [1, 1, 1, 8] NHWC, its reshape to [1, 8], the fully connected layer on NCHW.
    assert kinds == [
        "StaticTranspose",
        "Conv2d",
        "DepthwiseConv2d",
        "GlobalAvgPooling2d",
        "StaticReshape",
        "FullyConnected",
    ], kinds
    assert g["nodes"][0]["node"]["perm"] == [0, 2, 3, 1]
    conv = g["nodes"][1]
    # flatc leaves out fields at their default (0).
    assert conv["output_min_max"].get("output_min", 0) == 0 and conv["output_min_max"]["output_max"] == float("inf")
    assert _value(g, conv["node"]["input1_id"])["dims"] == [1, 8, 8, 3]
    named = _named(pte)
    # The depthwise filter: PyTorch's [8, 1, 3, 3] as XNNPACK's [1, 3, 3, 8].
    dw = g["nodes"][2]["node"]
    assert (dw["groups"], dw["group_input_channels"], dw["group_output_channels"]) == (8, 1, 1)
    filt = _value(g, dw["filter_id"])
    assert filt["dims"] == [1, 3, 3, 8]
    key = g["constant_data"][filt["constant_buffer_idx"]]["named_key"]
    want = model.dw.weight.detach().permute(1, 2, 3, 0).contiguous().numpy().tobytes()
    assert named[key] == want and key == hashlib.sha256(want).hexdigest()
    # The fully connected filter is PyTorch's [out, in], not transposed.
    fc = g["nodes"][5]["node"]
    assert fc.get("flags", 0) == 0 and _value(g, fc["filter_id"])["dims"] == [4, 8]


def test_arguments_are_external_values_in_call_order():
    torch.manual_seed(0)
    pte, _, _ = _lower(TwoInOut(), (torch.randn(3, 6), torch.randn(3, 5)))
    g = _graph(_blobs(pte)[0])
    assert g["num_externs"] == 4 and len(g["input_ids"]) == 2 and len(g["output_ids"]) == 2
    for k, vid in enumerate(g["input_ids"] + g["output_ids"]):
        v = _value(g, vid)
        assert v.get("external_id", 0) == k
        assert v.get("flags", 0) == (1 if k < 2 else 2)
    # The multiply's result is both an output and the sigmoid's input.
    h = g["output_ids"][1]
    assert any(n["node_type"] == "Add" for n in g["nodes"])
    assert _value(g, g["input_ids"][1])["dims"] == [3, 5] and _value(g, h)["dims"] == [3, 5]


def test_inline_weights_stay_in_the_blob_except_run_time_operands():
    torch.manual_seed(0)
    pte, _, _ = _lower(
        TwoInOut(),
        (torch.randn(3, 6), torch.randn(3, 5)),
        XnnpackPartitioner(weights="inline"),
        ExecutorchBackendConfig(extract_delegate_segments=False),
    )
    (blob,) = _blobs(pte)
    assert pte.program.execution_plan[0].delegates[0].processed.location.name == "INLINE"
    _, _, _, cd_off, cd_size = struct.unpack_from("<HIIIQ", blob, 8)
    g = _graph(blob)
    entries = g["constant_data"][1:]
    inline = [e for e in entries if not e.get("named_key")]
    named = [e for e in entries if e.get("named_key")]
    # The linear's weight and bias in the blob; the `+ 1.0` operand, which XNNPACK reads at every run, named
    # (ExecuTorch's runtime frees the blob after init).
    assert len(inline) == 2 and len(named) == 1 and named[0]["size"] == 4
    assert all(e.get("offset", 0) % 16 == 0 and e.get("offset", 0) + e["size"] <= cd_size for e in inline)
    assert set(_named(pte)) == {named[0]["named_key"]}


class Shared(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(torch.nn.functional.gelu(self.fc(x)))


def test_a_weight_two_delegates_use_is_stored_once():
    torch.manual_seed(0)
    pte, _, p = _lower(Shared(), (torch.randn(2, 8),))
    assert len(pte.program.execution_plan[0].delegates) == 2
    assert [r[1] for r in p.rejected] == ["aten::gelu.out"]
    assert len(pte.program.named_data) == 2  # the weight and the bias, once each


class Unsupported(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x, w):
        y = self.conv(x)
        a = torch.nn.functional.conv2d(y, w, padding=1)  # weights computed at run time
        b = torch.softmax(y, 1)  # not over the last dim
        c = torch.nn.functional.avg_pool2d(y, 3, 1, 1)  # counts padding
        d = y.mean(1, keepdim=True)  # not over H and W
        e = torch.clamp(y, 1.0, -1.0)  # min > max
        f = torch.nn.functional.interpolate(y, scale_factor=1.7, mode="bilinear")  # scale not out/in exactly
        g = (y > 0).float()  # a bool tensor in between
        return a, b, c, d, e, f, g


def test_what_xnnpack_cannot_take_is_left_to_the_kernels_with_a_reason():
    torch.manual_seed(0)
    pte, _, p = _lower(Unsupported(), (torch.randn(1, 4, 6, 6), torch.randn(4, 4, 3, 3)))
    reasons = {op: why for _, op, why in p.rejected}
    assert "weight is computed at run time" in reasons["aten::convolution.out"]
    assert "last dim" in reasons["aten::_softmax.out"]
    assert "count_include_pad" in reasons["aten::avg_pool2d.out"]
    assert "only over H and W" in reasons["aten::mean.out"]
    assert "min 1.0 > max -1.0" in reasons["aten::clamp.out"]
    assert "scale factors" in reasons["aten::upsample_bilinear2d.vec_out"]
    assert "not an operator" in reasons["aten::gt.Scalar_out"]
    ops = {f"{o.name}.{o.overload}" for o in pte.program.execution_plan[0].operators}
    assert {
        "aten::convolution.out",
        "aten::_softmax.out",
        "aten::avg_pool2d.out",
        "aten::mean.out",
        "aten::clamp.out",
        "aten::upsample_bilinear2d.vec_out",
    } <= ops
    # The first convolution (constant weights) is delegated.
    assert len(pte.program.execution_plan[0].delegates) == 1


def test_preprocess_refuses_a_call_it_cannot_lower_instead_of_guessing():
    class Everything(Partitioner):
        def __init__(self):
            super().__init__(DelegationSpec("XnnpackBackend"))

        def partition(self, ep):
            for n in ep.graph_module.graph.nodes:
                if n.op == "call_function":
                    n.meta["delegation_tag"] = "all"
            return PartitionResult(ep, {"all": self.delegation_spec})

    torch.manual_seed(0)
    edge = exir.to_edge_transform_and_lower(
        torch.export.export(Shared().eval(), (torch.randn(2, 8),)), partitioner=[Everything()]
    )
    with pytest.raises(DelegationError, match=r"aten::gelu.out .* cannot be lowered: .*not an operator"):
        edge.to_executorch()


def _planned(pte):
    plan = pte.program.execution_plan[0]
    sizes = plan.non_const_buffer_sizes
    for v in plan.values:
        t = v.val
        info = getattr(t, "allocation_info", None)
        if info is None:
            continue
        nbytes = 4 * max(1, int(torch.tensor(t.sizes).prod().item()))
        yield info.memory_offset_low, nbytes, sizes[info.memory_id]


def test_every_buffer_of_a_method_with_xnnpack_has_spare_bytes_after_it():
    torch.manual_seed(0)
    pte, _, _ = _lower(TwoInOut(), (torch.randn(3, 6), torch.randn(3, 5)))
    planned = list(_planned(pte))
    assert planned and all(off + n + XNNPACK_EXTRA_PADDING <= pool for off, n, pool in planned)
    # Without an XNNPACK delegate nothing is padded: some tensor ends at the pool's end.
    from backends.ember_portable import EmberPortablePartitioner

    plain, _, _ = _lower(TwoInOut(), (torch.randn(3, 6), torch.randn(3, 5)), EmberPortablePartitioner())
    assert any(off + n + 16 > pool for off, n, pool in _planned(plain))


def test_methods_sharing_weights_share_named_data():
    torch.manual_seed(0)
    model = Shared().eval()
    programs = {
        "forward": torch.export.export(model, (torch.randn(2, 8),)),
        "batch4": torch.export.export(model, (torch.randn(4, 8),)),
    }
    prog = exir.to_edge_transform_and_lower(programs, partitioner=[XnnpackPartitioner()]).to_executorch()
    pte = deserialize_pte(prog.buffer)
    assert sorted(p.name for p in pte.program.execution_plan) == ["batch4", "forward"]
    assert sum(len(p.delegates) for p in pte.program.execution_plan) == 4
    assert len(pte.program.named_data) == 2
    assert len({n.segment_index for n in pte.program.named_data}) == 2
