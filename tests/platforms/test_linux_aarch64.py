"""linux_aarch64: the runner cross-built with --config=linux_aarch64 runs the zoo under qemu-aarch64 with the
host runtime's outputs (float32: same kernels, different FPU; 1e-5 of the output's scale) and eager's."""

import os
import shutil
import subprocess

import pytest
import torch

import exir
from tests.conftest import ROOT, bazel_build
from tests.platforms import cross_parity
from zoo.runner_io import read_outputs, run

QEMU = shutil.which("qemu-aarch64")
pytestmark = pytest.mark.skipif(
    QEMU is None or not os.path.exists("/usr/bin/aarch64-linux-gnu-gcc"),
    reason="qemu-aarch64 or g++-aarch64-linux-gnu missing: run ./setup.sh",
)
MODELS = ["add", "softmax", "linear", "mlp", "small_cnn", "mobilenet_v2_035_96", "transformer_block", "running_mean"]


@pytest.fixture(scope="module")
def aarch64_runner(tmp_path_factory):
    bazel_build("--config=linux_aarch64", "//:runner")
    out = subprocess.run(
        ["bazel", "info", "--config=linux_aarch64", "bazel-bin"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    # A copy: the next host build moves bazel-bin back, and this binary must stay where the tests look.
    path = tmp_path_factory.mktemp("aarch64") / "runner"
    shutil.copy(os.path.join(out, "runtime", "runner", "runner"), path)
    wrapper = path.parent / "runner_qemu"
    wrapper.write_text(f"#!/bin/sh\nexec {QEMU} -L /usr/aarch64-linux-gnu {path} \"$@\"\n")
    wrapper.chmod(0o755)
    return str(wrapper)


@pytest.mark.parametrize("name", MODELS)
def test_aarch64_matches_host_and_eager(aarch64_runner, runner, tmp_path, name):
    cross_parity.assert_matches_host_and_eager(name, "aarch64", aarch64_runner, runner, tmp_path)


def _dynamic_encoder():
    from torch.export import Dim

    torch.manual_seed(3)
    enc = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True).eval()
    ep = torch.export.export(enc, (torch.randn(1, 8, 32),), dynamic_shapes=({1: Dim("seq", min=1, max=64)},))
    g = torch.Generator().manual_seed(5)
    return enc, ep, [(torch.randn(1, n, 32, generator=g),) for n in (1, 7, 64)]


def _control_flow(name):
    from zoo.control_flow import MODELS, export_methods

    programs, _, module = export_methods(name)
    return module, programs["forward"], MODELS[name].inputs()


@pytest.mark.parametrize("name", ["dynamic_encoder", "cond_gate", "map_rows", "scan_rnn", "while_refine"])
def test_aarch64_dynamic_shapes_and_control_flow(aarch64_runner, tmp_path, name):
    """Bounded dynamic shapes at three sizes, and each control-flow form on every input set, under qemu."""
    module, ep, input_sets = _dynamic_encoder() if name == "dynamic_encoder" else _control_flow(name)
    pte = tmp_path / f"{name}.pte"
    exir.to_edge(ep).to_executorch().save(str(pte))
    for k, inputs in enumerate(input_sets):
        with torch.no_grad():
            want = module(*inputs)
        want = list(want) if isinstance(want, (tuple, list)) else [want]
        proc = run(aarch64_runner, pte, inputs, str(tmp_path / f"run{k}"))
        assert proc.returncode == 0, proc.stderr[-2000:]
        for got, w in zip(read_outputs(str(tmp_path / f"run{k}"), want), want):
            torch.testing.assert_close(got, w, atol=1e-5 * max(1.0, w.abs().max().item()), rtol=1e-4)


@pytest.mark.parametrize("name", ["mobilenet_v2_005_96", "resnet8_cifar10"])
def test_aarch64_int8_gives_the_host_bits(aarch64_runner, runner, int8_zoo, tmp_path, name):
    """Int8 programs on aarch64's tier (kernels/optimized/int8: SDOT under qemu-aarch64, which has it) give the
    host's bytes exactly (its AVX512-VNNI, AVX-VNNI or AVX2 tier, or the scalar kernels): every tier performs
    kernels/quantized's one requantization."""
    q, args, _ = int8_zoo(name)
    pte = tmp_path / f"{name}_int8.pte"
    exir.to_edge(q.exported_program).to_executorch().save(str(pte))
    g = torch.Generator().manual_seed(41)
    for k, inputs in enumerate([args, tuple(torch.randn(a.shape, generator=g) for a in args)]):
        results = {}
        for arch, binary in (("aarch64", aarch64_runner), ("host", runner)):
            proc = run(binary, pte, inputs, str(tmp_path / f"{arch}{k}"))
            assert proc.returncode == 0, f"{arch}: {proc.stderr[-2000:]}"
            results[arch] = read_outputs(str(tmp_path / f"{arch}{k}"), [q.reference(*inputs)])
        for a, h in zip(results["aarch64"], results["host"]):
            assert torch.equal(a, h), (a - h).abs().max()
