"""Binary size budgets: each runner (built --config=size) stays within its committed budget, the core stays under
50 KB, and a model's selective runner is far smaller than the all-ops one."""
import json
import os

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
    # ExecuTorch's own gate for its core is 52,168 B stripped. Ember's core-only runner (runtime, runner, PAL) went
    # 6% past it with the second stage's features, and is within 1% of it now that the features a program does not
    # use are compiled out (budgets.json's notes). Its stripped file moves in page steps (4 KB of PIE segment
    # alignment), so this checks the bytes that load.
    assert report["core_only"]["code_data_bytes"] < 52168 * 1.01
    for model in ("mlp", "small_cnn", "mobilenet_v2_035_96"):
        assert report[model]["buckets"]["kernels"] < report["all_ops"]["buckets"]["kernels"] / 4


def test_cortex_m55_firmware_within_budget():
    """On the Cortex-M55 (-Os, Thumb-2), the runtime core is under 25 KB of flash, as TFLite Micro-class runtimes
    are (its framework is 9.7 KB on a Cortex-M3; ExecuTorch's bare-metal gate is 118,000 B)."""
    import shutil
    import subprocess
    import pytest
    if shutil.which("arm-none-eabi-gcc") is None:
        pytest.skip("gcc-arm-none-eabi missing: run ./setup.sh")
    bazel_build("--config=cortex_m55", "--config=size", "//examples/firmware:size_report")
    out = subprocess.run(["bazel", "info", "--config=cortex_m55", "--config=size", "bazel-bin"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout.strip()
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
