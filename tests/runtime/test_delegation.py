"""Delegated programs run: the zoo's MLP and small CNN lowered (whole or in part) to the EmberPortable backend,
through the Python bindings and a per-model runner whose selection names the backend, both built with
--config=delegates, against eager (float32: atol 1e-5 scaled by the output's magnitude, rtol 1e-4, as the zoo
parity tests). Runners built without it refuse the program by name."""

import os
import shutil
import subprocess
import sys

import pytest
import torch

import exir
from zoo.models import export_methods
from zoo.runner_io import read_outputs, run
from exir.backend import to_edge_transform_and_lower
from backends.ember_portable import EmberPortablePartitioner
from selective_build.select import main as select_main
from tests.conftest import ROOT, bazel_build


def _close(got, want):
    torch.testing.assert_close(got, want, atol=1e-5 * max(1.0, want.abs().max().item()), rtol=1e-4)


def _lower(name, partitioner, **config):
    programs, inputs, module = export_methods(name)
    edge = to_edge_transform_and_lower(programs["forward"], partitioner=[partitioner])
    return edge.to_executorch(exir.ExecutorchBackendConfig(**config)), inputs["forward"], module


@pytest.fixture(scope="module")
def delegating_runtime(tmp_path_factory):
    """Runs .pte files through ember.runtime over an extension built with --config=delegates (a copy, in a
    subprocess: this process may hold the default extension already, and a later build may replace the file)."""
    bazel_build("--config=delegates", "//runtime/python:_ember_runtime.so")
    lib = tmp_path_factory.mktemp("ext") / "_ember_runtime.so"
    shutil.copy(os.path.join(ROOT, "bazel-bin", "runtime", "python", "_ember_runtime.so"), lib)
    script = (
        "import json, sys, torch\n"
        "from ember import runtime\n"
        "pte, inputs, out = sys.argv[1:4]\n"
        "p = runtime.load(pte)\n"
        "xs = torch.load(inputs)\n"
        "res = [p.run('forward', xs) for _ in range(2)]\n"
        "torch.save({'outputs': res, 'meta': p.method_meta('forward')['method_allocator_bytes']}, out)\n"
    )

    def go(pte, inputs, workdir):
        torch.save(list(inputs), workdir / "inputs.pt")
        env = dict(os.environ, EMBER_RUNTIME_LIB=str(lib), PYTHONPATH=f"{ROOT}:{ROOT}/runtime/python")
        proc = subprocess.run(
            [sys.executable, "-c", script, str(pte), str(workdir / "inputs.pt"), str(workdir / "out.pt")],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return torch.load(workdir / "out.pt")

    return go


@pytest.mark.parametrize("name", ["mlp", "small_cnn"])
@pytest.mark.parametrize("segments", [True, False])
def test_whole_model_delegated_matches_eager(delegating_runtime, tmp_path, name, segments):
    prog, inputs, module = _lower(name, EmberPortablePartitioner(), extract_delegate_segments=segments)
    prog.save(str(tmp_path / "m.pte"))
    got = delegating_runtime(tmp_path / "m.pte", inputs, tmp_path)
    for run_outputs in got["outputs"]:
        _close(run_outputs[0], module(*inputs))


def test_partly_delegated_matches_eager(delegating_runtime, tmp_path):
    # Only the activations go to the delegate: kernel calls and delegate calls alternate in one method.
    prog, inputs, module = _lower("small_cnn", EmberPortablePartitioner(ops={"aten.relu.default"}))
    kinds = [type(i.instr_args).__name__ for i in prog.program.execution_plan[0].chains[0].instructions]
    assert "DelegateCall" in kinds and "KernelCall" in kinds
    prog.save(str(tmp_path / "m.pte"))
    _close(delegating_runtime(tmp_path / "m.pte", inputs, tmp_path)["outputs"][0][0], module(*inputs))


def test_method_meta_counts_the_delegate(delegating_runtime, tmp_path):
    plain_programs, inputs, _ = export_methods("mlp")
    exir.to_edge(plain_programs).to_executorch().save(str(tmp_path / "plain.pte"))
    delegated, _, _ = _lower("mlp", EmberPortablePartitioner())
    delegated.save(str(tmp_path / "delegated.pte"))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    base = delegating_runtime(tmp_path / "plain.pte", inputs["forward"], tmp_path / "a")["meta"]
    meta = delegating_runtime(tmp_path / "delegated.pte", inputs["forward"], tmp_path / "b")["meta"]
    # The sub-program's bookkeeping and its planned pool now live in the method allocator, and the run above
    # loaded in exactly that many bytes (the bindings size the allocator from MethodMeta).
    assert meta > base


def test_selection_names_the_backend(tmp_path):
    prog, _, _ = _lower("mlp", EmberPortablePartitioner())
    pte = tmp_path / "mlp_delegated.pte"
    prog.save(str(pte))
    out = tmp_path / "sel.yaml"
    assert select_main([str(pte), "-o", str(out)]) == 0
    text = out.read_text()
    assert "backends: [EmberPortable]" in text
    assert "aten::addmm.out" in text and "aten::relu.out" in text  # the sub-program's operators
    with open(os.path.join(ROOT, "examples", "selections", "mlp_delegated.yaml")) as f:
        checked_in = f.read()
    for line in ("aten::addmm.out", "aten::relu.out", "backends: [EmberPortable]"):
        assert line in checked_in


def test_selective_runner_runs_the_delegate_and_others_refuse_it(tmp_path):
    prog, inputs, module = _lower("mlp", EmberPortablePartitioner())
    pte = tmp_path / "mlp_delegated.pte"
    prog.save(str(pte))
    bin_dir = os.path.join(ROOT, "bazel-bin", "examples", "selections")
    bazel_build("--config=delegates", "//examples/selections:mlp_delegated_runner")
    delegated_runner = str(tmp_path / "mlp_delegated_runner")
    shutil.copy(os.path.join(bin_dir, "mlp_delegated_runner"), delegated_runner)
    proc = run(delegated_runner, pte, inputs, str(tmp_path / "w"))
    assert proc.returncode == 0, proc.stderr
    want = module(*inputs)
    _close(read_outputs(str(tmp_path / "w"), [want])[0], want)
    # The same selection without --config=delegates, and a selection without the backend: refused by name.
    bazel_build("//examples/selections:mlp_delegated_runner", "//examples/selections:mlp_runner")
    for name in ("mlp_delegated_runner", "mlp_runner"):
        proc = run(os.path.join(bin_dir, name), pte, inputs, str(tmp_path / f"w_{name}"))
        assert proc.returncode != 0
        assert "delegate calls need a backend, and this build has none" in proc.stderr, proc.stderr


ET_PYTHON = os.environ.get("EMBER_ET_PYTHON", os.path.join(ROOT, ".venv-executorch", "bin", "python3"))
_ET_XNNPACK_MLP = """
import sys, torch
from executorch.exir import to_edge_transform_and_lower
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).eval()
ep = torch.export.export(m, (torch.randn(2, 8),))
open(sys.argv[1], "wb").write(to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch().buffer)
"""


@pytest.mark.skipif(not os.path.exists(ET_PYTHON), reason=f"ExecuTorch venv not found at {ET_PYTHON}")
def test_executorch_xnnpack_program_is_refused_naming_the_backend(tmp_path):
    # A runner built without --config=xnnpack (backends/xnnpack/test runs these programs with it): ExecuTorch's
    # delegated MLP parses, its selection names the backend (so a build without it fails before anything reaches a device),
    # and a delegating runner refuses it by backend and delegate.
    pte = tmp_path / "xnnpack_mlp.pte"
    proc = subprocess.run([ET_PYTHON, "-c", _ET_XNNPACK_MLP, str(pte)], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "sel.yaml"
    assert select_main([str(pte), "-o", str(out)]) == 0
    assert "backends: [XnnpackBackend]" in out.read_text()
    bazel_build("--config=delegates", "//examples/selections:mlp_delegated_runner")
    runner = str(tmp_path / "runner")
    shutil.copy(os.path.join(ROOT, "bazel-bin", "examples", "selections", "mlp_delegated_runner"), runner)
    proc = run(runner, pte, [torch.randn(2, 8)], str(tmp_path / "w"))
    assert proc.returncode != 0
    assert "delegate 0: backend 'XnnpackBackend' is not in this build (1 backends registered)" in proc.stderr, (
        proc.stderr
    )
