"""Verifying bundled programs on Ember's runtime: runner_verify --verify and ember.runtime.load_bundled().verify(),
both over runtime/bundled (the C++ a device runs). A bundle with one expected element moved must fail, naming it."""

import os
import subprocess

import pytest
import torch

import devtools.bundled_program
import exir
from devtools.bundled_program import bundle
from tests.conftest import ROOT, bazel_build


@pytest.fixture(scope="module")
def runner_verify():
    bazel_build("//runtime/runner:runner_verify", "//runtime/runner:runner")
    bin_dir = os.path.join(ROOT, "bazel-bin", "runtime", "runner")
    return os.path.realpath(os.path.join(bin_dir, "runner_verify")), os.path.realpath(os.path.join(bin_dir, "runner"))


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    torch.manual_seed(1)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(8, 5),
    ).eval()
    prog = exir.to_edge(torch.export.export(model, (torch.randn(1, 3, 16, 16),))).to_executorch()
    cases = [(torch.randn(1, 3, 16, 16),) for _ in range(3)]
    out = tmp_path_factory.mktemp("bundles")
    good = out / "cnn.bpte"
    bundle(prog, cases, expected=model, atol=1e-5, rtol=1e-4).save(str(good))
    # Case 1's expected element 3 moved by 0.25: the one case that must fail, and where.
    with torch.no_grad():
        expected = [model(*c) for c in cases]
    expected[1] = expected[1].clone()
    expected[1][0, 3] += 0.25
    bad = out / "cnn_bad.bpte"
    bundle(prog, cases, expected=expected, atol=1e-5, rtol=1e-4).save(str(bad))
    return good, bad


def test_runner_verify_passes_every_case(runner_verify, bundles):
    verify, _ = runner_verify
    r = subprocess.run([verify, str(bundles[0]), "--verify"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stdout.splitlines() if l.startswith("case ")]
    assert len(lines) == 3 and all(": PASS  worst |error| " in l for l in lines), r.stdout
    assert "verify: 3 of 3 cases passed" in r.stdout


def test_runner_verify_fails_the_moved_case_naming_the_element(runner_verify, bundles):
    verify, _ = runner_verify
    r = subprocess.run([verify, str(bundles[1]), "--verify"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    lines = {l.split(":")[0]: l for l in r.stdout.splitlines() if l.startswith("case ")}
    assert ": PASS" in lines["case forward/0"] and ": PASS" in lines["case forward/2"]
    failed = lines["case forward/1"]
    assert ": FAIL  worst |error| 0.25 at output 0 element 3" in failed, failed
    assert "; 1 of 5 elements beyond atol 1e-05 + rtol 0.0001" in failed, failed
    assert "verify: 2 of 3 cases passed" in r.stdout


def test_runner_verify_tolerance_override_and_refusals(runner_verify, bundles, tmp_path):
    verify, runner = runner_verify
    r = subprocess.run(
        [verify, str(bundles[1]), "--verify", "--atol", "0.3"], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0 and "verify: 3 of 3 cases passed" in r.stdout, r.stdout + r.stderr
    r = subprocess.run([verify, str(bundles[0]), "--verify", "--atol", "nan"], capture_output=True, text=True)
    assert r.returncode == 2 and "--atol and --rtol take a number in [0, 1e300]" in r.stderr
    r = subprocess.run([verify, str(bundles[0]), "--verify", "--method", "encode"], capture_output=True, text=True)
    assert r.returncode == 3 and "has no test suite for method 'encode'" in r.stderr
    data = bundles[0].read_bytes()
    truncated = tmp_path / "truncated.bpte"
    truncated.write_bytes(data[: len(data) // 2])
    r = subprocess.run([verify, str(truncated), "--verify"], capture_output=True, text=True)
    assert r.returncode == 3 and "failed verification" in r.stderr and "not a usable bundled program" in r.stderr
    # The default runner has no --verify (its size is unchanged): a .bpte is not a .pte to it.
    r = subprocess.run([runner, str(bundles[0]), "--verify"], capture_output=True, text=True)
    assert r.returncode == 2, r.stdout + r.stderr


def test_python_verify(runtime, bundles):
    results = runtime.load_bundled(str(bundles[0])).verify()
    assert [(c["method"], c["case"], c["passed"]) for c in results] == [("forward", i, True) for i in range(3)]
    assert all(c["worst_error"] < 1e-5 and c["elements"] == 5 for c in results)
    bad = runtime.load_bundled(str(bundles[1]))
    results = bad.verify()
    assert [c["passed"] for c in results] == [True, False, True]
    assert results[1]["worst_index"] == 3 and results[1]["worst_error"] == pytest.approx(0.25, abs=1e-6)
    assert results[1]["expected"] - results[1]["actual"] == pytest.approx(0.25, abs=1e-6)
    assert all(c["passed"] for c in bad.verify(atol=0.3))
    # The embedded program runs as any other.
    b = devtools.bundled_program.load(str(bundles[0]))
    case = b.suite("forward").test_cases[0]
    got = bad.program.run("forward", case.inputs)[0]
    torch.testing.assert_close(got, case.expected_outputs[0], atol=1e-5, rtol=1e-4)


def test_python_verify_refuses_hostile_bytes(runtime, bundles):
    data = bundles[0].read_bytes()
    with pytest.raises(RuntimeError, match="failed verification"):
        runtime.load_bundled(data[: len(data) // 2])
    with pytest.raises(RuntimeError, match="not a bundled program: identifier at byte 4 is 'ET12'"):
        runtime.load_bundled(data[:4] + b"ET12" + data[8:])
    with pytest.raises(ValueError, match="atol must be a number"):
        runtime.load_bundled(data).verify(atol=float("nan"))
