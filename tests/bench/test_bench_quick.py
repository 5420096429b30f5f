"""The benchmark harness end to end, in quick mode on two small models: every framework (both Ember builds
included) measured, numbers sane, the report's columns and goals there.

Needs both peer venvs (tools/setup_executorch_venv.sh, tools/setup_bench_venv.sh); skipped, saying which is
missing, without them. Runs in about a minute.
"""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

ET_PYTHON = os.environ.get("EMBER_ET_PYTHON", os.path.join(ROOT, ".venv-executorch", "bin", "python3"))
BENCH_PYTHON = os.environ.get("EMBER_BENCH_PYTHON", os.path.join(ROOT, ".venv-bench", "bin", "python3"))
MISSING = [
    f"{path} (run {script})"
    for path, script in ((ET_PYTHON, "tools/setup_executorch_venv.sh"), (BENCH_PYTHON, "tools/setup_bench_venv.sh"))
    if not os.path.exists(path)
]

pytestmark = pytest.mark.skipif(bool(MISSING), reason="benchmark peer venvs not found: " + "; ".join(MISSING))

MODELS = ["add", "linear"]
FRAMEWORKS = ["ember", "ember_portable", "et_portable", "et_xnnpack", "ort", "eager"]
EMBERS = ["ember", "ember_portable"]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench_out")
    work = tmp_path_factory.mktemp("bench_work")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "--quick",
            "--models",
            ",".join(MODELS),
            "--out",
            str(out),
            "--work",
            str(work),
            "--name",
            "quick",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, f"bench --quick failed:\n{r.stderr[-4000:]}"
    with open(out / "quick.json") as f:
        return json.load(f), out


def test_every_framework_measured_every_model(quick_run):
    result, _ = quick_run
    assert list(result["models"]) == MODELS
    for fw in FRAMEWORKS:
        assert result["frameworks"][fw]["skipped"] is None, result["frameworks"][fw]
    for name, m in result["models"].items():
        for fw in FRAMEWORKS:
            r = m["frameworks"][fw]
            assert "error" not in r, f"{name}/{fw}: {r.get('error')}"
            assert r["matches_eager"], f"{name}/{fw}: outputs differ from eager by {r['max_abs_err']}"


def test_numbers_are_sane(quick_run):
    result, _ = quick_run
    assert result["machine"]["cpu"], "the CPU model name is recorded"
    for name, m in result["models"].items():
        for fw in FRAMEWORKS:
            r = m["frameworks"][fw]
            assert 0 < r["min_us"] <= r["median_us"] <= r["p90_us"], (name, fw, r)
            assert r["median_us"] < 1e5, (name, fw, r)  # a one-op model: far below 100 ms on any machine
            assert r["runs"] >= 5 and r["warmup"] >= 1, (name, fw, r)
            assert r["load_us"] > 0, (name, fw, r)
            assert r["maxrss_kb"] > result["settings"]["rss_floor_kb"] > 0, (name, fw, r)
            assert r["file_bytes"] > 0, (name, fw, r)
        # Memory: Ember's planned arena is never larger than ExecuTorch's for the same model; both Ember builds run
        # the same .pte, so they plan the same bytes.
        et = m["frameworks"]["et_portable"]
        for fw in EMBERS:
            ember = m["frameworks"][fw]
            assert 0 < ember["arena_bytes"] <= et["arena_bytes"], (name, fw, ember["arena_bytes"], et["arena_bytes"])
            assert ember["file_bytes"] == m["frameworks"]["ember"]["file_bytes"], (name, fw)
        assert m["frameworks"]["ember"]["pools"] == m["frameworks"]["ember_portable"]["pools"], name
        assert et["arena_bytes"] == sum(et["non_const_buffer_sizes"])


def test_report_and_plot_written(quick_run):
    result, out = quick_run
    md = (out / "quick.md").read_text()
    assert "## Goals" in md and "Latency, median" in md and result["machine"]["cpu"] in md
    for m in result["models"].values():
        assert m["label"] in md
    header = next(line for line in md.splitlines() if line.startswith("| model | Ember |"))
    for column in ("Ember portable", "Ember/ET portable", "Ember/ET XNNPACK", "Ember portable/ET portable"):
        assert f"| {column} |" in header, (column, header)
    # Every goal has a row with a verdict; with add and linear only, the MobileNetV2 goals have no numbers.
    goals = md.split("## Goals", 1)[1].split("## Results", 1)[0]
    rows = [line for line in goals.splitlines() if line.startswith("| ") and not line.startswith("| goal |")]
    assert len(rows) == 5, goals
    verdicts = [row.split(" | ")[1].split(" (")[0] for row in rows]  # "yes (2 of 5 measured)": yes
    assert set(verdicts) <= {"yes", "partly", "**no**", "not measured"}, goals
    assert "| not measured | not measured: MobileNetV2" in goals, goals
    png = out / "quick.png"
    assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
