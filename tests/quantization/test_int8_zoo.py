"""Int8 quantization end to end: PT2E calibration with EmberQuantizer, Ember's fusion into int8 kernels, export,
and the C++ runtime against PyTorch's reference quantized computation (convert_pt2e's q/dq graph) on the same
inputs. Tolerance: one int8 step of the output's scale (the int8 kernels requantize in fixed point; the
reference rounds in float). Most models' outputs are equal; where an int8 pool averages an even count (the
small CNN's 2x2, ResNet-8's 8x8), an exact tie that the reference's float32 arithmetic puts a hair to one side
changes an intermediate by one step, and about a quarter of the small CNN's outputs (5 in 90 of ResNet-8's)
then differ by one step. Accuracy against fp32 is reported on a held-out random set, with model size."""

import os

import pytest
import torch

import exir
from zoo.models import ZOO
from zoo.quantized import calibration_set
from zoo.runner_io import read_outputs, run
from exir.quantization import QuantizationError, quantize

# The seed's models, then MLPerf Tiny's four reference architectures (zoo/mlperf_tiny.py).
MODELS = [
    "mlp",
    "small_cnn",
    "mobilenet_v2_005_96",
    "ds_cnn_kws",
    "resnet8_cifar10",
    "mobilenet_v1_025_vww",
    "autoencoder_ad",
]
CONV, LINEAR, ADD = "ember_quantized.conv2d.default", "ember_quantized.linear.default", "ember_quantized.add.default"
AVG_POOL = "ember_quantized.avg_pool2d.default"
FUSED = {
    "mlp": {LINEAR},
    "small_cnn": {CONV, LINEAR, AVG_POOL, "aten.max_pool2d.default"},
    "mobilenet_v2_005_96": {CONV, LINEAR, ADD, "ember_quantized.adaptive_avg_pool2d.default"},
    "ds_cnn_kws": {CONV, LINEAR, AVG_POOL, "aten.pad.default"},
    "resnet8_cifar10": {CONV, LINEAR, ADD, AVG_POOL},
    "mobilenet_v1_025_vww": {CONV, LINEAR, AVG_POOL},
    "autoencoder_ad": {LINEAR},
}
QUANTIZE = "quantized_decomposed.quantize_per_tensor.default"
DEQUANTIZE = "quantized_decomposed.dequantize_per_tensor.default"
REPORT = {}


def output_step(q):
    """The scale of the final dequantize: one int8 step of the output."""
    last = [n for n in q.exported_program.graph.nodes if n.op == "call_function"][-1]
    assert "dequantize_per_tensor" in str(last.target)
    return float(last.args[1])


@pytest.fixture(scope="module")
def quantized(tmp_path_factory, int8_zoo):
    d = tmp_path_factory.mktemp("int8")
    out = {}
    for name in MODELS:
        q, args, module = int8_zoo(name)
        int8 = d / f"{name}_int8.pte"
        exir.to_edge(q.exported_program).to_executorch().save(str(int8))
        fp32 = d / f"{name}.pte"
        exir.to_edge(torch.export.export(module, args)).to_executorch().save(str(fp32))
        out[name] = (q, args, module, int8, fp32)
    return out


@pytest.mark.parametrize("name", MODELS)
def test_patterns_become_int8_kernels(quantized, name):
    q = quantized[name][0]
    calls = [str(n.target) for n in q.exported_program.graph.nodes if n.op == "call_function"]
    assert FUSED[name] <= set(calls), calls
    # Whole models in int8: the input is quantized once and the output dequantized once, nothing runs in float
    # between (batch norm folded, eval-mode dropout removed, pooling, padding and flatten on int8 values).
    assert calls.count(QUANTIZE) == 1 and calls.count(DEQUANTIZE) == 1, calls
    assert calls[0] == QUANTIZE and calls[-1] == DEQUANTIZE, calls


@pytest.mark.parametrize("name", MODELS)
def test_runtime_matches_pytorch_reference(quantized, runner, tmp_path, name):
    q, args, module, int8, _ = quantized[name]
    held_out = calibration_set(name, count=4, seed=777)
    step = output_step(q)
    worst = 0.0
    for i, inputs in enumerate([args] + held_out):
        ref = q.reference(*inputs)
        proc = run(runner, int8, inputs, str(tmp_path / str(i)))
        assert proc.returncode == 0, proc.stderr[-2000:]
        got = read_outputs(str(tmp_path / str(i)), [ref])[0]
        worst = max(worst, (got - ref).abs().max().item())
    assert worst <= step * 1.001, f"{name}: runtime differs from the reference by {worst} (> one step {step})"


