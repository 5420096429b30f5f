"""cortex_m4: firmware for QEMU's mps2-an386 board (a Cortex-M4: single-precision FPU, no MVE, so the scalar
kernels only), one per model with only its kernels, built from the same bare-metal code as the Cortex-M55's
(platforms/bare_metal). Outputs are compared with eager PyTorch and with the host runtime on the same .pte (float32:
1e-5 of the output's scale, since the M4 build is -Os and may fuse multiply-adds; int8: the host's bytes), and the
firmware's flash bytes with tests/size/budgets_cortex_m4.json. Every firmware compiles its own kernels, so this builds
two: //:runner (the board's firmware for the default --//:model, the zoo's float MLP) and the int8 MLP."""

import json
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
from tests.platforms.qemu_boards import (
    assert_stack_in_region,
    bazel_bin,
    linker_regions,
    needs_qemu_and_arm_gcc,
    run_firmware,
)

pytestmark = needs_qemu_and_arm_gcc
PACKAGE = os.path.join("examples", "firmware", "cortex_m4")


def run_m4(elf, args, cwd):
    return run_firmware("mps2-an386", str(elf), args, cwd)


@pytest.fixture(scope="module")
def firmware(tmp_path_factory):
    bazel_build("--config=cortex_m4", "//:runner", "//examples/firmware/cortex_m4:size_report")
    out = bazel_bin("--config=cortex_m4")
    # Copies: a later build for another platform moves bazel-bin.
    d = tmp_path_factory.mktemp("m4")
    for src, dst in [
        (("platforms", "mps2_an386", "runner"), "mlp.elf"),
        (("zoo", "mlp.pte"), "mlp.pte"),
        ((PACKAGE, "mlp_int8"), "mlp_int8.elf"),
        ((PACKAGE, "mlp_int8.pte"), "mlp_int8.pte"),
        ((PACKAGE, "size_report.json"), "size_report.json"),
    ]:
        shutil.copy(os.path.join(out, *src), d / dst)
    return d


def test_m4_matches_eager_and_host(firmware, runner, tmp_path):
    """The zoo's float MLP, as `bazel build //:runner --config=cortex_m4` builds it."""
    name = "mlp"
    _, inputs, module = export_methods(name)
    want = module(*inputs["forward"])
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    for i, x in enumerate(inputs["forward"]):
        (tmp_path / f"input_{i}.bin").write_bytes(x.contiguous().numpy().tobytes())
    args = [a for i in range(len(inputs["forward"])) for a in ("--input", f"input_{i}.bin")]
    (tmp_path / "m4").mkdir()
    proc = run_m4(firmware / f"{name}.elf", args + ["--output-dir", "m4"], tmp_path)
    assert proc.returncode == 0, f"exit {proc.returncode}:\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}"
    assert re.search(r"memory: pool 1: \d+ bytes planned, in PSRAM at 0x21", proc.stdout), proc.stdout
    assert_stack_in_region(proc.stdout)
    got = read_outputs(str(tmp_path / "m4"), want)

    host = run(runner, firmware / f"{name}.pte", inputs["forward"], str(tmp_path / "host"))
    assert host.returncode == 0, host.stderr[-2000:]
    host_out = read_outputs(str(tmp_path / "host"), want)
    for g, h, w in zip(got, host_out, want):
        scale = max(1.0, w.abs().max().item())
        torch.testing.assert_close(g, w, atol=1e-5 * scale, rtol=1e-4)
        torch.testing.assert_close(g, h, atol=1e-5 * scale, rtol=1e-5)


