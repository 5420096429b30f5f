"""cortex_m55: firmware for QEMU's mps3-an547 board (Corstone-300), one per model with only its kernels, runs the
zoo under qemu-system-arm. Outputs are compared with eager PyTorch and with the host runtime on the same .pte
(float32: 1e-5 of the output's scale; the M55 build is -Os with hard-float FPU and MVE, so sums may round
differently). Every run has a host-side time limit and the firmware's own watchdog, so nothing can hang."""

import os
import re
import shutil
import subprocess

import pytest
import torch

from zoo.models import export_methods
from zoo.runner_io import read_outputs, run
from exir.targets import load_board
from tests.conftest import ROOT, bazel_build
from tests.platforms.qemu_boards import assert_stack_in_region, linker_regions, needs_qemu_and_arm_gcc, run_firmware

pytestmark = needs_qemu_and_arm_gcc
MODELS = ["add", "softmax", "linear", "mlp", "small_cnn", "mobilenet_v2_035_96"]
# Int8: the seed's models, then MLPerf Tiny's four reference architectures (zoo/mlperf_tiny.py).
INT8_ZOO = [
    "mlp",
    "small_cnn",
    "mobilenet_v2_005_96",
    "ds_cnn_kws",
    "resnet8_cifar10",
    "mobilenet_v1_025_vww",
    "autoencoder_ad",
]
INT8_MODELS = [f"{m}_int8" for m in INT8_ZOO]
CONTROL_FLOW_MODELS = ["cond_gate", "while_refine", "dynamic_mlp"]


def run_m55(elf, args, cwd, icount=True):
    """Runs firmware on QEMU's mps3-an547; returns the CompletedProcess (stdout holds the semihosting output)."""
    return run_firmware("mps3-an547", elf, args, cwd, icount)


