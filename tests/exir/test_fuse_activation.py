"""The opt-in convolution + activation fusion (ExecutorchBackendConfig.fuse_activations): which pairs it fuses,
which it leaves alone, and that fused programs, run over their planned arena by the reference interpreter,
compute what eager computes."""

import math

import pytest
import torch
import torch.nn.functional as F

import exir
from exir.lowering.convolution_clamp import convolution_clamp_out
from exir.lowering.convolution_general import convolution_general_out
from exir.lowering.convolution_silu import convolution_silu_out
from exir.lowering.fuse_activation import fuse_activations
from exir.lowering.interpreter import Interpreter
from exir.lowering.lifetimes import lifetimes
from exir.serialize import deserialize_pte

aten = torch.ops.aten
FUSED = exir.ExecutorchBackendConfig(fuse_activations=True)


class ConvThen(torch.nn.Module):
    """A 3x3 convolution, then `act` on its output; `act` may also return the convolution's output again."""

    def __init__(self, act, c_in=3, c_out=8, dtype=torch.float32, transposed=False):
        super().__init__()
        conv = torch.nn.ConvTranspose2d if transposed else torch.nn.Conv2d
        self.conv = conv(c_in, c_out, 3, padding=1).to(dtype)
        self.act = act

    def forward(self, x):
        return self.act(self.conv(x))


def _export(module, x, config=None):
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():  # weights large enough that every bound below really clips something
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype))
    return exir.to_edge(torch.export.export(module.eval(), (x,))).to_executorch(config)


def _ops(prog):
    return [c.op for c in prog.method_graphs["forward"].calls]


def _x(dtype=torch.float32):
    return torch.randn(1, 3, 10, 12, generator=torch.Generator().manual_seed(1)).to(dtype)


def _check_against_eager(prog, module, x):
    report = prog.reports["forward"]
    pools = {p.mem_id: p.planned_bytes for p in report.pools}
    got = Interpreter(prog.method_graphs["forward"], prog.plan_offsets["forward"], pools).run([x])
    want = module(x)
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, atol=1e-5 * max(1.0, b.abs().max().item()), rtol=1e-5)


@pytest.mark.parametrize(
    "act,bounds",
    [
        (F.relu, (0.0, math.inf)),
        (F.relu6, (0.0, 6.0)),
        (lambda y: F.hardtanh(y, -0.5, 2.0), (-0.5, 2.0)),
        (lambda y: torch.clamp(y, -1, 1), (-1.0, 1.0)),
        (lambda y: torch.clamp(y, min=0.25), (0.25, math.inf)),
        (lambda y: torch.clamp(y, max=3.0), (-math.inf, 3.0)),
    ],
    ids=["relu", "relu6", "hardtanh", "clamp", "clamp_min", "clamp_max"],
)
def test_conv_and_activation_become_one_call(act, bounds):
    module, x = ConvThen(act), _x()
    plain, fused = _export(module, x), _export(module, x, FUSED)
    assert len(_ops(plain)) == 2
    assert _ops(fused) == [convolution_clamp_out]
    call = fused.method_graphs["forward"].calls[0]
    conv = plain.method_graphs["forward"].calls[0]
    # aten::convolution's arguments, then the bounds, then the activation's output.
    assert call.args[3:9] == conv.args[3:9] and tuple(call.args[9:11]) == bounds
    assert call.outs == [call.args[11]] and call.outs[0] is fused.method_graphs["forward"].outputs[0]
    assert fused.reports["forward"].fused_activations == 1
    assert fused.reports["forward"].num_instructions == plain.reports["forward"].num_instructions - 1
    assert "1 convolution + activation pairs fused" in fused.memory_report()
    # The operator and its bounds (inf included) survive serialization.
    assert deserialize_pte(fused.buffer).program.execution_plan == fused.program.execution_plan
    _check_against_eager(fused, module, x)


