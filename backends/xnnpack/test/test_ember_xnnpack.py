"""Programs Ember lowers itself with its XnnpackPartitioner (backends/xnnpack), run on Ember's runner and
Python bindings built with --config=xnnpack (Debian's 2022 XNNPACK) and on ExecuTorch 1.5.1's runtime (its pybind
module, with its own XNNPACK), against eager PyTorch.

Models (backends/xnnpack/test/models.py, ember_models.py): an MLP, a small CNN with every node kind the
partitioner takes, MobileNetV2, ResNet18 (whole networks in one delegate), and a CNN with operators XNNPACK cannot take in the middle
(several delegate calls, the rest on Ember's or ExecuTorch's kernels). Variants: weights in the blob instead of
the program's named data, and the blob inline in the flatbuffer instead of a segment.

Tolerance (float32), as for ExecuTorch's own exports: max |got - eager| <= 1e-4 * max(1, max |eager|), rtol 1e-4.
The numbers each model reaches are printed (-s).

Skipped, saying why, without ExecuTorch's venv or Debian's libxnnpack-dev (./setup.sh installs it).
"""

import json
import os
import subprocess

import pytest
import torch

from zoo.runner_io import read_outputs, run
from exir.serialize.pte import deserialize_pte
from tests.conftest import ROOT
from backends.xnnpack.test.test_executorch_xnnpack import ET_PYTHON, _check, xnn_bindings, xnn_runner  # noqa: F401

pytestmark = [
    pytest.mark.skipif(
        not os.path.exists(ET_PYTHON),
        reason=f"ExecuTorch venv not found at {ET_PYTHON}: run tools/setup_executorch_venv.sh",
    ),
    pytest.mark.skipif(
        not os.path.exists("/usr/include/xnnpack.h"), reason="Debian's libxnnpack-dev is not installed: run ./setup.sh"
    ),
]

# name -> (model, weights, extract_delegate_segments)
VARIANTS = {
    "mlp": ("mlp", "named", True),
    "small_cnn": ("small_cnn", "named", True),
    "small_cnn_inline": ("small_cnn", "inline", False),  # weights in the blob, the blob in the flatbuffer
    "mobilenet_v2": ("mobilenet_v2", "named", True),
    "resnet18": ("resnet18", "named", True),
    "partial": ("partial", "named", True),
    "transformer_block": ("transformer_block", "named", True),  # linears, softmax and adds; the rest on kernels
}


def _lower(model_name, weights, extract):
    import exir
    from exir import ExecutorchBackendConfig
    from backends.xnnpack import XnnpackPartitioner
    from backends.xnnpack.test.ember_models import make

    model, inputs = make(model_name)
    with torch.no_grad():
        eager = model(*inputs)
    eager = list(eager) if isinstance(eager, (tuple, list)) else [eager]
    partitioner = XnnpackPartitioner(weights=weights)
    edge = exir.to_edge_transform_and_lower(torch.export.export(model, inputs), partitioner=[partitioner])
    prog = edge.to_executorch(ExecutorchBackendConfig(extract_delegate_segments=extract))
    return prog, inputs, eager, partitioner.rejected


@pytest.fixture(scope="module")
def lowered(tmp_path_factory):
    """name -> (pte path, inputs, eager outputs, program manager, rejected calls), every variant lowered once."""
    d = tmp_path_factory.mktemp("ember_xnnpack")
    out = {}
    for name, (model_name, weights, extract) in VARIANTS.items():
        prog, inputs, eager, rejected = _lower(model_name, weights, extract)
        pte = d / f"{name}.pte"
        prog.save(str(pte))
        torch.save({"forward": list(inputs)}, d / f"{name}.inputs.pt")
        out[name] = (pte, inputs, eager, prog, rejected)
    return out