@pytest.fixture(scope="module")
def firmware(tmp_path_factory):
    bazel_build("--config=cortex_m55", "//examples/firmware:firmware")
    out = subprocess.run(
        ["bazel", "info", "--config=cortex_m55", "bazel-bin"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    # Copies: a later build for another platform moves bazel-bin.
    d = tmp_path_factory.mktemp("m55")
    for m in MODELS + INT8_MODELS + CONTROL_FLOW_MODELS:
        shutil.copy(os.path.join(out, "examples", "firmware", m), d / f"{m}.elf")
        shutil.copy(os.path.join(out, "examples", "firmware", f"{m}.pte"), d / f"{m}.pte")
    return d


@pytest.mark.parametrize("name", MODELS)
def test_m55_matches_eager_and_host(firmware, runner, tmp_path, name):
    _, inputs, module = export_methods(name)
    want = module(*inputs["forward"])
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    for i, x in enumerate(inputs["forward"]):
        (tmp_path / f"input_{i}.bin").write_bytes(x.contiguous().numpy().tobytes())
    args = [a for i in range(len(inputs["forward"])) for a in ("--input", f"input_{i}.bin")]
    (tmp_path / "m55").mkdir()
    proc = run_m55(str(firmware / f"{name}.elf"), args + ["--output-dir", "m55"], tmp_path)
    assert proc.returncode == 0, f"exit {proc.returncode}:\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}"
    assert "memory: pool 1:" in proc.stdout or name in ("add", "softmax", "linear")
    assert_stack_in_region(proc.stdout)
    got = read_outputs(str(tmp_path / "m55"), want)

    host = run(runner, firmware / f"{name}.pte", inputs["forward"], str(tmp_path / "host"))
    assert host.returncode == 0, host.stderr[-2000:]
    host_out = read_outputs(str(tmp_path / "host"), want)
    for g, h, w in zip(got, host_out, want):
        scale = max(1.0, w.abs().max().item())
        torch.testing.assert_close(g, w, atol=1e-5 * scale, rtol=1e-4)
        torch.testing.assert_close(g, h, atol=1e-5 * scale, rtol=1e-5)


@pytest.mark.parametrize("name", CONTROL_FLOW_MODELS)
def test_m55_control_flow_and_dynamic_shapes_match_eager(firmware, tmp_path, name):
    """torch.cond on a data-dependent predicate (both branches), a while_loop (several trip counts) and an MLP
    with a bounded dynamic batch (1 to 8 rows, given as FILE@[rows,16]) on the device, against eager."""
    from zoo.control_flow import MODELS as CF
    from zoo.dynamic import MODELS as DYN

    entry = CF.get(name) or DYN[name]
    module = entry.make()
    for k, inputs in enumerate(entry.inputs()):
        with torch.no_grad():
            want = module(*inputs)
        want = list(want) if isinstance(want, (tuple, list)) else [want]
        work = tmp_path / f"run{k}"
        (work / "m55").mkdir(parents=True)
        for i, x in enumerate(inputs):
            (work / f"input_{i}.bin").write_bytes(x.contiguous().numpy().tobytes())
        args = [
            a for i, x in enumerate(inputs) for a in ("--input", f"input_{i}.bin@[{','.join(str(d) for d in x.shape)}]")
        ]
        proc = run_m55(str(firmware / f"{name}.elf"), args + ["--output-dir", "m55"], work)
        assert proc.returncode == 0, f"exit {proc.returncode}:\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}"
        assert_stack_in_region(proc.stdout)
        for g, w in zip(read_outputs(str(work / "m55"), want), want):
            torch.testing.assert_close(g, w, atol=1e-5 * max(1.0, w.abs().max().item()), rtol=1e-4)


@pytest.mark.parametrize("name", INT8_ZOO)
def test_m55_int8_matches_host_and_reference(firmware, runner, int8_zoo, tmp_path, name):
    """Int8 zoo models, among them the seed scenario's MobileNetV2 width 0.05 at 96x96x3 (ExecuTorch's
    Corstone-300 runner asked for 1,785,600 bytes for it and died in a 1 KB pool; Ember plans its arena from the
    program and places it in SRAM) and MLPerf Tiny's KWS, IC, VWW and AD architectures."""
    q, args, _ = int8_zoo(name)
    ref = q.reference(*args)
    (tmp_path / "input_0.bin").write_bytes(args[0].contiguous().numpy().tobytes())
    (tmp_path / "m55").mkdir()
    proc = run_m55(str(firmware / f"{name}_int8.elf"), ["--input", "input_0.bin", "--output-dir", "m55"], tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert_stack_in_region(proc.stdout)
    planned = int(re.search(r"pool 1: (\d+) bytes planned, in SRAM", proc.stdout).group(1))
    if name == "mobilenet_v2_005_96":
        assert planned < 1_785_600 // 4, proc.stdout
    got = read_outputs(str(tmp_path / "m55"), [ref])[0]
    host = run(runner, firmware / f"{name}_int8.pte", args, str(tmp_path / "host"))
    assert host.returncode == 0, host.stderr[-2000:]
    # Integer kernels: the same bytes on the M55 and on x86-64.
    assert torch.equal(got, read_outputs(str(tmp_path / "host"), [ref])[0])
    last = [n for n in q.exported_program.graph.nodes if n.op == "call_function"][-1]
    assert (got - ref).abs().max().item() <= float(last.args[1]) * 1.001


def test_m55_reports_memory_and_instructions(firmware, tmp_path):
    proc = run_m55(str(firmware / "mlp.elf"), ["--runs", "2"], tmp_path)
    assert proc.returncode == 0, proc.stdout
    out = proc.stdout
    # MLP: the planner's 4,160-byte arena, in SRAM; the method allocator exactly as MethodMeta predicted.
    assert re.search(r"pool 1: 4160 bytes planned, in SRAM at 0x11", out), out
    used, predicted = map(int, re.search(r"method allocator: (\d+) bytes used, (\d+) predicted", out).groups())
    assert used == predicted > 0
    mean = int(re.search(r"mean (\d+) ns", out).group(1))
    # ~269k multiply-adds: at least one instruction per four (one MVE VFMA each), and not absurdly more.
    assert 269_000 // 4 < mean < 20_000_000, out


def test_m55_refuses_bad_input_cleanly(firmware, tmp_path):
    (tmp_path / "short.bin").write_bytes(b"\0" * 10)
    proc = run_m55(str(firmware / "mlp.elf"), ["--input", "short.bin"], tmp_path)
    assert proc.returncode == 4, proc.stdout
    assert "input 0 needs exactly 3136 bytes" in proc.stdout and "short.bin has 10" in proc.stdout
    proc = run_m55(str(firmware / "mlp.elf"), ["--input", "missing.bin"], tmp_path)
    assert proc.returncode == 4 and "cannot open input file missing.bin" in proc.stdout
    proc = run_m55(str(firmware / "mlp.elf"), ["--bogus"], tmp_path)
    assert proc.returncode == 2 and "usage:" in proc.stdout


def test_m55_watchdog_stops_a_long_run(firmware, tmp_path):
    # MobileNetV2 takes several virtual milliseconds; a 2 ms limit must stop it with a message, not hang.
    proc = run_m55(str(firmware / "mobilenet_v2_035_96.elf"), ["--timeout-ms", "2"], tmp_path)
    assert proc.returncode == 7, proc.stdout
    assert "watchdog:" in proc.stdout and "took longer than its limit" in proc.stdout


def test_linker_script_matches_board_description():
    board = load_board("mps3_an547")
    regions = linker_regions("mps3_an547", "mps3_an547.ld")
    assert set(regions) == set(board.memories)
    for name, (base, size) in regions.items():
        assert (base, size) == (board.memories[name].base, board.memories[name].size), name