@pytest.mark.parametrize("name", MODELS)
def test_accuracy_and_size_against_fp32(quantized, runner, tmp_path, name):
    q, args, module, int8, fp32 = quantized[name]
    diffs, scales = [], []
    for i, inputs in enumerate(calibration_set(name, count=8, seed=4242)):
        want = module(*inputs)
        proc = run(runner, int8, inputs, str(tmp_path / str(i)))
        assert proc.returncode == 0, proc.stderr[-2000:]
        got = read_outputs(str(tmp_path / str(i)), [want])[0]
        diffs.append((got - want).abs().max().item())
        scales.append(want.abs().max().item())
    rel = max(diffs) / max(scales)
    ratio = os.path.getsize(int8) / os.path.getsize(fp32)
    REPORT[name] = (rel, os.path.getsize(fp32), os.path.getsize(int8))
    print(
        f"\n{name}: int8 vs fp32 max |diff| {max(diffs):.4g} ({rel:.2%} of the output range), "
        f".pte {os.path.getsize(fp32):,} -> {os.path.getsize(int8):,} bytes ({ratio:.2f}x)"
    )
    # Random weights and inputs, worst element over 8 inputs: measured 1.8% (MLP), 5.6% (small CNN), 0.9%
    # (MobileNetV2 0.05); weights shrink about 4x, less where the program's structure is a larger share.
    assert rel < 0.08, f"{name}: int8 is {rel:.1%} of the output range away from fp32"
    assert ratio < 0.45


class _SelectOps(torch.nn.Module):
    """A convolution between pads (constant with a value off the int8 grid, reflect) and a max pooling with
    ceil_mode and padding: ops that only pick or copy values run on int8."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)

    def forward(self, x):
        x = torch.nn.functional.pad(x, (1, 2, 0, 1), value=0.37)
        x = torch.relu(self.conv(x))
        x = torch.nn.functional.pad(x, (1, 1, 1, 1), mode="reflect")
        return torch.nn.functional.max_pool2d(x, 3, 2, 1, ceil_mode=True)


def test_pads_and_max_pool_run_on_int8_as_the_reference(runner, tmp_path):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(5)
    module, args = _SelectOps().eval(), (torch.randn(1, 3, 11, 10, generator=g),)
    q = quantize(module, args, [(torch.randn(1, 3, 11, 10, generator=g),) for _ in range(8)])
    calls = [str(n.target) for n in q.exported_program.graph.nodes if n.op == "call_function"]
    assert calls.count(QUANTIZE) == 1 and calls.count(DEQUANTIZE) == 1, calls
    path = tmp_path / "select_ops_int8.pte"
    exir.to_edge(q.exported_program).to_executorch().save(str(path))
    for i, inputs in enumerate([args] + [(torch.randn(1, 3, 11, 10, generator=g),) for _ in range(3)]):
        ref = q.reference(*inputs)
        proc = run(runner, path, inputs, str(tmp_path / str(i)))
        assert proc.returncode == 0, proc.stderr[-2000:]
        got = read_outputs(str(tmp_path / str(i)), [ref])[0]
        # The conv requantizes in fixed point (within one step); what follows it only moves int8 values.
        assert (got - ref).abs().max().item() <= output_step(q) * 1.001


class _InPlaceResidual(torch.nn.Module):
    """torchvision's BasicBlock ending: `out += identity` (aten.add_) and an in-place ReLU."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(4, 4, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x):
        identity = torch.relu(self.conv1(x))
        out = self.conv2(identity)
        out += identity
        return torch.nn.functional.relu(out, inplace=True)


def test_in_place_residual_add_runs_as_one_int8_add(runner, tmp_path):
    """ResNet's in-place residual add becomes ember_quantized::add like a functional one: no float island (a
    dequantize, add, relu and quantize per block) between the int8 convolutions."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(6)
    module, args = _InPlaceResidual().eval(), (torch.randn(1, 4, 9, 9, generator=g),)
    q = quantize(module, args, [(torch.randn(1, 4, 9, 9, generator=g),) for _ in range(8)])
    calls = [str(n.target) for n in q.exported_program.graph.nodes if n.op == "call_function"]
    assert calls.count(ADD) == 1 and calls.count(QUANTIZE) == 1 and calls.count(DEQUANTIZE) == 1, calls
    path = tmp_path / "residual_int8.pte"
    exir.to_edge(q.exported_program).to_executorch().save(str(path))
    for i, inputs in enumerate([args] + [(torch.randn(1, 4, 9, 9, generator=g),) for _ in range(2)]):
        ref = q.reference(*inputs)
        proc = run(runner, path, inputs, str(tmp_path / str(i)))
        assert proc.returncode == 0, proc.stderr[-2000:]
        got = read_outputs(str(tmp_path / str(i)), [ref])[0]
        # Three fixed-point requantizations (two convs, the add), each within a step of the reference's float one.
        assert (got - ref).abs().max().item() <= 3 * output_step(q) * 1.001


class _Products(torch.nn.Module):
    """Every form of mul the quantizer and lower_quantized fuse: two activations of one shape with a ReLU after,
    a per-channel gate broadcast over the plane, a Python number (negative: the sign goes into the int8 constant),
    a row broadcast over the leading dims with ReLU6 after, and a square."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 6, 3, padding=1)

    def forward(self, x, gate, row):
        y = self.conv(x)
        y = torch.relu(y * x.mean(dim=1, keepdim=True).expand(-1, 6, -1, -1).contiguous())
        y = y * gate
        y = y * -0.37
        y = torch.nn.functional.relu6(y * row)
        return y * y