def test_intermediate_is_not_planned():
    module, x = ConvThen(F.relu6), _x()
    plain, fused = _export(module, x), _export(module, x, FUSED)
    conv_out = plain.method_graphs["forward"].calls[0].outs[0]
    roots = [lt.root for lt in lifetimes(fused.method_graphs["forward"])]
    # Input and the fused output only: the convolution's own result no longer exists.
    assert len(roots) == 2 and all(r.name != conv_out.name for r in roots)
    assert len(fused.plan_offsets["forward"]) == 2
    assert fused.reports["forward"].pools[0].planned_bytes < plain.reports["forward"].pools[0].planned_bytes


def test_default_config_does_not_fuse():
    module, x = ConvThen(F.relu6), _x()
    prog = _export(module, x)
    assert _ops(prog) == [aten.convolution.out, aten.hardtanh.out]
    assert prog.reports["forward"].fused_activations == 0
    assert "ember::" not in str(prog.program.execution_plan[0].operators)


@pytest.mark.parametrize(
    "act",
    [
        lambda y: F.relu(y) + y,  # a second reader
        lambda y: (F.relu(y), y),  # the convolution's output is also a graph output
    ],
    ids=["second_reader", "graph_output"],
)
def test_shared_conv_output_is_not_fused(act):
    module, x = ConvThen(act), _x()
    prog = _export(module, x, FUSED)
    assert aten.convolution.out in _ops(prog) and aten.relu.out in _ops(prog)
    assert prog.reports["forward"].fused_activations == 0
    _check_against_eager(prog, module, x)


def test_only_float32_and_untransposed_convolutions_are_fused():
    prog = _export(ConvThen(F.relu, dtype=torch.float64), _x(torch.float64), FUSED)
    assert _ops(prog) == [aten.convolution.out, aten.relu.out]
    prog = _export(ConvThen(F.relu, transposed=True), _x(), FUSED)
    assert _ops(prog) == [convolution_general_out, aten.relu.out]


def test_nan_bound_is_not_fused():
    # torch.clamp makes every element NaN there; the kernels' compare-and-select would not.
    prog = _export(ConvThen(lambda y: torch.clamp(y, min=float("nan"))), _x(), FUSED)
    assert _ops(prog) == [aten.convolution.out, aten.clamp.out]


def test_activation_of_another_op_is_left_alone():
    module = ConvThen(lambda y: F.relu6(F.relu(y) * 2.0))
    prog = _export(module, _x(), FUSED)
    assert _ops(prog) == [convolution_clamp_out, aten.mul.Scalar_out, aten.hardtanh.out]
    _check_against_eager(prog, module, _x())


def test_mobilenet_v2_fuses_every_relu6():
    from zoo.models import export_methods

    programs, inputs, module = export_methods("mobilenet_v2_035_96")
    edge = exir.to_edge(programs)
    plain, fused = edge.to_executorch(), edge.to_executorch(FUSED)
    ops = _ops(fused)
    # ReLU6 after the stem, after every expansion and depthwise convolution, and after the last 1x1: 35 of them.
    assert fused.reports["forward"].fused_activations == 35 == ops.count(convolution_clamp_out)
    assert aten.hardtanh.out not in ops
    assert len(ops) == len(_ops(plain)) - 35
    assert fused.reports["forward"].pools[0].planned_bytes <= plain.reports["forward"].pools[0].planned_bytes
    _check_against_eager(fused, module, inputs["forward"][0])


def test_pass_returns_count_and_is_idempotent():
    module, x = ConvThen(F.relu), _x()
    prog = _export(module, x, FUSED)
    g = prog.method_graphs["forward"]
    assert fuse_activations(g) == 0 and [c.op for c in g.calls] == [convolution_clamp_out]


