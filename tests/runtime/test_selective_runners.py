"""Per-model selective runners (examples/selections) compute what eager computes, and refuse other programs."""

import os

import pytest
import torch

import exir
from zoo.models import export_methods
from tests.conftest import ROOT, bazel_build
from zoo.runner_io import read_outputs, run

MODELS = ["add", "softmax", "linear", "mlp", "small_cnn", "mobilenet_v2_035_96", "transformer_block"]


@pytest.fixture(scope="module")
def runners():
    bazel_build("//examples/selections:all_runners")
    # Resolved now: bazel-bin is a symlink that a later build for another platform would move.
    bin_dir = os.path.realpath(os.path.join(ROOT, "bazel-bin"))
    return lambda name: os.path.join(bin_dir, "examples", "selections", f"{name}_runner")


@pytest.mark.parametrize("name", MODELS)
def test_selective_runner_parity(runners, tmp_path, name):
    programs, inputs, module = export_methods(name)
    pte = tmp_path / f"{name}.pte"
    exir.to_edge(programs).to_executorch().save(str(pte))
    proc = run(runners(name), pte, inputs["forward"], str(tmp_path / "w"))
    assert proc.returncode == 0, proc.stderr
    want = module(*inputs["forward"])
    got = read_outputs(str(tmp_path / "w"), [want])[0]
    torch.testing.assert_close(got, want, atol=1e-5 * max(1.0, want.abs().max().item()), rtol=1e-4)


def test_selective_runner_refuses_other_programs(runners, tmp_path):
    programs, inputs, _ = export_methods("small_cnn")
    pte = tmp_path / "small_cnn.pte"
    exir.to_edge(programs).to_executorch().save(str(pte))
    proc = run(runners("mlp"), pte, inputs["forward"], str(tmp_path / "w"))
    assert proc.returncode == 3
    assert "operator aten::convolution.out is not in this build (2 kernels registered)" in proc.stderr


@pytest.mark.parametrize(
    "name,feature", [("cond_gate", "control_flow"), ("while_refine", "control_flow"), ("dynamic_mlp", "dynamic_shapes")]
)
def test_runner_without_a_feature_refuses_programs_that_need_it(runners, tmp_path, name, feature):
    # The core-only runner's selection keeps no runtime feature (features: []): a program that jumps, or has a
    # bounded dynamic input, is refused at load by the feature's name, never run without it.
    from zoo import control_flow, dynamic

    module = control_flow if name in control_flow.MODELS else dynamic
    programs, inputs, _ = module.export_methods(name)
    pte = tmp_path / f"{name}.pte"
    exir.to_edge(programs).to_executorch().save(str(pte))
    proc = run(runners("core_only"), pte, inputs["forward"], str(tmp_path / "w"))
    assert proc.returncode == 3, proc.stderr
    assert f"needs the runtime feature '{feature}', which this build compiled out" in proc.stderr