def test_mul_runs_as_one_int8_call_within_one_step_of_the_reference(runner, tmp_path):
    """The fused int8 mul (ember_quantized::mul) against PyTorch's dq -> mul -> q reference: within one output step,
    since its product of centered int8 values is exact and its one fixed-point requantization can differ from the
    reference's float rounding only where the real result lies on (or within float32 error of) a .5 boundary."""
    g = torch.Generator().manual_seed(33)

    def sample():
        return (
            torch.randn(1, 3, 9, 7, generator=g),
            torch.rand(1, 6, 1, 1, generator=g) * 2,
            torch.randn(7, generator=g),
        )

    args = sample()
    q = quantize(_Products().eval(), args, [sample() for _ in range(8)])
    calls = [str(n.target) for n in q.exported_program.graph.nodes if n.op == "call_function"]
    assert calls.count("ember_quantized.mul.default") == 5, calls
    assert "aten.mul.Tensor" not in calls and "aten.relu.default" not in calls, calls
    path = tmp_path / "products_int8.pte"
    exir.to_edge(q.exported_program).to_executorch().save(str(path))
    step = output_step(q)
    for i, inputs in enumerate([args] + [sample() for _ in range(3)]):
        ref = q.reference(*inputs)
        proc = run(runner, path, inputs, str(tmp_path / str(i)))
        assert proc.returncode == 0, proc.stderr[-2000:]
        got = read_outputs(str(tmp_path / str(i)), [ref])[0]
        assert (got - ref).abs().max().item() <= step * 1.001


class _Classifier(torch.nn.Module):
    """A linear layer's scores through softmax (a keyword spotter's head), as export leaves it (softmax) or as a
    decomposition leaves it (_safe_softmax); `dim` picks the axis."""

    def __init__(self, safe: bool, dim: int):
        super().__init__()
        self.fc = torch.nn.Linear(24, 12)
        self.safe, self.dim = safe, dim

    def forward(self, x):
        y = self.fc(x)
        if self.safe:
            return torch.ops.aten._safe_softmax.default(y, self.dim)
        return torch.softmax(y, dim=self.dim)


@pytest.mark.parametrize("safe,dim", [(False, -1), (True, -1), (False, 0)])
def test_softmax_runs_on_int8_within_one_step(runner, tmp_path, safe, dim):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(6)
    module, args = _Classifier(safe, dim).eval(), (torch.randn(3, 24, generator=g) * 2,)
    q = quantize(module, args, [(torch.randn(3, 24, generator=g) * 2,) for _ in range(8)])
    calls = [str(n.target) for n in q.exported_program.graph.nodes if n.op == "call_function"]
    assert "ember_quantized.softmax.default" in calls, calls
    assert calls.count(QUANTIZE) == 1 and calls.count(DEQUANTIZE) == 1, calls
    # PT2E's fixed output parameters for softmax: [0, 1] over all 256 codes.
    assert output_step(q) == 1 / 256
    path = tmp_path / "softmax_int8.pte"
    exir.to_edge(q.exported_program).to_executorch().save(str(path))
    for i, inputs in enumerate([args] + [(torch.randn(3, 24, generator=g) * 2,) for _ in range(3)]):
        ref = q.reference(*inputs)
        proc = run(runner, path, inputs, str(tmp_path / str(i)))
        assert proc.returncode == 0, proc.stderr[-2000:]
        got = read_outputs(str(tmp_path / str(i)), [ref])[0]
        assert (got - ref).abs().max().item() <= output_step(q) * 1.001


class _Attention(torch.nn.Module):
    def forward(self, q, k):
        return torch.softmax(q @ k.transpose(-2, -1), dim=-1)


def test_softmax_between_float_ops_stays_float():
    """Softmax is quantized only where its input is int8 anyway: between float matmuls an int8 softmax would add a
    quantize and a dequantize and put attention weights on 1/256 steps."""
    g = torch.Generator().manual_seed(7)
    args = (torch.randn(3, 4, generator=g), torch.randn(3, 4, generator=g))
    q = quantize(_Attention().eval(), args, [args])
    calls = [str(n.target) for n in q.exported_program.graph.nodes if n.op == "call_function"]
    assert "aten.softmax.int" in calls and QUANTIZE not in calls and DEQUANTIZE not in calls, calls


def test_empty_calibration_is_refused():
    module, args = ZOO["linear"].build()
    with pytest.raises(QuantizationError, match="calibration is empty"):
        quantize(module, args, [])
