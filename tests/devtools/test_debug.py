"""devtools.debug.compare: a planted numeric bug is named (operator, node, module, source line), a clean program
reports no divergence, and the int8 MobileNetV2 of the zoo reports its worst operator (and a planted bug in one of
its convolutions). Bugs are planted in the lowered graph the debug variant is emitted from (a constant changed
after to_executorch), which the eager side never sees."""

import pytest
import torch

import exir
from devtools import debug


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 32)
        self.fc3 = torch.nn.Linear(32, 4)

    def forward(self, x):
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))  # the planted bug's line
        return self.fc3(x)


@pytest.fixture
def mlp():
    torch.manual_seed(0)
    model = MLP().eval()
    x = torch.randn(2, 16)
    edge = exir.to_edge(torch.export.export(model, (x,)))
    return model, edge, edge.to_executorch(), x


def test_clean_program_has_no_divergence(mlp, runtime):
    model, edge, prog, x = mlp
    report = debug.compare(edge, prog, (x,))
    assert [o.op for o in report.ops] == ["aten::addmm.out", "aten::relu.out"] * 2 + ["aten::addmm.out"]
    assert report.first_divergence is None and not report.outputs_diverged
    assert report.worst.relative_error < 1e-5
    assert "no operator diverges beyond tolerance" in str(report)
    # From the module itself (exported the same way) the same nodes are found.
    assert [o.name for o in debug.compare(model, prog, (x,)).ops] == [o.name for o in report.ops]


def test_planted_bias_bug_is_named_with_module_and_line(mlp, runtime):
    _, edge, prog, x = mlp
    call = [c for c in prog.method_graphs["forward"].calls if c.op_name == "aten::addmm.out"][1]
    bias = call.args[0]
    bias.data = bias.data + 0.5  # a new tensor: the model's own parameter is untouched
    report = debug.compare(edge, prog, (x,))
    first = report.first_divergence
    assert first is not None and first.name == call.outs[0].name == "addmm_1"
    assert (first.index, first.op, first.module) == (2, "aten::addmm.out", "fc2")
    # The model's own line, not torch's linear.py.
    assert first.source.startswith(__file__) and "x = torch.relu(self.fc2(x))" in first.source
    assert first.max_abs_error == pytest.approx(0.5, abs=1e-5)
    assert not any(o.diverged for o in report.ops[:2])
    # The saved program was emitted before the change: its outputs still match, and the report says so.
    assert not report.outputs_diverged
    assert "first divergence: instruction 2 aten::addmm.out (node 'addmm_1', module 'fc2')" in str(report)


def test_runtime_capture_matches_the_variant_on_a_clean_program(mlp, runtime):
    _, edge, prog, x = mlp
    variant = debug.compare(edge, prog, (x,))
    real = debug.compare(edge, prog, (x,), capture="runtime")
    assert [(o.index, o.name, o.op) for o in real.ops] == [(o.index, o.name, o.op) for o in variant.ops]
    assert real.first_divergence is None and not real.outputs_diverged
    # The same kernels on the same inputs: the same values, bit for bit, whichever way they were captured.
    assert [o.max_abs_error for o in real.ops] == [o.max_abs_error for o in variant.ops]


def test_runtime_capture_names_the_operator_a_planted_plan_bug_breaks(mlp, runtime, monkeypatch):
    # The plan puts addmm_1's output on top of its own input (relu's output): the GEMM overwrites what it still
    # reads. The debug variant plans without reuse, so only the outputs say something is wrong; the real program,
    # captured by the runtime, shows where.
    _, edge, _, x = mlp
    import exir.program as program_module

    real_plan = program_module._plan

    def overlapping(graph, cfg):
        offsets, plan, pools = real_plan(graph, cfg)
        by_name = {t.name: t for t in graph.tensors()}
        offsets[id(by_name["addmm_1"])] = offsets[id(by_name["relu"])]
        return offsets, plan, pools

    with monkeypatch.context() as m:
        m.setattr(program_module, "_plan", overlapping)
        bad = edge.to_executorch()
    variant = debug.compare(edge, bad, (x,))
    assert variant.first_divergence is None and variant.outputs_diverged
    assert "suspect the memory plan" in str(variant)
    report = debug.compare(edge, bad, (x,), capture="runtime")
    first = report.first_divergence
    assert first is not None and (first.index, first.name, first.module) == (2, "addmm_1", "fc2")
    assert not any(o.diverged for o in report.ops[:2])


