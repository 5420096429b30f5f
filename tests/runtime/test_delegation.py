"""Delegated programs run: the zoo's MLP and a small CNN lowered (whole or in part) to the EmberPortable backend,
through the Python bindings (every backend linked) and a per-model runner whose selection names the backend,
against eager (float32: atol 1e-5 scaled by the output's magnitude, rtol 1e-4, as the zoo parity tests). A runner
without the backend refuses the program by name."""
import os

import pytest
import torch

import exir
from examples.models import export_methods
from examples.runner_io import read_outputs, run
from exir.backend import to_edge_transform_and_lower
from exir.backend.ember_portable import EmberPortablePartitioner
from selective_build.select import main as select_main
from tests.conftest import ROOT, bazel_build


def _close(got, want):
    torch.testing.assert_close(got, want, atol=1e-5 * max(1.0, want.abs().max().item()), rtol=1e-4)


def _lower(name, partitioner, **config):
    programs, inputs, module = export_methods(name)
    edge = to_edge_transform_and_lower(programs["forward"], partitioner=[partitioner])
    return edge.to_executorch(exir.ExecutorchBackendConfig(**config)), inputs["forward"], module


@pytest.mark.parametrize("name", ["mlp", "small_cnn"])
@pytest.mark.parametrize("segments", [True, False])
def test_whole_model_delegated_matches_eager(runtime, name, segments):
    prog, inputs, module = _lower(name, EmberPortablePartitioner(), extract_delegate_segments=segments)
    program = runtime.load(prog.buffer)
    for _ in range(2):
        _close(program.run("forward", inputs)[0], module(*inputs))


def test_partly_delegated_matches_eager(runtime):
    # Only the activations go to the delegate: kernel calls and delegate calls alternate in one method.
    prog, inputs, module = _lower("small_cnn", EmberPortablePartitioner(ops={"aten.relu.default"}))
    kinds = [type(i.instr_args).__name__ for i in prog.program.execution_plan[0].chains[0].instructions]
    assert "DelegateCall" in kinds and "KernelCall" in kinds
    _close(runtime.load(prog.buffer).run("forward", inputs)[0], module(*inputs))


def test_method_meta_counts_the_delegate(runtime):
    plain = export_methods("mlp")
    delegated, _, _ = _lower("mlp", EmberPortablePartitioner())
    base = runtime.load(exir.to_edge(plain[0]).to_executorch().buffer).method_meta("forward")
    meta = runtime.load(delegated.buffer).method_meta("forward")
    # The sub-program's own bookkeeping and pools now live in the method allocator (its planned pool moved in).
    assert meta["method_allocator_bytes"] > base["method_allocator_bytes"]


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
    bazel_build("//examples/selections:mlp_delegated_runner", "//examples/selections:mlp_runner")
    bin_dir = os.path.realpath(os.path.join(ROOT, "bazel-bin", "examples", "selections"))
    prog, inputs, module = _lower("mlp", EmberPortablePartitioner())
    pte = tmp_path / "mlp_delegated.pte"
    prog.save(str(pte))
    proc = run(os.path.join(bin_dir, "mlp_delegated_runner"), pte, inputs, str(tmp_path / "w"))
    assert proc.returncode == 0, proc.stderr
    want = module(*inputs)
    _close(read_outputs(str(tmp_path / "w"), [want])[0], want)
    proc = run(os.path.join(bin_dir, "mlp_runner"), pte, inputs, str(tmp_path / "w2"))
    assert proc.returncode != 0
    assert "delegate calls need a backend, and this build has none" in proc.stderr
