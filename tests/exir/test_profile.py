"""Profiling end to end: a model exported with its source map, run with profile=True on the traced build of the
bindings, the ETDump read back, and python -m devtools.profile's tables and pictures. Float32, so the traced run's
outputs must equal the untraced run's exactly and eager's within 1e-5."""

import os
import re
import subprocess
import xml.etree.ElementTree as ET

import pytest
import torch

import exir
from devtools import etdump, etrecord
from devtools import profile as prof

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


def test_profiled_run_matches_and_times_every_instruction(runtime, exported, traced):
    model, x, path = exported
    plain, outputs, trace = traced
    assert torch.equal(plain[0], outputs[0])
    torch.testing.assert_close(outputs[0], model(x), atol=1e-5, rtol=1e-5)
    rows = etrecord.read(etrecord.sidecar_path(path))["methods"]["forward"]
    # One record per instruction, one per allocator the run used (recorded always, written on request), the run.
    meta = runtime.load(path).method_meta("forward")
    allocators = 1 + (meta["scratch_bytes"] != 0) + len(meta["planned_pools"])
    assert trace.dropped == 0 and trace.events == len(rows) + allocators + 1
    (run,) = etdump.parse(trace.etdump)
    assert run.name == "forward" and run.allocations == []  # ExecuTorch's Inspector reads this one
    instr = [e for e in run.events if e.instruction >= 0]
    assert [e.instruction for e in instr] == list(range(len(rows)))
    assert [e.name for e in instr] == [r["op"] for r in rows]  # the runtime's names are the exporter's
    whole = run.events[-1]
    assert whole.name == "Method::execute" and whole.instruction == -1
    assert all(whole.start <= e.start <= e.end <= whole.end for e in instr)


def re_search(pattern, text):
    m = re.search(pattern, text)
    assert m, text
    return m.group(1)


def test_allocation_events_say_what_each_run_ran_in(runtime, exported, traced, tmp_path, capsys):
    _, x, path = exported
    program = runtime.load(path)
    _, trace = program.run("forward", [x], profile=True, profile_memory=True)
    _, again = program.run("forward", [x], profile=True, profile_memory=True)
    (run,) = etdump.parse(trace.etdump)
    meta = program.method_meta("forward")
    want = [etdump.Allocation("method allocator", meta["method_allocator_bytes"])]
    want += [etdump.Allocation("temp allocator", meta["scratch_bytes"])] if meta["scratch_bytes"] else []
    want += [etdump.Allocation(f"planned pool {p + 1}", b) for p, b in enumerate(meta["planned_pools"])]
    assert run.allocations == want and etdump.parse(again.etdump)[0].allocations == want
    # The profile events are those of a trace without allocations, instruction for instruction.
    plain = etdump.parse(traced[2].etdump)[0]
    assert [(e.name, e.instruction) for e in run.events] == [(e.name, e.instruction) for e in plain.events]
    etdp = str(tmp_path / "memory.etdp")
    trace.save(etdp)
    assert prof.main([path, etdp, "--no-svg"]) == 0
    line = (
        "memory per run (allocation events): "
        + ", ".join(f"{a.allocator} {a.bytes:,} B" for a in want)
        + f"; {sum(a.bytes for a in want):,} B in all"
    )
    assert line in capsys.readouterr().out.splitlines()


def test_debug_mode_keeps_every_kernels_output_and_each_matches_eager(runtime, exported):
    model, x, path = exported
    program = runtime.load(path)
    outputs, trace = program.run("forward", [x], profile=True, profile_outputs=1 << 20)
    assert trace.dropped == 0 and trace.dropped_outputs == 0 and trace.debug_buffer
    kept = etdump.outputs(trace.etdump, trace.debug_buffer)
    rows = etrecord.read(etrecord.sidecar_path(path))["methods"]["forward"]
    kernels = [r["debug_handle"] for r in rows if r["op"].startswith("aten::")]
    assert sorted(kept) == kernels
    # Float32 with the same kernels as an untraced run: the captured values are the run's own, exactly, and
    # eager's within 1e-5 at each step of Linear -> ReLU -> Linear -> softmax.
    with torch.no_grad():
        fc = model.block.fc(x)
        steps = [fc, torch.relu(fc), model.head(torch.relu(fc)), torch.softmax(model.head(torch.relu(fc)), -1)]
    got = [kept[i][0] for i in kernels]
    assert len(got) == len(steps), [r["op"] for r in rows]
    for g, want in zip(got, steps):
        torch.testing.assert_close(g, want, atol=1e-5, rtol=1e-5)
    assert torch.equal(got[-1], outputs[0])
    # Too small a buffer: the tensors that do not fit are counted, the rest kept, the run unharmed.
    small_out, small = program.run("forward", [x], profile=True, profile_outputs=200)
    assert small.dropped_outputs > 0 and torch.equal(small_out[0], outputs[0])
    assert len(etdump.outputs(small.etdump, small.debug_buffer)) == len(kernels) - small.dropped_outputs


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
    r = subprocess.run(
        ["bazel", "build", "--config=profiling", "//:runner"], cwd=ROOT, capture_output=True, text=True, timeout=1800
    )
    assert r.returncode == 0, r.stderr[-3000:]
    info = subprocess.run(
        ["bazel", "info", "--config=profiling", "bazel-bin"], cwd=ROOT, capture_output=True, text=True
    )
    runner = os.path.join(info.stdout.strip(), "runtime", "runner", "runner")
    etdp = str(tmp_path / "runner.etdp")
    r = subprocess.run(
        [runner, path, "--runs", "4", "--warmup", "2", "--profile", etdp], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr
    runs = etdump.read(etdp)
    assert len(runs) == 4  # warm-up runs are not traced
    assert all(r.allocations == [] for r in runs)
    r = subprocess.run(
        [runner, path, "--runs", "2", "--profile", etdp, "--profile-memory"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    used = int(re_search(r"memory: method allocator: (\d+) bytes used", r.stdout))
    for run in etdump.read(etdp):
        assert run.allocations[0] == etdump.Allocation("method allocator", used)
        assert [a.allocator for a in run.allocations][-1] == "planned pool 1"
        assert not [e for e in run.events if e.instruction >= 0 and e.name == ""]
    r = subprocess.run(
        [runner, path, "--runs", "4", "--profile", etdp, "--profile-events", "3"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0 and "events dropped; raise --profile-events" in r.stderr
    r = subprocess.run(
        [runner, path, "--profile", str(tmp_path / "no" / "such" / "dir.etdp")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 6 and "cannot write the profile" in r.stderr
    # Debug mode: the outputs file holds what the ETDump's debug events point at; too small a buffer says so.
    debug = str(tmp_path / "runner.debug")
    r = subprocess.run(
        [runner, path, "--runs", "1", "--profile", etdp, "--profile-outputs", debug],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0 and "bytes of kernel outputs" in r.stdout, r.stderr
    with open(etdp, "rb") as f, open(debug, "rb") as g:
        kept = etdump.outputs(f.read(), g.read())
    assert len(kept) == 4 and all(len(v) == 1 for v in kept.values())
    r = subprocess.run(
        [runner, path, "--runs", "1", "--profile", etdp, "--profile-outputs", debug, "--profile-output-bytes", "64"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0 and "output tensors dropped; raise --profile-output-bytes" in r.stderr
    r = subprocess.run([runner, path, "--profile-outputs", debug], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "give --profile OUT.etdp too" in r.stderr
