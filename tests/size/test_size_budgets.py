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
    # ExecuTorch's own gate for its core is 52,168 B stripped; Ember's core alone stays under 50 KB.
    assert report["core_only"]["stripped_bytes"] < 50 * 1024
    for model in ("mlp", "small_cnn", "mobilenet_v2_035_96"):
        assert report[model]["buckets"]["kernels"] < report["all_ops"]["buckets"]["kernels"] / 4
