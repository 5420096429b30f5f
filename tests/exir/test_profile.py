"""Profiling end to end: a model exported with its source map, run with profile=True on the traced build of the
bindings, the ETDump read back, and python -m exir.profile's tables and pictures. Float32, so the traced run's
outputs must equal the untraced run's exactly and eager's within 1e-5."""
import os
import subprocess
import xml.etree.ElementTree as ET

import pytest
import torch

import exir
from exir import etdump, etrecord
from exir import profile as prof

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 32)
        self.act = torch.nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x))


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.head = torch.nn.Linear(32, 4)

    def forward(self, x):
        return torch.softmax(self.head(self.block(x)), dim=-1)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    torch.manual_seed(0)
    model = Net().eval()
    x = torch.randn(2, 16)
    prog = exir.to_edge(torch.export.export(model, (x,))).to_executorch()
    path = str(tmp_path_factory.mktemp("profile") / "net.pte")
    prog.save(path, etrecord=True)
    return model, x, path


@pytest.fixture(scope="module")
def traced(runtime, exported):
    model, x, path = exported
    program = runtime.load(path)
    plain = program.run("forward", [x])
    outputs, trace = program.run("forward", [x], profile=True)
    return plain, outputs, trace


def test_sidecar_maps_each_instruction_to_its_module_and_source(exported):
    _, _, path = exported
    rows = etrecord.read(etrecord.sidecar_path(path))["methods"]["forward"]
    assert [r["debug_handle"] for r in rows] == list(range(len(rows)))
    modules = {r["module"] for r in rows}
    assert "block.fc (Linear)" in modules and "head (Linear)" in modules and "block.act (ReLU)" in modules
    softmax = [r for r in rows if "softmax" in r["op"]]
    assert softmax and softmax[0]["module"] == "(Net)" and "torch.softmax" in softmax[0]["source"]


def test_profiled_run_matches_and_times_every_instruction(exported, traced):
    model, x, path = exported
    plain, outputs, trace = traced
    assert torch.equal(plain[0], outputs[0])
    torch.testing.assert_close(outputs[0], model(x), atol=1e-5, rtol=1e-5)
    rows = etrecord.read(etrecord.sidecar_path(path))["methods"]["forward"]
    assert trace.dropped == 0 and trace.events == len(rows) + 1
    (run,) = etdump.parse(trace.etdump)
    assert run.name == "forward"
    instr = [e for e in run.events if e.instruction >= 0]
    assert [e.instruction for e in instr] == list(range(len(rows)))
    assert [e.name for e in instr] == [r["op"] for r in rows]  # the runtime's names are the exporter's
    whole = run.events[-1]
    assert whole.name == "Method::execute" and whole.instruction == -1
    assert all(whole.start <= e.start <= e.end <= whole.end for e in instr)


def test_a_full_trace_buffer_drops_and_says_so(runtime, exported):
    _, x, path = exported
    _, trace = runtime.load(path).run("forward", [x], profile=True, profile_events=2)
    assert trace.events == 2 and trace.dropped > 0
    (run,) = etdump.parse(trace.etdump)
    assert run.truncated and f"{trace.dropped} events dropped" in run.name


def test_profile_tables_and_pictures(exported, traced, tmp_path, capsys):
    _, _, path = exported
    _, _, trace = traced
    etdp = str(tmp_path / "net.etdp")
    trace.save(etdp)
    assert prof.main([path, etdp]) == 0
    out = capsys.readouterr().out
    assert "| operator | calls/run | p10 (us) |" in out and "| module |" in out
    assert "aten::addmm.out | 2 |" in out  # two Linear layers, one addmm each
    assert "| block.fc (Linear) | 1 |" in out
    for suffix in (".timeline.svg", ".memory.svg"):
        root = ET.parse(str(tmp_path / ("net" + suffix))).getroot()
        assert root.tag.endswith("svg") and len(root.findall("{http://www.w3.org/2000/svg}rect")) > 2


def test_percentiles_are_nearest_rank():
    v = list(range(1, 11))
    assert (prof.percentile(v, 10), prof.percentile(v, 50), prof.percentile(v, 90)) == (1, 5, 9)


def test_refusals_name_the_problem(exported, traced, tmp_path, capsys):
    _, _, path = exported
    bad = tmp_path / "bad.etdp"
    bad.write_bytes(b"not a trace at all")
    with pytest.raises(etdump.EtdumpError, match="no 'ED00' file identifier"):
        etdump.read(str(bad))
    assert prof.main([path, str(bad)]) == 2
    assert "no 'ED00' file identifier" in capsys.readouterr().err
    # A trace of a longer program against this one: named, not a crash.
    _, _, trace = traced
    data = bytearray(trace.etdump)
    cut = bytes(data[: len(data) // 2])
    with pytest.raises(etdump.EtdumpError):
        etdump.parse(cut)
    etdp = str(tmp_path / "net.etdp")
    trace.save(etdp)
    assert prof.main([path, etdp, "--method", "missing"]) == 2
    assert "no method 'missing' (it has forward); pass --method" in capsys.readouterr().err


def test_runner_profile_flag(exported, tmp_path):
    _, _, path = exported
    r = subprocess.run(["bazel", "build", "--config=profiling", "//:runner"], cwd=ROOT, capture_output=True, text=True,
                       timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:]
    info = subprocess.run(["bazel", "info", "--config=profiling", "bazel-bin"], cwd=ROOT, capture_output=True,
                          text=True)
    runner = os.path.join(info.stdout.strip(), "runtime", "runner", "runner")
    etdp = str(tmp_path / "runner.etdp")
    r = subprocess.run([runner, path, "--runs", "4", "--warmup", "2", "--profile", etdp], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    runs = etdump.read(etdp)
    assert len(runs) == 4  # warm-up runs are not traced
    r = subprocess.run([runner, path, "--runs", "4", "--profile", etdp, "--profile-events", "3"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0 and "events dropped; raise --profile-events" in r.stderr
    r = subprocess.run([runner, path, "--profile", str(tmp_path / "no" / "such" / "dir.etdp")], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 6 and "cannot write the profile" in r.stderr
