"""A custom operator end to end: registered from Python for export, declared in its own kernel manifest,
built into a runner with ember_runtime(extra_libraries=...), and refused by builds that lack it."""

import os

import torch

import exir
from examples.custom_ops.scaled_tanh import ScaledTanhModel
from selective_build import check
from selective_build.selection import operators_of
from tests.conftest import ROOT, bazel_build
from zoo.runner_io import read_outputs, run

MANIFEST = (
    os.path.join(ROOT, "examples", "custom_ops", "kernels.yaml"),
    "ember::custom_example",
    "examples/custom_ops",
)


def _export(tmp_path):
    x = torch.randn(3, 7, generator=torch.Generator().manual_seed(3))
    # Exported for a runtime with the example's kernel library (to_executorch refuses ops no library provides).
    prog = exir.to_edge(torch.export.export(ScaledTanhModel(), (x,))).to_executorch(
        exir.ExecutorchBackendConfig(kernels=exir.KernelTarget(manifests=[MANIFEST]))
    )
    pte = tmp_path / "scaled_tanh.pte"
    prog.save(str(pte))
    return prog, pte, x


def test_custom_op_runs_on_its_runner(tmp_path, runner):
    prog, pte, x = _export(tmp_path)
    assert "ember_example::scaled_tanh.out" in operators_of(prog.program)
    bazel_build("//examples/custom_ops:scaled_tanh_runner")
    binary = os.path.realpath(os.path.join(ROOT, "bazel-bin", "examples", "custom_ops", "scaled_tanh_runner"))
    proc = run(binary, pte, [x], str(tmp_path / "w"))
    assert proc.returncode == 0, proc.stderr
    want = ScaledTanhModel()(x)
    torch.testing.assert_close(read_outputs(str(tmp_path / "w"), [want])[0], want, atol=1e-6, rtol=1e-5)
    # The all-ops runner has no such kernel: refused at load, by name.
    proc = run(runner, pte, [x], str(tmp_path / "v"))
    assert proc.returncode == 3 and "operator ember_example::scaled_tanh.out is not in this build" in proc.stderr


def test_check_knows_custom_libraries(tmp_path):
    prog, _, _ = _export(tmp_path)
    needed = operators_of(prog.program)
    assert check.problems(needed) == ["ember_example::scaled_tanh.out: no kernel library implements it"]
    assert check.problems(needed, extra_manifests=[MANIFEST]) == []