@pytest.fixture(scope="module")
def executorch_outputs(lowered):
    """name -> the outputs of ExecuTorch 1.5.1's runtime (pybind portable_lib, XNNPACK built in), one process."""
    directory = os.path.dirname(next(iter(lowered.values()))[0])
    proc = subprocess.run(
        [ET_PYTHON, os.path.join(ROOT, "tools", "et_reference.py"), "run-batch", directory],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    status = json.loads(proc.stdout.strip().splitlines()[-1])
    return {
        name: (torch.load(os.path.join(directory, f"{name}.et_outputs.pt"))["forward"] if s == "ok" else s)
        for name, s in status.items()
    }


def _compare(name, got, want, how):
    assert len(got) == len(want), (len(got), len(want))
    for g, w in zip(got, want):
        if w.dtype == torch.int64:  # the partial model's max-pool indices (Ember's kernels)
            assert torch.equal(g.to(torch.int64), w), f"{name} ({how}): indices differ"
        else:
            _check(name, g, w, how)


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_ember_runner_matches_eager(xnn_runner, lowered, tmp_path, name):  # noqa: F811
    pte, inputs, eager, prog, _ = lowered[name]
    delegates = sum(len(p.delegates) for p in prog.program.execution_plan)
    assert delegates >= 1
    proc = run(xnn_runner, pte, inputs, str(tmp_path), runs=2)
    assert proc.returncode == 0, proc.stderr[-3000:]
    _compare(name, read_outputs(str(tmp_path), eager), eager, f"Ember runner, {delegates} delegate(s)")


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_executorch_runtime_matches_eager(executorch_outputs, lowered, name):
    _, _, eager, _, _ = lowered[name]
    got = executorch_outputs[name]
    assert not isinstance(got, str), f"ExecuTorch 1.5.1 refused Ember's {name}.pte: {got}"
    _compare(name, got, eager, "ExecuTorch 1.5.1 runtime")


@pytest.mark.parametrize("name", ["mobilenet_v2", "partial"])
def test_python_bindings_match_eager(xnn_bindings, lowered, tmp_path, name):  # noqa: F811
    pte, inputs, eager, _, _ = lowered[name]
    for outputs in xnn_bindings(pte, inputs, str(tmp_path)):
        _compare(name, outputs, eager, "Python bindings")


def test_whole_networks_are_one_delegate(lowered):
    for name in ("mlp", "small_cnn", "mobilenet_v2", "resnet18"):
        _, _, _, prog, rejected = lowered[name]
        plan = prog.program.execution_plan[0]
        kinds = [type(i.instr_args).__name__ for c in plan.chains for i in c.instructions]
        assert kinds == ["DelegateCall"], (name, kinds, rejected)
        assert plan.operators == [] and rejected == [], (name, rejected)


def test_partial_delegation_leaves_the_rest_to_kernels(lowered):
    _, _, _, prog, rejected = lowered["partial"]
    plan = prog.program.execution_plan[0]
    kinds = [type(i.instr_args).__name__ for c in plan.chains for i in c.instructions]
    assert kinds.count("DelegateCall") >= 3, kinds
    ops = {f"{o.name}.{o.overload}" for o in plan.operators}
    assert {
        "aten::gelu.out",
        "aten::_softmax.out",
        "aten::avg_pool2d.out",
        "aten::max_pool2d_with_indices.out",
    } <= ops, ops
    reasons = {op: why for _, op, why in rejected}
    assert "last dim" in reasons["aten::_softmax.out"]
    assert "count_include_pad" in reasons["aten::avg_pool2d.out"]
    assert "index output is used" in reasons["aten::max_pool2d_with_indices.out"]


def test_weights_layouts(lowered):
    # Named (ExecuTorch's default): every weight in the program's named data, none in the blob.
    pte = deserialize_pte(lowered["small_cnn"][0].read_bytes())
    assert len(pte.program.named_data) >= 10
    assert pte.program.execution_plan[0].delegates[0].processed.location.name == "SEGMENT"
    # Inline: filters and biases in the blob, only run-time operands (x + 0.5, batch norm's scale) named; the blob
    # in the flatbuffer.
    inline = deserialize_pte(lowered["small_cnn_inline"][0].read_bytes())
    assert 0 < len(inline.program.named_data) < len(pte.program.named_data)
    assert inline.program.execution_plan[0].delegates[0].processed.location.name == "INLINE"
    blob = bytes(inline.program.backend_delegate_data[0].data)
    assert blob[4:8] == b"XH00" and int.from_bytes(blob[22:30], "little") > 0


def test_selection_names_the_backend(lowered, tmp_path):
    from selective_build.select import main as select_main

    out = tmp_path / "sel.yaml"
    assert select_main([str(lowered["partial"][0]), "-o", str(out)]) == 0
    text = out.read_text()
    assert "backends: [XnnpackBackend]" in text and "aten::gelu.out" in text
