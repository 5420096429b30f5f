"""Programs exported with ExecutorchBackendConfig(fuse_activations=True) on the C++ runners: MobileNetV2 (every
ReLU6 fused into its convolution) on the all-ops runners of both kernel libraries, and a selective runner whose only
convolution kernel is the fused one."""

import os

import pytest
import torch

import exir
from zoo.models import export_methods
from zoo.runner_io import read_outputs, run
from tests.conftest import ROOT, bazel_build

FUSED = exir.ExecutorchBackendConfig(fuse_activations=True)
ATOL, RTOL = 1e-5, 1e-4  # as the zoo parity tests: the kernels sum in another order than ATen


def _bin(*parts):
    return os.path.realpath(os.path.join(ROOT, "bazel-bin", *parts))


@pytest.fixture(scope="module")
def runners():
    bazel_build(
        "//:runner",
        "//runtime/runner:runner_portable",
        "//tests/runtime:small_cnn_fused_runner_portable",
        "//tests/runtime:small_cnn_fused_runner_optimized",
    )
    return {
        "default": _bin("runtime", "runner", "runner"),
        "portable": _bin("runtime", "runner", "runner_portable"),
        "fused_only_portable": _bin("tests", "runtime", "small_cnn_fused_runner_portable"),
        "fused_only_optimized": _bin("tests", "runtime", "small_cnn_fused_runner_optimized"),
    }


def _run_and_compare(runner, pte, inputs, want, work):
    proc = run(runner, pte, inputs, str(work))
    assert proc.returncode == 0, proc.stderr
    line = next(l for l in proc.stdout.splitlines() if "method allocator" in l)
    assert int(line.split()[3]) == int(line.split()[6])  # bookkeeping used == MethodMeta's prediction
    got = read_outputs(str(work), [want])[0]
    torch.testing.assert_close(got, want, atol=ATOL * max(1.0, want.abs().max().item()), rtol=RTOL)
    return proc.stdout


def _instructions(stdout):
    # "program: x.pte (...), method 'forward': 64 instructions, 1 inputs, 1 outputs"
    head = next(l for l in stdout.splitlines() if l.startswith("program:"))
    return int(head.split("instructions")[0].split()[-1])


@pytest.mark.parametrize("kernels", ["default", "portable"])
def test_fused_mobilenet_v2_matches_eager(runners, tmp_path, kernels):
    programs, inputs, module = export_methods("mobilenet_v2_035_96")
    edge = exir.to_edge(programs)
    plain, fused = edge.to_executorch(), edge.to_executorch(FUSED)
    plain.save(str(tmp_path / "plain.pte"))
    fused.save(str(tmp_path / "fused.pte"))
    want = module(*inputs["forward"])
    n_plain = _instructions(
        _run_and_compare(runners[kernels], tmp_path / "plain.pte", inputs["forward"], want, tmp_path / "plain")
    )
    n_fused = _instructions(
        _run_and_compare(runners[kernels], tmp_path / "fused.pte", inputs["forward"], want, tmp_path / "fused")
    )
    pairs = fused.reports["forward"].fused_activations
    assert pairs == 35
    assert n_fused == n_plain - pairs == fused.reports["forward"].num_instructions


@pytest.mark.parametrize("variant", ["portable", "optimized"])
def test_selective_runner_with_only_the_fused_convolution(runners, tmp_path, variant):
    programs, inputs, module = export_methods("small_cnn")
    prog = exir.to_edge(programs).to_executorch(FUSED)
    from selective_build.selection import operators_of

    ops = operators_of(prog.program)
    assert "ember::convolution_clamp.out" in ops and "aten::convolution.out" not in ops
    prog.save(str(tmp_path / "small_cnn_fused.pte"))
    _run_and_compare(
        runners[f"fused_only_{variant}"],
        tmp_path / "small_cnn_fused.pte",
        inputs["forward"],
        module(*inputs["forward"]),
        tmp_path / "w",
    )


def test_executorch_compatible_by_default(runners, tmp_path):
    """Without the option the program names only ATen operators, so ExecuTorch's runtime can run it; with it, a
    runner without the fused kernel refuses it at load, by name."""
    programs, inputs, _ = export_methods("small_cnn")
    edge = exir.to_edge(programs)
    from selective_build.selection import operators_of

    assert all(op.startswith("aten::") for op in operators_of(edge.to_executorch().program))
    edge.to_executorch(FUSED).save(str(tmp_path / "fused.pte"))
    bazel_build("//examples/selections:small_cnn_runner")
    proc = run(
        _bin("examples", "selections", "small_cnn_runner"),
        tmp_path / "fused.pte",
        inputs["forward"],
        str(tmp_path / "w"),
    )
    assert proc.returncode == 3 and "operator ember::convolution_clamp.out is not in this build" in proc.stderr
