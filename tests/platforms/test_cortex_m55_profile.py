"""Profiling on the Cortex-M55: firmware built with `--config=cortex_m55 --config=profiling` traces every instruction
of every run into a buffer in DDR and writes it to the host through semihosting (`--profile FILE`, a raw trace:
no flatbuffer builder on a device without a heap); `python -m devtools.profile model.pte FILE` tabulates it in cycles
(QEMU's -icount shift=0: one per instruction) with the same tables and pictures as a host trace."""

import os
import re
import shutil
import subprocess

import pytest

from devtools import etdump, profile, raw_trace
from exir.serialize import deserialize_pte
from tests.conftest import ROOT, bazel_build
from tests.platforms.test_cortex_m55 import assert_stack_in_region, run_m55

pytestmark = pytest.mark.skipif(
    shutil.which("qemu-system-arm") is None or shutil.which("arm-none-eabi-gcc") is None,
    reason="qemu-system-arm or gcc-arm-none-eabi missing: run ./setup.sh",
)

CONFIG = ("--config=cortex_m55", "--config=profiling")
RUNS = 3


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """(directory, runner stdout) after three traced runs of the zoo's small CNN on the board."""
    bazel_build(*CONFIG, "//examples/firmware:small_cnn")
    out = subprocess.run(
        ["bazel", "info", *CONFIG, "bazel-bin"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    d = tmp_path_factory.mktemp("m55_profile")
    for f in ("small_cnn", "small_cnn.pte"):
        shutil.copy(os.path.join(out, "examples", "firmware", f), d / f)
    proc = run_m55(str(d / "small_cnn"), ["--runs", str(RUNS), "--profile", "trace.emtr"], str(d))
    assert proc.returncode == 0, f"exit {proc.returncode}:\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}"
    return d, proc.stdout


def test_every_instruction_of_every_run_is_timed(traced):
    d, stdout = traced
    runs = raw_trace.read(str(d / "trace.emtr"), str(d / "small_cnn.pte"))
    n_instr = int(re.search(r"method 'forward': (\d+) instructions", stdout).group(1))
    assert len(runs) == RUNS
    for run in runs:
        instr = [e for e in run.events if e.instruction >= 0]
        whole = [e for e in run.events if e.instruction < 0]
        assert [e.instruction for e in instr] == list(range(n_instr))
        assert [e.name for e in whole] == ["Method::execute"]
        assert all(e.name.startswith("aten::") and e.duration > 0 for e in instr), instr
        # Instructions lie inside their run, in order, and account for nearly all of it (the loop's own work is
        # the rest).
        assert all(whole[0].start <= a.start <= a.end <= b.start for a, b in zip(instr, instr[1:]))
        inside = sum(e.duration for e in instr)
        assert 0.95 * whole[0].duration <= inside <= whole[0].duration
    # The runner's own clock agrees: its mean run time is the traced runs' mean.
    mean_ns = int(re.search(r"mean (\d+) ns", stdout).group(1))
    traced_mean = sum(r.events[-1].duration for r in runs) / len(runs)
    assert abs(traced_mean - mean_ns) <= 0.01 * mean_ns
    assert_stack_in_region(stdout)
    # Each run also reports the memory it ran in: the method allocator, the kernels' scratch, the planned pools.
    pools = [int(b) for b in re.findall(r"pool \d+: (\d+) bytes", stdout)]
    for run in runs:
        names = [a.allocator for a in run.allocations]
        assert names[0] == "method allocator" and names[-len(pools) :] == [
            f"planned pool {p + 1}" for p in range(len(pools))
        ], names
        assert [a.bytes for a in run.allocations[-len(pools) :]] == pools
    per_run = n_instr + 1 + len(runs[0].allocations)
    assert re.search(rf"profile: trace.emtr: {RUNS * per_run} events, \d+ bytes", stdout), stdout


def test_exir_profile_tabulates_the_board_trace_in_cycles(traced, capsys):
    d, _ = traced
    assert profile.main([str(d / "small_cnn.pte"), str(d / "trace.emtr"), "--top", "3"]) == 0
    text = capsys.readouterr().out
    assert f"{RUNS} run(s)" in text and "(1000 cycles per us)" in text
    assert "| operator | calls/run | p10 (k cycles) |" in text and "aten::convolution.out" in text
    svg = (d / "trace.timeline.svg").read_text()
    assert svg.startswith("<svg") and "k cycles from first to last instruction" in svg
    assert (d / "trace.memory.svg").read_text().startswith("<svg")
    # A board's real clock instead of QEMU's instruction count: the same trace, 32 cycles per us.
    assert profile.main([str(d / "small_cnn.pte"), str(d / "trace.emtr"), "--no-svg", "--cycles-per-us", "32"]) == 0
    assert "(32 cycles per us)" in capsys.readouterr().out


def test_a_trace_of_another_program_is_refused(traced, tmp_path, capsys):
    d, _ = traced
    data = (d / "trace.emtr").read_bytes()
    with pytest.raises(raw_trace.EtdumpError, match="header promises"):
        raw_trace.parse(data[:-7], deserialize_pte((d / "small_cnn.pte").read_bytes()).program)
    other = tmp_path / "renamed.emtr"
    other.write_bytes(data[:32] + b"encode".ljust(32, b"\0") + data[64:])
    assert profile.main([str(d / "small_cnn.pte"), str(other), "--no-svg"]) == 2
    assert "method 'encode', which the program does not have" in capsys.readouterr().err


def test_board_trace_converts_to_an_etdump(traced, tmp_path, capsys):
    # For ExecuTorch's Inspector (tests/compat/test_profile_inspector.py reads an ETDump written the same way).
    d, _ = traced
    out = tmp_path / "board.etdp"
    assert raw_trace.main([str(d / "trace.emtr"), str(d / "small_cnn.pte"), "-o", str(out)]) == 0
    assert f"{RUNS} run(s)" in capsys.readouterr().out
    board = raw_trace.read(str(d / "trace.emtr"), str(d / "small_cnn.pte"))
    converted = etdump.read(str(out))
    assert [r.events for r in converted] == [r.events for r in board]
    assert all(r.allocations == [] for r in converted)  # by default: ExecuTorch's Inspector refuses them
    assert raw_trace.main([str(d / "trace.emtr"), str(d / "small_cnn.pte"), "-o", str(out), "--memory"]) == 0
    assert etdump.read(str(out)) == board
