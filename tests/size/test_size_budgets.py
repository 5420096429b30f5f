"""Binary size budgets: each runner (built --config=size) stays within its committed budget, the core stays under
50 KB stripped with the hardening a Linux binary should have, and a model's selective runner is far smaller than
the all-ops one."""

import json
import os

import pytest

from tests.conftest import ROOT, bazel_build


def test_runners_within_budget():
    bazel_build("--config=size", "//examples/selections:size_report")
    with open(os.path.join(ROOT, "bazel-bin", "examples", "selections", "size_report.json")) as f:
        report = json.load(f)
    with open(os.path.join(ROOT, "tests", "size", "budgets.json")) as f:
        budgets = {k: v for k, v in json.load(f).items() if not k.startswith("_")}
    assert set(budgets) == set(report), "every reported runner needs a budget, and every budget a runner"
    over = {n: (report[n]["code_data_bytes"], b) for n, b in budgets.items() if report[n]["code_data_bytes"] > b}
    assert not over, f"runners over budget (bytes, budget): {over}"
    # Issue 33's goal: the core-only runner (runtime, runner, PAL) in at most 50,000 bytes stripped, under
    # ExecuTorch's 52,168-byte gate for its core. The stripped file moves in 4 KB steps (gold ends RELRO on a page
    # boundary, and the file with it); code+data has about 4 KB to grow before the step that would cross 50,000.
    assert report["core_only"]["stripped_bytes"] <= 50000, report["core_only"]
    for model in ("mlp", "small_cnn", "mobilenet_v2_035_96"):
        assert report[model]["buckets"]["kernels"] < report["all_ops"]["buckets"]["kernels"] / 4


def test_size_build_keeps_linux_hardening():
    """--config=size trades no hardening for bytes: the x86-64 runner stays a position-independent executable,
    linked -z now with its relocated data read-only after load (RELRO), with a non-executable stack and stack
    canaries. (Link-time optimization had silently dropped the toolchain's -fstack-protector: its test for a
    function to protect no longer fires on code gcc re-reads at link time; -fstack-protector-strong survives.)"""
    import subprocess

    bazel_build("--config=size", "//examples/selections:core_only_runner")
    runner = os.path.join(ROOT, "bazel-bin", "examples", "selections", "core_only_runner")
    elf = subprocess.run(["readelf", "-h", "-l", "-d", "-W", runner], capture_output=True, text=True, check=True).stdout
    assert "DYN (Position-Independent Executable file)" in elf
    assert "GNU_RELRO" in elf and "BIND_NOW" in elf and "PIE" in elf
    stack = [line.split() for line in elf.splitlines() if line.strip().startswith("GNU_STACK")]
    assert stack and stack[0][-2] == "RW", stack
    imports = subprocess.run(["nm", "-D", runner], capture_output=True, text=True, check=True).stdout
    assert "__stack_chk_fail" in imports


@pytest.fixture(scope="module")
def size_runners():
    """The runners the x86-64 size report measures (--config=size: link-time optimization), located."""
    bazel_build("--config=size", "//examples/selections:size_report")
    # Resolved now: bazel-bin is a symlink that the Cortex-M55 build below moves.
    bin_dir = os.path.realpath(os.path.join(ROOT, "bazel-bin", "examples", "selections"))
    return lambda name: os.path.join(bin_dir, f"{name}_runner")


@pytest.mark.parametrize("name", ["add", "mlp", "small_cnn", "mobilenet_v2_035_96", "transformer_block"])
def test_size_runners_compute_what_eager_computes(size_runners, tmp_path, name):
    """The measured runners are the ones that run: built as the size report builds them, they agree with eager
    (tests/runtime checks the default build the same way)."""
    import torch
    import exir
    from zoo.models import export_methods
    from zoo.runner_io import read_outputs, run

    programs, inputs, module = export_methods(name)
    pte = tmp_path / f"{name}.pte"
    exir.to_edge(programs).to_executorch().save(str(pte))
    proc = run(size_runners(name), pte, inputs["forward"], str(tmp_path / "w"))
    assert proc.returncode == 0, proc.stderr
    want = module(*inputs["forward"])
    got = read_outputs(str(tmp_path / "w"), [want])[0]
    torch.testing.assert_close(got, want, atol=1e-5 * max(1.0, want.abs().max().item()), rtol=1e-4)


def test_cortex_m55_firmware_within_budget():
    """On the Cortex-M55 (-Os, Thumb-2), the runtime core is under 25 KB of flash, as TFLite Micro-class runtimes
    are (its framework is 9.7 KB on a Cortex-M3; ExecuTorch's bare-metal gate is 118,000 B)."""
    import shutil
    import subprocess

    if shutil.which("arm-none-eabi-gcc") is None:
        pytest.skip("gcc-arm-none-eabi missing: run ./setup.sh")
    # --config=cortex_m55 has --config=size's flags: the firmware tests/platforms/test_cortex_m55.py built and ran.
    bazel_build("--config=cortex_m55", "//examples/firmware:size_report")
    out = subprocess.run(
        ["bazel", "info", "--config=cortex_m55", "bazel-bin"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    with open(os.path.join(out, "examples", "firmware", "size_report.json")) as f:
        report = json.load(f)
    with open(os.path.join(ROOT, "tests", "size", "budgets_cortex_m55.json")) as f:
        budgets = {k: v for k, v in json.load(f).items() if not k.startswith("_")}
    assert set(budgets) == set(report)
    over = {n: (report[n]["code_data_bytes"], b) for n, b in budgets.items() if report[n]["code_data_bytes"] > b}
    assert not over, f"firmware over budget (bytes, budget): {over}"
    # The first stage's core-only firmware was 45,641 B; the second stage's features (verifier aside) must not cost
    # a program that does not use them.
    assert report["core_only"]["code_data_bytes"] <= 45641
    core = report["core_only"]["buckets"]
    assert core["runtime core"] + core["registration table"] < 25 * 1024, core
    assert report["core_only"]["buckets"]["kernels"] == 0
