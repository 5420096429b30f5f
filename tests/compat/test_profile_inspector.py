"""ExecuTorch 1.5.1's Inspector reads an Ember trace: a zoo model profiled by Ember's runner (--config=profiling)
and the .etdp handed to `executorch.devtools.Inspector(etdump_path=...)` with no ETRecord (it needs none to list
events and their timings). Runs in ExecuTorch's venv through tools/et_reference.py; skipped where it is missing."""

import json
import os
import subprocess

import pytest
import torch

import exir
from zoo.models import export_methods
from devtools import etdump, raw_trace

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ET_PYTHON = os.environ.get("EMBER_ET_PYTHON", os.path.join(ROOT, ".venv-executorch", "bin", "python3"))
DRIVER = os.path.join(ROOT, "tools", "et_reference.py")

pytestmark = pytest.mark.skipif(
    not os.path.exists(ET_PYTHON),
    reason=f"ExecuTorch venv not found at {ET_PYTHON}: run tools/setup_executorch_venv.sh to enable these tests",
)


def _profiling_runner():
    r = subprocess.run(
        ["bazel", "build", "--config=profiling", "//:runner"], cwd=ROOT, capture_output=True, text=True, timeout=1800
    )
    assert r.returncode == 0, r.stderr[-3000:]
    info = subprocess.run(
        ["bazel", "info", "--config=profiling", "bazel-bin"], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    return os.path.join(info.stdout.strip(), "runtime", "runner", "runner")


@pytest.fixture(scope="module")
def host_trace(tmp_path_factory):
    programs, _, _ = export_methods("small_cnn")
    d = tmp_path_factory.mktemp("inspector")
    pte = str(d / "small_cnn.pte")
    exir.to_edge(programs).to_executorch().save(pte)
    trace = str(d / "small_cnn.etdp")
    r = subprocess.run(
        [_profiling_runner(), pte, "--runs", "3", "--profile", trace], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr
    return d, trace


def _inspect(trace, ours):
    r = subprocess.run([ET_PYTHON, DRIVER, "inspect", trace], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"ExecuTorch's Inspector refused the trace:\n{r.stderr[-3000:]}"
    blocks = json.loads(r.stdout.strip().splitlines()[-1])["blocks"]
    # Runs that share a name make one event block; each event has its three timings.
    assert [b["name"] for b in blocks] == ["forward"]
    events = blocks[0]["events"]
    want = [(e.name, e.instruction) for e in ours[0].events]
    got = [(e["name"], -1 if e["instruction_id"] is None else e["instruction_id"]) for e in events]
    assert got == want
    assert all(e["runs"] == 3 for e in events)
    # Inspector's times are ms from our ns: the same p50 as ours for the first operator.
    first = sorted(run.events[0].duration for run in ours)[1] / 1e6
    assert events[0]["p50_ms"] == pytest.approx(first, rel=1e-6)


def test_executorch_inspector_reads_an_ember_trace(host_trace):
    _, trace = host_trace
    ours = etdump.read(trace)
    assert len(ours) == 3
    _inspect(trace, ours)


def test_executorch_inspector_reads_a_converted_device_trace(host_trace):
    # A microcontroller's raw trace becomes an ETDump on the host (devtools.raw_trace.to_etdump, through flatc): the
    # same runs written that way must read the same in ExecuTorch's Inspector.
    d, trace = host_trace
    ours = etdump.read(trace)
    converted = str(d / "converted.etdp")
    with open(converted, "wb") as f:
        f.write(raw_trace.to_etdump(ours))
    assert etdump.read(converted) == ours
    _inspect(converted, ours)


def test_executorch_inspector_reads_the_kernel_outputs_of_a_debug_trace(tmp_path):
    # Debug mode (runner --profile-outputs): each kernel's output tensor is a debug event pointing into the debug
    # buffer. ExecuTorch's Inspector must inflate the same tensors that devtools.etdump reads
    # (tests/exir/test_profile.py checks those against eager).
    programs, _, _ = export_methods("small_cnn")
    pte = str(tmp_path / "small_cnn.pte")
    exir.to_edge(programs).to_executorch().save(pte)
    trace, debug = str(tmp_path / "debug.etdp"), str(tmp_path / "debug.bin")
    r = subprocess.run(
        [
            _profiling_runner(),
            pte,
            "--runs",
            "1",
            "--input",
            "random:3",
            "--profile",
            trace,
            "--profile-outputs",
            debug,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    with open(trace, "rb") as f, open(debug, "rb") as g:
        ours = etdump.outputs(f.read(), g.read())
    (run,) = etdump.read(trace)
    kernels = [e.instruction for e in run.events if e.instruction >= 0 and e.name.startswith("aten::")]
    assert sorted(ours) == kernels
    saved = str(tmp_path / "inspected.pt")
    p = subprocess.run(
        [ET_PYTHON, DRIVER, "inspect", trace, "--debug-buffer", debug, "--save-outputs", saved],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert p.returncode == 0, f"ExecuTorch's Inspector refused the debug trace:\n{p.stderr[-3000:]}"
    theirs = torch.load(saved)
    assert sorted(theirs) == kernels
    for i in kernels:
        assert len(theirs[i]) == len(ours[i])
        for a, b in zip(theirs[i], ours[i]):
            assert torch.equal(a.reshape(-1), b.contiguous().reshape(-1)) and list(a.shape) == list(b.shape)
