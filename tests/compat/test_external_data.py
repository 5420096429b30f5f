""".ptd external data (ExecuTorch's FlatTensor) both ways with ExecuTorch 1.5.1.

ExecuTorch runs in its own venv (tools/setup_executorch_venv.sh makes .venv-executorch; EMBER_ET_PYTHON points
elsewhere) through tools/et_ptd.py; these tests are skipped, saying why, where it does not exist.
"""

import json
import os
import subprocess

import pytest
import torch

import exir
from ember import runtime
from exir.program import ExecutorchBackendConfig
from exir.serialize.ptd import deserialize_ptd, serialize_ptd
from tools.et_ptd import _ScaledMLP

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ET_PYTHON = os.environ.get("EMBER_ET_PYTHON", os.path.join(ROOT, ".venv-executorch", "bin", "python3"))
DRIVER = os.path.join(ROOT, "tools", "et_ptd.py")
TAG = "_default_external_constant"  # ExecuTorch's file name for external_constants=True

pytestmark = pytest.mark.skipif(
    not os.path.exists(ET_PYTHON),
    reason=f"ExecuTorch venv not found at {ET_PYTHON}: run tools/setup_executorch_venv.sh to enable these tests",
)


def _driver(*args):
    r = subprocess.run([ET_PYTHON, DRIVER, *args], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise AssertionError(f"et_ptd.py {args[0]} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def et_export(tmp_path_factory):
    out = tmp_path_factory.mktemp("et_ptd")
    report = _driver("export", "--out", str(out))
    assert report["ptd"] == [f"{TAG}.ptd"]
    return out


def test_ember_reads_executorch_ptd(et_export):
    """Ember's reader gets ExecuTorch's tensors, and its writer, given them in the same order, writes the same bytes."""
    data = (et_export / f"{TAG}.ptd").read_bytes()
    ptd = deserialize_ptd(data)
    state = torch.load(et_export / "et.state.pt")
    assert sorted(ptd.entries) == sorted(state)
    for key, value in state.items():
        assert torch.equal(ptd.tensor(key), value), key
    assert serialize_ptd(list(ptd.entries.values())) == data


def test_ember_runs_executorch_program_with_external_weights(et_export):
    """ExecuTorch's program (constants external, named by FQN, its own buffer numbering) runs on Ember's runtime with
    ExecuTorch's .ptd, and gives the eager outputs; without the .ptd it refuses, naming the tensor."""
    pte, ptd = str(et_export / "et.pte"), str(et_export / f"{TAG}.ptd")
    (x,) = torch.load(et_export / "et.inputs.pt")
    (want,) = torch.load(et_export / "et.eager.pt")
    got = runtime.load(pte, data_files=[ptd]).run("forward", [x])[0]
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert sorted(runtime.data_file(ptd).keys()) == sorted(torch.load(et_export / "et.state.pt"))
    with pytest.raises(RuntimeError, match=r"fc\d\.(weight|bias)|scale.*external data file"):
        runtime.load(pte).run("forward", [x])


@pytest.fixture(scope="module")
def ember_export(tmp_path_factory):
    torch.manual_seed(7)
    model = _ScaledMLP().eval()
    x = torch.randn(3, 16)
    prog = exir.to_edge(torch.export.export(model, (x,))).to_executorch(
        ExecutorchBackendConfig(external_constants=True)
    )
    out = tmp_path_factory.mktemp("ember_ptd")
    prog.save(str(out / "ember.pte"))
    torch.save([x], out / "inputs.pt")
    with torch.no_grad():
        want = model(x)
    return out, prog, want, x


def test_executorch_reads_ember_ptd(ember_export):
    """ExecuTorch's FlatTensorSerializer reads Ember's .ptd: the same names, the same tensors."""
    out, prog, _, _ = ember_export
    assert list(prog.data_files) == [TAG]
    ptd = out / f"{TAG}.ptd"
    report = _driver("read", str(ptd), str(out / "read.pt"))
    mine = deserialize_ptd(ptd.read_bytes())
    assert report["keys"] == sorted(mine.entries)
    theirs = torch.load(out / "read.pt")
    for key in mine.entries:
        assert torch.equal(theirs[key], mine.tensor(key)), key


def test_executorch_runs_ember_program_with_ember_ptd(ember_export):
    """ExecuTorch's runtime loads Ember's program with Ember's .ptd as its data file and gives the eager outputs;
    so does Ember's, from the same two files."""
    out, _, want, x = ember_export
    pte, ptd = str(out / "ember.pte"), str(out / f"{TAG}.ptd")
    _driver("run", pte, ptd, str(out / "inputs.pt"), str(out / "et_out.pt"))
    (theirs,) = torch.load(out / "et_out.pt")
    torch.testing.assert_close(theirs, want, rtol=1e-5, atol=1e-5)
    mine = runtime.load(pte, data_files=[ptd]).run("forward", [x])[0]
    torch.testing.assert_close(mine, want, rtol=1e-5, atol=1e-5)