def test_m4_int8_matches_host_bit_for_bit(firmware, runner, tmp_path):
    from zoo.quantized import quantize_zoo

    name = "mlp"
    q, args, _ = quantize_zoo(name)
    ref = q.reference(*args)
    (tmp_path / "input_0.bin").write_bytes(args[0].contiguous().numpy().tobytes())
    (tmp_path / "m4").mkdir()
    proc = run_m4(firmware / f"{name}_int8.elf", ["--input", "input_0.bin", "--output-dir", "m4"], tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert_stack_in_region(proc.stdout)
    got = read_outputs(str(tmp_path / "m4"), [ref])[0]
    host = run(runner, firmware / f"{name}_int8.pte", args, str(tmp_path / "host"))
    assert host.returncode == 0, host.stderr[-2000:]
    # Integer kernels: the same bytes on the M4 and on x86-64.
    assert torch.equal(got, read_outputs(str(tmp_path / "host"), [ref])[0])
    last = [n for n in q.exported_program.graph.nodes if n.op == "call_function"][-1]
    assert (got - ref).abs().max().item() <= float(last.args[1]) * 1.001


def test_m4_reports_memory_and_time(firmware, tmp_path):
    proc = run_m4(firmware / "mlp.elf", ["--runs", "2"], tmp_path)
    assert proc.returncode == 0, proc.stdout
    out = proc.stdout
    assert "program: mlp.pte" in out and re.search(r"output 0: Float \[1, 10\]: \S+", out), out
    # The board's memories: planned memory in PSRAM, the method allocator in what SSRAM23 has left.
    assert re.search(r"pool 1: 4160 bytes planned, in PSRAM at 0x21", out), out
    used, predicted = map(
        int,
        re.search(
            r"method allocator: (\d+) bytes used, (\d+) predicted by MethodMeta, in "
            r"SSRAM23",
            out,
        ).groups(),
    )
    assert used == predicted > 0
    # SysTick at the board's 25 MHz under -icount shift=0: ~269k multiply-adds, at least one instruction each.
    mean = int(re.search(r"mean (\d+) ns", out).group(1))
    assert 269_000 < mean < 20_000_000, out
    assert_stack_in_region(out)


def test_m4_watchdog_stops_a_long_run(firmware, tmp_path):
    """The watchdog checks its deadline when the 24-bit SysTick wraps (every 2^24 cycles: 0.67 virtual seconds at
    25 MHz), so the runs must outlast a wrap: 600 MLP runs of about 1.7 ms against a 1 ms limit each."""
    proc = run_m4(firmware / "mlp.elf", ["--runs", "600", "--timeout-ms", "1"], tmp_path)
    assert proc.returncode == 7, proc.stdout
    assert "watchdog:" in proc.stdout and "took longer than its limit" in proc.stdout


def test_m4_firmware_within_budget_and_scalar_only(firmware):
    """Flash bytes (code + data, the embedded program excluded) of each firmware against its budget, and no Helium
    (MVE) kernel anywhere: the Cortex-M4 has none to run them."""
    with open(firmware / "size_report.json") as f:
        report = json.load(f)
    with open(os.path.join(ROOT, "tests", "size", "budgets_cortex_m4.json")) as f:
        budgets = {k: v for k, v in json.load(f).items() if not k.startswith("_")}
    assert set(budgets) == set(report), "every reported firmware needs a budget, and every budget a firmware"
    sizes = {n: report[n]["code_data_bytes"] for n in budgets}
    print(
        "cortex_m4 firmware code+data bytes (budget): "
        + ", ".join(f"{n} {sizes[n]:,} ({budgets[n]:,})" for n in budgets)
    )
    over = {n: (sizes[n], b) for n, b in budgets.items() if sizes[n] > b}
    assert not over, f"firmware over budget (bytes, budget): {over}"
    for m in budgets:
        buckets = report[m]["buckets"]
        assert buckets["runtime core"] + buckets["registration table"] < 25 * 1024, (m, buckets)
        symbols = subprocess.run(
            ["arm-none-eabi-nm", "-C", str(firmware / f"{m}.elf")], capture_output=True, text=True, check=True
        ).stdout
        assert "ember::helium" not in symbols, m


def test_m4_linker_script_matches_board_description():
    board = load_board("mps2_an386")
    assert (board.cpu, board.qemu_machine) == ("cortex-m4", "mps2-an386")
    regions = linker_regions("mps2_an386", "mps2_an386.ld")
    assert set(regions) == set(board.memories)
    for name, (base, size) in regions.items():
        assert (base, size) == (board.memories[name].base, board.memories[name].size), name


def test_m4_export_refuses_what_psram_cannot_hold():
    """Exporting for the board plans every memory id into its 16 MiB PSRAM and refuses more, naming it."""
    import exir
    from exir.targets import memory_planning_for

    class Wide(torch.nn.Module):
        def forward(self, x):  # two 20,000,000-byte intermediates
            return (x.expand(1, 5_000_000) * 2.0).sum(dim=1)

    edge = exir.to_edge(torch.export.export(Wide(), (torch.ones(1, 1),)))
    with pytest.raises(exir.MemoryBudgetError) as e:
        edge.to_executorch(exir.ExecutorchBackendConfig(memory_planning=memory_planning_for("mps2_an386")))
    assert "in PSRAM (memory id 1)" in str(e.value) and "has 16777216" in str(e.value), str(e.value)