def test_refuses_what_it_cannot_compare(mlp, runtime):
    _, edge, prog, x = mlp
    with pytest.raises(TypeError, match="what to_executorch\\(\\) returned"):
        debug.compare(edge, prog.buffer, (x,))
    with pytest.raises(TypeError, match="nn.Module, an ExportedProgram or the EdgeProgramManager"):
        debug.compare("model.pt", prog, (x,))
    with pytest.raises(ValueError, match="choose 'variant'"):
        debug.compare(edge, prog, (x,), capture="device")
    with pytest.raises(ValueError, match="drop kernels='portable'"):
        debug.compare(edge, prog, (x,), capture="runtime", kernels="portable")


@pytest.fixture(scope="module")
def int8_mobilenet():
    from zoo.quantized import quantize_zoo

    q, args, _ = quantize_zoo("mobilenet_v2_005_96")
    edge = exir.to_edge(q.exported_program)
    return edge, args


def test_int8_mobilenet_reports_its_worst_operator(int8_mobilenet, runtime):
    edge, args = int8_mobilenet
    prog = edge.to_executorch()
    report = debug.compare(edge, prog, args)
    ops = {o.op for o in report.ops}
    assert {"ember_quantized::conv2d.out", "ember_quantized::add.out", "ember_quantized::linear.out"} <= ops
    assert len(report.ops) > 60 and not report.skipped
    # The int8 kernels equal PyTorch's reference computation: within one step everywhere.
    assert report.first_divergence is None
    assert report.worst is not None and report.worst.max_abs_error <= 1
    print(
        f"\nint8 MobileNetV2 0.05: worst operator {report.worst.op} '{report.worst.name}' "
        f"(|error| {report.worst.max_abs_error})"
    )


def test_int8_mobilenet_planted_scale_bug(int8_mobilenet, runtime):
    edge, args = int8_mobilenet
    prog = edge.to_executorch()
    convs = [c for c in prog.method_graphs["forward"].calls if c.op_name == "ember_quantized::conv2d.out"]
    target = convs[5]
    names = [a.name for a in target.op._schema.arguments]
    scales = target.args[names.index("weight_scales")]
    scales.data = scales.data * 1.5
    report = debug.compare(edge, prog, args)
    first = report.first_divergence
    assert first is not None and first.name == target.outs[0].name
    assert first.op == "ember_quantized::conv2d.out" and "zoo/models.py" in first.source
    assert first.max_abs_error > 1


@pytest.mark.parametrize("branch", [0, 1])
def test_cond_compares_the_branch_taken_at_the_chains_indices(branch):
    """cond_gate lowers to mean, gt, jump, then (addmm relu mul clone), jump, else (addmm tanh sub clone): both
    branches name their first node addmm. The report compares the taken branch's nodes, at their instruction
    indices in the chain (jumps count), and skips the other branch's, which neither eager nor the program ran."""
    from zoo.control_flow import MODELS

    entry = MODELS["cond_gate"]
    x = entry.inputs()[branch]
    edge = exir.to_edge(torch.export.export(entry.make(), x))
    report = debug.compare(edge, edge.to_executorch(), x)
    taken = [(3, "addmm"), (4, "relu"), (5, "mul")] if branch == 0 else [(8, "addmm"), (9, "tanh"), (10, "sub")]
    assert [(o.index, o.name) for o in report.ops] == [(0, "mean"), (1, "gt")] + taken
    assert sorted(report.skipped) == sorted(["addmm"] + (["tanh", "sub"] if branch == 0 else ["relu", "mul"]))
    assert report.first_divergence is None and max(o.relative_error for o in report.ops) <= 1e-6