def test_functional_op_exports_and_lowers_to_its_out_variant():
    class Direct(torch.nn.Module):
        def forward(self, x, w):
            return torch.ops.ember.convolution_clamp(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, -0.5, 0.5)

    x, w = _x(), torch.randn(4, 3, 3, 3, generator=torch.Generator().manual_seed(2))
    prog = exir.to_edge(torch.export.export(Direct(), (x, w))).to_executorch()
    assert _ops(prog) == [convolution_clamp_out]
    pools = {p.mem_id: p.planned_bytes for p in prog.reports["forward"].pools}
    got = Interpreter(prog.method_graphs["forward"], prog.plan_offsets["forward"], pools).run([x, w])[0]
    torch.testing.assert_close(got, F.conv2d(x, w, padding=1).clamp(-0.5, 0.5))


# --- SiLU and hardswish put back together (the same option) ------------------------------------------------------


class Act(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


@pytest.mark.parametrize(
    "fn,op",
    [
        (F.silu, aten.silu.out),
        (lambda x: x * torch.sigmoid(x), aten.silu.out),
        (lambda x: torch.sigmoid(x) * x, aten.silu.out),
        (F.hardswish, aten.hardswish.out),
        (lambda x: x * F.relu6(x + 3) / 6, aten.hardswish.out),
    ],
)
def test_decomposed_activation_becomes_one_call(fn, op):
    module, x = Act(fn), _x() * 4
    prog = _export(module, x, FUSED)
    assert _ops(prog) == [op]
    _check_against_eager(prog, module, x)
    assert aten.sigmoid.out in _ops(_export(module, x)) or aten.div.Scalar_out in _ops(_export(module, x))


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: (lambda s: (x * s, s + 1))(torch.sigmoid(x)),  # the sigmoid read twice
        lambda x: x * torch.sigmoid(x * 2),  # sigmoid of another tensor
        lambda x: x * F.hardtanh(x + 3, 0, 5) / 6,  # other bounds
        lambda x: x * F.relu6(x + 3) / 5,  # another divisor
        lambda x: (lambda r: (x * r / 6, r))(F.relu6(x + 3)),  # an intermediate returned
    ],
)
def test_other_chains_are_left_alone(fn):
    module, x = Act(fn), _x() * 4
    prog = _export(module, x, FUSED)
    assert aten.silu.out not in _ops(prog) and aten.hardswish.out not in _ops(prog)
    _check_against_eager(prog, module, x)


def test_squeeze_excitation_block_fuses_its_activations():
    """torchvision's MobileNetV3 and EfficientNet blocks: hardswish / SiLU after the convolutions (SiLU then
    joins its convolution), the squeeze-excitation gate (hardsigmoid, sigmoid) left as it was."""

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.fc = torch.nn.Conv2d(8, 8, 1)

        def forward(self, x):
            a = F.hardswish(self.conv(x))
            a = a * F.hardsigmoid(self.fc(a.mean((2, 3), keepdim=True)))
            b = F.silu(self.conv(x))
            return a + b * torch.sigmoid(self.fc(b.mean((2, 3), keepdim=True)))

    module, x = Block(), _x()
    prog = _export(module, x, FUSED)
    ops = _ops(prog)
    assert ops.count(aten.hardswish.out) == 1 and ops.count(convolution_silu_out) == 1, ops
    assert aten.silu.out not in ops and ops.count(aten.sigmoid.out) == 1, ops  # the gate's
    _check_against_eager(prog, module, x)


@pytest.mark.parametrize("act", [F.silu, lambda y: y * torch.sigmoid(y)], ids=["silu", "x_sigmoid_x"])
def test_conv_and_silu_become_one_call(act):
    module, x = ConvThen(act), _x()
    prog = _export(module, x, FUSED)
    assert _ops(prog) == [convolution_silu_out]
    call = prog.method_graphs["forward"].calls[0]
    assert len(call.args) == 10 and call.args[-1] is call.outs[0]  # convolution's nine, then out
    _check_against_eager(prog, module, x)


def test_conv_silu_is_not_fused_when_the_convolution_is_read_again():
    module, x = ConvThen(lambda y: (F.silu(y), y)), _x()
    prog = _export(module, x, FUSED)
    assert convolution_silu_out not in _ops(prog) and aten.silu.out in _ops(prog)
    _check_against_eager(prog, module, x)
