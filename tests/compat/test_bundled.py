"""Bundled programs (.bpte, "BP08") with ExecuTorch 1.5.1, both ways: ExecuTorch parses and verifies Ember's
bundles in its own runtime, and Ember reads and verifies ExecuTorch's.

ExecuTorch's side runs in its venv through tools/et_bundled.py (skipped, saying why, where the venv is missing).
"""

import json
import os
import subprocess

import pytest
import torch

import exir
from devtools.bundled_program import bundle, load as load_bundle

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ET_PYTHON = os.environ.get("EMBER_ET_PYTHON", os.path.join(ROOT, ".venv-executorch", "bin", "python3"))
DRIVER = os.path.join(ROOT, "tools", "et_bundled.py")

pytestmark = pytest.mark.skipif(
    not os.path.exists(ET_PYTHON),
    reason=f"ExecuTorch venv not found at {ET_PYTHON}: run tools/setup_executorch_venv.sh to enable these tests",
)


def _driver(*args, timeout=900):
    r = subprocess.run([ET_PYTHON, DRIVER, *args], capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise AssertionError(f"et_bundled.py {args[0]} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def ember_bpte(tmp_path_factory):
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).eval()
    prog = exir.to_edge(torch.export.export(model, (torch.randn(1, 16),))).to_executorch()
    cases = [(torch.randn(1, 16),) for _ in range(3)]
    path = tmp_path_factory.mktemp("bpte") / "mlp.bpte"
    bundle(prog, cases, expected=model, atol=1e-5, rtol=1e-4).save(str(path))
    return path, prog


def test_executorch_verifies_ember_bundle(ember_bpte):
    path, prog = ember_bpte
    report = _driver("check", str(path), "--atol", "1e-5", "--rtol", "1e-4")
    assert report["version"] == 2
    assert report["program_bytes"] == len(prog.buffer)
    assert report["suites"]["forward"] == {"cases": 3, "verified": 3, "errors": [], "inputs": [1, 1, 1]}


def test_executorch_rejects_ember_bundle_at_zero_tolerance(ember_bpte):
    # The control: the same file with exact comparison fails in ExecuTorch (eager's sums differ in the last bits
    # from the kernels'), so the passing test above really compared numbers.
    path, _ = ember_bpte
    report = _driver("check", str(path), "--atol", "0", "--rtol", "0")
    assert report["suites"]["forward"]["verified"] < 3


def test_ember_reads_and_runs_executorch_bundle(tmp_path, runtime):
    path = tmp_path / "et.bpte"
    made = _driver("make", "--out", str(path))
    bundle = load_bundle(str(path))
    assert bundle.version == 2 and len(bundle.program) == made["program_bytes"]
    suite = bundle.suite("forward")
    # ExecuTorch stores no tolerances: Ember reads its defaults.
    assert (suite.atol, suite.rtol) == (1e-8, 1e-5)
    assert len(suite.test_cases) == made["cases"]
    program = runtime.load(bundle.program)
    for case in suite.test_cases:
        got = program.run("forward", case.inputs)
        torch.testing.assert_close(got[0], case.expected_outputs[0], atol=1e-5, rtol=1e-4)
    # And through Ember's C++ verifier (what runner_verify and the firmware run), float32 tolerances.
    results = runtime.load_bundled(str(path)).verify(atol=1e-5, rtol=1e-4)
    assert [(r["method"], r["passed"]) for r in results] == [("forward", True)] * made["cases"], results
